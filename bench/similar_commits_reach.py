"""Could the past commits whose messages read most like the question reach the gold
definitions the pack misses? (Bug localisation by similar past reports, the idea of
BugLocator.) For each query of a set with gold symbols: the commits before its ref that
changed a definition (bench/history_reach.py), ranked by Okapi BM25 of the question's
terms (as the engine reads them: pipeline/question.py) over each message's terms (as the
engine indexes text: identifiers.identifier_terms); the definitions the --top best
changed, or (--definitions N) the N of them with the highest sum of their commits' scores
(BugLocator's SimiScore); then how many gold symbols the pack missed are among them, and how many
definitions each query would add (prints only, never asserts).

    .venv/bin/python bench/similar_commits_reach.py --queries bench/queries/swebench-dev.json \\
        --repo-path requests=/tmp/requests ... [--top 5] [--definitions 3]

The repositories must be indexed at the queries' refs already (bench/eval.py does that) and
their checkouts hold the history.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "loader", ROOT / "plpython"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from codesift import history  # noqa: E402
from codesift_db import identifiers  # noqa: E402
from codesift_db.pipeline import question  # noqa: E402
from codesift_db.pipeline.params import Params  # noqa: E402

from bench import history_reach  # noqa: E402
from bench.history_reach import Reach  # noqa: E402


def ranked(text: str, messages: list[str]) -> list[tuple[int, float]]:
    """(index, score) of the messages, best first by Okapi BM25 (the engine's k1 and b) of
    the question's weighted terms; those holding none of them left out."""
    terms, weights = question.weighted_terms(question.read(text))
    weight = dict(zip(terms, weights or [1.0] * len(terms), strict=True))
    docs = [collections.Counter(identifiers.identifier_terms(t).split()) for t in messages]
    df = collections.Counter(t for d in docs for t in d if t in weight)
    avgdl = sum(sum(d.values()) for d in docs) / max(len(docs), 1)
    k1, b = Params.k1, Params.b
    scores = {}
    for i, d in enumerate(docs):
        dl = sum(d.values())
        score = 0.0
        for t in weight.keys() & d.keys():
            idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
            tf = d[t]
            score += weight[t] * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        if score > 0:
            scores[i] = score
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def chosen(pairs: list[tuple], best: list[tuple[int, float]], definitions: int | None) -> set:
    """The definitions the best commits changed: all of them, or the `definitions` with the
    highest sum of their commits' scores."""
    total: dict[tuple, float] = collections.defaultdict(float)
    for i, score in best:
        for d in pairs[i][1]:
            total[d] += score
    if definitions is None:
        return set(total)
    return set(sorted(total, key=lambda d: -total[d])[:definitions])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    history_reach.add_arguments(ap)
    ap.add_argument("--top", type=int, default=5, help="most similar commits followed")
    ap.add_argument("--definitions", type=int, help="keep only the best N definitions")
    args = ap.parse_args(argv)
    reach = Reach()
    for q, every, rows in history_reach.questions(args):
        pairs = [(c, changed) for c, changed in every if changed]
        best = ranked(q.text, [history.question_of(c.message) for c, _ in pairs])
        reach.count(rows, q.gold_symbols, chosen(pairs, best[: args.top], args.definitions))
    kept = f", their best {args.definitions} definitions" if args.definitions else ""
    reach.print(f"the {args.top} most similar of {args.commits} commits{kept}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
