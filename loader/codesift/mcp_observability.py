"""What `codesift mcp --http` tells an operator (observability.py serves and formats it):

* GET /healthz: 200 while the process serves; it touches no database.
* GET /readyz: 200 when the database (and the read replica, if one is given) answers and
  holds every migration this code knows (migrate.pending); else 503 with a short reason.
  Both are answered before the bearer-token gate and say nothing else: no host, no error
  text, no migration name. The answer is kept READY_TTL seconds, one check at a time, so
  that unauthenticated probes cannot keep the pool busy.
* one JSON line per HTTP request (its endpoint, method, status, duration, tenant id) and
  per tool call (tool, tenant id, duration, outcome, error kind); the arguments of a call
  (a question's text) only with --log-queries. Never a token, a header or a raw path.
* Prometheus metrics (ServerMetrics): requests per endpoint and status, tool calls per tool,
  tenant id and outcome, their latency per tool, errors by kind, the pools' statistics
  (psycopg_pool get_stats) and whether each database answered last.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import migrate
from .mcp_backend import Unreachable
from .observability import request_logger

if TYPE_CHECKING:
    from .mcp_backend import Backend, Database

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
READY_TTL = 1.0  # seconds a readiness answer is kept
MAX_LOGGED_ARGUMENT_CHARS = 2000  # of each string argument, with --log-queries
# the endpoints requests are counted under: any other path is "other", so that no client
# can make a label value of its own
ENDPOINTS = {
    "/mcp": "mcp",
    HEALTH_PATH: "healthz",
    READY_PATH: "readyz",
    "/.well-known/oauth-protected-resource": "metadata",
    "/.well-known/oauth-protected-resource/mcp": "metadata",
}
METHODS = frozenset({"GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "PATCH"})


def endpoint_of(path: str) -> str:
    if path.startswith("/mcp/"):
        return "mcp"
    return ENDPOINTS.get(path, "other")


class ServerMetrics:
    """The metrics of one server, in a registry of their own; `tools` are the names a tool
    call may be counted under (any other is "unknown")."""

    def __init__(self, tools: list[str]):
        self.registry = CollectorRegistry()
        self.tools = frozenset(tools)
        self.requests = Counter(
            "codesift_mcp_http_requests",
            "HTTP requests answered, by endpoint, method and status.",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "codesift_mcp_http_requests_in_flight",
            "HTTP requests being answered now.",
            registry=self.registry,
        )
        self.calls = Counter(
            "codesift_mcp_tool_calls",
            "Tool calls, by tool, tenant id and outcome (ok or error).",
            ["tool", "tenant", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "codesift_mcp_tool_duration_seconds",
            "How long tool calls took, by tool.",
            ["tool"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.errors = Counter(
            "codesift_mcp_tool_errors",
            "Failed tool calls, by tool and kind (ERROR_KINDS).",
            ["tool", "kind"],
            registry=self.registry,
        )

    def tool_label(self, name: str) -> str:
        return name if name in self.tools else "unknown"

    def watch(self, backend: Backend) -> None:
        """Also report `backend`'s pools and whether its databases answered last."""
        self.registry.register(PoolCollector(backend))


