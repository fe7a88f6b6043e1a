"""The loader, ask, status and forget run without superuser: as codesift_loader, directly
or switched to from a superuser DSN, under row-level security."""

import psycopg
import pytest
from codesift.db import acting_as_loader
from psycopg.conninfo import make_conninfo

from tests.watching import run_codesift as _cli

from .two_tenants import COMMON, secret_files


def test_a_superuser_connection_works_as_the_loader_under_rls(db):
    db.execute("insert into tenants (name) values ('acme')")
    db.execute(
        "insert into blobs (tenant_id, sha, size, content)"
        " select id, repeat('a', 40), 1, 'x' from tenants where name = 'acme'"
    )
    with acting_as_loader(db):
        row = db.execute(
            "select current_user, (select rolsuper from pg_roles where rolname = current_user)"
        ).fetchone()
        assert row == ("codesift_loader", False)
        db.execute("select set_config('app.current_tenant_id', '', false)")
        assert db.execute("select count(*) from blobs").fetchone()[0] == 0  # no tenant: nothing
    assert db.execute("select current_user").fetchone()[0] == "postgres"
    assert db.execute("select count(*) from blobs").fetchone()[0] == 1


def test_every_cli_command_but_migrate_works_with_the_loader_role_alone(dsn, make_repo, db):
    loader = make_conninfo(dsn, user="codesift_loader")
    root = make_repo({**COMMON, **secret_files("acme")}, name="acme-shared")
    index = _cli(loader, "index", str(root), "--name", "shared", "--tenant", "acme", "--no-embed")
    assert index.returncode == 0, index.stderr
    ask = _cli(loader, "ask", "token vault zebra", "--repo", "shared", "--tenant", "acme")
    assert ask.returncode == 0, ask.stderr
    assert "acmezebra" in ask.stdout
    status = _cli(loader, "status")
    assert status.returncode == 0 and "shared" in status.stdout, status.stderr
    forget = _cli(loader, "forget", "shared", "--tenant", "acme", "--yes")
    assert forget.returncode == 0, forget.stderr
    assert db.execute("select count(*) from files").fetchone()[0] == 0
    # migrate needs the owner: a clear one-line refusal, nothing changed
    migrate = _cli(loader, "migrate")
    assert migrate.returncode == 1 and "Traceback" not in migrate.stderr


def test_the_application_role_cannot_create_tenants_through_the_loader(dsn, make_repo):
    app = make_conninfo(dsn, user="codesift_app")
    root = make_repo({"a.py": "x = 1\n"}, name="plain")
    index = _cli(app, "index", str(root), "--tenant", "newcomer", "--no-embed")
    assert index.returncode == 1, index.stdout
    assert "Traceback" not in index.stderr and len(index.stderr.strip().splitlines()) <= 3


def test_names_are_bounded(dsn, make_repo, db):
    huge = _cli(dsn, "tenant", "create", "t" * 100_000)
    assert huge.returncode == 1 and "at most 200 characters" in huge.stderr
    assert len(huge.stderr) < 500  # the name is not echoed back
    root = make_repo({"a.py": "x = 1\n"}, name="plain")
    long_repo = _cli(dsn, "index", str(root), "--name", "r" * 600, "--no-embed")
    assert long_repo.returncode == 1 and "Traceback" not in long_repo.stderr
    assert db.execute("select count(*) from tenants where length(name) > 200").fetchone()[0] == 0
    assert db.execute("select count(*) from repositories").fetchone()[0] == 0
    # forgetting a megabyte-long name is an unknown repository, nothing more
    db.execute("insert into tenants (name) values ('acme')")
    with psycopg.connect(make_conninfo(dsn, user="codesift_loader"), autocommit=True) as loader:
        loader.execute(
            "select set_config('app.current_tenant_id', id::text, false)"
            " from tenants where name = 'acme'"
        )
        with pytest.raises(psycopg.errors.UndefinedObject):
            loader.execute("select forget_repository(%s)", ("y" * 1_000_000,))


ANALYZED = (
    "select relname, last_analyze from pg_stat_user_tables where schemaname = 'codesift'"
    " and relname in ('code_symbols', 'files', 'symbol_terms') order by relname"
)


def test_a_refs_first_index_refreshes_the_planner_statistics(dsn, make_repo, db):
    # a new ref is planned from statistics that know its rows: the loader has the tables
    # analyzed (as their owner) right after its first index, and not after one that
    # changed nothing
    loader = make_conninfo(dsn, user="codesift_loader")
    root = make_repo({**COMMON, **secret_files("acme")}, name="acme-fresh")
    before = dict(db.execute(ANALYZED).fetchall())
    assert _cli(loader, "index", str(root), "--tenant", "acme", "--no-embed").returncode == 0
    first = dict(db.execute(ANALYZED).fetchall())
    assert all(
        first[t] is not None and (before.get(t) is None or first[t] > before[t]) for t in first
    )
    assert _cli(loader, "index", str(root), "--tenant", "acme", "--no-embed").returncode == 0
    assert dict(db.execute(ANALYZED).fetchall()) == first
    # only the loader may run it; it takes no argument and answers a count, nothing else
    for role in ("codesift_app", "codesift_tenant", "public"):
        assert db.execute(
            "select has_function_privilege(%s, 'codesift.refresh_statistics()', 'execute')",
            (role,),
        ).fetchone() == (False,), role
    with psycopg.connect(make_conninfo(dsn, user="codesift_app")) as app:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("select codesift.refresh_statistics()")
    with psycopg.connect(loader) as conn:
        assert conn.execute("select codesift.refresh_statistics()").fetchone() == (11,)


def test_an_interrupt_during_a_command_stays_an_interrupt(dsn):
    """A signal that cuts a command short leaves the connection busy with it: switching the
    role back then would fail with 'another command is already in progress' and hide the
    interrupt (a worker took that for a database outage and never stopped)."""
    with pytest.raises(KeyboardInterrupt):
        with psycopg.connect(dsn, autocommit=True) as conn, acting_as_loader(conn):
            conn.pgconn.send_query(b"select 1")  # sent, its result never read
            raise KeyboardInterrupt
