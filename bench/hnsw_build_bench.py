"""HNSW recall@10 of graphs built with each ef_construction (and m), side by side, on a copy
of the database's symbol vectors (prints only, never asserts).

    CODESIFT_DSN=<database with vectors> .venv/bin/python bench/hnsw_build_bench.py \\
        --builds 16:64,16:256 --ef-search 100,200,400

The vectors of every tenant are copied into a temporary table of this session; for each
M:EF_CONSTRUCTION the table gets a fresh HNSW index (cosine, as codesift's), built in bulk
(its build time printed), and every question (--short as they are, --long cut to 300 words,
or --questions files in express.json's shape), embedded by the database, takes the top 40 of
an index walk at each --ef-search; its top 10 are compared with the exact top 10 of the copy.
No tenant filter: this measures the graph, not the legs (bench/hnsw_recall_bench.py does).
A graph built by inserts (as the worker adds vectors) links as a bulk build of the same
settings does, within noise (checked at 260k vectors: 0.780 and 0.777 at ef_search 200).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import psycopg
from codesift.db import current_dsn
from hnsw_recall_bench import ef_search_values
from question_sets import add_question_options, column, first_words, parser, short_and_long

COPY = (
    "create temporary table vectors as"
    " select id, embedding from codesift.code_symbols where embedding is not null"
)
EXACT = "select id from vectors order by (embedding <=> %s::vector) + 0, id limit 10"
WALK = "select id from vectors order by embedding <=> %s::vector limit 40"


def builds(text: str) -> list[tuple[int, int]]:
    """--builds: comma-separated M:EF_CONSTRUCTION pairs in pgvector's ranges."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        try:
            m, ef = (int(v) for v in item.split(":"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r}: M:EF_CONSTRUCTION, e.g. 16:64") from None
        if not (2 <= m <= 100 and 4 <= ef <= 1000 and ef >= 2 * m):
            raise argparse.ArgumentTypeError(f"{item!r}: m 2-100, ef_construction 4-1000, >= 2m")
        out.append((m, ef))
    return out


def questions(args) -> list[str]:
    """The texts asked: --questions, else --short and --long."""
    if not args.questions:
        return [text for _, text in short_and_long(args.short, args.long, args.words)]
    out = []
    for path in args.questions:
        asked = json.loads(path.read_text())["queries"]
        out += [first_words(q["query"], args.words) for q in asked]
    return out


def walk_recall(conn, vectors: list[str], exact: list[list], ef_search: int) -> tuple:
    """(mean recall@10, p50 ms) of the index walk at `ef_search` over the questions."""
    conn.execute(f"set hnsw.ef_search = {ef_search}")
    hits, ms = [], []
    for v, truth in zip(vectors, exact, strict=True):
        t0 = time.perf_counter()
        got = column(conn, WALK, (v,))[:10]
        ms.append((time.perf_counter() - t0) * 1000)
        hits.append(len(set(got) & set(truth)) / max(len(truth), 1))
    return statistics.mean(hits), statistics.median(ms)


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--builds", type=builds, default=[(16, 64), (16, 256)])
    ap.add_argument("--ef-search", type=ef_search_values, default=[100, 200, 400])
    ap.add_argument("--questions", type=Path, nargs="*", help="question sets to ask instead")
    add_question_options(ap)
    args = ap.parse_args()
    texts = questions(args)
    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        conn.execute("set jit = off")
        conn.execute("set maintenance_work_mem = '2GB'")
        conn.execute(COPY)
        rows = conn.execute("select count(*) from vectors").fetchone()[0]
        embed = "select codesift.embed_query(%s)::text"
        vectors = [conn.execute(embed, (t,)).fetchone()[0] for t in texts]
        exact = [column(conn, EXACT, (v,)) for v in vectors]
        print(f"HNSW recall@10 against exact search, {rows:,} symbol vectors, {len(texts)} asked")
        print("  m ef_constr  build s ef_search  recall  p50 ms")
        for m, ef_construction in args.builds:
            conn.execute("drop index if exists vectors_walk")
            t0 = time.perf_counter()
            conn.execute(
                "create index vectors_walk on vectors using hnsw (embedding vector_cosine_ops)"
                f" with (m = {m}, ef_construction = {ef_construction})"
            )
            built = f"{m:>3} {ef_construction:>9} {time.perf_counter() - t0:>8.0f}"
            for ef in args.ef_search:
                recall, p50 = walk_recall(conn, vectors, exact, ef)
                print(f"{built} {ef:>9} {recall:>7.3f} {p50:>7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
