"""Where a page gets its trace: the synthetic generator, the bundled example, the trace library,
or an upload.

The trace follows the viewer: the one chosen (or kept in the library) on any page is the session's
trace, and every trace picker opens on it, with its own controls set to name it, so the page's URL
names it too (a library trace by its id, a synthetic one by its knobs) and a copied link opens the
same trace in any browser. Each picker remembers which choice of the session it last showed; a
newer one, made on another page, replaces its own.

An upload is held by ``ui.kit.uploads`` (its bytes and parsed traces, once per content) while a
connected session shows it; the session keeps only its digest. An upload stays in its session unless
the viewer keeps it in the library ("Keep in the trace library").
"""

from __future__ import annotations

import hashlib
from dataclasses import fields
from pathlib import PurePath

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from kvviz.common.errors import InputError
from kvviz.traces import (
    UPLOAD_LIMIT_MIB,
    UPLOADS,
    Format,
    ReadOptions,
    TimeUnit,
    Trace,
    fingerprint,
    library,
    load_trace,
)
from kvviz.traces.formats import SPECS
from kvviz.traces.ingest import reading_cost, refuse_if_too_large
from kvviz.traces.source import Survey, survey
from kvviz.traces.timeunits import on_page
from kvviz.traces.workload import WorkloadConfig, generate
from ui.kit import links, streamlit_private, uploads
from ui.kit.errors import user_errors
from ui.kit.routing import arrival_params
from ui.kit.text import plain
from ui.kit.work import confirm_cost

EXAMPLE = PurePath(__file__).parents[2] / "assets" / "example_trace.jsonl"
SESSION_KEY = "kvviz_trace_spec"
VERSION_KEY = "kvviz_trace_version"  # how many choices the session has made (each one on some page)
SYNCED_KEY = "kvviz_trace_synced"  # picker prefix -> the session's choice it last showed
SET_KEY = "kvviz_trace_set"  # picker controls whose value this module set, until they are drawn
SESSION_ENDED = (
    "was kept only in your browser session, which has ended (the page was closed or offline for more "
    f"than {uploads.GRACE_S} seconds, the server restarted, or this link comes from another session)"
)
HASH_TRACE = {Trace: fingerprint}
"""``hash_funcs`` for ``st.cache_data`` functions that take a Trace: key them on its content."""
SOURCES = ("Synthetic", "Example", "Library", "Upload")
SOURCE_OF = dict(zip(("synthetic", "example", "library", "upload"), SOURCES))  # spec kind -> source
LEGACY_SOURCE = "Session trace"  # older links name this source, which now always names a real one
KNOB_KEYS = {
    "requests": "requests",
    "seed": "seed",
    "share_doc_qa": "qa",
    "share_chat": "chat",
    "share_oneshot": "oneshot",
    "documents": "docs",
    "doc_zipf": "zipf",
    "rate": "rate",
}
"""The synthetic generator's knobs by the key suffix of their control."""
READING_KEYS = ("format", "block_size", "time_unit", "skip_bad", "rechain")
FORMAT_WORDS = {"detect": "Detect from the file", **{f.value: SPECS[f].title for f in Format}}
"""The Format control's options: each format by its title (the URL carries these words; a link with the
format's code, ``mooncake``, opens the same view)."""
FORMAT_DEFAULT = "the format's"
UPLOADED_SUFFIX = "_uploaded"  # + a picker's prefix: the last upload it showed (digest and name)
LIBRARY_SUFFIX = "_library_shown"  # + a picker's prefix: the library id it last showed
UPLOAD_TYPES = ["jsonl", "json", "csv", "txt", "gz", "zst"]
WITH_BLOCK_IDS = (
    "Mooncake JSONL (`timestamp`, `input_length`, `output_length`, `hash_ids`), Qwen-Bailian JSONL, "
    "or the same columns as CSV"
)


