"""`codesift mcp --http` for its operator: /healthz and /readyz before the token gate, a JSON
request log without tokens or questions, Prometheus metrics on a port of their own, and a
SIGTERM that lets the requests in flight finish. Real server processes on loopback, real
HTTP (httpx2), a real database; states are polled for, nothing is timed."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import psycopg
import pytest
from codesift.mcp_tokens import create_token
from prometheus_client.parser import text_string_to_metric_families

from tests.mcp.harness import CODESIFT, DatabaseSwitch, free_port
from tests.security.two_tenants import index_two_tenants
from tests.watching import poll

DEADLINE = 120  # seconds to wait for a state: a deadline for polling, not a timing assertion
QUESTION = "where is the token vault zebra marker kept"
METRICS_TOKEN = "metrics-secret-0123456789abcdef"


@dataclass
class Server:
    base: str  # http://127.0.0.1:PORT
    metrics: str | None  # http://127.0.0.1:PORT/metrics
    proc: subprocess.Popen
    port: int
    log: Path

    kept: str | None = None  # the log once the server is gone (its folder is removed)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.kept is None else self.kept

    def log_lines(self) -> list[dict]:
        """The JSON lines of the request log."""
        out = []
        for line in self.stderr().splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out


def _wait_port(port: int, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"codesift mcp --http exited: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def observed_server(
    dsn: str, *args: str, metrics: bool = True, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """`codesift mcp --http ARGS` with --metrics-port on free loopback ports."""
    port, metrics_port = free_port(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="codesift-obs-"))
    log = folder / "stderr.log"
    command = [CODESIFT, "mcp", "--http", "--port", str(port), "--pool-size", "3", *args]
    if metrics:
        command += ["--metrics-port", str(metrics_port)]
    with open(log, "w") as errors:
        proc = subprocess.Popen(
            command,
            env={**os.environ, "CODESIFT_DSN": dsn, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    server = Server(
        f"http://127.0.0.1:{port}",
        f"http://127.0.0.1:{metrics_port}/metrics" if metrics else None,
        proc,
        port,
        log,
    )
    try:
        _wait_port(port, proc, log)
        if metrics:
            _wait_port(metrics_port, proc, log)
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        server.kept = server.stderr()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def two(dsn, make_repo):
    """Tenants acme and globex, a repository each, a token each; and their ids."""
    index_two_tenants(dsn, make_repo)
    tokens, ids = {}, {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        for name in ("acme", "globex"):
            tokens[name] = create_token(conn, name, label=f"{name} test")[1]
        for tenant_id, name in conn.execute("select id, name from codesift.tenants"):
            ids[name] = tenant_id
    return tokens, ids


class McpClient:
    """A raw MCP client over Streamable HTTP (JSON answers): initialize, then calls."""

    def __init__(self, base: str, token: str):
        self.http = httpx2.Client(
            base_url=base,
            timeout=DEADLINE,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
            },
        )
        self.ids = iter(range(1, 1_000_000))
        answer = self._post(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "obs-test", "version": "1"},
            },
        )
        assert answer.status_code == 200, answer.text
        self.http.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.http.headers["mcp-protocol-version"] = "2025-06-18"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.http.post("/mcp", json=note).status_code == 202

    def _post(self, method: str, params: dict) -> httpx2.Response:
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return self.http.post("/mcp", json=message)

    def call(self, tool: str, arguments: dict) -> dict:
        answer = self._post("tools/call", {"name": tool, "arguments": arguments})
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    def close(self) -> None:
        self.http.close()


def _raw(port: int, request: bytes) -> bytes:
    """The server's answer to bytes sent as they are (no client normalises them)."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        with contextlib.suppress(OSError):  # it may close before reading everything
            sock.sendall(request)
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks):
                    break
        return b"".join(chunks)


