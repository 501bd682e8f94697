"""Tiered KV caches sized for a trace: GPU HBM, host DRAM and storage, answered in hits, TTFT and dollars.

The API (stable; the Tiers page and ``kvviz tiers`` / ``kvviz plan`` build on it)::

    TierConfig(model="llama-3-8b", gpu="h100", gpus=1, tp=1, kv_fraction=0.9, hbm_gib=None,
               dram_gib=0, ssd_gib=0, ssd_drives=1, remote_gib=0, remote_gb_s=50, instances=1,
               policy="lru", write_policy="write_through", overlap=True, mfu=0.6, load="load",
               prices=None)                       # sizes in GiB per instance; math.inf: unbounded
        .hbm_for_kv_gib .derived_hbm_gib .servers .storage ("ssd" | "remote") .cost_per_hour() .warnings()

    replay(trace_or_prepared, config, *, baselines=True) -> TierResult
        .requests (DataFrame, one row per request)  .hit_blocks {gpu, dram, ssd, remote} (used)
        .found_blocks (held)  .hit_ratio  .ceiling_hit_ratio  .ttft(column) {p50, p90, p99}  .tokens()
        .prefill_gpu_s  .prefill_gpu_s_no_cache  .tokens_per_gpu_s  .cost_per_hour  .offered_load
        .instances_needed  .cost_per_million_input_tokens (at the trace's rate)
        .cost_per_million_input_tokens_fully_busy  .warnings()  .summary() (the CLI's JSON)

    search(trace_or_prepared, config, Targets(p90_s, p99_s=None), *, gpus=None, instances=None,
           steps=Steps()) -> Found            # kvviz.tiers.search: the cheapest deployment
        .best  .tried (DataFrame)  .summary()

    plan(trace_or_prepared, config, target_p90_s, *, dram_sizes=None, storage_sizes=None,
         shares=(0.8, 0.9, 0.95), ray_address=None, workers=None) -> Plan
        .reaches (Reach: tier, share, blocks, gib, cost_per_hour)  .grid (DataFrame)  .front
        .best  .summary()

    routed(trace, config, router) -> Routed        # kvviz.cluster.deployment: the instances each with its own
        .row .reference .ttft_s .per_instance       # GPU cache (and DRAM and SSD; --remote one shared pool)
        .summary()                                  # behind a router (kvviz.cluster)
    search_stacks(trace, config, routers, engines, Targets(...), *, gpus=None, instances=None,
                  ray_address=None, workers=None, progress=None) -> StacksSearch   # kvviz.cluster.search:
        .searches {(router, engine): RoutedSearch}  .best (naming router and engine)  .summary()
        # each router on each engine (sglang, vllm-lmcache); progress(done, total) after each batch

Prices (``config.prices``, ``kvviz.common.hardware.DevicePrices``) are dollars per device-hour, rented
(the default) or bought (``hardware.Purchase(...).hourly()``: purchase prices over years plus power);
``.basis`` says which.

Modules, one idea each: ``config`` (the deployment and its prices), ``cache`` (HiCache's tiers as
a compiled replay), ``latency`` (load or recompute, then the queue), ``replay`` (one answer),
``plan`` (each tier's reaches, a grid of sizes), ``search`` (the cheapest deployment), ``routed``
(instances behind a router, one router or all searched), ``stacks`` (routers on engines searched),
``pool`` (where a grid or the routers' runs go), ``cli`` (the commands' options), ``figures`` (TTFT
against its baselines, the cost–TTFT front).
"""

from kvviz.tiers.config import POLICIES, WRITE_POLICIES, TierConfig
from kvviz.tiers.plan import Plan, Reach, plan
from kvviz.tiers.replay import Capacities, TierResult, replay

__all__ = ["POLICIES", "WRITE_POLICIES", "Capacities", "Plan", "Reach", "TierConfig", "TierResult", "plan", "replay"]
