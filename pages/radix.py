"""Radix cache & HiCache: SGLang's prefix tree and its GPU/CPU tiers, stepped through operation by operation."""

from dataclasses import asdict, replace

import streamlit as st

from kvviz.figures.radix import totals_figure, tree_figure
from kvviz import compare_rows as cmp
from kvviz.hiradix import LOAD_BACK_THRESHOLD, WRITE_POLICIES
from kvviz.radix import POLICIES
from kvviz.strata_sched import DEFAULT_THRESHOLD
from kvviz.radix_scenarios import (PRESETS, ReplayConfig, eviction_steps, parse_text, repeat_prompt_hit, replay,
                                   script_from_trace, to_text, totals_frame)
from ui import frame, keys
from ui.traces import session_trace

frame.header("radix", "How a prefix cache fills, splits, evicts, spills to CPU memory and comes back — one "
                      "scheduling round at a time.")

TREES = {"radix": "RadixCache", "hiradix": "HiRadixCache"}          # URL values are the shown labels
BY_TITLE = {p.title: k for k, p in PRESETS.items()}
CONTROL_KEYS = {"cache": "radix_cache", "device_capacity": "radix_device", "host_capacity": "radix_host",
                "page_size": "radix_page", "eviction_policy": "radix_policy", "write_policy": "radix_write",
                "deferral": "radix_strata", "threshold": "radix_threshold", "auto_ack": "radix_ack"}


def preset_settings(title: str) -> dict:
    """The control values a preset was written for, keyed by widget key."""
    values = {**asdict(ReplayConfig()), **PRESETS[BY_TITLE.get(title, "sglang9")].suggested}
    return {key: TREES[values[name]] if name == "cache" else values[name] for name, key in CONTROL_KEYS.items()}


def apply_suggested() -> None:
    """Choosing a preset brings its settings (and the URL then carries them)."""
    for key, value in preset_settings(st.session_state["radix_preset"]).items():
        st.session_state[key] = value
    st.session_state["radix_restart"] = True   # the slider (whose range changes) is reset where it is drawn


LIMITS = {"radix_device": (1, 10_000_000), "radix_host": (1, 100_000_000), "radix_page": (1, 4096),
          "radix_threshold": (0, 1_000_000)}
CHOICES = {"radix_cache": tuple(TREES.values()), "radix_policy": POLICIES, "radix_write": WRITE_POLICIES,
           "radix_strata": ("true", "false"), "radix_ack": ("true", "false")}


def valid_in_url(key: str) -> bool:
    raw = st.query_params.get(key)
    if raw is not None and key in LIMITS:
        return raw.isdigit() and LIMITS[key][0] <= int(raw) <= LIMITS[key][1]
    return raw in CHOICES.get(key, ())


for key, value in preset_settings(st.query_params.get("radix_preset", "")).items():
    if key not in st.session_state and not valid_in_url(key):   # a fresh view: the preset fills what the URL lacks
        st.session_state[key] = value


WINDOW = 25          # a long script keeps the trees of this many steps at a time


@st.cache_data(max_entries=32, ttl="1h", show_spinner="Replaying the script…")
def cached_replay(text: str, name: str, config: tuple, window: tuple[int, int] | None = None):
    """Simulate once; the trees of the steps in ``window`` (start, stop) are kept, so moving the
    slider inside it is a lookup (``None``: no tree, only the totals of every step)."""
    return replay(parse_text(text, name), ReplayConfig(*config), snapshots=range(*window) if window else False)


