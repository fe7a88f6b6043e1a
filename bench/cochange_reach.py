"""Could symbol-level co-change reach the gold definitions the pack misses? For each query
of a set with gold symbols: the commits before its ref (loader/codesift/history.py, the
pairs `codesift learn` mines: each commit's changed definitions), the definitions that
changed in the same commits as the query's best candidate symbols (explain_context's first
--seeds), those of them that did so at least --min-support times, the --top most often; then
how many gold symbols the pack missed are among them, and how many definitions each query
would add (prints only, never asserts).

    .venv/bin/python bench/cochange_reach.py --queries bench/queries/swebench-dev.json \\
        --repo-path requests=/tmp/requests ... [--seeds 5] [--min-support 2] [--top 3]

The repositories must be indexed at the queries' refs already (bench/eval.py does that) and
their checkouts hold the history. A query's own fix is never mined: its ref is the fix's
parent, and only that ref's ancestors are read.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "loader"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from codesift import history  # noqa: E402

from bench import eval_metrics as m  # noqa: E402
from bench import gold_queries  # noqa: E402

CANDIDATES = """
select path, symbol, kind, start_line, end_line, packed
from codesift.explain_context(%s, repo => %s, ref => %s, token_budget => %s)
order by candidate
"""
NOT_DEFINITIONS = ("file", "header", "outline")


def co_changed(pairs: list[set], seeds: list[tuple], min_support: int, top: int) -> set:
    """The definitions that changed with any seed in at least min_support commits: the
    `top` most often."""
    counts: collections.Counter = collections.Counter()
    for changed in pairs:
        if any(s in changed for s in seeds):
            counts.update(d for d in changed if d not in seeds)
    return {d for d, n in counts.most_common(top) if n >= min_support}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gold_queries.add_arguments(ap, budget=False)
    ap.add_argument("--tenant", help="tenant name pattern, as bench/eval.py takes it")
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--commits", type=int, default=history.DEFAULT_LIMIT)
    ap.add_argument("--seeds", type=int, default=5, help="best candidate symbols followed")
    ap.add_argument("--min-support", type=int, default=2, help="commits changed together")
    ap.add_argument("--top", type=int, default=3, help="co-changed definitions kept")
    args = ap.parse_args(argv)
    gold_of: dict = {}  # (checkout, sha) -> the commit's changed definitions
    fates: collections.Counter = collections.Counter()
    added = 0
    conn, queries = gold_queries.open_queries(args, args.tenant)
    with conn:
        for q in queries:
            root, commit = Path(q.target.path), q.target.commit or "HEAD"
            pairs = []
            for c in history.commits_before(root, commit, args.commits):
                if (root, c.sha) not in gold_of:
                    found = history.gold_of(root, c.sha)
                    gold_of[root, c.sha] = {(g["path"], g["symbol"]) for g in found}
                pairs.append(gold_of[root, c.sha])
            gold_queries.act_as(conn, q)
            rows = conn.execute(
                CANDIDATES, (q.text, q.target.name, q.target.commit, args.budget)
            ).fetchall()
            seeds = [(r[0], r[1]) for r in rows if r[1] and r[2] not in NOT_DEFINITIONS]
            reached = co_changed(pairs, seeds[: args.seeds], args.min_support, args.top)
            added += len(reached)
            for gold in q.gold_symbols:
                packed = any(
                    r[5]
                    and r[0] == gold.path
                    and gold.start_line is not None
                    and gold.end_line is not None
                    and r[3] is not None
                    and m.overlaps(r[3], r[4], gold.start_line, gold.end_line)
                    for r in rows
                )
                fates[("packed" if packed else "missed", (gold.path, gold.name) in reached)] += 1
    total = sum(fates.values())
    missed = fates["missed", True] + fates["missed", False]
    print(
        f"{total} gold symbols of {len(queries)} queries; seeds {args.seeds}, "
        f"min support {args.min_support}, top {args.top}, {args.commits} commits"
    )
    print(f"  missed by the pack:           {missed}")
    print(f"    of them co-changed:         {fates['missed', True]}")
    print(f"  packed, also co-changed:      {fates['packed', True]}")
    print(f"  definitions added per query:  {added / max(len(queries), 1):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
