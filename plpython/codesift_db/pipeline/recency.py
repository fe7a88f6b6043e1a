"""Recency and priors: a candidate's score is its RRF times exp(-lambda * age_days), its age
measured from its repository's newest change (sql/newest_change.sql), times a prior on its
path (tests and changelogs weighted down, not out)."""

import math
import re
from functools import lru_cache

from .. import plans

# Questions about behaviour are answered by implementation code: tests (which repeat the
# names they test) and changelogs (which mention everything) are weighted down, not out.
TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$|Tests?\.(java|cs|kt)$|_spec\.rb$"
)
CHANGELOG_PATH = re.compile(r"(^|/)(changelog|changes|history|news|releases?)[^/]*$", re.I)
TEST_PRIOR = 0.9
CHANGELOG_PRIOR = 0.6
SECONDS_PER_DAY = 86400.0


def age_days(last_changed: float | None, newest: float | None) -> float:
    """Days between two epoch-second timestamps (0 when either is unknown)."""
    if last_changed is None or newest is None:
        return 0.0
    return max(0.0, (newest - last_changed) / SECONDS_PER_DAY)


def recency(age: float, lam: float) -> float:
    """exp(-lam * age): 1 when lam is 0 (the decay disabled)."""
    return math.exp(-lam * age) if lam else 1.0


# a pure function of the path, asked about every candidate of every query: the same paths
# come back query after query, and the regexes cost more than the rest of the stage
@lru_cache(maxsize=65_536)
def path_prior(path: str) -> float:
    if CHANGELOG_PATH.search(path):
        return CHANGELOG_PRIOR
    if TEST_PATH.search(path):
        return TEST_PRIOR
    return 1.0


def apply_recency(plpy, items: dict, tenant: int, repo_ids: list, lam: float) -> None:
    newest = {
        r["repository_id"]: r["newest"]
        for r in plans.run(
            plpy, plans.load("newest_change"), ["bigint[]", "bigint"], [repo_ids, tenant]
        )
    }
    for item in items.values():
        age = age_days(item.get("last_changed"), newest.get(item["repository_id"]))
        item["age_days"] = round(age, 1)
        item["recency"] = recency(age, lam)
        item["prior"] = path_prior(item["path"])
        item["score"] = item["rrf"] * item["recency"] * item["prior"]
