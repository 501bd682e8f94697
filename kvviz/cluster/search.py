"""``plan --router R --engine E``: the cheapest deployment behind each router on each serving stack.

A **stack** is a router and an engine (SGLang's radix cache, or vLLM's block pool with LMCache
behind it: :mod:`kvviz.cluster.engines`). Each stack is searched on its own, as one router is in
:mod:`kvviz.cluster.deployment`: its deployments (instances, GPUs per instance) run cheapest first, each in
full on the cluster (:func:`kvviz.cluster.deployment.routed`), until one meets the targets and every
deployment as cheap has run. The stacks' runs go together, a batch at a time, to a process pool or a
Ray cluster, one task per deployment; the answer is the cheapest of every stack's cheapest, naming
its router and its engine. ``progress(done, total)`` is told after each batch: the runs done, and
the most still to run (it falls as stacks find their answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from kvviz.cluster.deployment import MAX_RUNS, RoutedSearch, candidates, cluster_config, next_batch, refusals, routed
from kvviz.cluster.engines import parse_engine
from kvviz.cluster.routers import MAX_INSTANCES, parse_router
from kvviz.cluster.simulate import ClusterConfig, cost
from kvviz.common import budget
from kvviz.common.errors import require
from kvviz.prefix_cache.replay import PrefixReplay
from kvviz.tiers.config import TierConfig
from kvviz.tiers.plan import plain
from kvviz.tiers.pool import check_address, run_tasks
from kvviz.tiers.search import Targets, cheapest_meeting
from kvviz.traces import Trace

Stack = tuple[str, str]
"""(router, engine)."""

Counter = Callable[[int, int | None], None]
"""``progress(done, total)``: runs done, and of how many (None: not known)."""


@dataclass(frozen=True)
class StacksSearch:
    """Each stack's own search (:class:`RoutedSearch`) and the cheapest of their answers."""

    targets: Targets
    searches: dict[Stack, RoutedSearch]

    @property
    def engines(self) -> list[str]:
        return list(dict.fromkeys(e for _, e in self.searches))

    @property
    def best(self) -> pd.Series | None:
        """The cheapest of the stacks' answers, naming its router and engine; at equal cost, the fastest."""
        found = [
            {"router": r, "engine": e, **s.best.to_dict()} for (r, e), s in self.searches.items() if s.best is not None
        ]
        return None if not found else cheapest_meeting(pd.DataFrame(found))

    def summary(self) -> dict[str, object]:
        """One stack: its search's summary, naming the engine. Several: the cheapest overall, then each
        router's search (``routers``, by name) on one engine, or each engine's routers (``engines``)."""
        if len(self.searches) == 1:
            (_, engine), only = next(iter(self.searches.items()))
            return {**only.summary(), "engine": engine}
        best = self.best
        each = {
            e: {r: {**s.summary(), "engine": e} for (r, en), s in self.searches.items() if en == e}
            for e in self.engines
        }
        out: dict[str, object] = {
            "target_p90_ttft_s": self.targets.p90_s,
            "target_p99_ttft_s": self.targets.p99_s,
            "best": None if best is None else {k: plain(v) for k, v in best.items() if k != "meets"},
            "best_cost_per_hour_is": "the whole cluster's; cost_per_instance_hour is one instance's",
            "runs": sum(len(s.tried) for s in self.searches.values()),
            "warnings": [] if best is not None else ["no router, engine and deployment searched meets the targets"],
        }
        if len(each) == 1:
            out["engine"], out["routers"] = next(iter(each.items()))
        else:
            out["engines"] = each
        return out


def _row(shared: tuple, item: tuple[TierConfig, str, str]) -> dict:
    """One deployment behind one router on one engine, run in full: a task of the process pool or Ray."""
    trace, replay, targets = shared
    c, router, engine = item
    s = routed(trace, c, router, replay, engine=engine).summary()
    ttft = s["ttft_s"]
    return {
        "router": router,
        "engine": engine,
        "instances": c.instances,
        "gpus": c.gpus,
        "each_instance_keeps": s["each_instance_keeps"],
        "hit_ratio": s["hit_ratio"],
        "shared_hit_ratio": s["reference"]["hit_ratio"],
        "ttft_p50_s": ttft["p50"],
        "ttft_p90_s": ttft["p90"],
        "ttft_p99_s": ttft["p99"],
        "load_imbalance": s["load_imbalance"],
        "cost_per_hour": s["cost_per_hour"],
        "cost_per_instance_hour": s["cost_per_hour"] / c.instances,
        "cost_per_million_input_tokens": s["cost_per_million_input_tokens"],
        "meets": targets.met(ttft),
    }


def _slowest(step: list[tuple[TierConfig, str, str]], replay: PrefixReplay) -> ClusterConfig:
    """The cluster of a batch whose runs cost the most per access: LMCache's backends, when any run has them."""
    c, _, engine = max(step, key=lambda item: item[2] != "sglang")
    return cluster_config(c, replay, engine=engine)


def search_stacks(
    trace: Trace,
    config: TierConfig,
    routers: Sequence[str],
    engines: Sequence[str],
    targets: Targets,
    *,
    gpus: Sequence[int] | None = None,
    instances: Sequence[int] | None = None,
    max_runs: int = MAX_RUNS,
    ray_address: str | None = None,
    workers: int | None = None,
    progress: Counter | None = None,
) -> StacksSearch:
    """Each router's cheapest deployment meeting ``targets`` on each engine (instances, default 2 to the
    cluster's limit, and GPUs per instance, default the config's), and the cheapest overall. A stack
    stops once one meets the targets and every deployment as cheap has run (a batch may run some
    dearer ones: the answer is the same), or at ``max_runs``."""
    from kvviz.prefix_cache.replay import prepare

    check_address(ray_address)
    stacks = [
        (r, e)
        for e in dict.fromkeys(parse_engine(e) for e in engines)
        for r in dict.fromkeys(map(parse_router, routers))
    ]
    replay = prepare(trace)
    todo = candidates(config, gpus or [config.gpus], instances or range(2, MAX_INSTANCES + 1))
    for c in todo:
        require(not refusals(c), "; ".join(refusals(c)), field="router")
    batch = workers or (8 if ray_address is not None else 1)
    rows: dict[Stack, list[dict]] = {s: [] for s in stacks}
    met_at: dict[Stack, float | None] = dict.fromkeys(stacks)
    done = 0
    while True:
        step = [(c, *s) for s in stacks for c in next_batch(todo, rows[s], met_at[s], batch, max_runs)]
        if progress is not None:
            progress(done, done + sum(len(next_batch(todo, rows[s], met_at[s], max_runs, max_runs)) for s in stacks))
        if not step:
            break
        budget.check(cost(replay, len(step), _slowest(step, replay)))
        for row in run_tasks(
            replay, (trace, replay, targets), _row, step, ray_address=ray_address, workers=workers, short=True
        ):
            s = (row["router"], row["engine"])
            rows[s].append(row)
            if row["meets"] and (met_at[s] is None or row["cost_per_hour"] < met_at[s]):
                met_at[s] = row["cost_per_hour"]
        done += len(step)
    searches = {}
    for s in stacks:
        exhausted = met_at[s] is None and len(rows[s]) < len(todo)
        tried = pd.DataFrame([{k: v for k, v in row.items() if k not in ("router", "engine")} for row in rows[s]])
        searches[s] = RoutedSearch(s[0], targets, tried, exhausted)
    return StacksSearch(targets, searches)
