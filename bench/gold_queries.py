"""A query set with gold symbols opened the way the analysis scripts read it (pack_misses.py,
pack_miss_evidence.py, cochange_reach.py, second_channel_bench.py): the arguments they
share, then a connection with each query's tenant found and its gold lines resolved at its
ref, on the default engine. The repositories must be indexed at the queries' refs already
(bench/eval.py does that)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench import eval as ev  # noqa: E402


def add_arguments(ap: argparse.ArgumentParser, budget: bool = True) -> None:
    """--queries, --repo-path, --dsn and (with `budget`) --budget."""
    ap.add_argument("--queries", required=True, help="a query set with gold symbols")
    ap.add_argument("--repo-path", action="append", required=True, help="NAME=CHECKOUT")
    ap.add_argument("--dsn", help="database (default: $CODESIFT_DSN)")
    if budget:
        ap.add_argument("--budget", type=int, default=4000)


def open_queries(
    args: argparse.Namespace, tenant: str | None = None, engine: str = "default"
) -> tuple[psycopg.Connection, list[ev.Query]]:
    """An autocommit connection and the queries of args.queries, their tenants found (named
    by `tenant`, bench/eval.py's pattern) and their gold lines resolved; the session on
    `engine`."""
    dsn = args.dsn or os.environ.get("CODESIFT_DSN")
    if not dsn:
        raise SystemExit("give --dsn or set CODESIFT_DSN")
    queries = ev.load_queries(json.loads(Path(args.queries).read_text()), args.repo_path)
    targets = {id(q.target): q.target for q in queries}.values()
    for target in targets:
        ev.name_tenant(target, tenant)
    conn = psycopg.connect(dsn, autocommit=True)
    try:
        ev.find_tenants(conn, targets)
        ev.resolve_gold_lines(conn, queries)
        ev.set_engine(conn, engine)
    except BaseException:
        conn.close()
        raise
    return conn, queries


def act_as(conn: psycopg.Connection, q: ev.Query) -> None:
    """The session acts as the query's tenant."""
    conn.execute(
        "select set_config('app.current_tenant_id', %s, false)", (str(q.target.tenant_id),)
    )
