"""HNSW recall of the dense legs against exact search, on real code already indexed with
vectors (prints only, never asserts).

    CODESIFT_DSN=<eval database> .venv/bin/python bench/hnsw_recall_bench.py \\
        --tenants eval-requests,eval-seaborn,eval-flask

The retrieval bench grows its corpus by copying one repository with noise, so its HNSW
recall says little about real code. Here every question (--short as they are, --long cut to
300 words) is embedded by the database and asked at one ref of the tenant in turn, as the
eval asks a SWE-bench instance at its commit. For each, the symbol and file legs' top 10
(codesift._dense_symbols and _dense_files, the legs the pipeline runs, k 40 and 30: ef_search
200 each, relaxed iterative scans, or an exact sort for a tenant holding a small share of the
index) are compared with the exact top 10 of the same scope (every vector in the ref sorted
by distance). The HNSW index is shared by every tenant of the database: a tenant's rows are
a share of it, as in a real deployment.

--ef-search 100,400 measures those values beside the legs' own in the same run, each set as
codesift.ef_search for both legs inside a transaction that is rolled back. A walk over a
table past the rows the legs' ef_search is set for searches wider
(plpython/codesift_db/dense.py): the "walks at" column is the ef_search such a walk takes
(an exact sort takes none).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg
from codesift.db import current_dsn
from question_sets import (
    add_question_options,
    add_repos_option,
    column,
    parser,
    repositories,
    short_and_long,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plpython"))
from codesift_db.dense import EF_SEARCH_SETTING, LEG_EF_SEARCH, wider_ef_search  # noqa: E402

EXACT = {
    "symbols": """
select s.id from codesift.code_symbols as s
where s.tenant_id = %(t)s and s.embedding_model = %(m)s and exists (
    select 1 from codesift.live_files as v
    where v.tenant_id = s.tenant_id and v.blob_sha = s.blob_sha and v.repository_id = %(r)s)
order by (s.embedding <=> %(v)s::vector) + 0, s.id
limit 10
""",
    "files": """
select f.path from codesift.blobs as b
join codesift.live_files as f on f.tenant_id = b.tenant_id and f.blob_sha = b.sha
where b.tenant_id = %(t)s and b.embedding_model = %(m)s and f.repository_id = %(r)s
order by (b.embedding <=> %(v)s::vector) + 0, f.path
limit 10
""",
}
# as the pipeline calls them (pipeline/legs.py: 40 symbols, 30 files); recall of their top 10
LEGS = {
    "symbols": "select symbol_id from codesift._dense_symbols("
    "%(t)s, %(v)s::vector, %(m)s, array[%(r)s]::bigint[], null, null, null, 40)",
    "files": "select path from codesift._dense_files("
    "%(t)s, %(v)s::vector, %(m)s, array[%(r)s]::bigint[], null, null, 30)",
}


def timed(conn, sql: str, args: dict) -> tuple[list, float]:
    t0 = time.perf_counter()
    got = column(conn, sql, args)
    return got[:10], (time.perf_counter() - t0) * 1000


TABLES = {"symbols": "codesift.code_symbols", "files": "codesift.blobs"}


def walks_at(conn, leg: str, ef: int | None) -> int:
    """The ef_search a walk of this leg takes at this setting of codesift.ef_search (None:
    the legs' own), widened for its table."""
    rows = conn.execute(
        "select greatest(reltuples, 0) from pg_catalog.pg_class where oid = %s::regclass",
        (TABLES[leg],),
    ).fetchone()[0]
    return wider_ef_search(LEG_EF_SEARCH if ef is None else ef, rows)


def measure(
    conn,
    tenant_name: str,
    texts: list[str],
    ef_values: list[int | None],
    names: str | None = None,
) -> None:
    tenant = conn.execute("select id from codesift.tenants where name = %s", (tenant_name,))
    found = tenant.fetchone()
    if found is None:
        raise SystemExit(f"no tenant named {tenant_name!r} (or not visible to this role)")
    t = found[0]
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(t),))
    model = conn.execute("select value from codesift.settings where key = 'embedding_model'")
    m = model.fetchone()[0]
    refs = repositories(conn, t, tenant_name, names)
    vectors = conn.execute(
        "select count(*) from codesift.code_symbols where tenant_id = %s and embedding is not null",
        (t,),
    ).fetchone()[0]
    asked = []  # (arguments, {leg: exact top 10}) per question, embedded once
    for i, text in enumerate(texts):
        v = conn.execute("select codesift.embed_query(%s)::text", (text,)).fetchone()[0]
        args = {"t": t, "m": m, "r": refs[i % len(refs)], "v": v}
        asked.append((args, {leg: column(conn, sql, args) for leg, sql in EXACT.items()}))
    for ef in ef_values:
        with conn.transaction(force_rollback=True):
            if ef is not None:
                conn.execute(f"set local {EF_SEARCH_SETTING} = {ef}")
            stats: dict = {}
            walks = {leg: walks_at(conn, leg, ef) for leg in TABLES}
            for args, exact_of in asked:
                for leg, exact in exact_of.items():
                    if not exact:
                        continue
                    column(conn, LEGS[leg], args)  # warm
                    got, ms = timed(conn, LEGS[leg], args)
                    hit = len(set(got) & set(exact)) / len(exact)
                    stats.setdefault(leg, []).append((hit, ms))
        for leg, values in stats.items():
            recall = statistics.mean(r for r, _ in values)
            p50 = statistics.median(ms for _, ms in values)
            where = f"{tenant_name:14} {vectors:>8,} {len(refs):>4} {leg:8}"
            setting = "default" if ef is None else str(ef)
            line = f"{where} {setting:>9} {walks[leg]:>8} {recall:>7.3f} {p50:>7.2f}"
            print(f"{line}  ({len(values)})")


def ef_search_values(text: str) -> list[int]:
    """--ef-search: comma-separated whole numbers in pgvector's range, 1 to 1000."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated whole numbers") from None
    if any(not 1 <= v <= 1000 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: each from 1 to 1000")
    return values


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--tenants", required=True, help="comma-separated tenant names")
    ap.add_argument(
        "--ef-search",
        type=ef_search_values,
        default=[],
        help="comma-separated hnsw.ef_search values measured side by side besides the "
        "legs' own (each set as codesift.ef_search for both legs in a rolled-back "
        "transaction)",
    )
    add_repos_option(ap)
    add_question_options(ap)
    args = ap.parse_args()
    ef_values = [None, *args.ef_search]
    texts = [text for _, text in short_and_long(args.short, args.long, args.words)]
    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        conn.execute("set jit = off")
        total = conn.execute(
            "select count(*) from codesift.code_symbols where embedding is not null"
        ).fetchone()[0]
        print(f"HNSW recall@10 against exact search in the scope; {total:,} symbol vectors")
        head = f"{'tenant':14} {'vectors':>8} {'refs':>4} {'leg':8}"
        columns = f"{'ef_search':>9} {'walks at':>8} {'recall':>7} {'p50 ms':>7}"
        print(f"{head} {columns}  (questions)")
        for tenant in args.tenants.split(","):
            measure(conn, tenant.strip(), texts, ef_values, args.repos)
    return 0


if __name__ == "__main__":
    sys.exit(main())
