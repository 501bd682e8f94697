"""SGLang's RadixCache and HiRadixCache node by node.

The trees (``radix_cache``, ``hiradix_cache``) and their event log (``events``); Strata's in-flight
nodes on them (``inflight``); a request (``request``) and SGLang's scheduler with Strata's delay-hit
deferral (``scheduler``); RadixAttention's queue orders FCFS, LPM and DFS-weight
(``schedule_policy``, ``schedule_figures``); request scripts (``script``, ``presets``), their
step-by-step replay (``replay``, ``narration``) and a trace's requests replayed (``trace_replay``);
the radix page's report and figures (``report``, ``figures``).
"""
