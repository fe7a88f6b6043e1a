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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


from bench import history_reach  # noqa: E402
from bench.history_reach import NOT_DEFINITIONS, Reach  # noqa: E402


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
    history_reach.add_arguments(ap)
    ap.add_argument("--seeds", type=int, default=5, help="best candidate symbols followed")
    ap.add_argument("--min-support", type=int, default=2, help="commits changed together")
    ap.add_argument("--top", type=int, default=3, help="co-changed definitions kept")
    args = ap.parse_args(argv)
    reach = Reach()
    for q, pairs, rows in history_reach.questions(args):
        seeds = [(r[0], r[1]) for r in rows if r[1] and r[2] not in NOT_DEFINITIONS]
        changed = [c for _, c in pairs]
        reached = co_changed(changed, seeds[: args.seeds], args.min_support, args.top)
        reach.count(rows, q.gold_symbols, reached)
    reach.print(
        f"seeds {args.seeds}, min support {args.min_support}, top {args.top}, "
        f"{args.commits} commits"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