def _parsed(spec: dict) -> Trace:
    """An upload's trace, parsed once per content, name and reading options while it is held."""
    options = _upload_options(spec)
    name = spec.get("name", "uploaded trace")
    spec = {**spec, "options": options, "name": name}
    counted = None
    if (data := uploads.unparsed(spec)) is not None:
        counted = _confirm_reading(spec.get("digest") or hashlib.blake2b(data, digest_size=16).hexdigest(), data)
    trace = uploads.trace(
        spec, lambda data: load_trace(data, name=name, options=_options(options), limits=UPLOADS, counted=counted)
    )
    if trace is None:
        raise InputError(f"Your upload {SESSION_ENDED}: upload the file again.")
    return trace


def _confirm_reading(digest: str, data: bytes) -> Survey:
    """Before an upload is parsed: refuse it when reading it needs more memory than the server has
    free, and ask first when it would take long, naming its block ids and the memory they need
    (counted from its text, which a small compressed file can expand into a great deal of)."""
    counted = _counted(digest, data)
    refuse_if_too_large(counted)
    confirm_cost(reading_cost(counted), "read_upload")
    return counted


@st.cache_data(max_entries=64, ttl="1h", show_spinner="Counting what the upload holds…")
def _counted(digest: str, _data: bytes) -> Survey:
    """An upload's text counted without parsing it (cached on its digest)."""
    return survey(_data, UPLOADS)


@st.cache_resource(max_entries=8, ttl=3600, show_spinner="Opening the library trace…", validate=library.unchanged)
def _library_trace(entry_id: str) -> Trace:
    """A library entry, opened again (or named damaged) once its files change."""
    return library.open_entry(entry_id)


@st.cache_resource(max_entries=1, ttl=3600)
def _example() -> Trace:
    return load_trace(str(EXAMPLE), name="example trace")


@st.cache_data(max_entries=16, ttl=3600, show_spinner="Generating the synthetic workload…")
def synthetic_trace(**knobs) -> Trace:
    """Generate a synthetic trace (cached on the generator's knobs)."""
    return generate(WorkloadConfig(**knobs))


def _options(key: tuple) -> ReadOptions:
    fmt, block_size, unit, skip, rechain = key
    return ReadOptions(
        format=Format(fmt) if fmt else None,
        block_size=block_size,
        time_unit=TimeUnit(unit) if unit else None,
        skip_bad_rows=skip,
        rechain=rechain,
    )


def trace_from_spec(spec: dict) -> Trace:
    """Rebuild a trace from the small description kept in the session."""
    kind = spec["kind"]
    if kind == "synthetic":
        return synthetic_trace(**spec["knobs"])
    if kind == "example":
        return _example()
    if kind == "library":
        return _library_trace(spec["id"])
    return _parsed(spec)


def session_trace(prefix: str) -> Trace | None:
    """The session's trace, for a page that replays it without a picker of its own. A library
    trace is named in the URL (``<prefix>_library``), and a link naming one opens it in a session
    that has none yet (it becomes that session's trace)."""
    key, spec = f"{prefix}_library", st.session_state.get(SESSION_KEY)
    if spec is None and library.is_entry_id(wanted := st.query_params.get(key)):
        spec = {"kind": "library", "id": wanted}
        trace = trace_from_spec(spec)  # a link to a missing entry says so here, and is not kept
        _publish(prefix, spec)
        return trace
    if spec and spec["kind"] == "library":
        st.query_params[key] = spec["id"]
    else:
        st.query_params.pop(key, None)
    return trace_from_spec(spec) if spec else None


def _publish(prefix: str, spec: dict) -> None:
    """``spec``, chosen on the picker ``prefix``, becomes the session's trace: every other picker
    shows it when it next draws."""
    version = st.session_state.get(VERSION_KEY, 0) + 1
    st.session_state[SESSION_KEY] = spec
    st.session_state[VERSION_KEY] = version
    st.session_state.setdefault(SYNCED_KEY, {})[prefix] = version


