"""The test database reset (tests/reusable_database.py): what a test leaves behind is
gone for the next one, and what a reset cannot undo gets the database dropped."""

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.reusable_database import (
    ReusableDatabase,
    capture,
    clone_janitor,
    end_sessions,
    sessions,
)

# the reset cleared the database's statistics: a vacuum or analyze counted since is one
# that autovacuum ran after it
AUTOVACUUMED_SINCE_RESET = (
    "select count(*) > 0 from pg_stat_all_tables where schemaname = 'codesift'"
    " and (last_autovacuum is not null or last_autoanalyze is not null)"
)


@pytest.fixture
def spare(codesift_template) -> Iterator[ReusableDatabase]:
    """A second reusable database, beside the one the `db` fixture hands out."""
    database = ReusableDatabase(codesift_template, dbname=f"codesift_reuse_{os.getpid()}")
    yield database
    if database.exists:
        database.drop()


def _use(database: ReusableDatabase, *statements: str) -> None:
    with database.open() as conn:
        for statement in statements:
            conn.execute(statement)
    database.close()


def test_a_reset_database_reads_as_a_fresh_clone(spare, make_repo):
    root = make_repo(
        {"app.py": "def handler():\n    return helper()\n\n\ndef helper():\n    pass\n"}
    )
    with spare.open() as conn:
        index_repository(conn, root, name="app", tenant="acme", embed=False, show_progress=False)
        conn.execute("update codesift.settings set value = value || '' where true")
        conn.execute("select nextval('codesift.mcp_tokens_id_seq')")
        conn.execute("analyze")
        conn.execute("delete from codesift.code_references")  # filled and emptied again
        assert conn.execute("select count(*) from codesift.code_symbols").fetchone()[0] == 2
    spare.close()
    assert (spare.resets, spare.drops) == (1, 0), spare.refusals
    with spare.open() as conn:
        now = capture(conn)
        analyzed = conn.execute(
            "select count(*) from pg_statistic s join pg_class c on c.oid = s.starelid"
            " where c.relnamespace = 'codesift'::regnamespace"
        ).fetchone()[0]
        if conn.execute(AUTOVACUUMED_SINCE_RESET).fetchone()[0]:
            # an autovacuum worker that started after the reset stopped those it saw may size
            # the tables and analyze them again: only such a worker may (the reset cleared
            # the statistics that would tell it to), and nothing else may differ
            now, analyzed = replace(now, planner_sizes=spare.fresh.planner_sizes), 0
        assert now == spare.fresh
        assert analyzed == 0
        tenant = conn.execute("insert into codesift.tenants (name) values ('x') returning id")
        assert tenant.fetchone()[0] == 1  # the sequences start over


def test_sessions_left_open_are_ended_and_database_settings_cleared(spare):
    with spare.open() as conn:
        conn.execute(f'alter database "{spare.dbname}" set work_mem = "7MB"')
    left_open = psycopg.connect(spare._connect().info.dsn, autocommit=True)
    left_open.execute("insert into codesift.tenants (name) values ('lingering')")
    spare.close()
    assert (spare.resets, spare.drops) == (1, 0), spare.refusals
    with pytest.raises(psycopg.OperationalError):
        left_open.execute("select 1")
    with spare.open() as conn:
        assert conn.execute("show work_mem").fetchone()[0] != "7MB"
        assert conn.execute("select count(*) from codesift.tenants").fetchone()[0] == 0


@pytest.mark.parametrize("reusable", [True, False], ids=["reset", "dropped"])
def test_the_next_test_has_a_database_the_last_ones_processes_cannot_reach(spare, reusable):
    """A process the last test left running (a git hook's background index) that connects
    afterwards with that test's DSN finds no database, reset or dropped."""
    with spare.open() as conn:
        last_dsn = conn.info.dsn
        if not reusable:
            conn.execute("create table public.left_behind (id int)")
    spare.close()
    assert (spare.resets, spare.drops) == ((1, 0) if reusable else (0, 1)), spare.refusals
    with spare.open() as conn:
        assert conn.info.dbname != psycopg.conninfo.conninfo_to_dict(last_dsn)["dbname"]
    with pytest.raises(psycopg.OperationalError, match="does not exist"):
        psycopg.connect(last_dsn)


def test_a_session_that_ends_by_itself_after_it_was_listed_has_ended(spare):
    """pg_terminate_backend says false for a process that is gone: a session that ended
    between the listing and its termination (a closed client's backend exiting, an
    autovacuum worker done) must not get the database dropped."""
    spare.open().close()
    leaving = spare._connect()
    pid = leaving.info.backend_pid
    with clone_janitor(spare.template, spare.dbname).cursor() as cur:
        listed = sessions(cur, spare.dbname)
        assert pid in listed
        leaving.close()
        _wait_gone(cur, pid)
        assert end_sessions(cur, spare.dbname, listed, 1_000)


def _wait_gone(cur, pid: int) -> None:
    for _ in range(200):
        cur.execute("select exists (select from pg_stat_activity where pid = %s)", (pid,))
        if not cur.fetchone()[0]:
            return
        time.sleep(0.05)
    raise AssertionError(f"backend {pid} did not exit")


def test_a_session_that_outlives_its_termination_gets_the_database_dropped(spare):
    spare.open().close()
    spare.terminate_ms = 200
    busy = psycopg.connect(spare._connect().info.dsn, autocommit=True)
    # PL/Python does not see the termination until its code returns
    sleeper = threading.Thread(
        target=lambda: _ignore_errors(
            busy.execute, "do $$ import time; time.sleep(3) $$ language plpython3u"
        )
    )
    sleeper.start()
    try:
        time.sleep(0.5)
        spare.close()
        assert (spare.resets, spare.drops) == (0, 1)
    finally:
        sleeper.join()
        busy.close()


def _ignore_errors(call, *args):
    try:
        call(*args)
    except psycopg.Error:
        pass


@pytest.mark.parametrize(
    "change",
    [
        "create table public.left_behind (id int)",
        "create index on codesift.tenants (lower(name))",
        "grant select on codesift.tenants to public",
        "revoke execute on function pg_catalog.now() from public",
        "alter table codesift.tenants disable row level security",
        "do $$ begin execute format('alter function %s set work_mem = ''1MB''', (select"
        " oid::regprocedure from pg_proc where pronamespace = 'codesift'::regnamespace"
        " order by oid limit 1)); end $$",
        "create or replace function codesift.sneaky() returns int language sql as 'select 1'",
        "comment on table codesift.tenants is 'changed'",
        "alter sequence codesift.tenants_id_seq increment by 2",
    ],
)
def test_a_change_a_reset_cannot_undo_drops_the_database(spare, change):
    _use(spare, change)
    assert (spare.resets, spare.drops) == (0, 1)
    assert not spare.exists
    with spare.open() as conn:  # a new clone, without the change
        assert capture(conn) == spare.fresh
