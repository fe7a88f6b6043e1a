"""A database error no command expects (a statement cancelled at statement_timeout, a lock
it waited for too long) ends the command with one clear message and what to do, exit code 1,
never a traceback; the worker counts and logs a cancelled statement as such and goes on.

The cancellation is made deterministic: the test holds an exclusive lock on the tenants
table, which every command reads, and the command runs with a short statement_timeout
(PGOPTIONS), so its statement waits on the lock and is cancelled."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from tests.watching import poll

CODESIFT = Path(sys.executable).with_name("codesift")
DEADLINE_SECONDS = 60
TIMEOUT_MS = 300
CANCELLED = "error: canceling statement due to statement timeout\n  hint: a statement ran past"

COMMANDS = [
    ["status"],
    ["ask", "where is it?", "--tenant", "acme"],
    ["outline", "a.py", "--tenant", "acme"],
    ["refs", "a", "--tenant", "acme"],
    ["worker", "--once"],
]


def _env(dsn: str, **settings: str) -> dict:
    options = " ".join(f"-c {k}={v}" for k, v in settings.items())
    return {**os.environ, "CODESIFT_DSN": dsn, "PGOPTIONS": options}


def _hold_tenants(db_dsn: str) -> psycopg.Connection:
    holder = psycopg.connect(db_dsn)
    holder.execute("lock table codesift.tenants in access exclusive mode")
    return holder


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_cancelled_statement_ends_a_command_with_a_message(dsn, command):
    holder = _hold_tenants(dsn)
    try:
        done = subprocess.run(
            [str(CODESIFT), *command],
            env=_env(dsn, statement_timeout=f"{TIMEOUT_MS}ms"),
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
        )
    finally:
        holder.close()
    assert done.returncode == 1, done.stdout + done.stderr
    assert CANCELLED in done.stderr
    assert "Traceback" not in done.stderr


def test_a_lock_timeout_says_to_try_again(dsn):
    holder = _hold_tenants(dsn)
    try:
        done = subprocess.run(
            [str(CODESIFT), "status"],
            env=_env(dsn, lock_timeout="200ms"),
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
        )
    finally:
        holder.close()
    assert done.returncode == 1
    assert done.stderr.startswith("error: canceling statement due to lock timeout\n")
    assert "another session holds a lock this command needs: try again" in done.stderr
    assert "Traceback" not in done.stderr


def _waiting_on_tenants(db) -> int:
    return db.execute(
        "select count(*) from pg_locks where not granted"
        " and relation = 'codesift.tenants'::regclass"
    ).fetchone()[0]


def _listeners(db) -> set:
    """The backends of the worker's LISTEN connection."""
    listen = "listen codesift_embedding"
    return {
        pid for (pid,) in db.execute("select pid from pg_stat_activity where query = %s", (listen,))
    }


def test_the_worker_logs_a_cancelled_statement_and_goes_on(db, dsn):
    holder = _hold_tenants(dsn)
    worker = subprocess.Popen(
        [str(CODESIFT), "worker", "--poll", "3600"],
        env=_env(dsn, statement_timeout=f"{TIMEOUT_MS}ms"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(worker.stdout), daemon=True)
    reader.start()
    try:
        poll(
            "the worker to wait on the lock", lambda: _waiting_on_tenants(db) > 0, DEADLINE_SECONDS
        )
        first = _listeners(db)
        poll(
            "the worker's log",
            lambda: any("statement cancelled" in line for line in lines),
            DEADLINE_SECONDS,
        )
        holder.close()  # the retry finds the table free: the worker serves on
        poll(
            "the worker to listen on a new connection",
            lambda: _listeners(db) - first,
            DEADLINE_SECONDS,
        )
    finally:
        holder.close()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=DEADLINE_SECONDS)
        reader.join(timeout=DEADLINE_SECONDS)
    out = "".join(lines)
    assert worker.returncode == 0, out
    assert "statement cancelled (canceling statement due to statement timeout); retrying" in out
    assert "database unreachable" not in out and "Traceback" not in out


def test_the_cli_and_the_mcp_tools_read_a_database_error_alike(db, dsn):
    from codesift.errors import database_message, from_database
    from codesift.mcp_backend import _db_message

    with psycopg.connect(dsn) as slow:
        slow.execute("set statement_timeout = '50ms'")
        with pytest.raises(psycopg.errors.QueryCanceled) as timed_out:
            slow.execute("select pg_sleep(5)")
    message, hint = database_message(timed_out.value)
    assert message == "canceling statement due to statement timeout"
    assert hint and hint.startswith("a statement ran past the statement_timeout")
    assert str(from_database(timed_out.value)) == f"{message}\n  hint: {hint}"
    assert _db_message(timed_out.value) == f"{message} (hint: {hint})"
    with pytest.raises(psycopg.Error) as refused:  # raised by plpy.error inside PL/Python
        db.execute("select * from codesift.pack_context('x', repo => 'nope')")
    assert refused.value.diag.message_primary.startswith("plpy.Error: ")
    message, hint = database_message(refused.value)
    assert message == refused.value.diag.message_primary.removeprefix("plpy.Error: ")
    assert hint == refused.value.diag.message_hint  # the engine's own hint