def _follow(prefix: str) -> None:
    """Before the picker ``prefix`` draws: the session's trace, if chosen since the picker last
    showed one (on another page, or before this page was first opened), becomes its choice."""
    spec, version = st.session_state.get(SESSION_KEY), st.session_state.get(VERSION_KEY, 0)
    synced = st.session_state.setdefault(SYNCED_KEY, {})
    if spec is None or synced.get(prefix, -1) >= version:
        return
    synced[prefix] = version
    _chosen(prefix)  # an arrival's source is replaced: it needs no explaining
    values = {f"{prefix}_source": SOURCE_OF[spec["kind"]]}
    if spec["kind"] == "synthetic":
        values |= {f"{prefix}_{suffix}": spec["knobs"][name] for name, suffix in KNOB_KEYS.items()}
    elif spec["kind"] == "library":
        values[f"{prefix}_library"] = spec["id"]
    elif spec["kind"] == "upload":
        values |= {f"{prefix}_{k}": v for k, v in zip(READING_KEYS, _reading_values(_upload_options(spec)))}
    _set_controls(values)


def _set_controls(values: dict) -> None:
    """Set picker controls' values through the Session State API, and note them for ``_default``."""
    st.session_state.update(values)
    st.session_state.setdefault(SET_KEY, set()).update(values)


def _default(key: str, value, unset=None):
    """``value`` as the default of the control ``key``, or ``unset`` (no default) in the run that
    draws it after ``_set_controls`` set its value: the value set wins either way, and Streamlit logs
    a warning with a stack trace for a control that has both."""
    set_here = st.session_state.get(SET_KEY, set())
    if key in set_here:
        set_here.discard(key)
        return unset
    return value


def _upload_options(spec: dict) -> tuple:
    """An upload spec's reading options (a spec set by older code carries only a block size)."""
    return tuple(spec.get("options") or (None, spec.get("block_size"), None, False, None))


def _reading_values(options: tuple) -> tuple:
    """The reading controls' values that give ``options`` (the inverse of ``_reading_controls``)."""
    fmt, block_size, unit, skip, rechain = options
    return (FORMAT_WORDS[fmt or "detect"], block_size, unit or FORMAT_DEFAULT, bool(skip), rechain is not False)


# Trace controls live in the URL (a shareable view) and in the session (kept across pages).
KEEP = {"bind": "query-params", "persist_state": "session"}


def _synthetic_knobs(prefix: str) -> dict:
    d = WorkloadConfig()
    st.caption("Synthetic workload")

    def keep(name: str) -> dict:
        key = f"{prefix}_{KNOB_KEYS[name]}"
        return {"key": key, "value": _default(key, getattr(d, name)), **KEEP}

    knobs = dict(
        requests=st.number_input("Requests", 100, 50_000, step=100, **keep("requests")),
        seed=st.number_input("Seed", 0, 10**6, **keep("seed")),
        share_doc_qa=st.slider("Share: document QA", 0.0, 1.0, step=0.05, **keep("share_doc_qa")),
        share_chat=st.slider("Share: multi-turn chat", 0.0, 1.0, step=0.05, **keep("share_chat")),
        share_oneshot=st.slider("Share: one-shot", 0.0, 1.0, step=0.05, **keep("share_oneshot")),
        documents=st.number_input("Documents in the pool", 1, 100_000, **keep("documents")),
        doc_zipf=st.slider("Document popularity skew (Zipf)", 0.0, 2.0, step=0.05, **keep("doc_zipf")),
        rate=st.number_input("Arrival rate (requests/s)", 0.1, 1000.0, step=0.5, **keep("rate")),
    )
    if note := share_note(knobs["share_doc_qa"], knobs["share_chat"], knobs["share_oneshot"]):
        st.caption(note)
    return {**{f.name: getattr(d, f.name) for f in fields(d)}, **knobs}


