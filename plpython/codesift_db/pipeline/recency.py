"""Recency and priors: a candidate's score is its fused score (plus the support of the other
hits in its file) times exp(-lambda * age_days), its age measured from its repository's
newest change (sql/newest_change.sql), times a prior on its path: tests and changelogs
weighted down, not out, and (the file-kind prior) documentation, templates and
configuration below code unless the question asks for documentation; for a bug report,
every file that is not code lower still, tests and changelogs too; code under a folder the
question's header names higher (subject_scope.py)."""

import math
from typing import TYPE_CHECKING

from .. import plans
from ..file_kinds import file_kind
from .subject_scope import scope_prior

if TYPE_CHECKING:
    from .request import Request

# Questions about behaviour are answered by implementation code: tests (which repeat the
# names they test) and changelogs (which mention everything) are weighted down, not out;
# prose, repository templates and configuration too unless the question asks for docs.
TEST_PRIOR = 0.8
CHANGELOG_PRIOR = 0.6
DOC_PRIOR = 0.5
TEMPLATE_PRIOR = 0.3
CONFIG_PRIOR = 0.6
# file evidence: a hit's score gains this share of the next best symbol hits in its file
EVIDENCE_DAMP = 0.15
EVIDENCE_TOP = 2
SECONDS_PER_DAY = 86400.0


def age_days(last_changed: float | None, newest: float | None) -> float:
    """Days between two epoch-second timestamps (0 when either is unknown)."""
    if last_changed is None or newest is None:
        return 0.0
    return max(0.0, (newest - last_changed) / SECONDS_PER_DAY)


def recency(age: float, lam: float) -> float:
    """exp(-lam * age): 1 when lam is 0 (the decay disabled)."""
    return math.exp(-lam * age) if lam else 1.0


# a benchmark calls the code by its names as a test does: it weighs as one
KIND_PRIOR = {"changelog": CHANGELOG_PRIOR, "test": TEST_PRIOR, "bench": TEST_PRIOR}
# example programs document usage in code, message catalogs translate its messages: they
# weigh as documentation does
NON_CODE_PRIOR = {
    "template": TEMPLATE_PRIOR,
    "doc": DOC_PRIOR,
    "translation": DOC_PRIOR,
    "example": DOC_PRIOR,
    "config": CONFIG_PRIOR,
}
# a bug report asks which code to change: whatever is not code (its test names and
# reproducer match the tests' text best, its words the changelog's) weighs BUG_REPORT_PRIOR
BUG_REPORT_PRIOR = 0.3


def path_prior(
    path: str, kinds: bool = False, bug_report: bool = False, tests: bool = True
) -> float:
    """The path's prior: changelogs always, tests and benchmarks unless the question asks
    about them (tests False); with kinds, docs, examples, templates and configuration too
    (off when the question asks for documentation), and for a bug report every kind that is
    not code alike (BUG_REPORT_PRIOR)."""
    kind = file_kind(path)
    if kinds and bug_report and kind != "code":
        return BUG_REPORT_PRIOR
    if kinds and kind in NON_CODE_PRIOR:
        return NON_CODE_PRIOR[kind]
    if not tests and kind in ("test", "bench"):
        return 1.0
    return KIND_PRIOR.get(kind, 1.0)


def _nested(a: dict, b: dict) -> bool:
    """One symbol's lines hold the other's (a class and its method say the same twice)."""
    return (a["start_line"] <= b["start_line"] and b["end_line"] <= a["end_line"]) or (
        b["start_line"] <= a["start_line"] and a["end_line"] <= b["end_line"]
    )


def file_support(items: dict) -> dict:
    """Each candidate's file evidence: EVIDENCE_DAMP times the sum of the fused scores of its
    file's symbol hits after the best one (at most EVIDENCE_TOP of them, none nested in one
    already counted). Every candidate of a file gains the same, so the file ranks by its best
    hit plus a damped sum of the others (a file with several relevant symbols outranks one
    lucky symbol) and the order within a file does not change."""
    by_file: dict = {}
    for key, item in items.items():
        by_file.setdefault((item["repository_id"], item["path"]), []).append(key)
    support = {}
    for keys in by_file.values():
        symbols = sorted((items[k] for k in keys if k[0] == "s"), key=lambda i: -i["rrf"])
        counted: list[dict] = []
        for item in symbols:
            if len(counted) > EVIDENCE_TOP:
                break
            if not any(_nested(item, c) for c in counted):
                counted.append(item)
        evidence = EVIDENCE_DAMP * sum(i["rrf"] for i in counted[1:])
        for key in keys:
            support[key] = evidence
    return support


def apply_recency(plpy, req: "Request", items: dict) -> None:
    """Each candidate's score: its fused score (plus, with the `evidence` feature, a long
    question's file support), times its recency decay, times its path prior."""
    lam, kinds, bug_report = req.params.recency_lambda, req.kind_prior, req.long_question
    # a bug report asks which file to change; a short question often names one symbol,
    # whose definition must not fall below the files that call it
    evidence = req.on("evidence") and req.long_question
    newest = {
        r["repository_id"]: r["newest"]
        for r in plans.run(
            plpy, plans.load("newest_change"), ["bigint[]", "bigint"], [req.repo_ids, req.tenant]
        )
    }
    support = file_support(items) if evidence else {}
    for key, item in items.items():
        age = age_days(item.get("last_changed"), newest.get(item["repository_id"]))
        item["age_days"] = round(age, 1)
        item["recency"] = recency(age, lam)
        item["prior"] = path_prior(item["path"], kinds, bug_report, req.test_prior)
        item["prior"] *= scope_prior(item["path"], req.scopes)
        item["file_kind"] = file_kind(item["path"])
        if evidence:
            item["file_support"] = support.get(key, 0.0)
        item["score"] = (item["rrf"] + support.get(key, 0.0)) * item["recency"] * item["prior"]