with st.sidebar:
    st.header("Request script")
    source = st.segmented_control("Source", ["Preset", "Type", "Trace"], default="Preset", required=True,
                                  key="radix_source", bind="query-params")
    preset = PRESETS[BY_TITLE[st.selectbox("Preset", list(BY_TITLE), key="radix_preset", bind="query-params",
                                           on_change=apply_suggested, disabled=source == "Trace")]]
    st.header("Cache")
    kind = {v: k for k, v in TREES.items()}[st.segmented_control(
        "Tree", list(TREES.values()), required=True, key="radix_cache",
        bind="query-params", help="RadixCache: GPU only. HiRadixCache: GPU plus a CPU tier (SGLang HiCache).")]
    device = st.number_input("GPU capacity (tokens)", *LIMITS["radix_device"], key="radix_device", bind="query-params")
    host = st.number_input("CPU capacity (tokens)", *LIMITS["radix_host"], key="radix_host", bind="query-params",
                           disabled=kind != "hiradix")
    page = st.number_input("Page size (tokens)", *LIMITS["radix_page"], key="radix_page", bind="query-params")
    policy = st.selectbox("Eviction policy", POLICIES, key="radix_policy", bind="query-params")
    write = st.selectbox("Write policy", WRITE_POLICIES, key="radix_write", bind="query-params",
                         disabled=kind != "hiradix", help="When a node gets its CPU copy (HiCache).")
    st.header("Scheduler")
    strata = st.toggle("Strata delay-hit deferral", key="radix_strata", bind="query-params")
    threshold = st.number_input("Defer when in-flight match exceeds (tokens)", *LIMITS["radix_threshold"],
                                key="radix_threshold",
                                bind="query-params", disabled=not strata)
    auto_ack = st.toggle("Acknowledge transfers every round", key="radix_ack", bind="query-params",
                         help="SGLang checks finished host writes and loads once per scheduler loop.")
    legacy = st.toggle("Legacy hit counts", key="radix_legacy", bind="query-params",
                       help="Before SGLang PR #18843 the RadixCache never counted hits, so LFU behaved like LRU.")

if source == "Preset":
    text, name = preset.text, preset.title
    st.caption(f"**{preset.title}.** {preset.blurb}")
elif source == "Type":
    text = st.text_area(
        "One step per line: `prompt => output` (words or integers, `a..b` for a run), `&` to arrive with the "
        "line above, or `match` / `insert` / `lock` / `unlock` tokens, `evict N`, `evict_host N`, `ack`.",
        preset.text, height=180, key="radix_text")
    name = "typed script"
else:
    trace = session_trace()
    if trace is None:
        st.info("No trace is loaded in this session. Open the **Trace** page, pick or upload a trace there, "
                "then come back: its first requests replay here with block ids as tokens.",
                icon=":material/timeline:")
        st.page_link("pages/trace.py", label="Go to the Trace page", icon=":material/arrow_forward:")
        st.stop()
    c1, c2 = st.columns(2)
    n = c1.number_input("First N requests", 1, 2000, 30, key="radix_n", bind="query-params")
    round_ms = c2.number_input("Round length (ms)", 1, 3_600_000, 1000, key="radix_round", bind="query-params",
                               help="Requests arriving in the same window are scheduled in the same round.")
    with frame.user_errors():
        text, name = to_text(script_from_trace(trace, int(n), int(round_ms))), f"{trace.name} (first {n})"
    st.caption(f"One token = one {trace.block_size}-token block, so capacities count blocks.")

config = ReplayConfig(kind, int(device), int(host), int(page), policy, write, strata, int(threshold), auto_ack,
                      "legacy" if legacy else "upstream")
with frame.user_errors():
    rep = cached_replay(text, name, tuple(asdict(config).values()))
    other = cached_replay(text, name, tuple(asdict(replace(config, deferral=not strata)).values()))

if rep.error:
    st.error(f"The replay stopped: {frame.plain(rep.error)}", icon=":material/error:")
last = rep.n_steps - 1
raw_step = st.query_params.get("radix_step", "0")
if "radix_step" not in st.session_state:   # the step a shared link points at (the URL is kept by hand:
    st.session_state["radix_step"] = int(raw_step) if raw_step.isdigit() else 0   # the range changes)
if st.session_state.pop("radix_restart", False):
    st.session_state["radix_step"] = 0
