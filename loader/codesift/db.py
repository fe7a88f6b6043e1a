"""Connections: every command reads CODESIFT_DSN; unset means the embedded cluster."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus

from .errors import ConnectionFailed

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EMBEDDED_PORT = 54329


def embedded_dsn() -> str:
    """The DSN of the project-local cluster that `make db` starts (scripts/db.sh)."""
    socket_dir = PROJECT_ROOT / ".pgdata" / "run"
    return f"postgresql://postgres@/codesift?host={socket_dir}&port={EMBEDDED_PORT}"


def current_dsn() -> str:
    return os.environ.get("CODESIFT_DSN") or embedded_dsn()


def read_dsn() -> str:
    """Where queries may go: CODESIFT_READ_DSN (a hot-standby replica, scripts/replica.sh),
    else current_dsn(). Indexing and every other write use current_dsn()."""
    return os.environ.get("CODESIFT_READ_DSN") or current_dsn()


def database_dsn(dbname: str, dsn: str | None = None) -> str:
    """Another database on the server of `dsn` (default: current_dsn())."""
    return make_conninfo(dsn or current_dsn(), dbname=dbname)


def redacted(dsn: str) -> str:
    """The DSN without its password, for error messages."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable DSN>"
    if "password" in params:
        params["password"] = "***"
    return make_conninfo("", **params)


def failure_reason(exc: Exception) -> str:
    """Why a connection failed, on one line: libpq's last attempt (one per host tried) and
    the hint lines it indents under it ('Is the server running ...'), not the hint alone."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    start = len(lines) - 1
    while start > 0 and lines[start][:1] in ("\t", " "):
        start -= 1
    return " ".join(line.strip() for line in lines[start:])


def connect(dsn: str | None = None, **kwargs) -> psycopg.Connection:
    dsn = dsn or current_dsn()
    try:
        conn = psycopg.connect(dsn, **kwargs)
    except psycopg.ProgrammingError as exc:
        raise ConnectionFailed(
            f"CODESIFT_DSN is not a valid connection string ({exc}).\n"
            "  Use e.g. postgresql://user:password@host:5432/dbname, or unset it to use the "
            "embedded database (make db)."
        ) from None
    except psycopg.OperationalError as exc:
        reason = failure_reason(exc)
        hint = (
            "Start the embedded database with `make db`."
            if not os.environ.get("CODESIFT_DSN")
            else "Check CODESIFT_DSN, or unset it to use the embedded database (make db)."
        )
        raise ConnectionFailed(
            f"cannot connect to PostgreSQL at {redacted(dsn)}: {reason}\n  {hint}"
        ) from None
    return conn


LOADER_ROLE = "codesift_loader"


@contextmanager
def acting_as_loader(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """Run a command as the loader role under row-level security, not as superuser.

    With a superuser DSN (the embedded database's default) every command but `migrate`
    switches to codesift_loader for its work, so a bug or a planted row can never reach
    across tenants: superuser is needed only to install the schema."""
    row = conn.execute("select current_setting('is_superuser') = 'on'").fetchone()
    assert row is not None  # a select without from returns one row
    switch = row[0]
    if switch:
        try:
            conn.execute(f"set role {LOADER_ROLE}")
        except psycopg.errors.InvalidParameterValue:
            raise ConnectionFailed(
                f"role {LOADER_ROLE} does not exist: this database is not migrated to this "
                "codesift yet; run `codesift migrate`"
            ) from None
    try:
        yield conn
    finally:
        # a command still in flight (an interrupt cut it short): only closing ends it
        status = conn.info.transaction_status
        if switch and not conn.closed and not conn.broken and status != TransactionStatus.ACTIVE:
            if status == TransactionStatus.INERROR:
                conn.rollback()
            conn.execute("reset role")


def share_tenant(conn: psycopg.Connection) -> None:
    """Inside a transaction: on a Citus coordinator, repeat the session's tenant as a
    transaction-local setting, the only form Citus sends to the workers (under
    citus.propagate_set_commands = 'local', which `codesift migrate --citus` sets) and so
    the only one their row-level policies see. Elsewhere it sets nothing."""
    row = conn.execute(
        "select current_setting('app.current_tenant_id', true),"
        " current_setting('citus.propagate_set_commands', true) = 'local'"
    ).fetchone()
    assert row is not None  # a select without from returns one row
    tenant, citus = row
    if citus and tenant:
        conn.execute(sql.SQL("set local app.current_tenant_id = {}").format(sql.Literal(tenant)))


@contextmanager
def tenant_transaction(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """conn.transaction() in which the session's tenant reaches Citus workers (share_tenant)."""
    with conn.transaction():
        share_tenant(conn)
        yield conn
