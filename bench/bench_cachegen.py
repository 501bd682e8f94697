"""Timings of the CacheGen page's core: the codec on a 4K-token, 32-layer synthetic KV (target:
encode + decode <= 10 s) and streaming over 1,000 random traces (target: <= 2 s).

Run: .venv/bin/python -m bench.bench_cachegen   (prints numbers; no assertions)
"""

from __future__ import annotations

import time

import numpy as np

from bench.timing import timed
from kvviz.cachegen import codec, compare, levels, rans
from kvviz.cachegen import streaming as S
from kvviz.cachegen.kv import SyntheticKV, profile_context, synthetic_kv


def bench_codec() -> None:
    spec = SyntheticKV(layers=32, tokens=4096, channels=128, rho=0.9)
    kv = timed(
        f"generate KV {spec.layers}x2x{spec.tokens}x{spec.channels} "
        f"({spec.layers * 2 * spec.tokens * spec.channels / 1e6:.1f}M values)",
        lambda: synthetic_kv(spec),
    )
    for name, cfg in (
        ("artifact (no delta, shipped tables)", codec.ARTIFACT),
        ("paper (delta, offline tables)", codec.PAPER),
    ):
        profile = codec.offline_counts(synthetic_kv(profile_context(spec)), cfg) if cfg.tables == "offline" else None
        t0, c0 = time.perf_counter(), time.process_time()
        bs = timed(f"encode, {name}", lambda: codec.encode(kv, cfg, profile))
        back = timed(f"decode, {name}", lambda: codec.decode(bs))
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        exact = np.array_equal(back, codec.reconstruct(codec.quantize_kv(kv, cfg), cfg, kv.shape[2]))
        ideal = (bs.ideal_data_bits / 8 + bs.header_bytes + bs.anchor_bytes) * 8 / bs.values
        print(
            f"  encode+decode {total:.2f} s wall, {cpu:.2f} s CPU (target <= 10 s); {bs.bits_per_value:.3f} bits/value "
            f"(−Σlog2 p bound {ideal:.3f}); round trip {'exact' if exact else 'MISMATCH'}"
        )
    streams = np.random.default_rng(0).integers(0, 31, (8192, 4096))
    model = rans.fit_model(np.ones((1, 31)))
    coded = timed(
        "rANS alone: encode 8,192 streams x 4,096 symbols", lambda: rans.encode(streams, model, np.zeros(8192, int))
    )
    timed("rANS alone: decode the same", lambda: rans.decode(coded, model, np.zeros(8192, int)))


def bench_streaming() -> None:
    measured = timed("measure levels 1-3 and quant8 (codec sizes, record-world answers)", levels.measure)
    print(measured.table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    setup = S.StreamSetup(measured.levels, measured.quant8)
    for label, bw in (
        ("persistent 0.9", S.persistent_traces(1000, setup.n_chunks, 0.9, 0)),
        ("i.i.d.", S.iid_traces(1000, setup.n_chunks, 0)),
    ):
        c0 = time.process_time()
        runs = timed(f"stream 1,000 {label} traces, 8 policies incl. oracle (<= 2 s)", lambda: S.run_all(setup, bw))
        print(
            f"  {time.process_time() - c0:.2f} CPU s; the budget estimated "
            f"{S.stream_cost(setup, 1000, len(runs)).seconds:.2f} s"
        )
        print(S.summary(runs).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    bw = S.persistent_traces(1000, setup.n_chunks, 0.9, 0)
    slos = np.geomspace(0.1, 5.0, 14)
    timed("SLO sweep: 14 SLOs x 8 policies x 1,000 traces", lambda: S.slo_sweep(setup, bw, slos))


def bench_study() -> None:
    spec = SyntheticKV(layers=8, tokens=2048, channels=128)
    kv, profile = synthetic_kv(spec), synthetic_kv(profile_context(spec))
    c0 = time.process_time()
    timed(f"codec study on {kv.size / 1e6:.1f}M values", lambda: compare.study(kv, profile, 2, 10, 4.0))
    print(f"  {time.process_time() - c0:.2f} CPU s; the budget estimated {compare.study_cost(kv.size).seconds:.2f} s")


if __name__ == "__main__":
    bench_streaming()
    bench_study()
    bench_codec()
