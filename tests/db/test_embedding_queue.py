"""Vectors by content and the embedding queue: what is embedded, by whom, and how often.

Counts are asserted, never times: a vector computed is one more row in
codesift.embeddings and one more in the loader's `computed` count."""

import os
import re
import signal
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from codesift.embedder import embed_pending
from codesift.indexer import index_repository
from codesift_db.embedtext import embedding_key, symbol_text

from tests.conftest import commit, git, write_files
from tests.watching import poll

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
DEADLINE_SECONDS = 180  # generous: a deadline for polling, not a timing assertion
DONE = re.compile(r"embedded (\d+) symbols \+ (\d+) files \((\d+) vectors computed, (\d+) reused\)")


def functions(n: int, changed: int | None = None) -> str:
    """A module of n distinct functions; function `changed` gets another body."""
    out = []
    for i in range(n):
        body = f"return {i} * factor + offset_{i}" if i != changed else "return -1"
        out.append(f"def compute_{i}(factor, offset_{i}):\n    {body}\n")
    return "\n\n".join(out)


def _index(dsn: str, root: Path, tenant: str = "acme", **kw):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        return index_repository(conn, root, tenant=tenant, show_progress=False, **kw)


def _count(db, sql: str, *args) -> int:
    row = db.execute(sql, args).fetchone()
    assert row is not None
    return row[0]


def _vectors(db, tenant: str = "acme") -> int:
    return _count(
        db,
        "select count(*) from codesift.embeddings e join codesift.tenants t"
        " on t.id = e.tenant_id where t.name = %s",
        tenant,
    )


def _backlog(db) -> int:
    return _count(
        db,
        "select (select count(*) from codesift.code_symbols where embedding_model is null)"
        " + (select count(*) from codesift.blobs where embedding_model is null)",
    )


def _cli(dsn: str, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "CODESIFT_DSN": dsn}
    return subprocess.Popen(
        [str(CODESIFT), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _finish(proc: subprocess.Popen, code: int = 0) -> str:
    """The process's output once it exits with `code`; one that does not exit is killed,
    so that it cannot go on working in the next test's database."""
    try:
        out, err = proc.communicate(timeout=DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"still running after {DEADLINE_SECONDS} s: {out}{err}") from None
    assert proc.returncode == code, out + err
    return out + err


def _done(output: str) -> tuple[int, int, int, int]:
    match = DONE.search(output.replace("\n", " "))
    assert match, output
    symbols, files, computed, reused = (int(g) for g in match.groups())
    return symbols, files, computed, reused


def test_one_changed_function_embeds_that_symbol_and_the_file(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(40)})
    first = _index(dsn, root)
    assert first.embedded.symbols == 40 and first.embedded.blobs == 1
    assert first.embedded.computed == 41 and _vectors(db) == 41

    write_files(root, {"calc.py": functions(40, changed=3)})
    commit(root, "change one function")
    second = _index(dsn, root)
    # a new blob: all 40 symbol rows are new, 39 of their texts are not
    assert second.embedded.symbols == 40 and second.embedded.blobs == 1
    assert second.embedded.computed == 2  # compute_3 and the file
    assert second.embedded.reused == 39
    assert _vectors(db) == 43


def test_a_branch_switch_back_and_forth_embeds_nothing_the_second_time(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(12), "README.md": "# calc\n"})
    git(root, "checkout", "-q", "-b", "feature")
    write_files(root, {"calc.py": functions(12, changed=5), "extra.py": functions(3)})
    commit(root, "feature work")

    computed = []
    for ref in ("main", "feature", "main", "feature"):
        computed.append(_index(dsn, root, ref=ref).embedded.computed)
    assert computed[0] > 0 and computed[1] > 0
    assert computed[2:] == [0, 0]


def test_a_forgotten_repository_indexed_again_reuses_nothing_that_was_collected(db, dsn, make_repo):
    """Forgetting collects the vectors no row holds; the same text indexed again is
    computed again (garbage collection really removes them)."""
    root = make_repo({"calc.py": functions(5)})
    _index(dsn, root)
    assert _vectors(db) == 6
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        tenant = _count(conn, "select id from codesift.tenants where name = 'acme'")
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
        conn.execute("select codesift.forget_repository('repo')")
    assert _vectors(db) == 0
    assert _index(dsn, root).embedded.computed == 6


def test_vectors_are_never_shared_between_tenants(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(6)})
    acme = _index(dsn, root, tenant="acme").embedded
    globex = _index(dsn, root, tenant="globex").embedded
    assert acme.computed == globex.computed == 7
    assert _vectors(db, "acme") == _vectors(db, "globex") == 7


