"""One call's state: the caller's Params and what the pipeline works out from them before
the legs run (the tenant and repositories in scope, the stages switched on, the question's
reading and terms), and why its answer is degraded (degraded.py, filled as they are found).
Every stage after fusion is `stage(plpy, req, items)`."""

from dataclasses import dataclass, field
from functools import cached_property

from .features import Features
from .params import Params
from .question import Reading
from .subject_scope import folders
from .timing import StageTimes

FILE_SHARE = 0.25  # a whole file larger than this share of the budget is split into symbols
# the share of its weight a long question's dense legs keep in the fusion: the vector is of a
# digest of the report (question.py), which says less than its weighted terms do (bug
# reports and multi-line commit messages alike: bench/results/quality-report-dense.txt)
REPORT_DENSE_SHARE = 0.5


def file_tokens(budget: int) -> int:
    """Largest text (in estimated tokens) packed whole under this budget: a larger file is
    split into its symbols, and no symbol larger than this stands in for it."""
    return int(budget * FILE_SHARE)


@dataclass(frozen=True)
class Request:
    params: Params
    packs: bool  # pack_context and explain_context pack; hybrid_search stops after fusion
    tenant: int
    repos: tuple[dict, ...]
    features: Features
    reading: Reading
    terms: list[str]  # the lexical legs' terms (and what chooses stand-ins)
    weights: list[float] | None  # per term, for a long question; None: equal weights
    times: StageTimes = field(default_factory=StageTimes, compare=False)
    # why the answer is degraded: {"code", "detail"} each, found once per call (degraded.py)
    degraded: list[dict] = field(default_factory=list, compare=False)
    # the question's vector and its model once the dense legs have it (outlines.py reads it)
    question_vector: dict = field(default_factory=dict, compare=False)

    def on(self, feature: str) -> bool:
        return self.features.on(feature)

    @property
    def repo_ids(self) -> list[int]:
        return [r["id"] for r in self.repos]

    @property
    def budget(self) -> int:
        """The token budget of a call that packs."""
        assert self.params.token_budget is not None  # validated when the call packs
        return self.params.token_budget

    @property
    def max_file_tokens(self) -> int:
        """Largest file whose text hydration reads: none when the call does not pack."""
        return file_tokens(self.budget) if self.packs else 0

    @property
    def long_question(self) -> bool:
        return self.reading.long

    @property
    def fused_dense_weight(self) -> float:
        """The dense legs' weight in the fusion: the caller's, REPORT_DENSE_SHARE of it for a
        long question (feature `report_dense`)."""
        lighter = self.long_question and self.on("report_dense")
        return self.params.dense_weight * (REPORT_DENSE_SHARE if lighter else 1.0)

    @property
    def test_prior(self) -> bool:
        """Whether tests and benchmarks rank below code: unless the question asks about them."""
        return not self.reading.wants_tests

    @cached_property
    def scopes(self) -> tuple[str, ...]:
        """The folders the question's header names (subject_scope.py), with `scope` on."""
        return folders(self.reading.scopes) if self.on("scope") else ()

    @property
    def kind_prior(self) -> bool:
        """Whether documentation, templates and configuration rank below code."""
        return self.on("kinds") and not self.reading.wants_docs
