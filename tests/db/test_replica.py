"""A hot-standby replica (scripts/replica.sh) of a real primary (scripts/db.sh) answers
the query functions with the primary's rows, tells its lag, and writes nothing."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.db.test_retrieval import FILES

ROOT = Path(__file__).resolve().parents[2]
PRIMARY_PORT = "55431"
REPLICA_PORT = "55432"
QUESTIONS = ["where are redirects followed?", "merge cookies into the jar", "Session.send"]
QUERIES = [
    "select * from pack_context(%s, repo => 'requestsish', token_budget => 800)",
    "select * from explain_context(%s, repo => 'requestsish')",
    "select * from hybrid_search(%s, repo => 'requestsish', k => 8)",
    "select * from find_symbol(%s)",
]


def _script(name: str, env: dict, *args: str) -> str:
    done = subprocess.run(
        [str(ROOT / "scripts" / name), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _export(output: str, name: str) -> str:
    line = next(x for x in output.splitlines() if x.startswith(f"export {name}="))
    return line.split("=", 1)[1].strip("'")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(primary DSN, standby DSN): a fresh embedded cluster and its streaming standby."""
    # not under pytest's folder: other pytest sessions reset its mode (and the ACL mask
    # that lets the postgres user in)
    base = Path(tempfile.mkdtemp(prefix="codesift-replica-"))
    env = {
        "CODESIFT_DB_DIR": str(base / "primary"),
        "CODESIFT_DB_PORT": PRIMARY_PORT,
        "CODESIFT_REPLICA_DIR": str(base / "standby"),
        "CODESIFT_REPLICA_PORT": REPLICA_PORT,
    }
    primary = _export(_script("db.sh", env, "start"), "CODESIFT_DSN")
    try:
        standby = _export(_script("replica.sh", env, "start"), "CODESIFT_READ_DSN")
        yield primary, standby
    finally:
        subprocess.run([str(ROOT / "scripts/replica.sh"), "stop"], env={**os.environ, **env})
        subprocess.run([str(ROOT / "scripts/db.sh"), "stop"], env={**os.environ, **env})
        shutil.rmtree(base, ignore_errors=True)


def _caught_up(primary: str, standby: str) -> None:
    with psycopg.connect(primary, autocommit=True) as p:
        target = p.execute("select pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + 60
    with psycopg.connect(standby, autocommit=True) as s:
        while time.monotonic() < deadline:
            done = s.execute(
                "select pg_wal_lsn_diff(pg_last_wal_replay_lsn(), %s) >= 0", (target,)
            ).fetchone()[0]
            if done:
                return
            time.sleep(0.2)
    raise AssertionError("the standby did not replay the primary's WAL within 60 s")


def _as_tenant(dsn: str, tenant: int) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("set role codesift_app")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return conn


@pytest.fixture(scope="module")
def indexed(pair, tmp_path_factory):
    primary, standby = pair
    root = tmp_path_factory.mktemp("repo") / "requestsish"
    root.mkdir()
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run(["git", *cmd], cwd=root, check=True, env={**os.environ, **env})
    with psycopg.connect(primary) as conn:
        index_repository(conn, root, name="requestsish", tenant="acme", show_progress=False)
        tenant = conn.execute("select id from codesift.tenants where name = 'acme'").fetchone()[0]
    _caught_up(primary, standby)
    return tenant


# what `why` says of the call rather than of the rows: its timings, and the server it ran on
PER_CALL = ("stage_ms", "degraded")


def _answers(rows: list[tuple]) -> list[tuple]:
    """The rows with `why`'s per-call keys left out."""
    return [
        tuple(
            {k: v for k, v in col.items() if k not in PER_CALL} if isinstance(col, dict) else col
            for col in row
        )
        for row in rows
    ]


def test_standby_answers_with_the_primarys_rows(pair, indexed):
    primary, standby = pair
    with _as_tenant(primary, indexed) as p, _as_tenant(standby, indexed) as s:
        assert s.execute("select pg_is_in_recovery()").fetchone()[0] is True
        for query in QUERIES:
            for question in QUESTIONS:
                want = _answers(p.execute(query, (question,)).fetchall())
                got = _answers(s.execute(query, (question,)).fetchall())
                assert got == want, (query, question)
        assert p.execute(QUERIES[0], (QUESTIONS[0],)).fetchall(), "the fixture packed nothing"
        for query in (
            "select * from related_files('pkg/session.py', repo => 'requestsish')",
            "select * from repository_status()",
            "select pack_context_text('where are redirects followed?')",
        ):
            assert s.execute(query).fetchall() == p.execute(query).fetchall(), query


def test_standby_notice_tells_its_replay_lag(pair, indexed):
    _, standby = pair
    notices: list[str] = []
    with _as_tenant(standby, indexed) as s:
        s.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        s.execute(QUERIES[0], (QUESTIONS[0],)).fetchall()
    lag = [n for n in notices if "read replica" in n]
    assert lag and " s ago on the primary" in lag[0], notices


def test_primary_gives_no_replica_notice(pair, indexed):
    primary, _ = pair
    notices: list[str] = []
    with _as_tenant(primary, indexed) as p:
        p.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        p.execute(QUERIES[0], (QUESTIONS[0],)).fetchall()
    assert not [n for n in notices if "read replica" in n]


def test_standby_refuses_writes_and_the_functions_attempt_none(pair, indexed):
    primary, standby = pair
    with _as_tenant(standby, indexed) as s:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            s.execute(
                "insert into codesift.repositories (tenant_id, name) values (%s, 'x')", (indexed,)
            )
        # in a read-only transaction a write, a temp table or a nextval() would fail the
        # same way on a primary: the query path takes none of them
    with _as_tenant(primary, indexed) as p, p.transaction():
        p.execute("set transaction read only")
        for query in QUERIES:
            assert p.execute(query, (QUESTIONS[0],)).fetchall() is not None
        p.execute("select * from related_files('pkg/session.py', repo => 'requestsish')")
        p.execute("select * from repository_status()")


def test_cli_ask_reads_from_the_read_dsn(pair, indexed):
    primary, standby = pair
    env = {**os.environ, "CODESIFT_DSN": primary, "CODESIFT_READ_DSN": standby}
    done = subprocess.run(
        [
            str(ROOT / ".venv/bin/codesift"),
            "ask",
            "where are redirects followed?",
            "--tenant",
            "acme",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "pkg/redirects.py" in done.stdout
    assert "read replica" in done.stderr  # the notice: it was answered by the standby