def test_the_key_is_the_model_and_the_exact_text(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(2)})
    _index(dsn, root)
    row = db.execute(
        "select s.embedding_key, s.embedding_model, b.path_hint, s.kind, s.qualified_name,"
        " s.signature, s.body, s.doc, s.embedding = e.embedding"
        " from codesift.code_symbols s join codesift.blobs b"
        " on b.tenant_id = s.tenant_id and b.sha = s.blob_sha"
        " join codesift.embeddings e on e.tenant_id = s.tenant_id and e.key = s.embedding_key"
        " order by s.id limit 1"
    ).fetchone()
    assert row is not None
    key, model, *fields, same_vector = row
    assert key == embedding_key(model, symbol_text(*fields))
    assert key != embedding_key("another-model", symbol_text(*fields))
    assert same_vector


def test_index_returns_before_embedding_and_a_worker_drains_the_backlog(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(8)})
    index = _finish(_cli(dsn, "index", str(root), "--tenant", "acme"))
    assert "embedding in the background" in index
    assert _backlog(db) == 9  # lexical search answers already; no vector yet
    assert _vectors(db) == 0

    symbols, files, computed, _ = _done(_finish(_cli(dsn, "worker", "--once")))
    assert (symbols, files, computed) == (8, 1, 9)
    assert _backlog(db) == 0


def test_index_wait_embeds_before_it_returns(db, dsn, make_repo):
    root = make_repo({"calc.py": functions(4)})
    output = _finish(_cli(dsn, "index", str(root), "--tenant", "acme", "--wait"))
    assert _done(output)[:3] == (4, 1, 5)
    assert _backlog(db) == 0


def test_two_workers_draining_one_queue_embed_every_row_exactly_once(db, dsn, make_repo):
    root = make_repo({f"m{i}.py": functions(40).replace("compute_", f"m{i}_f") for i in range(8)})
    _index(dsn, root, embed=False)
    rows = _backlog(db)
    assert rows == 8 * 41

    workers = [_cli(dsn, "worker", "--once") for _ in range(2)]
    results = [_done(_finish(w)) for w in workers]
    assert sum(r[0] + r[1] for r in results) == rows  # every row, by one worker only
    assert sum(r[2] for r in results) == rows == _vectors(db)  # each text computed once
    assert all(r[0] > 0 for r in results), "one worker did all the work: no sharing shown"
    assert _backlog(db) == 0


def test_a_worker_killed_mid_batch_loses_nothing_and_repeats_nothing(db, dsn, make_repo):
    root = make_repo({f"k{i}.py": functions(40).replace("compute_", f"k{i}_f") for i in range(6)})
    _index(dsn, root, embed=False)
    rows = _backlog(db)

    victim = _cli(dsn, "worker")
    poll("the first committed batch", lambda: _vectors(db) > 0, DEADLINE_SECONDS)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=DEADLINE_SECONDS)
    committed = _vectors(db)
    assert 0 < committed < rows, "the kill came too late to interrupt anything"

    symbols, files, computed, reused = _done(_finish(_cli(dsn, "worker", "--once")))
    assert symbols + files == rows - committed  # what the killed worker committed stays
    assert computed == rows - committed and reused == 0  # nothing committed is redone
    assert _vectors(db) == rows and _backlog(db) == 0


def test_a_sleeping_worker_is_woken_by_index(db, dsn, make_repo):
    worker = _cli(dsn, "worker", "--poll", "3600")
    try:
        poll("the worker to listen", lambda: _listening(db), DEADLINE_SECONDS)
        root = make_repo({"calc.py": functions(3)})
        _finish(_cli(dsn, "index", str(root), "--tenant", "acme"))
        poll("the worker to embed the new rows", lambda: _backlog(db) == 0, DEADLINE_SECONDS)
    finally:
        worker.send_signal(signal.SIGTERM)
        out = _finish(worker)
    assert "worker stopped" in out
    assert _vectors(db) == 4


def _listening(db) -> bool:
    return bool(
        _count(
            db,
            "select count(*) from pg_stat_activity where datname = current_database()"
            " and query = 'listen codesift_embedding'",
        )
    )


