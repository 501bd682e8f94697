"""The radix page's preset scripts: SGLang's Fig. 3, shared prompts, chat, few-shot, RAG, Strata's
delay hits, HiCache's tiers and the raw tree operations, each with the settings it is meant for."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvviz.radix.script import Script, parse_text


@dataclass(frozen=True)
class Preset:
    title: str
    blurb: str
    text: str
    suggested: dict = field(default_factory=dict)

    def script(self) -> Script:
        return parse_text(self.text, self.title)


_SYS = "You are a helpful assistant ."
_SHOTS = "Q : 1+1 ? A : 2 . Q : 2+3 ? A : 5 ."
# Fig. 3's elided turns, given lengths (in tokens; commas separate tokens in a script, so none here)
# with which 120 tokens evict at the figure's steps and the figure's nodes (tests/radix/test_radix_report.py).
_THINK = (
    "Let us think . The first train is 60 km ahead when the second one starts ; the gap closes at 30 km / h "
    "so the second train then catches up exactly two hours later : at 6 pm sharp ."
)
_ASK = "What can you do for me and for my small team today ?"
_HELP = "I can help . I answer questions and write with you ."
_POEM = "Roses are red ; violets are blue ; sugar is sweet ; and so are you . That is all I have ."
_CHAT1 = f"{_SYS} User : Hello ! Assistant : Hi ! User : Solve this problem ."  # the first session's second turn

PRESETS: dict[str, Preset] = {
    "sglang9": Preset(
        "SGLang paper: nine steps",
        "The RadixAttention figure of the SGLang paper (arXiv 2312.07104, Fig. 3): two chat sessions, a "
        "batch of few-shot queries and self-consistency samples share one tree under LRU eviction. Step k "
        'here is the figure\'s (k + 1). The figure elides its texts ("...") and gives no sizes: these '
        "lengths and 120 tokens of GPU memory evict where it does, at (5), (8) and (9).",
        f"""# (2) a chat session: system prompt, a user message and the reply
chat1: {_SYS} User : Hello ! => Assistant : Hi !
# (3) the same session continues: the first turn is reused, the new turn appended
chat1: {_CHAT1} => Assistant : Sure ! {_THINK}
# (4) a new chat session shares only the system prompt: the edge splits
chat2: {_SYS} User : {_ASK} => Assistant : {_HELP}
# (5) the second session continues: memory runs short, and the least recently used leaf (the first session's reply) goes
chat2: {_SYS} User : {_ASK} Assistant : {_HELP} User : Write a poem . => Assistant : {_POEM}
# (6) a few-shot query shares nothing: a new branch at the root
shot: {_SHOTS} Q : 3+3 ? => A : 6 .
# (7) a batch of few-shot queries with the same examples
shot: {_SHOTS} Q : 4+4 ? => A : 8 .
& shot: {_SHOTS} Q : 5+2 ? => A : 7 .
& shot: {_SHOTS} Q : 9+1 ? => A : 10 .
# (8) the first session returns and recomputes its evicted reply: the second session, least recently used, goes
chat1: {_CHAT1} Assistant : Sure ! {_THINK} User : Thanks => Assistant : Welcome
# (9) self-consistency: several sampled answers to one few-shot question; the other few-shot queries go
sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : 12 .
& sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : twelve .
& sample: {_SHOTS} Q : 4+4 ? A : 8 . Q : 6+6 ? => A : 12 !
""",
        dict(cache="radix", device_capacity=120, page_size=1, eviction_policy="lru"),
    ),
    "system": Preset(
        "Shared system prompt",
        "Five users behind one system prompt: the prompt is computed once; the same question twice still "
        "recomputes its last token.",
        f"""alice: {_SYS} Answer briefly . User : What is a KV cache ? => It stores keys and values .
bob: {_SYS} Answer briefly . User : Why is prefill slow ? => It reads the whole prompt .
carol: {_SYS} Answer briefly . User : What is a radix tree ? => A compressed trie .
dave: {_SYS} Answer briefly . User : What is a KV cache ? => Keys and values of past tokens .
erin: {_SYS} Answer briefly . User : What is paging ? => Fixed-size blocks .
""",
        dict(cache="radix", device_capacity=128),
    ),
    "chat": Preset(
        "Multi-turn chat",
        "Two users take turns; every turn re-sends the history, and the reply of the last turn is in the tree "
        "because outputs are inserted at finish.",
        """u1: Plan a trip to Rome . => Day one : the Colosseum .
