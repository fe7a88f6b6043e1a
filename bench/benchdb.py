"""The benches' databases: each bench works in databases of its own, named codesift_bench*,
on the server of CODESIFT_DSN (default: the embedded one), created, migrated and dropped
here.

    import benchdb  # bench/ is on sys.path when a bench runs as a script
    benchdb.create("codesift_bench_x")  # dropped first if it exists
    benchdb.migrate("codesift_bench_x")  # this checkout's migrations
    with benchdb.connect("codesift_bench_x") as conn: ...
"""

from __future__ import annotations

import sys
import time

import psycopg
from codesift.db import database_dsn
from psycopg import sql

PREFIX = "codesift_bench"


def check_name(dbname: str) -> None:
    """Refuse (exit) to touch a database whose name does not start with codesift_bench."""
    if not dbname.startswith(PREFIX):
        sys.exit(f"refusing to touch {dbname!r}: bench databases are named {PREFIX}*")


def dsn(dbname: str, server_dsn: str | None = None) -> str:
    """The database dbname on the server of server_dsn (default: CODESIFT_DSN's)."""
    return database_dsn(dbname, server_dsn)


def connect(dbname: str, server_dsn: str | None = None, autocommit: bool = False):
    return psycopg.connect(dsn(dbname, server_dsn), autocommit=autocommit)


def exists(dbname: str, server_dsn: str | None = None) -> bool:
    with connect("postgres", server_dsn, autocommit=True) as c:
        return bool(c.execute("select 1 from pg_database where datname = %s", (dbname,)).fetchone())


def drop(dbname: str, server_dsn: str | None = None) -> None:
    check_name(dbname)
    with connect("postgres", server_dsn, autocommit=True) as c:
        c.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(dbname)))


def create(dbname: str, template: str | None = None, server_dsn: str | None = None) -> None:
    """A fresh, empty database (or a copy of template), dropped first if it exists."""
    drop(dbname, server_dsn)
    with connect("postgres", server_dsn, autocommit=True) as c:
        q = sql.SQL("create database {}").format(sql.Identifier(dbname))
        if template:
            q += sql.SQL(" template {}").format(sql.Identifier(template))
        for attempt in range(30):  # a template is busy while anyone is connected to it
            try:
                c.execute(q)
                break
            except psycopg.errors.ObjectInUse:
                if attempt == 29:
                    raise
                time.sleep(2)


def migrate(dbname: str, server_dsn: str | None = None) -> float:
    """Apply this checkout's migrations (what `codesift migrate` does); returns seconds."""
    from codesift.migrate import migrate as apply

    start = time.perf_counter()
    with connect(dbname, server_dsn) as conn:
        apply(conn)
    return time.perf_counter() - start
