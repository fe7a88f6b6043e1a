"""codesift.resolve_edges against a repository built to make it quadratic, and its loops
against a cancel: it runs on every index and every watch resync, inside one statement.

3,000 folders each holding test_x.py and x.py: every test's name names 3,000 files, and
pairing each test with the nearest of them compared every test with every one (9 million
comparisons, 14 s here, 25 s on the machine of the report) while PL/Python could not see
the statement_timeout. Resolved through an index, it ends well inside a timeout the
comparisons overran many times over (it takes a fraction of a second), with every test
paired with the x.py of its own folder. The loops of the resolution (budget.Ticker) run a
statement every few milliseconds, so a cancel or a statement_timeout ends them with the
usual error, the session still usable."""

import threading

import psycopg
import pytest
from codesift.indexer import index_repository

N = 3000
TIMEOUT = "3s"  # the comparisons took 14 s on the machine this was written on


@pytest.fixture
def namesakes(dsn, make_repo):
    files = {}
    for i in range(N):
        files[f"d{i:04d}/test_x.py"] = "x = 1\n"
        files[f"d{i:04d}/x.py"] = "x = 1\n"
    root = make_repo(files, name="namesakes")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        index_repository(conn, root, name="namesakes", tenant="acme", show_progress=False)
        return conn.execute(
            "select id from codesift.repositories where name = 'namesakes'"
        ).fetchone()[0]


def test_namesakes_resolve_inside_a_statement_timeout(db, namesakes):
    db.execute("delete from codesift.file_edges where repository_id = %s", (namesakes,))
    db.execute(f"set statement_timeout = '{TIMEOUT}'")
    count = db.execute("select codesift.resolve_edges(%s)", (namesakes,)).fetchone()[0]
    db.execute("reset statement_timeout")
    edges = db.execute(
        "select source_path, target_path from codesift.file_edges"
        " where repository_id = %s and relation = 'tests' order by 1",
        (namesakes,),
    ).fetchall()
    assert count == N
    assert edges == [(f"d{i:04d}/test_x.py", f"d{i:04d}/x.py") for i in range(N)]


# a loop of Python inside the server as long as the resolution of a huge repository, which
# ticks as resolve_edges' loops do; it says so if it runs to its end (60 s)
LONG_LOOP = """
do language plpython3u $$
import time
from codesift_db import budget, plans
pending = plans.prepared(plpy, plans.load("check_interrupts"))
tick = budget.Ticker(budget.Budget(budget.RESOLVE_SECONDS), lambda: plpy.execute(pending))
end = time.monotonic() + 60
while time.monotonic() < end:
    tick()
plpy.notice("ran to its end")
$$
"""


def test_a_statement_timeout_ends_the_loops_with_the_canceling_error(db):
    notices = []
    db.add_notice_handler(lambda d: notices.append(d.message_primary))
    db.execute("set statement_timeout = '200ms'")
    with pytest.raises(psycopg.errors.QueryCanceled, match="statement timeout"):
        db.execute(LONG_LOOP)
    db.execute("reset statement_timeout")
    assert notices == []
    assert db.execute("select 1").fetchone() == (1,)  # the session goes on


def test_a_cancel_from_another_session_ends_the_loops(db, dsn):
    pid = db.execute("select pg_backend_pid()").fetchone()[0]
    caught: list[BaseException] = []

    def run():
        try:
            db.execute(LONG_LOOP)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            caught.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    with psycopg.connect(dsn, autocommit=True) as other:
        # cancel once the loop runs (its statement is active), then again until it ends
        while worker.is_alive():
            active = other.execute(
                "select state = 'active' from pg_stat_activity where pid = %s", (pid,)
            ).fetchone()
            if active and active[0]:
                other.execute("select pg_cancel_backend(%s)", (pid,))
            worker.join(0.2)
    assert len(caught) == 1 and isinstance(caught[0], psycopg.errors.QueryCanceled)
    assert "user request" in str(caught[0])
    assert db.execute("select 1").fetchone() == (1,)
