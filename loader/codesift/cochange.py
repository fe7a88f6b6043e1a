"""Co-change edges: files that change in the same commits are related even when no import
connects them (a module and its test, a parser and its docs, two halves of one feature).

Mined from the history of the indexed commit (git.file_history, newest first): the last
MAX_COMMITS commits that change between 2 and MAX_FILES_PER_COMMIT live files (a larger
commit is a sweep, a rename or a reformat, and relates nothing). Each commit counts with a
half-life of HALF_LIFE_DAYS before the indexed commit, so an old coupling fades. A pair's
strength is the weighted Jaccard of the two files' commits; each file keeps its
MAX_PARTNERS strongest partners seen together in MIN_SHARED commits or more."""

from collections.abc import Iterable
from datetime import datetime

MAX_COMMITS = 2_000
MAX_FILES_PER_COMMIT = 20
HALF_LIFE_DAYS = 365.0
MIN_SHARED = 2
MAX_PARTNERS = 5
RELATION = "co_change"


def edges(
    history: list[tuple[datetime, list[str]]], live: Iterable[str]
) -> list[tuple[str, str, float]]:
    """(path, partner, strength) for the live paths, each pair once (path < partner)."""
    live = set(live)
    if not history:
        return []
    newest = history[0][0]
    alone: dict[str, float] = {}
    together: dict[tuple[str, str], float] = {}
    shared: dict[tuple[str, str], int] = {}
    for when, paths in history[:MAX_COMMITS]:
        files = sorted({p for p in paths if p in live})
        if not 2 <= len(files) <= MAX_FILES_PER_COMMIT:
            continue
        age_days = max(0.0, (newest - when).total_seconds() / 86400)
        weight = 0.5 ** (age_days / HALF_LIFE_DAYS)
        for i, a in enumerate(files):
            alone[a] = alone.get(a, 0.0) + weight
            for b in files[i + 1 :]:
                together[(a, b)] = together.get((a, b), 0.0) + weight
                shared[(a, b)] = shared.get((a, b), 0) + 1
    strength = {
        pair: w / (alone[pair[0]] + alone[pair[1]] - w)
        for pair, w in together.items()
        if shared[pair] >= MIN_SHARED
    }
    partners: dict[str, list[tuple[float, str]]] = {}
    for (a, b), s in strength.items():
        partners.setdefault(a, []).append((s, b))
        partners.setdefault(b, []).append((s, a))
    kept: set[tuple[str, str]] = set()
    for path, found in partners.items():
        for _, other in sorted(found, key=lambda x: (-x[0], x[1]))[:MAX_PARTNERS]:
            kept.add((min(path, other), max(path, other)))
    return [(a, b, min(1.0, strength[(a, b)])) for a, b in sorted(kept)]
