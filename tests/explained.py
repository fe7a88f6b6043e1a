"""EXPLAIN ANALYZE of a statement and of every statement it runs (auto_explain), for tests
that check what a query reads rather than only what it returns; and the statements the
pipeline's Python runs, as a test can run them itself."""

import json

import psycopg
from codesift_db import plans


def explained(db, statement: str, args) -> tuple[list, list[dict]]:
    """The rows of `statement`, and the EXPLAIN ANALYZE (json) plans of it and of every
    statement it runs (auto_explain), each with its statement's text ("Query Text")."""
    db.execute("load 'auto_explain'")
    for setting, value in [
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_format", "json"),
    ]:
        db.execute("select set_config(%s, %s, false)", (setting, value))
    plans: list[dict] = []

    def keep(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if "plan:" in text:
            logged = json.loads(text.split("plan:", 1)[1])
            plans.append(logged["Plan"] | {"Query Text": logged.get("Query Text", "")})

    db.add_notice_handler(keep)
    db.execute("set client_min_messages = log")
    try:
        rows = db.execute(statement, args).fetchall()
    finally:
        db.execute("reset client_min_messages")
        db.execute("select set_config('auto_explain.log_min_duration', '-1', false)")
        db.remove_notice_handler(keep)
    return rows, plans


def nodes(plan: dict):
    """Every node of an EXPLAIN (json) plan, the plan first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def index_reads(db, index: str, column: str = "idx_scan", session=None) -> int:
    """An index's counter in pg_stat_user_indexes (idx_scan: scans, one per probe;
    idx_tup_read: entries read), after `session` (the connection that read it; db when
    None) flushed its statistics."""
    (session or db).execute("select pg_stat_force_next_flush()")
    return db.execute(
        f"select {column} from pg_stat_user_indexes where indexrelname = %s", (index,)
    ).fetchone()[0]


def pipeline_statement(name: str) -> str:
    """plpython/codesift_db/sql/NAME.sql with its $n parameters as psycopg's %(pn)s."""
    text = plans.load(name)
    for n in range(9, 0, -1):
        text = text.replace(f"${n}", f"%(p{n})s")
    return text