def share_note(doc_qa: float, chat: float, oneshot: float) -> str | None:
    """How the generator reads shares that do not add up to 1 (each divided by their sum), or None
    when they do, or are all zero (which the generator refuses with its own message)."""
    total = doc_qa + chat + oneshot
    if total <= 0 or abs(total - 1) < 1e-9:
        return None
    return (
        f"The shares add up to {total:.2f}, so each is divided by that: {doc_qa / total:.0%} document QA, "
        f"{chat / total:.0%} multi-turn chat, {oneshot / total:.0%} one-shot."
    )


def _library(prefix: str) -> dict | None:
    """The library picker. A damaged entry is listed with its reason; picking it shows the reason
    on the page (opening checks it first), and every other entry still opens."""
    try:
        entries = {e.id: e for e in library.entries()}
    except InputError as exc:
        st.error(plain(exc), icon=":material/error:")
        return None
    # The URL names the trace by its id (a bound selectbox would put the long label there), so a
    # copied link opens the same trace in any browser. The browser drops the id from the address
    # on another page and Streamlit the selectbox's state, so the picker keeps the id it showed
    # (``LIBRARY_SUFFIX``) to come back to.
    key = f"{prefix}_library"
    wanted = st.session_state.get(key) or st.query_params.get(key) or st.session_state.get(prefix + LIBRARY_SUFFIX)
    if library.is_entry_id(wanted) and wanted not in entries:
        st.warning(
            f"The trace {wanted} is not in the library (it was removed, or kept on another server).",
            icon=":material/link_off:",
        )
        if key in st.session_state:
            st.session_state[key] = None
    if not entries:
        st.caption(
            "The trace library is empty. Import a trace with `python -m kvviz import FILE`, or upload "
            "one and keep it in the library."
        )
        return None
    first = {} if key in st.session_state else {"index": list(entries).index(wanted) if wanted in entries else None}
    eid = st.selectbox(
        "Library trace",
        list(entries),
        key=key,
        placeholder="Pick a stored trace",
        format_func=lambda i: entries[i].label(),
        persist_state="session",
        **first,
    )
    if eid in entries:
        st.query_params[key] = st.session_state[prefix + LIBRARY_SUFFIX] = eid
        return {"kind": "library", "id": eid}
    st.query_params.pop(key, None)
    st.session_state.pop(prefix + LIBRARY_SUFFIX, None)
    return None


def _reading_controls(prefix: str) -> tuple:
    """How to read an upload: format, block size, time unit, bad rows, re-chaining (all in the URL)."""
    with st.expander("How to read the file"):
        fmt = links.worded(
            st.selectbox,
            "Format",
            FORMAT_WORDS,
            f"{prefix}_format",
            **KEEP,
            help="A CSV's columns are found by their names.",
        )
        block_size = st.number_input(
            "Block size (tokens per hash id)",
            1,
            1 << 20,
            None,
            key=f"{prefix}_block_size",
            placeholder="the format's (Mooncake 512, Qwen 16)",
            **KEEP,
        )
        unit = st.segmented_control(
            "Time unit",
            (FORMAT_DEFAULT, "ms", "s", "us"),
            default=_default(f"{prefix}_time_unit", FORMAT_DEFAULT),
            required=True,
            key=f"{prefix}_time_unit",
            **KEEP,
            help="The unit of the arrival numbers; the page says what it assumed.",
        )
        skip = st.toggle(
            "Skip bad rows",
            False,
            key=f"{prefix}_skip_bad",
            **KEEP,
            help="Load the good rows and report how many were left out, by reason.",
        )
        rechain = st.toggle(
            "Re-chain per-block ids",
            _default(f"{prefix}_rechain", True, unset=False),
            key=f"{prefix}_rechain",
            **KEEP,
            help="Qwen-Bailian hashes each block on its own; re-chaining makes equal ids mean "
            "equal prefixes (other formats are chained already).",
        )
    return (
        None if fmt == "detect" else fmt,
        int(block_size) if block_size else None,
        None if unit == FORMAT_DEFAULT else unit,
        bool(skip),
        None if rechain else False,
    )


