"""CacheGen: a real KV codec, and chunk-by-chunk adaptive streaming over a changing bandwidth."""

import streamlit as st

from ui.cachegen import codec as cachegen_codec
from ui.cachegen import stream as cachegen_stream
from ui.cachegen.codec import STEM
from ui.kit import frame

VIEWS = (cachegen_stream.TIMELINE, "Violation vs SLO", "Codec")

frame.header(
    STEM,
    "How CacheGen shrinks KV into a bitstream, and picks a compression level for each "
    "chunk as the network's bandwidth changes.",
)
view = st.segmented_control(
    "View",
    VIEWS,
    default=VIEWS[0],
    required=True,
    key=f"{STEM}_view",
    bind="query-params",
    label_visibility="collapsed",
)


# Every view draws into one container, so "What to notice" and the paper table after it keep their place and
# a view switch updates them rather than remounting them (Streamlit keys an element by its position).
with st.container():
    notes, rows, note = cachegen_codec.view() if view == "Codec" else cachegen_stream.stream_view(view)
frame.what_to_notice(notes)
frame.paper_vs_sim(rows, note=note)
