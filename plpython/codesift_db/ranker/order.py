"""How a model's scores reorder candidates: inside each file only. Each file's base scores
are handed out again to its candidates in the order of the model's scores, so the files
keep their order (a file ranks by its best candidate) and every score keeps the spread
the stages after the ranker weigh (graph hops, stand-ins, callees, the fill). A model
trained on commit messages ordered the definitions of a file better than the base order
but moved whole files on bug reports for the worse (bench/results/ranker-swebench.txt);
training pairs are drawn the same way, inside a file (learn.py)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def by_file(files: Sequence[Hashable]) -> list[list[int]]:
    """The candidates' indexes grouped by file, each group in base order."""
    groups: dict[Hashable, list[int]] = {}
    for n, f in enumerate(files):
        groups.setdefault(f, []).append(n)
    return list(groups.values())


def within_files(
    files: Sequence[Hashable], base: Sequence[float], model: Sequence[float]
) -> list[float]:
    """Each candidate's new score: its file's base scores, best first, in the order of the
    model's scores within the file (ties keep the base order). `files`, `base` and `model`
    are parallel, in base order (best first)."""
    scores = list(base)
    for members in by_file(files):
        ranked = sorted(members, key=lambda n: (-model[n], n))
        for n, score in zip(ranked, sorted((base[m] for m in members), reverse=True), strict=True):
            scores[n] = score
    return scores