class PoolCollector(Collector):
    """psycopg_pool's statistics of each database's pool, read at each scrape (a pool made
    anew after an outage starts its counters over, which Prometheus takes as a reset)."""

    GAUGES = {
        "pool_size": "Connections the pool holds (in use or not).",
        "pool_available": "Connections idle in the pool.",
        "pool_max": "Most connections the pool may hold.",
        "requests_waiting": "Requests waiting for a connection now.",
    }
    COUNTERS = {
        "requests_num": "Connections requested from the pool.",
        "requests_queued": "Requests that had to wait for a connection.",
        "requests_errors": "Requests that got no connection (timeout, pool closed).",
        "connections_num": "Connections opened.",
        "connections_errors": "Failed connection attempts.",
        "connections_lost": "Connections found broken.",
    }

    def __init__(self, backend: Backend):
        self.backend = backend

    def _databases(self) -> list[tuple[str, Database]]:
        primary, reader = self.backend.primary, self.backend.reader
        return [("primary", primary)] + ([("replica", reader)] if reader is not primary else [])

    def collect(self) -> Iterator[Any]:
        up = GaugeMetricFamily(
            "codesift_mcp_database_up",
            "1 when the database answered the last attempt to reach it, else 0.",
            labels=["database"],
        )
        gauges = {
            key: GaugeMetricFamily(f"codesift_mcp_db_{key}", text, labels=["database"])
            for key, text in self.GAUGES.items()
        }
        counters = {
            key: CounterMetricFamily(f"codesift_mcp_db_{key}", text, labels=["database"])
            for key, text in self.COUNTERS.items()
        }
        for label, database in self._databases():
            up.add_metric([label], 0 if database.down is not None else 1)
            pool = database.pool
            if pool is None:
                continue
            stats = pool.get_stats()
            for key, family in gauges.items():
                family.add_metric([label], stats.get(key, 0))
            for key, counter in counters.items():
                counter.add_metric([label], stats.get(key, 0))
        yield up
        yield from gauges.values()
        yield from counters.values()


# the kinds a failed tool call is counted and logged under
ERROR_KINDS = ("database_unreachable", "database_busy", "invalid_arguments", "tool", "internal")


def error_kind(exc: BaseException) -> str:
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    if isinstance(exc, Unreachable):
        return "database_unreachable"
    if isinstance(exc, UnexpectedToolError) or not isinstance(exc, ToolError):
        return "internal"
    if isinstance(exc.__cause__, ValidationError):
        return "invalid_arguments"
    if str(exc).startswith("the database is busy"):
        return "database_busy"
    return "tool"


@dataclass
class ToolCall:
    """One tool call being answered; `error` is what it failed with, if it did."""

    tool: str
    tenant: int | None
    arguments: dict[str, Any]
    started: float = field(default_factory=time.perf_counter)
    error: str | None = None
    failed: bool = False

    def fail(self, exc: BaseException | None) -> None:
        self.failed = True
        if exc is not None and self.error is None:
            self.error = error_kind(exc)


_current_call: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar(
    "codesift_tool_call", default=None
)


def note_failure(exc: BaseException) -> None:
    """The tool call being answered (if any) failed with `exc` (ToolServer's hook)."""
    call = _current_call.get()
    if call is not None:
        call.fail(exc)


class Observer:
    """The request log and the metrics of one server."""

    def __init__(self, metrics: ServerMetrics, log_queries: bool = False):
        self.metrics = metrics
        self.log_queries = log_queries
        self.log = request_logger()

    @contextlib.contextmanager
    def tool_call(self, name: str, tenant: int | None, arguments: dict[str, Any]):
        call = ToolCall(self.metrics.tool_label(name), tenant, arguments)
        token = _current_call.set(call)
        try:
            yield call
        except BaseException as exc:
            call.fail(exc)
            raise
        finally:
            _current_call.reset(token)
            self._record(call)

    def _record(self, call: ToolCall) -> None:
        seconds = time.perf_counter() - call.started
        outcome = "error" if call.failed else "ok"
        tenant = str(call.tenant) if call.tenant is not None else "none"
        self.metrics.calls.labels(call.tool, tenant, outcome).inc()
        self.metrics.latency.labels(call.tool).observe(seconds)
        fields: dict[str, Any] = {
            "tool": call.tool,
            "tenant": call.tenant,
            "duration_ms": round(seconds * 1000, 1),
            "outcome": outcome,
        }
        if call.failed:
            kind = call.error or "tool"
            self.metrics.errors.labels(call.tool, kind).inc()
            fields["error"] = kind
        if self.log_queries:
            fields["arguments"] = _clipped(call.arguments)
        self.log.info("tool_call", extra={"fields": fields})

    def request(self, method: str, endpoint: str, status: int, seconds: float, tenant: Any) -> None:
        method = method if method in METHODS else "OTHER"
        self.metrics.requests.labels(endpoint, method, str(status)).inc()
        fields = {
            "method": method,
            "endpoint": endpoint,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
            "tenant": tenant,
        }
        self.log.info("http_request", extra={"fields": fields})


