"""How deep the BM25 legs would have to read to prove their top k exact (prints only).

    .venv/bin/python bench/bm25_proving_depth.py [--db codesift_bench_corpus] [--tier symbol]

The legs read a fixed number of each query term's best-impact postings (codesift.bm25_depth)
and score the best of what they read. Could they stop earlier when the top k is already
certain? A threshold test without random access says so once the k-th best partial sum (the
impacts read so far, times each term's idf) is at least the most any other document could
still reach: its partial sum plus, for each term it was not read in, that term's next unread
impact (an unread document: every term's). For each question of bench/bm25_agreement_bench.py
(its corpus database, built there with --rebuild) this prints the smallest of --depths at which
the test proves the top k, as a count of questions per depth; `never` is past the deepest.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "loader"))
sys.path.insert(0, str(ROOT / "bench"))

import benchdb  # noqa: E402
from bm25_agreement_bench import QUESTIONS  # noqa: E402
from codesift.db import current_dsn  # noqa: E402
from question_sets import parser  # noqa: E402

POSTINGS = {
    "symbol": "select symbol_id::text, impact from codesift.symbol_terms"
    " where tenant_id = %s and term = %s order by impact desc limit %s",
    "file": "select blob_sha, impact from codesift.blob_terms"
    " where tenant_id = %s and term = %s order by impact desc limit %s",
}


def proves(postings: dict[str, list[tuple[str, float]]], idf: dict[str, float], k: int, depth: int):
    """Whether reading `depth` postings of each term proves the top k of the impact sums."""
    partial: dict[str, float] = collections.defaultdict(float)
    read_in: dict[str, set] = collections.defaultdict(set)
    next_impact = {}
    for term, rows in postings.items():
        for doc, impact in rows[:depth]:
            partial[doc] += idf[term] * impact
            read_in[doc].add(term)
        next_impact[term] = idf[term] * rows[depth][1] if len(rows) > depth else 0.0
    unread = sum(next_impact.values())
    ranked = sorted(partial, key=lambda d: -partial[d])
    if len(ranked) < k:
        return unread == 0
    reach = [
        partial[d] + sum(v for t, v in next_impact.items() if t not in read_in[d])
        for d in ranked[k:]
    ]
    best_other = max([*reach, unread])
    return partial[ranked[k - 1]] >= best_other


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--db", default="codesift_bench_corpus", help="bm25_agreement_bench's corpus")
    ap.add_argument("--tenant", default="corpus", help="tenant name")
    ap.add_argument("--tier", choices=sorted(POSTINGS), default="symbol")
    ap.add_argument("--k", type=int, default=20, help="the top k to prove")
    ap.add_argument("--depths", default="125,250,500,1000,2000,4000,8000,16000")
    args = ap.parse_args()
    benchdb.check_name(args.db)
    depths = [int(d) for d in args.depths.split(",")]
    counts: collections.Counter = collections.Counter()
    with benchdb.connect(args.db, current_dsn(), autocommit=True) as conn:
        tenant = conn.execute(
            "select id from codesift.tenants where name = %s", (args.tenant,)
        ).fetchone()[0]
        for question in QUESTIONS:
            terms = conn.execute("select codesift._query_terms(%s)", (question,)).fetchone()[0]
            idf = dict(
                conn.execute(
                    "select term, idf from codesift._bm25_idf(%s, %s, %s)",
                    (tenant, args.tier, terms),
                ).fetchall()
            )
            postings = {
                t: conn.execute(POSTINGS[args.tier], (tenant, t, depths[-1] + 1)).fetchall()
                for t in idf
            }
            found = next((d for d in depths if proves(postings, idf, args.k, d)), None)
            counts[found if found is not None else "never"] += 1
    print(f"{args.db}, {args.tier} tier, top {args.k}: questions by the depth that proves it")
    for depth in [*depths, "never"]:
        if counts[depth]:
            print(f"  {depth!s:>7}  {counts[depth]}")


if __name__ == "__main__":
    main()
