"""Per-tenant login roles cannot take the server's connections (issue 35, item 7).

A BI role once opened 97 connections and locked codesift_app and codesift_loader out. Every
per-tenant role now has a connection limit (default DEFAULT_CONNECTION_LIMIT, or
--connection-limit) and statement and idle timeouts; the limits of all of them leave a
reserve for the service roles (or the server reserves it: reserved_connections, PostgreSQL
16+); and roles made before this get theirs on upgrade."""

import time

import psycopg
import pytest
from codesift.errors import CodesiftError
from codesift.migrate import migrate
from codesift.tenants import DEFAULT_CONNECTION_LIMIT, SERVICE_RESERVE
from psycopg.conninfo import make_conninfo

from tests.db.test_upgrade import sql_at
from tests.watching import run_codesift

from .login_roles import LoginRoles

# the last commit before login roles had limits: its migrations make roles without them
BEFORE_LIMITS = "346faab"
TIMEOUTS = ("statement_timeout", "idle_in_transaction_session_timeout", "idle_session_timeout")


@pytest.fixture
def roles(db, dsn):
    made = LoginRoles(db, dsn)
    yield made
    made.close()


@pytest.fixture
def acme(db):
    db.execute("insert into tenants (name) values ('acme')")


def _exists(db, role: str) -> bool:
    return db.execute(
        "select exists (select from pg_roles where rolname = %s)", (role,)
    ).fetchone()[0]


def _limit(db, role: str) -> int:
    return db.execute("select rolconnlimit from pg_roles where rolname = %s", (role,)).fetchone()[0]


def _server_reserves(db) -> bool:
    """PostgreSQL 16+ with reserved_connections that both service roles may use."""
    reserved = db.execute("select current_setting('reserved_connections', true)").fetchone()[0]
    if not reserved or int(reserved) == 0:
        return False
    return db.execute(
        "select pg_has_role('codesift_app', 'pg_use_reserved_connections', 'USAGE')"
        " and pg_has_role('codesift_loader', 'pg_use_reserved_connections', 'USAGE')"
    ).fetchone()[0]


def _until_sessions(db, role: str, left: int, seconds: float = 10.0) -> None:
    """Wait until the server holds at most `left` sessions of `role`."""
    deadline = time.monotonic() + seconds
    count = "select count(*) from pg_stat_activity where usename = %s"
    while db.execute(count, (role,)).fetchone()[0] > left:
        assert time.monotonic() < deadline, f"{role}'s closed session still holds its slot"
        time.sleep(0.05)


def test_a_login_role_stops_at_its_limit_and_the_services_still_connect(db, dsn, acme, roles):
    role = roles.name()
    out = run_codesift(
        dsn, "tenant", "create", "acme", "--login-role", role, "--connection-limit", "2"
    )
    assert out.returncode == 0, out.stderr
    assert "2 connections" in out.stderr
    roles.passwords[role] = out.stdout.strip()
    first, second = roles.connect(role), roles.connect(role)
    with pytest.raises(psycopg.OperationalError, match=f'too many connections for role "{role}"'):
        roles.connect(role)
    # the application and the loader are not among them
    for service in ("codesift_app", "codesift_loader"):
        with psycopg.connect(make_conninfo(dsn, user=service)) as conn:
            assert conn.execute("select current_user").fetchone()[0] == service
    # a freed slot is the role's again, once the closed session's backend has exited (the
    # server ends it after the client hangs up, not before close() returns)
    second.close()
    _until_sessions(db, role, 1)
    roles.connect(role)
    # its sessions run under timeouts
    for name in TIMEOUTS:
        value = first.execute(
            "select setting::bigint from pg_settings where name = %s", (name,)
        ).fetchone()[0]
        assert value > 0, name


