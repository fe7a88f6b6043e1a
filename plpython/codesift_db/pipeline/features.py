"""Which of the retrieval stages for real questions are on, and which fusion is used.

All but DEFAULT_OFF are on by default. For evaluation and ablation a session may switch named
ones off with the setting codesift.retrieval_off (a comma-separated list of FEATURES, 'all'
for the engine as it was before them, 'none' for every one on) and pick a fusion with
codesift.fusion (one of FUSIONS).
Neither can widen what a query reads: they only choose between rankings of the same rows."""

from dataclasses import dataclass, replace

from .. import plans
from .params import fail

FEATURES = (
    "question",  # long-question reading: weighted terms, mentioned files, the dense digest
    "named",  # the definitions a long question names, as candidates (pipeline/mentions.py)
    # a traceback's frames as (file, function): the definitions they ran in; an installed
    # package's path (site-packages/pkg/mod.py) finds its file in a src/ layout
    "frames",
    # where a traceback failed (its innermost frame in the repository's code: the file and
    # the definition) counts as a leg of its own (pipeline/mentions.py failing_file)
    "failing",
    "fusion",  # codesift.fusion's choice instead of RRF k = 60
    "kinds",  # the file-kind prior (docs, templates, configuration below code)
    # code under the folders a question's header names weighs more (pipeline/subject_scope.py)
    "scope",
    "evidence",  # file ranking from aggregated symbol evidence
    "consensus",  # each leg's file ranking fused too (pipeline/fusion.py file_consensus)
    # a long question's dense legs weigh less in the fusion (request.py REPORT_DENSE_SHARE)
    "report_dense",
    "pack",  # the pack keeps a large file's best symbols
    # the graph beyond imports: each edge kind (pipeline/graph.py EDGE_KINDS)
    "tests",  # a test to the code it tests
    "references",  # a use of an imported name to the file defining it
    "co_change",  # files changed in the same commits
    "calls",  # the definitions the best candidate symbols call (pipeline/callees.py)
    # a candidate file the pack cannot hold whole gets an outline item (pipeline/outlines.py)
    "outline",
    # the learned ranker's order, when the ref has a model (pipeline/rerank.py)
    "ranker",
)
FUSIONS = ("rrf", "rrf_k", "guard", "convex")
# off unless asked for (codesift.retrieval_off names what stays off, e.g. 'evidence' turns
# outlines on): file evidence cost pack context recall for little MRR on the SWE-bench
# instances; outlines raised pack reach but cost strict recall on pylint and gin and add a
# stage's worth of latency (bench/results/quality-*-reach.txt)
DEFAULT_OFF = frozenset({"evidence", "outline"})
# chosen by measurement (bench/results/quality-*.json): on express-10 and gin-23 only RRF
# k = 60 kept every arm at or above the engine before; rrf_k, guard and convex each lost an
# arm on one of them (guard was best on the SWE-bench split but lost gin's Acc@5)
DEFAULT_FUSION = "rrf"
SETTINGS = (
    "select current_setting('codesift.retrieval_off', true) as off,"
    " current_setting('codesift.fusion', true) as fusion,"
    " current_setting('codesift.timing', true) as timing,"
    " nullif(current_setting('codesift.ranker_model', true), '') as ranker_model"
)


@dataclass(frozen=True)
class Features:
    off: frozenset = frozenset()
    fusion: str = DEFAULT_FUSION
    timing: bool = False  # codesift.timing = on: a NOTICE of each stage's milliseconds
    # codesift.ranker_model: a model's JSON that ranks this session's answers instead of
    # the stored one (pipeline/rerank.py)
    ranker_model: str | None = None

    def on(self, name: str) -> bool:
        return name not in self.off


BASELINE = Features(frozenset(FEATURES), "rrf")  # every feature off: `all`


def parse(plpy, off: str | None, fusion: str | None) -> Features:
    names = frozenset(x.strip() for x in (off or "")[:400].split(",") if x.strip())
    if not names:
        names = DEFAULT_OFF
    elif names == {"none"}:
        names = frozenset()
    elif "all" in names:
        names = frozenset(FEATURES)
    unknown = sorted(names - set(FEATURES))
    if unknown:
        fail(
            plpy,
            f"codesift.retrieval_off names unknown features: {', '.join(unknown)[:200]}",
            hint=f"use a comma-separated list of {', '.join(FEATURES)}, or all",
        )
    chosen = (fusion or "").strip() or DEFAULT_FUSION
    if chosen not in FUSIONS:
        fail(
            plpy,
            f"codesift.fusion is '{chosen[:40]}'",
            hint=f"set it to one of {', '.join(FUSIONS)}, or reset it",
        )
    if "fusion" in names:
        chosen = "rrf"
    return Features(names, chosen)


def read(plpy) -> Features:
    """The session's settings (unset: all but DEFAULT_OFF on, DEFAULT_FUSION)."""
    row = plans.run(plpy, SETTINGS)[0]
    chosen = parse(plpy, row["off"], row["fusion"])
    timing = (row["timing"] or "").strip().lower() in ("on", "true", "1", "yes")
    return replace(chosen, timing=timing, ranker_model=row["ranker_model"])
