"""Why the pack misses the gold definitions it misses: each gold symbol of a query set (one
with gold_symbols or gold_spans, e.g. swebench-dev.json) classified by explain_context at the
query's ref (prints only, never asserts).

    .venv/bin/python bench/pack_misses.py --queries bench/queries/swebench-dev.json \\
        --repo-path requests=/tmp/requests --repo-path flask=/tmp/flask [--dense-weight 0]

Each gold symbol is `packed` (a packed row overlaps its lines), a candidate the budget or the
pruning left out, or no candidate at all; and its file is packed (any row of it), a candidate
file at some rank (the order of first appearance among explain_context's rows), or none.
The second count bounds pack reach: an outline can list only the definitions of a file the
pack reaches, so the share of gold symbols whose file ranks among the first N candidate files
is the most an outline of N files could reach. The repositories must be indexed at the
queries' refs already (bench/eval.py does that).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import eval_metrics as m  # noqa: E402
from bench import gold_queries  # noqa: E402

EXPLAIN = """
select path, start_line, end_line, decision, packed
from codesift.explain_context(%s, repo => %s, ref => %s, token_budget => %s,
    dense_weight => %s)
order by candidate
"""
# a whole file split into its symbols, or ranked below those: its row is not a candidate of
# the gold symbol itself
WHOLE_FILE = ("expanded", "not_packed:too_big")
RANKS = ((5, "1-5"), (10, "6-10"), (20, "11-20"))


def file_rank(rank: int | None) -> str:
    if rank is None:
        return "no candidate file"
    label = next((label for cut, label in RANKS if rank <= cut), "> 20")
    return f"candidate file {label}"


def classify(rows: list[tuple], gold: m.GoldSymbol) -> tuple[str, str]:
    """(what became of the gold symbol, where its file stands)."""
    files = list(dict.fromkeys(r[0] for r in rows))
    packed_files = {r[0] for r in rows if r[4]}
    spans = [
        r
        for r in rows
        if r[0] == gold.path
        and gold.start_line is not None
        and r[1] is not None
        and m.overlaps(r[1], r[2], gold.start_line, gold.end_line)
    ]
    if any(r[4] for r in spans):
        fate = "packed"
    else:
        own = [r for r in spans if not str(r[3]).startswith(WHOLE_FILE)]
        fate = f"candidate, {own[0][3]}" if own else "no candidate"
    if gold.path in packed_files:
        where = "file packed"
    else:
        where = file_rank(files.index(gold.path) + 1 if gold.path in files else None)
    return fate, where


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gold_queries.add_arguments(ap)
    ap.add_argument("--dense-weight", type=float, default=1.0, help="0: lexical only")
    ap.add_argument("--engine", default="default", help="bench/eval.py's engines")
    args = ap.parse_args(argv)
    fates: collections.Counter = collections.Counter()
    wheres: collections.Counter = collections.Counter()
    conn, queries = gold_queries.open_queries(args, engine=args.engine)
    with conn:
        for q in queries:
            gold_queries.act_as(conn, q)
            rows = conn.execute(
                EXPLAIN,
                (q.text, q.target.name, q.target.commit, args.budget, args.dense_weight),
            ).fetchall()
            for gold in q.gold_symbols:
                fate, where = classify(rows, gold)
                fates[fate] += 1
                wheres[where] += 1
    total = sum(fates.values())
    print(f"{total} gold symbols of {len(queries)} queries, {args.budget} tokens")
    for title, counts in (("the symbol", fates), ("its file", wheres)):
        print(f"  {title}:")
        for label, n in counts.most_common():
            print(f"    {n:4d}  {n / total:6.1%}  {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