def test_the_default_limit_and_what_the_administrator_set_are_kept(db, acme, roles):
    granted = roles.grant("acme")
    role = granted.role
    assert granted.connection_limit == DEFAULT_CONNECTION_LIMIT == _limit(db, role)
    settings = dict(
        db.execute(
            "select split_part(c, '=', 1), split_part(c, '=', 2)"
            " from pg_db_role_setting s, unnest(s.setconfig) c"
            " where s.setrole = %s::regrole and s.setdatabase = 0",
            (role,),
        ).fetchall()
    )
    assert set(TIMEOUTS) <= set(settings), settings
    # granting again with a limit sets it; without, keeps it and the administrator's timeouts
    assert roles.grant("acme", role, connection_limit=3).connection_limit == 3
    db.execute(f"alter role {role} set statement_timeout = '7min'")
    assert roles.grant("acme", role).connection_limit == 3 == _limit(db, role)
    assert roles.connect(role).execute("show statement_timeout").fetchone()[0] == "7min"


def test_bad_limits_are_refused(db, acme, roles):
    for bad in (0, -1, 100_001):
        role = roles.name()
        with pytest.raises(CodesiftError, match="--connection-limit"):
            roles.grant("acme", role, connection_limit=bad)
        assert not _exists(db, role)


def test_the_limits_leave_a_reserve_for_the_services(db, acme, roles):
    max_connections = int(db.execute("show max_connections").fetchone()[0])
    role = roles.name()
    if _server_reserves(db):
        # the server keeps reserved_connections for the service roles: any limit is safe
        assert roles.grant("acme", role, connection_limit=max_connections).created
        return
    with pytest.raises(CodesiftError) as refused:
        roles.grant("acme", role, connection_limit=max_connections)
    message = str(refused.value)
    assert f"{SERVICE_RESERVE} for codesift_app and codesift_loader" in message, message
    assert "--connection-limit" in message and "max_connections" in message, message
    # nothing was made
    assert not _exists(db, role)
    assert db.execute("select count(*) from tenant_roles").fetchone()[0] == 0


def test_roles_made_before_limits_get_them_on_upgrade(blank_postgresql, tmp_path, roles):
    old_sql = sql_at(BEFORE_LIMITS, tmp_path)
    migrate(blank_postgresql, sql_dir=old_sql)
    conn = blank_postgresql
    conn.autocommit = True
    tenant = conn.execute("insert into codesift.tenants (name) values ('acme') returning id")
    tid = tenant.fetchone()[0]
    # what the old grant made (less its membership in codesift_tenant: an unlimited member
    # would stop other sessions' grants on this shared cluster until the upgrade below)
    unlimited, limited, tuned = roles.name(), roles.name(), roles.name()
    conn.execute(f"create role {unlimited} login")
    conn.execute(f"create role {limited} login connection limit 3")
    conn.execute(f"create role {tuned} login")
    conn.execute(f"alter role {tuned} set statement_timeout = '7min'")
    for role in (unlimited, limited, tuned):
        conn.execute(
            "insert into codesift.tenant_roles (role_name, tenant_id) values (%s, %s)", (role, tid)
        )
    try:
        migrate(conn)
        assert _limit(conn, unlimited) == DEFAULT_CONNECTION_LIMIT
        assert _limit(conn, limited) == 3
        assert _limit(conn, tuned) == DEFAULT_CONNECTION_LIMIT
        for role in (unlimited, limited, tuned):
            rows = conn.execute(
                "select c from pg_db_role_setting s, unnest(s.setconfig) c"
                " where s.setrole = %s::regrole and s.setdatabase = 0",
                (role,),
            ).fetchall()
            names = {c.split("=", 1)[0] for (c,) in rows}
            assert set(TIMEOUTS) <= names, (role, rows)
        assert ("statement_timeout=7min",) in conn.execute(
            "select c from pg_db_role_setting s, unnest(s.setconfig) c"
            " where s.setrole = %s::regrole",
            (tuned,),
        ).fetchall()
    finally:
        for role in (unlimited, limited, tuned):
            conn.execute(f"drop role if exists {role}")