def test_embed_pending_waits_for_rows_another_process_holds(db, dsn, make_repo):
    """index --wait returns only when the backlog is empty, even when a worker holds
    some of the rows: it waits for that worker's commit instead of returning early."""
    root = make_repo({"calc.py": functions(3)})
    _index(dsn, root, embed=False)
    holder = psycopg.connect(dsn)
    holder.execute("set role codesift_loader")
    tenant = _count(holder, "select id from codesift.tenants where name = 'acme'")
    holder.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    held = holder.execute(
        "select id from codesift.code_symbols where tenant_id = %s order by id limit 1 for update",
        (tenant,),
    ).fetchone()
    assert held is not None

    import threading

    result: dict = {}

    def wait() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("set role codesift_loader")
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
            result["stats"] = embed_pending(conn, tenant, show_progress=False)

    waiter = threading.Thread(target=wait)
    waiter.start()
    poll("the unheld rows", lambda: _backlog(db) == 1, DEADLINE_SECONDS)
    assert waiter.is_alive(), "returned while a row was still without a vector"
    holder.rollback()  # the holder gives up: its row is claimed by the waiter
    holder.close()
    waiter.join(timeout=DEADLINE_SECONDS)
    assert not waiter.is_alive() and _backlog(db) == 0
    assert result["stats"].symbols + result["stats"].blobs == 4


def test_a_worker_reconnects_when_its_connections_are_cut(db, dsn, make_repo):
    """What a database restart does to a worker: every connection is terminated. It
    reconnects with backoff and embeds what arrives afterwards."""
    worker = _cli(dsn, "worker", "--poll", "3600")
    try:
        poll("the worker to listen", lambda: _listening(db), DEADLINE_SECONDS)
        db.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity"
            " where datname = current_database() and pid <> pg_backend_pid()"
            " and application_name = '' and backend_type = 'client backend'"
        )
        poll("the worker to listen again", lambda: _listening(db), DEADLINE_SECONDS)
        root = make_repo({"calc.py": functions(2)})
        _finish(_cli(dsn, "index", str(root), "--tenant", "acme"))
        poll("the reconnected worker to embed", lambda: _backlog(db) == 0, DEADLINE_SECONDS)
    finally:
        worker.send_signal(signal.SIGTERM)
        out = _finish(worker)
    assert "database unreachable" in out and "retrying" in out


def _deadlock(dsn: str) -> psycopg.Error:
    """The error a real deadlock gives one of two sessions taking two locks in turn."""
    first, second = psycopg.connect(dsn), psycopg.connect(dsn)
    errors: list[psycopg.Error] = []

    def take(conn, lock: int) -> None:
        try:
            conn.execute("select pg_advisory_xact_lock(%s)", (lock,))
        except psycopg.Error as exc:
            errors.append(exc)
        conn.rollback()  # the survivor's locks go too

    try:
        first.execute("select pg_advisory_xact_lock(1)")
        second.execute("select pg_advisory_xact_lock(2)")
        waiting = threading.Thread(target=take, args=(first, 2))
        waiting.start()
        take(second, 1)
        waiting.join(30)
        assert len(errors) == 1
        return errors[0]
    finally:
        first.close()
        second.close()


def _raised(conn, sql: str) -> psycopg.OperationalError:
    """The error `sql` fails with on conn (the test fails when it does not)."""
    with pytest.raises(psycopg.OperationalError) as failed:
        conn.execute(sql)
    return failed.value


def test_a_deadlock_is_a_conflict_and_a_lost_database_is_unreachable(dsn, tmp_path):
    from codesift import worker

    assert worker.failure_kind(_deadlock(dsn)) == worker.CONFLICT
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn) as waiter:
        holder.execute("select pg_advisory_xact_lock(3)")
        waiter.execute("set lock_timeout = '50ms'")
        timed_out = _raised(waiter, "select pg_advisory_xact_lock(3)")
    assert worker.failure_kind(timed_out) == worker.CONFLICT
    with psycopg.connect(dsn, autocommit=True) as killer, psycopg.connect(dsn) as victim:
        pid = victim.info.backend_pid
        killer.execute("select pg_terminate_backend(%s)", (pid,))
        terminated = _raised(victim, "select 1")
    assert worker.failure_kind(terminated) == worker.UNREACHABLE
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(f"host={tmp_path} port=1 dbname=x connect_timeout=2")  # no server
    assert worker.failure_kind(refused.value) == worker.UNREACHABLE


def test_a_cancelled_statement_is_a_timeout_not_an_unreachable_database(dsn):
    from codesift import worker

    with psycopg.connect(dsn) as slow:
        slow.execute("set statement_timeout = '50ms'")
        timed_out = _raised(slow, "select pg_sleep(5)")
    assert worker.failure_kind(timed_out) == worker.TIMEOUT
    with psycopg.connect(dsn, autocommit=True) as operator, psycopg.connect(dsn) as victim:
        pid = victim.info.backend_pid
        cancel = threading.Timer(0.2, operator.execute, ("select pg_cancel_backend(%s)", (pid,)))
        cancel.start()
        cancelled = _raised(victim, "select pg_sleep(30)")
        cancel.join()
        victim.rollback()  # the connection is sound: only the statement was cancelled
        assert victim.execute("select 1").fetchone() == (1,)
    assert worker.failure_kind(cancelled) == worker.TIMEOUT