def _upload(prefix: str) -> dict | None:
    options = _reading_controls(prefix)
    file = st.file_uploader(
        "Trace file (Mooncake or Qwen-Bailian JSONL, CSV; plain, .gz or .zst)",
        type=UPLOAD_TYPES,
        key=f"{prefix}_upload",
        max_upload_size=UPLOAD_LIMIT_MIB,
        help=f"Up to {UPLOAD_LIMIT_MIB} MiB as uploaded (a compressed file counts compressed). Parsed as data "
        "only; it stays in your session unless you keep it in the library.",
    )
    if file is None:
        # The uploader forgets its file when it is not drawn (another page, another source): the
        # session still has the upload, and the registry holds its bytes.
        if earlier := _earlier_upload(prefix):
            st.caption("Showing the trace you uploaded earlier in this session.")
            return {**earlier, "options": options}
        if arrival_params().get(f"{prefix}_source") == "Upload":  # a link or a reconnect: nothing here yet
            st.warning(
                f"Your upload {SESSION_ENDED}: upload the file again, or press **Keep in the trace library** "
                "after uploading so that it survives.",
                icon=":material/cloud_off:",
            )
        return None
    # ui.kit.uploads holds the bytes, the session keeps their digest.
    return {
        "kind": "upload",
        "data": streamlit_private.uploaded_bytes(file),
        "name": upload_name(file.name),
        "options": options,
    }


def _earlier_upload(prefix: str) -> dict | None:
    """The upload to show when the uploader has no file: the session's trace if it is an upload
    (chosen last, maybe on another page), else the last one this picker showed."""
    session = st.session_state.get(SESSION_KEY)
    if session and session["kind"] == "upload":
        return session
    return st.session_state.get(f"{prefix}{UPLOADED_SUFFIX}")


# Streamlit's browser client (1.67) reruns the page when it reconnects only if a run was in flight or
# a fragment auto-reruns. After a server restart, a page showing an upload would otherwise stay
# on screen, stale, until the next click: its one registered auto-rerun makes the reconnect rerun the
# page, which then says the upload is gone. It fires once a day otherwise, and draws nothing.
RECONNECT_RERUN = 24 * 3600  # seconds


@st.fragment(run_every=RECONNECT_RERUN)
def _rerun_on_reconnect() -> None:
    """Nothing to draw: registering the auto-rerun is the point (see RECONNECT_RERUN)."""


def upload_name(filename: str) -> str:
    """A display name from an uploaded file's name: its last component, cut short (never a path)."""
    base = PurePath(str(filename).replace("\\", "/")).name.strip() or "uploaded trace"
    return base[:80]


def _chosen(prefix: str) -> None:
    """A source picked by hand: the one the session arrived with no longer needs explaining."""
    arrival_params().pop(f"{prefix}_source", None)


def trace_picker(prefix: str, *, sidebar: DeltaGenerator | None = None) -> Trace | None:
    """Sidebar controls that choose a trace; returns it, or None while an upload is awaited.

    The picker opens on the session's trace, and a trace chosen here becomes the session's trace,
    which every other page then shows. Bad uploads show a message naming the line and field and
    stop this page's run. ``sidebar``: a container in the sidebar to draw into (default: the
    sidebar's end), so a page whose views differ in having a trace keeps its other sidebar controls
    in place.
    """
    _follow(prefix)
    if arrival_params().get(f"{prefix}_source") == LEGACY_SOURCE:
        # On the page, not in the sidebar: presenter mode collapses the sidebar.
        st.warning(
            f"The session trace {SESSION_ENDED}: this page shows its own trace instead. Choose one on "
            "the Trace page again, or keep an upload in the trace library so that a link opens it.",
            icon=":material/cloud_off:",
        )
    with sidebar or st.sidebar:
        st.header("Trace")
        source = st.segmented_control(
            "Source",
            SOURCES,
            default=_default(f"{prefix}_source", SOURCES[0]),
            required=True,
            key=f"{prefix}_source",
            on_change=_chosen,
            args=(prefix,),
            **KEEP,
        )
        # Each source's own controls go in one container: the page's sidebar controls after it keep their
        # place, so switching the source does not remount them (Streamlit places elements by position).
        with st.container():
            spec = uploads.show(prefix, _source_spec(prefix, source))
    if spec is None:
        return None
    if spec["kind"] == "upload":  # under the page's prefix: resetting the page forgets it
        st.session_state[f"{prefix}{UPLOADED_SUFFIX}"] = {k: spec[k] for k in ("kind", "digest", "name") if k in spec}
    with user_errors():
        trace = trace_from_spec(spec)
    if spec != st.session_state.get(SESSION_KEY):
        _publish(prefix, spec)
    with st.container():  # likewise for the page: its elements keep their place, warnings or not
        for warning in trace.warnings:
            st.warning(plain(on_page(warning), 500))
    return trace