st.session_state["radix_step"] = min(st.session_state["radix_step"], last)
keys.autoplay("radix_step", rep.n_steps)   # Play, and ← → for the ◀ ▶ buttons below
keys.keyboard_steps("◀", "▶")


def show_step(step: int) -> None:
    st.session_state["radix_step"] = min(max(step, 0), last)


left, mid, right = st.columns([1, 8, 1], vertical_alignment="bottom")
step = st.session_state["radix_step"]
left.button("◀", key="radix_prev", on_click=show_step, args=(step - 1,), help="Previous step", width="stretch")
step = mid.slider("Step", 0, max(last, 1), key="radix_step", disabled=last == 0)
right.button("▶", key="radix_next", on_click=show_step, args=(step + 1,), help="Next step", width="stretch")
st.query_params["radix_step"] = str(step)

start = 0 if rep.n_steps <= 4 * WINDOW else step // WINDOW * WINDOW
with frame.user_errors():
    shots = cached_replay(text, name, tuple(asdict(config).values()),
                          (start, rep.n_steps if start == 0 and rep.n_steps <= 4 * WINDOW else start + WINDOW))
row = rep.steps.iloc[step]
st.markdown(f"#### Step {step} of {last}: {frame.plain(row.op)}")
# The lines quote the script's own words: shown as text, keeping only the replay's bold ids.
st.markdown("\n".join(f"- {frame.plain(line, 2000, bold=True)}" for line in row.lines))
hit_rate = (row.device_hit + row.loaded_back) / row.prompt_tokens if row.prompt_tokens else 0
off_or_on = other.steps.iloc[-1].redundant
metrics = [("On GPU", row.device_tokens, f"of {device:,} tokens; {row.reserved:,} more held by running requests")]
if kind == "hiradix":
    metrics.append(("On CPU", row.host_tokens, f"of {host:,} tokens"))
metrics += [
    ("Cache hits", row.device_hit + row.loaded_back,
     f"{hit_rate:.0%} of admitted prompt tokens: {row.device_hit:,} hit on the GPU, {row.loaded_back:,} loaded "
     f"back from CPU, {row.host_recomputed:,} found on CPU but recomputed"),
    ("Evicted", row.evicted_device, f"tokens evicted from the GPU; {row.evicted_host:,} dropped from the CPU"),
    ("Redundant", row.redundant,
     f"Tokens recomputed while another request was computing them. Whole script: "
     f"{rep.steps.iloc[-1].redundant:,} with deferral {'on' if strata else 'off'}, {off_or_on:,} with it "
     f"{'off' if strata else 'on'}."),
]
for col, (label, value, tip) in zip(st.columns(len(metrics)), metrics):
    col.metric(label, f"{value:,}", border=True, help=tip)

clock_to = rep.steps["clock_to"].to_numpy()
view = st.segmented_control("View", ["Tree", "Text dump", "Requests"], default="Tree", required=True,
                            key="radix_view", bind="query-params")
if view == "Tree":
    frame.figure(tree_figure(shots.tree(step), clock_range=(int(row.clock_from), int(row.clock_to)),
                             step_of=lambda k: int(clock_to.searchsorted(k)),
                             width_chars=200 if frame.presenter() else 130), key="radix_tree")
    st.caption("Gold halo: used in this step. Dark ring: locked (a running request or a pending transfer). "
               "Dotted edges: spans being computed. Hover a node for its hit count and last access.")
elif view == "Text dump":
    st.code(shots.dump(step), language=None)
else:
    st.dataframe(rep.requests, hide_index=True, width="stretch")

frame.figure(totals_figure(totals_frame(rep), step), key="radix_totals")