def _families(text: str) -> dict[str, list]:
    """The samples of a scrape by sample name: [(labels, value), ...]."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def _value(families: dict, name: str, **labels: str) -> float:
    return sum(v for found, v in families.get(name, []) if labels.items() <= found.items())


def _scrape(server: Server, token: str | None = None) -> str:
    assert server.metrics is not None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx2.get(server.metrics, headers=headers, timeout=DEADLINE)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_health_and_readiness_answer_before_the_token_gate_and_say_nothing_else(dsn, two):
    tokens, _ = two
    with observed_server(dsn) as server, httpx2.Client(base_url=server.base) as http:
        health = http.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        ready = poll(
            "the server to be ready",
            lambda: http.get("/readyz").status_code == 200 and http.get("/readyz"),
        )
        assert ready.json() == {"status": "ready"}
        assert ready.headers["cache-control"] == "no-store"
        # HEAD: the headers only; any other method: 405 naming the allowed ones
        for path in ("/healthz", "/readyz"):
            head = http.head(path)
            assert head.status_code == 200 and head.content == b""
            for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
                refused = http.request(method, path, content=b'{"x": 1}')
                assert refused.status_code == 405, (method, path)
                assert refused.headers["allow"] == "GET, HEAD"
        # the gate is still there for everything else
        assert http.post("/mcp", json={}).status_code == 401
        # odd paths near the probes are not probes, and reach nothing without a token
        odd = [
            "/healthz/",
            "/healthz/../mcp",
            "/HEALTHZ",
            "/readyz%00",
            "/readyz/mcp",
            "/%2e%2e/readyz",
            "/healthz;/mcp",
        ]
        for path in odd:
            answer = http.get(path)
            assert answer.status_code in (400, 401, 404), (path, answer.status_code)
            assert "acme" not in answer.text and "globex" not in answer.text
        assert http.get("/readyz" + "x" * 8000).status_code == 404
        huge = _raw(server.port, b"GET /readyz" + b"x" * 200_000 + b" HTTP/1.1\r\nHost: a\r\n\r\n")
        assert huge.startswith(b"HTTP/1.1 4"), huge[:100]
        for path in (b"/healthz\x00", b"/readyz?%ff%fe", b"*"):  # not what clients send
            odd_answer = _raw(server.port, b"GET " + path + b" HTTP/1.1\r\nHost: a\r\n\r\n")
            assert odd_answer.startswith((b"HTTP/1.1 4", b"HTTP/1.1 200")), odd_answer[:100]
            assert b"acme" not in odd_answer and b"globex" not in odd_answer
        for token in tokens.values():  # a token changes nothing on the probes
            same = http.get("/readyz", headers={"Authorization": f"Bearer {token}"})
            assert same.json() == {"status": "ready"}
        # the public port serves no metrics, with or without a token
        assert http.get("/metrics").status_code in (401, 404)
        mine = http.get("/metrics", headers={"Authorization": f"Bearer {tokens['acme']}"})
        assert mine.status_code == 404 and "codesift_" not in mine.text
        metrics = _families(_scrape(server))
    # every request was counted under one of a few endpoints, whatever its path
    endpoints = {labels["endpoint"] for labels, _ in metrics["codesift_mcp_http_requests_total"]}
    assert endpoints <= {"healthz", "readyz", "mcp", "other", "metadata"}
    assert _value(metrics, "codesift_mcp_http_requests_total", endpoint="healthz") >= 1


def test_readiness_is_503_while_the_database_is_down_and_200_when_it_is_back(dsn):
    with DatabaseSwitch(dsn) as switch:
        switch.up()
        with observed_server(switch.dsn) as server, httpx2.Client(base_url=server.base) as http:
            poll("ready", lambda: http.get("/readyz").status_code == 200)
            switch.down()
            down = poll("not ready", lambda: (r := http.get("/readyz")).status_code == 503 and r)
            assert down.json() == {"status": "unavailable", "reason": "database unreachable"}
            # no address, port, user or libpq message
            assert str(switch.port) not in down.text and "127.0.0.1" not in down.text
            assert http.get("/healthz").status_code == 200  # the process is up all along
            switch.up()
            poll("ready again", lambda: http.get("/readyz").status_code == 200)
            metrics = _families(_scrape(server))
    assert _value(metrics, "codesift_mcp_database_up", database="primary") == 1


def test_readiness_is_503_while_a_migration_is_pending(db, dsn):
    """A database that lacks the last incremental migration this code knows."""
    last = db.execute(
        "select kind, name, checksum, applied_at from codesift.schema_migrations"
        " where kind = 'incremental' order by name desc limit 1"
    ).fetchone()
    assert last is not None
    with observed_server(dsn) as server, httpx2.Client(base_url=server.base) as http:
        poll("ready", lambda: http.get("/readyz").status_code == 200)
        db.execute("delete from codesift.schema_migrations where kind = %s and name = %s", last[:2])
        pending = poll("pending", lambda: (r := http.get("/readyz")).status_code == 503 and r)
        assert pending.json() == {"status": "unavailable", "reason": "migrations pending"}
        assert last[1] not in pending.text  # no migration names
        db.execute(
            "insert into codesift.schema_migrations (kind, name, checksum, applied_at)"
            " values (%s, %s, %s, %s)",
            last,
        )
        poll("ready after the migration", lambda: http.get("/readyz").status_code == 200)


def test_metrics_and_the_request_log_count_real_tool_calls_and_hold_no_secrets(dsn, two):
    tokens, ids = two
    calls = 3
    with observed_server(dsn) as server:
        before = _families(_scrape(server))
        for name, token in tokens.items():
            client = McpClient(server.base, token)
            try:
                for _ in range(calls):
                    found = client.call("search_code", {"question": QUESTION, "repo": "shared"})
                    assert not found.get("isError"), found
                    paths = {r["path"] for r in found["structuredContent"]["rows"]}
                    assert f"app/secret_{name}.py" in paths
                failed = client.call("search_code", {"question": QUESTION, "ref": "no-such-ref"})
                assert failed.get("isError")
                invalid = client.call("find_symbol", {"name": {"not": "a string"}})
                assert invalid.get("isError")
                unknown = client.call("no_such_tool_" + "x" * 5000, {})
                assert unknown.get("isError")
            finally:
                client.close()
        # a refused token is counted, and not logged
        refused = httpx2.post(
            server.base + "/mcp", json={}, headers={"Authorization": "Bearer not-a-live-token"}
        )
        assert refused.status_code == 401
        text = _scrape(server)
        after = _families(text)
        # the pool's statistics moved with the calls
        assert _value(after, "codesift_mcp_db_requests_num_total", database="primary") > _value(
            before, "codesift_mcp_db_requests_num_total", database="primary"
        )
        assert _value(after, "codesift_mcp_db_pool_max", database="primary") == 3
    for name in tokens:
        tenant = str(ids[name])
        ok = _value(
            after, "codesift_mcp_tool_calls_total", tool="search_code", tenant=tenant, outcome="ok"
        )
        assert ok == calls
        errors = _value(
            after,
            "codesift_mcp_tool_calls_total",
            tool="search_code",
            tenant=tenant,
            outcome="error",
        )
        assert errors == 1
    assert _value(after, "codesift_mcp_tool_duration_seconds_count", tool="search_code") == 2 * (
        calls + 1
    )
    assert _value(after, "codesift_mcp_tool_errors_total", tool="search_code", kind="tool") == 2
    assert (
        _value(
            after, "codesift_mcp_tool_errors_total", tool="find_symbol", kind="invalid_arguments"
        )
        == 2
    )
    # an unknown tool's name is no label of its own
    assert _value(after, "codesift_mcp_tool_calls_total", tool="unknown") == 2
    assert "no_such_tool" not in text
    assert _value(after, "codesift_mcp_http_requests_total", endpoint="mcp", status="401") >= 1
    # what a scrape must never hold: a tenant's name, a token, a question, a path
    for secret in [*tokens.values(), "acme", "globex", QUESTION, "secret_", "not-a-live-token"]:
        assert secret not in text, secret

    stderr = server.stderr()
    for secret in [*tokens.values(), QUESTION, "zebra", "not-a-live-token", "Bearer"]:
        assert secret not in stderr, secret
    lines = server.log_lines()
    tool_lines = [line for line in lines if line["event"] == "tool_call"]
    assert len(tool_lines) == 2 * (calls + 3)
    for line in tool_lines:
        assert set(line) >= {"time", "tool", "tenant", "duration_ms", "outcome"}
        assert line["tenant"] in ids.values()
        assert "arguments" not in line
    assert {(line["tool"], line["outcome"], line.get("error")) for line in tool_lines} == {
        ("search_code", "ok", None),
        ("search_code", "error", "tool"),
        ("find_symbol", "error", "invalid_arguments"),
        ("unknown", "error", "tool"),
    }
    requests = [line for line in lines if line["event"] == "http_request"]
    assert {line["endpoint"] for line in requests} >= {"mcp"}
    assert any(line["status"] == 401 and line["tenant"] is None for line in requests)
    assert {line["tenant"] for line in requests if line["status"] == 200} >= set(ids.values())


def test_log_queries_puts_the_arguments_in_the_log(dsn, two):
    tokens, ids = two
    with observed_server(dsn, "--log-queries", metrics=False) as server:
        client = McpClient(server.base, tokens["acme"])
        try:
            client.call("search_code", {"question": QUESTION})
        finally:
            client.close()
        lines = [line for line in server.log_lines() if line["event"] == "tool_call"]
    assert [(line["tenant"], line["arguments"]["question"]) for line in lines] == [
        (ids["acme"], QUESTION)
    ]
    assert tokens["acme"] not in server.stderr()


def test_the_metrics_port_wants_its_token_when_one_is_set(dsn):
    env = {"CODESIFT_METRICS_TOKEN": METRICS_TOKEN}
    with observed_server(dsn, env=env) as server:
        assert server.metrics is not None
        assert httpx2.get(server.metrics).status_code == 401
        wrong = httpx2.get(server.metrics, headers={"Authorization": "Bearer wrong"})
        assert wrong.status_code == 401 and "codesift_" not in wrong.text
        assert "codesift_mcp_http_requests" in _scrape(server, METRICS_TOKEN)
        right = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        assert httpx2.post(server.metrics, headers=right).status_code == 405
        other = server.metrics.replace("/metrics", "/metrics/../x")
        assert httpx2.get(other, headers=right).status_code == 404
        head = httpx2.head(server.metrics, headers=right)
        assert head.status_code == 200 and head.content == b""


def test_metrics_beyond_loopback_are_refused_without_a_token(dsn):
    env = {k: v for k, v in os.environ.items() if k != "CODESIFT_METRICS_TOKEN"}
    for command in (
        ["mcp", "--http", "--port", str(free_port())],
        ["worker"],
    ):
        done = subprocess.run(
            [CODESIFT, *command, "--metrics-port", str(free_port()), "--metrics-host", "0.0.0.0"],
            env={**env, "CODESIFT_DSN": dsn},
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
        assert done.returncode != 0, command
        assert "CODESIFT_METRICS_TOKEN" in done.stderr, done.stderr


@contextlib.contextmanager
def _table_locked(dsn: str, table: str) -> Iterator[psycopg.Connection]:
    """`table` locked against every reader until the block ends (or .rollback())."""
    with psycopg.connect(dsn) as holder:
        holder.execute(f"lock table {table} in access exclusive mode")
        yield holder
        holder.rollback()


def _waiting_on_lock(db) -> bool:
    row = db.execute(
        "select count(*) from pg_stat_activity where datname = current_database()"
        " and wait_event_type = 'Lock' and query like '%%find_symbol%%'"
    ).fetchone()
    return bool(row and row[0])


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


def test_sigterm_lets_the_request_in_flight_finish_and_exits_0(db, dsn, two):
    tokens, _ = two
    result: dict = {}
    with observed_server(dsn, "--shutdown-grace", "600") as server:
        client = McpClient(server.base, tokens["acme"])
        with _table_locked(dsn, "codesift.code_symbols") as holder:

            def call() -> None:
                try:
                    result["answer"] = client.call("find_symbol", {"name": "acme_token_vault"})
                except Exception as exc:  # reported by the assertions below
                    result["error"] = exc

            caller = threading.Thread(target=call)
            caller.start()
            poll("the call to wait on the lock", lambda: _waiting_on_lock(db))
            server.proc.send_signal(signal.SIGTERM)
            poll("the server to stop accepting", lambda: _refused(server.port))
            assert server.proc.poll() is None, "it exited with a request in flight"
            assert caller.is_alive()
            holder.rollback()  # the call goes on
            caller.join(timeout=DEADLINE)
        client.close()
        assert server.proc.wait(timeout=DEADLINE) == 0, server.stderr()
    assert "error" not in result, result
    rows = result["answer"]["structuredContent"]["rows"]
    assert rows and rows[0]["path"] == "app/secret_acme.py"
    done = [line for line in server.log_lines() if line["event"] == "tool_call"]
    assert [(line["tool"], line["outcome"]) for line in done] == [("find_symbol", "ok")]


def test_the_grace_period_bounds_a_request_that_does_not_finish(db, dsn, two):
    tokens, _ = two
    with observed_server(dsn, "--shutdown-grace", "1", metrics=False) as server:
        client = McpClient(server.base, tokens["acme"])
        with _table_locked(dsn, "codesift.code_symbols"):

            def call() -> None:
                with contextlib.suppress(Exception):  # cut off: no answer comes
                    client.call("find_symbol", {"name": "acme_token_vault"})

            caller = threading.Thread(target=call)
            caller.start()
            poll("the call to wait on the lock", lambda: _waiting_on_lock(db))
            server.proc.send_signal(signal.SIGTERM)
            # it exits while the lock is still held: the call did not finish
            assert server.proc.wait(timeout=DEADLINE) == 0, server.stderr()
        caller.join(timeout=DEADLINE)
        client.close()
