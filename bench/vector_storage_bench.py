"""pack_context latency with the vectors kept in their rows (storage main, migration 032) and
out of line (pgvector's own `external`, as before it), side by side on one database (prints
only, never asserts).

    .venv/bin/python bench/vector_storage_bench.py --dsn EVAL --tenant eval-pytest:pytest \\
        --tenant eval-flask:flask --queries bench/queries/express.json \\
        --long bench/queries/swebench-dev.json --rounds 2

Each round sets each storage in turn on codesift.code_symbols.embedding and
codesift.blobs.embedding and rewrites both tables (`vacuum full`: every row laid out anew and
every index rebuilt, the same for both sides), then asks every tenant its short and long
questions as bench/question_latency_bench.py does (default engine, the database embedding
the question). It rewrites the tables of the database it is given (an exclusive lock each
time, minutes on a large one) and leaves them at main, the schema's storage."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "loader"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.question_latency_bench import pct, run, stage_medians  # noqa: E402
from bench.question_sets import questions  # noqa: E402

TABLES = ("codesift.code_symbols", "codesift.blobs")
STORAGES = ("external", "main")
STAGES = ("legs", "hydrate", "standins")  # where the layout shows


def set_storage(conn: psycopg.Connection, storage: str) -> str:
    """Every row of both tables rewritten with the vectors stored so; their sizes."""
    for table in TABLES:
        conn.execute(f"alter table {table} alter column embedding set storage {storage}")
        conn.execute(f"vacuum full {table}")
        conn.execute(f"analyze {table}")
    heap, toast = conn.execute(
        "select pg_size_pretty(pg_relation_size(oid)),"
        " pg_size_pretty(pg_relation_size(reltoastrelid))"
        " from pg_class where oid = 'codesift.code_symbols'::regclass"
    ).fetchone()
    conn.execute("checkpoint")
    return f"code_symbols heap {heap}, toast {toast}"


def measure(conn, tenant: str, repo: str, short: list[str], long: list[str], reps: int) -> dict:
    tenant_id = conn.execute(
        "select id from codesift.tenants where name = %s", (tenant,)
    ).fetchone()
    if tenant_id is None:
        sys.exit(f"no tenant {tenant!r} in this database")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant_id[0]),))
    out = {}
    for label, texts in (("short", short), ("long", long)):
        ms = run(conn, texts, repo, reps, ["default"])["default"]
        stages = stage_medians(conn, texts, repo)
        out[label] = (pct(ms, 0.5), {s: stages.get(s, 0.0) for s in STAGES})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True, help="a superuser's connection to the database")
    ap.add_argument(
        "--tenant", action="append", required=True, help="TENANT:REPO, as often as wanted"
    )
    ap.add_argument("--queries", required=True, help="short questions (express.json shape)")
    ap.add_argument("--long", required=True, help="a set whose query texts are long")
    ap.add_argument("--long-n", type=int, default=20, help="long questions taken")
    ap.add_argument("--words", type=int, default=300, help="words a long question keeps")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="external then main, this many times")
    args = ap.parse_args()
    pairs = [t.split(":", 1) for t in args.tenant]
    if any(len(p) != 2 or not all(p) for p in pairs):
        ap.error("--tenant takes TENANT:REPO")

    short, long = questions(args.queries, args.long, args.words, args.long_n)
    print(f"{len(short)} short questions, {len(long)} long ({args.words} words), p50 ms")
    print(f"{'round':<7}{'storage':<10}{'tenant':<16}{'short':>8}{'long':>8}", end="")
    print("   stages (short | long)")
    results: dict[tuple, list[float]] = {}
    laid_out = None
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        try:
            for rnd in range(1, args.rounds + 1):
                for storage in STORAGES:
                    sizes = set_storage(conn, storage)
                    laid_out = storage
                    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
                    print(f"-- round {rnd}, {storage}: {sizes}; load average {load}")
                    for tenant, repo in pairs:
                        got = measure(conn, tenant, repo, short, long, args.reps)
                        stages = " | ".join(
                            ", ".join(f"{s} {v:.1f}" for s, v in got[k][1].items())
                            for k in ("short", "long")
                        )
                        print(
                            f"{rnd:<7}{storage:<10}{tenant:<16}{got['short'][0]:>8.1f}"
                            f"{got['long'][0]:>8.1f}   {stages}"
                        )
                        for k in ("short", "long"):
                            results.setdefault((tenant, k, storage), []).append(got[k][0])
        finally:
            if laid_out != "main":
                set_storage(conn, "main")
    print("\nmedian over the rounds: external -> main (ratio)")
    for tenant, _ in pairs:
        for k in ("short", "long"):
            ext = statistics.median(results[(tenant, k, "external")])
            inline = statistics.median(results[(tenant, k, "main")])
            print(f"  {tenant:<16}{k:<7}{ext:>8.1f} -> {inline:>6.1f} ms  ({inline / ext:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