u2: Explain photosynthesis . => Plants turn light into sugar .
u1: Plan a trip to Rome . Day one : the Colosseum . And day two ? => Day two : the Vatican .
u2: Explain photosynthesis . Plants turn light into sugar . Where ? => In the chloroplasts .
u1: Plan a trip to Rome . Day one : the Colosseum . And day two ? Day two : the Vatican . Food ? => Try carbonara .
u2: Explain photosynthesis . Plants turn light into sugar . Where ? In the chloroplasts . Why green ? => Chlorophyll .
""",
        dict(cache="radix", device_capacity=96),
    ),
    "fewshot": Preset(
        "Few-shot prompts",
        "Questions behind the same examples share them; a different example set starts its own branch.",
        f"""{_SHOTS} Q : 3+3 ? => A : 6 .
{_SHOTS} Q : 4+4 ? => A : 8 .
{_SHOTS} Q : 7+1 ? => A : 8 .
Q : capital of France ? A : Paris . Q : capital of Spain ? => A : Madrid .
Q : capital of France ? A : Paris . Q : capital of Italy ? => A : Rome .
{_SHOTS} Q : 9+9 ? => A : 18 .
""",
        dict(cache="radix", device_capacity=64),
    ),
    "rag": Preset(
        "RAG documents",
        "Retrieved documents in a different order are a different prefix: only what comes before the "
        "first difference is reused (CacheBlend's motivation).",
        f"""{_SYS} Doc-A : the Nile is long . Doc-B : the Amazon is wide . Q : which is longer ? => The Nile .
{_SYS} Doc-B : the Amazon is wide . Doc-A : the Nile is long . Q : which is wider ? => The Amazon .
{_SYS} Doc-A : the Nile is long . Doc-B : the Amazon is wide . Q : where is the Nile ? => Africa .
{_SYS} Doc-C : Everest is high . Doc-A : the Nile is long . Q : which is higher ? => Everest .
""",
        dict(cache="radix", device_capacity=96),
    ),
    "delay": Preset(
        "Delay hits (Strata)",
        "Three questions on a new 300-token document arrive together. Without deferral all three compute "
        "the document; with Strata's rule the later two wait a round and hit it.",
        """doc1: 1..300 901
& doc1: 1..300 902
& other: 2001..2050
& doc1: 1..300 903
doc2: 5001..5200 904
& doc2: 5001..5200 905
& doc1: 1..300 906
""",
        dict(cache="hiradix", device_capacity=1024, host_capacity=2048, deferral=True, threshold=100),
    ),
    "tiers": Preset(
        "HiCache tiers",
        "Documents cycle through a GPU that holds about one: they spill to CPU memory and load back; a "
        "CPU hit under 10 tokens is recomputed instead. Switch the write policy to compare what survives.",
        """a: 1..60 => 601..604
b: 1001..1060 => 1601..1604
# a was pushed to CPU by b: its 64 tokens load back
a: 1..60 601..604 701..706 => 801
# a little pressure: a's newest turn goes to CPU
tiny: 3001..3012
# its CPU part is under 10 tokens: recomputed, not loaded
a: 1..60 601..604 701..706 801 => 802
c: 2001..2060 => 2601
b: 1001..1060 1601..1604 => 1701
""",
        dict(cache="hiradix", device_capacity=80, host_capacity=400, write_policy="write_through"),
    ),
    "ops": Preset(
        "Tree operations",
        "The raw operations on their own: insert, a match that splits an edge, eviction with its cascade, and "
        "HiCache's backup lock until ack.",
        """insert 1 2 3 4 5
insert 1 2 3 9
match 1 2 3 4 7
match 1 2
insert 7 8
match 1 2 3 9 9
evict 2
evict 3
lock 1 2 3
evict 10
unlock 1 2 3
ack
evict 10
match 1 2 3
""",
        dict(cache="hiradix", device_capacity=32, host_capacity=64, auto_ack=False),
    ),
}