def _source_spec(prefix: str, source: str) -> dict | None:
    """The chosen source's controls (drawn here) and the trace spec they give; None while none is chosen."""
    if source == "Synthetic":
        return {"kind": "synthetic", "knobs": _synthetic_knobs(prefix)}
    if source == "Example":
        return {"kind": "example"}
    spec = _library(prefix) if source == "Library" else _upload(prefix)
    if spec is not None and spec["kind"] == "upload":
        _rerun_on_reconnect()
    return spec


def keep_in_library_button(prefix: str) -> None:
    """For an upload: one button that stores it in the library (sharing it) and switches the
    picker to it, so the URL names it by id."""
    if error := st.session_state.pop(f"{prefix}_keep_error", None):
        st.error(plain(error), icon=":material/error:")
    for note in st.session_state.pop(f"{prefix}_keep_notes", ()):
        st.info(plain(note), icon=":material/bookmark:")
    spec = st.session_state.get(SESSION_KEY)
    if not spec or spec["kind"] != "upload":
        return
    st.button(
        "Keep in the trace library",
        key=f"{prefix}_keep",
        icon=":material/bookmark_add:",
        on_click=_keep,
        args=(prefix, spec),
        help="Stores this trace on the server so that a copied link opens it for anyone; "
        "otherwise an upload stays in your session only.",
    )


def _keep(prefix: str, spec: dict) -> None:
    """Store the upload as a web-kept entry: it never evicts anything (a full library refuses it)."""
    try:
        stored = library.store(trace_from_spec(spec), spec.get("name"), origin=library.WEB)
    except library.SettingError:
        st.session_state[f"{prefix}_keep_error"] = (
            "Keeping traces is off: this server's trace library settings are "
            "not valid (whoever runs the server can fix them)."
        )
        return
    except InputError as exc:
        st.session_state[f"{prefix}_keep_error"] = str(exc)[:300]
        return
    st.session_state[f"{prefix}_keep_notes"] = stored.notes
    _set_controls({f"{prefix}_source": "Library", f"{prefix}_library": stored.entry.id})
    _publish(prefix, {"kind": "library", "id": stored.entry.id})


def replay_trace_picker(prefix: str) -> Trace:
    """``trace_picker`` for a page that replays block ids: while an upload is awaited, say what
    to upload, and for a trace without block ids say why this page cannot use it; either stops
    this page's run."""
    trace = trace_picker(prefix)
    if trace is None:
        st.info(
            f"Upload a trace with block ids: {WITH_BLOCK_IDS}, up to {UPLOAD_LIMIT_MIB} MiB.",
            icon=":material/upload_file:",
        )
        links.stop()
    if not trace.has_block_ids:
        st.error(
            f"**{plain(trace.name)}** has no block ids (`hash_ids`), only arrival times and lengths, and this "
            "page replays a cache, which needs to know which blocks each request reads. Its arrivals and "
            f"lengths are on the Trace page; here, pick a trace with block ids: the example, a synthetic one, "
            f"or {WITH_BLOCK_IDS}.",
            icon=":material/block:",
        )
        links.stop()
    return trace
