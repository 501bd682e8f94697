"""Request traces: the public names of ``kvviz.traces`` under their historical module name.

Everything lives in the ``kvviz.traces`` package (the Trace object, formats, ingest, library);
this module keeps ``from kvviz.trace import Trace, load_trace, ...`` working.
"""

from kvviz.traces import *  # noqa: F401,F403
from kvviz.traces import __all__  # noqa: F401
from kvviz.traces.cli import TRACE_HELP, add_trace_arguments, trace_from_args  # noqa: F401