def _clipped(value: Any) -> Any:
    if isinstance(value, str):
        return value[:MAX_LOGGED_ARGUMENT_CHARS]
    if isinstance(value, dict):
        return {str(k)[:100]: _clipped(v) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [_clipped(v) for v in value[:50]]
    return value if isinstance(value, int | float | bool) or value is None else str(value)[:100]


class Readiness:
    """Whether `backend` can serve: every database answers and the primary holds every
    migration this code knows. The answer is kept READY_TTL seconds."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.migrations = migrate.discover()  # the running code's, read once
        self._lock = asyncio.Lock()
        self._answer: tuple[float, str | None] | None = None

    async def reason(self) -> str | None:
        """None when ready, else why not, in a few words."""
        async with self._lock:
            now = time.monotonic()
            if self._answer is None or now - self._answer[0] > READY_TTL:
                self._answer = (now, await self._check())
            return self._answer[1]

    async def _check(self) -> str | None:
        import psycopg
        from mcp.server.mcpserver.exceptions import ToolError

        async def applied(conn: psycopg.AsyncConnection) -> dict[tuple[str, str], str]:
            cur = await conn.execute(migrate.APPLIED)
            return {(kind, name): checksum for kind, name, checksum in await cur.fetchall()}

        databases = [self.backend.primary]
        if self.backend.reader is not self.backend.primary:
            databases.append(self.backend.reader)
        for database in databases:
            try:
                rows = await database.run(applied)
            except Unreachable:
                return "database unreachable"
            except ToolError:  # no pooled connection was free in time
                return "database busy"
            except psycopg.errors.UndefinedTable:
                return "migrations pending"
            except psycopg.errors.InsufficientPrivilege:
                # the grant comes with this code's migrations
                return "migrations pending"
            except psycopg.Error:
                return "database error"
            if migrate.pending(self.migrations, rows):
                return "migrations pending"
        return None


class Observed:
    """The outermost ASGI layer of the HTTP server: it answers /healthz and /readyz itself
    (before the bearer-token gate inside it) and logs and counts every HTTP request."""

    def __init__(self, app: ASGIApp, observer: Observer, readiness: Readiness):
        self.app = app
        self.observer = observer
        self.readiness = readiness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        endpoint = endpoint_of(scope["path"])
        status = 500  # unless a response starts
        noted: dict[str, Any] = {}  # the tenant, by note_tenant inside the gate
        metrics = self.observer.metrics

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        metrics.in_flight.inc()
        try:
            if endpoint in ("healthz", "readyz"):
                await self._probe(scope, endpoint, observed_send)
            else:
                scope = {**scope, "codesift.noted": noted}
                await self.app(scope, receive, observed_send)
        finally:
            metrics.in_flight.dec()
            seconds = time.perf_counter() - started
            self.observer.request(scope["method"], endpoint, status, seconds, noted.get("tenant"))

    async def _probe(self, scope: Scope, endpoint: str, send: Send) -> None:
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _send_json(send, 405, {"error": "method not allowed"}, method, allow=True)
            return
        if endpoint == "healthz":
            await _send_json(send, 200, {"status": "ok"}, method)
            return
        reason = await self.readiness.reason()
        if reason is None:
            await _send_json(send, 200, {"status": "ready"}, method)
        else:
            await _send_json(send, 503, {"status": "unavailable", "reason": reason}, method)


def note_tenant(app: ASGIApp) -> ASGIApp:
    """`app`, noting for Observed the tenant the bearer-token gate found for the request
    (the gate puts the token in the scope it passes on, a copy of Observed's)."""

    async def noting(scope: Scope, receive: Receive, send: Send) -> None:
        token = getattr(scope.get("user"), "access_token", None)
        noted = scope.get("codesift.noted")
        if token is not None and noted is not None:
            noted["tenant"] = (token.claims or {}).get("tenant_id")
        await app(scope, receive, send)

    return noting


async def _send_json(send: Send, status: int, body: dict, method: str, allow: bool = False):
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if allow:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else data})
