"""``python -m kvviz``: the command-line interface (see ``kvviz.cli``)."""

import sys

from kvviz.cli import main

sys.exit(main())