frame.explain(
    "**The rules (SGLang `radix_cache.py` / `hiradix_cache.py`).** Edges hold tokens. A lookup walks from the "
    "root and **splits** an edge where the match ends, even for a read-only lookup; it never counts a hit. "
    "A request looks up its prompt minus the last token (a forward pass must produce logits), locks the "
    "matched node, allocates the rest (evicting only the shortfall), and inserts its prompt after prefill "
    "and prompt + output at finish: each insert adds 1 to the hit count of the nodes it walks. Eviction "
    "frees whole unlocked leaves in policy order and cascades up. In **HiCache**, a node is copied to CPU "
    "memory when its hit count reaches the write policy's threshold (and is locked until the copy is "
    "acknowledged); evicting a GPU+CPU node keeps it in the tree as CPU-only; a CPU hit of at least 10 "
    "tokens is loaded back, a shorter one recomputed. **Strata** hangs each admitted request's uncached "
    "span in the tree as an in-flight node; a request whose match runs over more than the threshold of "
    "in-flight tokens is deferred a round, to the head of the queue, instead of computing them again.")

here = int(rep.steps.iloc[-1].redundant)
with_on, with_off = (here, int(off_or_on)) if strata else (int(off_or_on), here)
frame.what_to_notice([
    f"A repeated prompt's last token is never reused: the same 10-token prompt twice reports "
    f"{repeat_prompt_hit(10, 1)} cached tokens; with pages of 128 a 256-token repeat reports "
    f"{repeat_prompt_hit(256, 128)} and a 257-token one {repeat_prompt_hit(257, 128)}.",
    "Page size loses partial pages: raise it to 4 and watch branches start only at page boundaries — the "
    "tokens of the page where two prompts diverge are recomputed by both.",
    "Write-through versus write-back changes what survives eviction: under write-through every node is on "
    "CPU (green) from its first insert, so GPU eviction only turns it orange; under write_through_selective "
    "a node seen once has no CPU copy and is simply deleted; write-back copies at eviction time.",
    f"Deferral avoids recomputing the same document twice: over this script, redundant prefill is "
    f"{with_off:,} tokens with deferral off and {with_on:,} with it on." if with_on < with_off else
    f"On this script deferral saves nothing: redundant prefill is {with_off:,} tokens with deferral off and "
    f"{with_on:,} with it on (*Delay hits (Strata)* is a script where it does).",
])

hits = (repeat_prompt_hit(256, 128), repeat_prompt_hit(257, 128))
rows = [cmp.close("Cached tokens for an identical prompt, page 128 (256 / 257 tokens)",
                  "128 / 256 (SGLang issue #27206)", f"{hits[0]} / {hits[1]}", [(128, hits[0]), (256, hits[1])], 0.0)]
if source == "Preset" and preset is PRESETS["sglang9"]:
    evicting = [k + 1 for k in eviction_steps(rep)]
    rows.append(cmp.check("Steps of the SGLang paper's Fig. 3 that evict", "(5), (8), (9)",
                          f"{', '.join(f'({k})' for k in evicting) or 'none'} (these settings; the figure's numbering)",
                          evicting == [5, 8, 9], "the same steps evict"))
frame.paper_vs_sim(rows + [
    cmp.given("Strata delay-hit threshold (in-flight tokens)", f"more than {DEFAULT_THRESHOLD} (§4.3.1)",
              f"more than {threshold}" if strata else "deferral off", "the threshold control"),
    cmp.given("HiCache load-back floor", f"{LOAD_BACK_THRESHOLD} tokens (hiradix_cache.py)",
              f"{LOAD_BACK_THRESHOLD} tokens", "kvviz.hiradix.LOAD_BACK_THRESHOLD, read from SGLang's source"),
    cmp.check("Delay-hit fix, min-distance workload", "+42% throughput (Strata §5.3.3)",
              f"redundant prefill {with_off:,} → {with_on:,} tokens (off → on)", with_on < with_off or with_off == 0,
              "deferral leaves less redundant prefill than no deferral (tokens, not throughput)"),
], note="The paper figure has no token counts or memory size, so which steps evict depends on the capacity "
        "you choose; its numbering starts at (1) = the empty tree, this page's at step 0. Strata reports "
        "throughput on GPUs; this page counts tokens, so it shows the mechanism, not the speed-up. The "
        "Strata scheduling rules come from secondary sources and the lecture notes (see docs/radix.md).")
