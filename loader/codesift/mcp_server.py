"""`codesift mcp`: an MCP server that is a thin adapter over codesift's stored functions.

No retrieval logic lives here: every tool (mcp_tools.TOOLS, registered by build_server) is
one call of a stored function (pack_context, find_symbol, related_files, explain_context,
repository_status) made as the application role with the tenant set for that call's
transaction only, so psql, a driver, a BI tool and an agent get the same answers. This
module is the transport: the tenant of each call, and over HTTP the tokens and the limits
on connections and sessions (the database pools are mcp_backend's).

* stdio (default): one tenant, named by --tenant / CODESIFT_TENANT; the way local
  agents (Claude Code, Cursor, VS Code, Codex, Continue) launch servers.
* --http: Streamable HTTP on loopback by default. Every request carries a bearer token
  (`codesift token create --tenant T`); the server looks up the token's tenant with
  codesift.token_tenant(sha256) and runs that request's queries with
  `set local app.current_tenant_id = T` inside their own transaction on a
  psycopg_pool connection, so a pooled connection never carries a tenant from one
  request into another. No token, a wrong or a revoked one: 401 and no data, answered as
  RFC 6750 and RFC 9728 say for tokens issued out of band (BearerGate), so that clients
  report a rejected token instead of starting an OAuth flow. Clients that send slowly or
  not at all, and tokens that open sessions without end, are bounded (guarded_h11,
  FairSessionManager).

`codesift mcp` starts in mcp_start, which answers a stdio client's `initialize` before this
module (and the SDK) is imported. No database is touched before a tool runs: the stdio
tenant is looked up on the first call, the pools are made on first use, and while the
database is unreachable every call says so at once and the server goes on, picking the
database up again when it is back (Database).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import math
import os
import re
import resource
import signal
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CallToolResult, TextContent
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from . import oidc
from .mcp_backend import Backend
from .mcp_observability import Observed, Observer, Readiness, ServerMetrics, note_failure
from .mcp_observability import note_tenant as noting_tenant
from .mcp_settings import INSTRUCTIONS, NAME, Settings
from .mcp_tokens import token_hash
from .mcp_tools import (
    MAX_NAME_CHARS,
    TOOLS,
    ToolContext,
    ToolServer,
    jsonable,
    repository_status,
)

MAX_BODY_BYTES = 1 << 20  # one HTTP request's body
TOKEN_TTL = 5.0  # seconds a live token's tenant is remembered (a revocation waits this long)
# --http: descriptors kept free for stdio, the listening socket, the event loop, logging and
# imported modules, beside the database pools (connection_cap)
FD_RESERVE = 64
MCP_PATH = "/mcp"
# RFC 9728: the protected resource's metadata (also served at WELL_KNOWN + MCP_PATH, where
# the RFC's rule for the resource <base>/mcp puts it)
WELL_KNOWN = "/.well-known/oauth-protected-resource"
TOKEN_HELP = (
    "codesift's bearer tokens are issued out of band, not by OAuth: run `codesift token "
    "create --tenant TENANT` where the server's database is reachable and send the token "
    "it prints as 'Authorization: Bearer <token>'"
)

_log = logging.getLogger("codesift.mcp")

# the tenant of the request being handled (set per request by tenant_middleware)
_request_tenant: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "codesift_request_tenant", default=None
)


class TokenVerifier:
    """Bearer tokens -> tenant, looked up in the database by sha256. A live token is
    remembered for TOKEN_TTL seconds (so a revocation takes effect within that); an unknown
    or revoked one is asked about again every time."""

    def __init__(
        self, backend: Backend, ttl: float = TOKEN_TTL, jwts: oidc.OidcVerifier | None = None
    ):
        self.backend = backend
        self.ttl = ttl
        self.jwts = jwts  # --oidc-issuer: JWTs of that issuer too
        self._live: dict[str, tuple[int, float]] = {}  # sha256 -> (tenant, until)

    async def verify_token(self, token: str) -> AccessToken | None:
        if self.jwts is not None and oidc.looks_like_jwt(token):
            return await self._verify_jwt(token, self.jwts)
        if not token or len(token) > 200:
            return None
        digest = token_hash(token)
        now = time.monotonic()
        cached = self._live.get(digest)
        if cached is not None and cached[1] > now:
            tenant = cached[0]
        else:
            found = await self.backend.tenant_of_token(token)
            if found is None:
                self._live.pop(digest, None)
                return None
            tenant = found
            if len(self._live) > 10_000:
                self._live.clear()
            self._live[digest] = (tenant, now + self.ttl)
        # the session belongs to this token: another token cannot use its session id
        return AccessToken(
            token=token,
            client_id=f"codesift-token-{digest[:16]}",
            scopes=[],
            claims={"tenant_id": tenant},
        )

    async def _verify_jwt(self, token: str, jwts: oidc.OidcVerifier) -> AccessToken | None:
        """An OpenID Connect token (oidc.py), its tenant looked up by name (remembered as a
        live token's is; an unknown tenant is refused)."""
        identity = await jwts.verify(token)
        if identity is None:
            return None
        key, now = "tenant:" + identity.tenant, time.monotonic()  # no sha256 looks like it
        cached = self._live.get(key)
        if cached is None or cached[1] <= now:
            found = await self.backend.tenant_named(identity.tenant)
            if found is None:
                return None
            if len(self._live) > 10_000:
                self._live.clear()
            cached = self._live[key] = (found, now + self.ttl)
        return AccessToken(
            token=token,
            client_id=oidc.client_id(identity),
            scopes=[],
            claims={"tenant_id": cached[0]},
        )


def _tenant(settings: Settings) -> int:
    tenant = _request_tenant.get() if settings.http else settings.tenant_id
    if tenant is None:
        raise ToolError("no tenant for this request: send a bearer token")
    return tenant


# the tools that connect by themselves, as the loader (sync_index)
_WRITING = frozenset(tool.name for tool in TOOLS if tool.writes)


class CodesiftServer(ToolServer):
    """ToolServer whose every call first makes sure of the database (Backend.ready), so that
    a call made while it is unreachable, or before the stdio tenant could be looked up, is
    answered with a tool error saying so."""

    backend: Backend
    observer: Observer | None = None  # over HTTP: the request log and metrics

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self.observer is None:
            return await self._call_tool(name, arguments, context)
        with self.observer.tool_call(name, _request_tenant.get(), arguments) as call:
            result = await self._call_tool(name, arguments, context)
            if getattr(result, "is_error", False):
                call.fail(None)
            return result

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any) -> Any:
        try:
            await self.backend.ready(writes=name in _WRITING)
        except ToolError as exc:
            self.tool_failed(exc)
            return CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        return await super().call_tool(name, arguments, context)

    def tool_failed(self, exc: ToolError) -> None:
        note_failure(exc)


def build_server(settings: Settings, backend: Backend) -> MCPServer:
    """The MCP server of `settings`: the tools (over HTTP less the stdio-only ones) and the
    resources. Over HTTP, BearerGate (outside it) has checked the request's token and put
    its tenant in the request's scope, where tenant_middleware finds it."""

    async def tenant_middleware(ctx, call_next):
        """The tenant of this request's bearer token, for the handler it calls."""
        user = getattr(getattr(ctx, "request", None), "scope", {}).get("user")
        token = getattr(user, "access_token", None)
        tenant = (token.claims or {}).get("tenant_id") if token is not None else None
        reset = _request_tenant.set(tenant)
        try:
            return await call_next(ctx)
        finally:
            _request_tenant.reset(reset)

    server = CodesiftServer(
        name=NAME,
        instructions=INSTRUCTIONS,  # the same mcp_start answers an early initialize with
        middleware=[tenant_middleware] if settings.http else None,
        log_level="WARNING",
    )
    server.backend = backend

    ctx = ToolContext(settings, backend, functools.partial(_tenant, settings))
    server.add_tools(ctx, http=settings.http)

    @server.resource(
        "codesift://repositories",
        name="repositories",
        description="The tenant's indexed repositories with their status (JSON).",
        mime_type="application/json",
    )
    async def repositories_resource() -> str:
        async with _resource_errors():
            await backend.ready()
            found, _ = await repository_status(ctx, None)
        return json.dumps(jsonable(found), indent=1)

    @server.resource(
        "codesift://repositories/{name}",
        name="repository-status",
        description="One repository's status: indexed commit, stale, counts, backlog (JSON).",
        mime_type="application/json",
    )
    async def repository_resource(name: str) -> str:
        async with _resource_errors():
            await backend.ready()
            found, _ = await repository_status(ctx, name[:MAX_NAME_CHARS])
            if not found:
                raise ToolError(f"unknown repository '{name[:80]}'")
        return json.dumps(jsonable(found[0]), indent=1)

    return server


@contextlib.asynccontextmanager
async def _resource_errors() -> AsyncIterator[None]:
    """A resource read's ToolError (the database unreachable, an unknown repository) as the
    SDK's ResourceError, whose message reaches the client (any other exception becomes
    'Error reading resource', with a traceback on stderr)."""
    try:
        yield
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


def serve_stdio(settings: Settings, lines: Any, wire: Any) -> None:
    """Serve one client over stdio (mcp_start.serve, which has claimed the pipes): the SDK's
    stdio transport reads `lines` (the client's messages, the first one again) and writes
    `wire`. The pools are made, and the tenant looked up, when a tool first runs."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        backend = Backend(settings)
        try:
            server = build_server(settings, backend)
            # MCPServer.run_stdio_async, on these streams
            lowlevel = server._lowlevel_server
            async with stdio_server(anyio.wrap_file(lines), anyio.wrap_file(wire)) as (read, write):
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
        finally:
            await backend.close()

    anyio.run(main)


def serve_http(settings: Settings) -> None:
    """Serve Streamable HTTP until stopped; a database unreachable at the start is reported
    and served through (503 until it is back)."""
    import anyio

    async def main() -> None:
        backend = Backend(settings)
        try:
            try:
                await backend.open()
            except ToolError:
                _log.warning(
                    "codesift: database unreachable (%s); serving anyway, requests are"
                    " answered 503 until it is back",
                    backend.primary.down or backend.reader.down,
                )
            await _serve_http(build_server(settings, backend), settings, backend)
        finally:
            await backend.close()

    anyio.run(main)


async def _serve_http(server: MCPServer, settings: Settings, backend: Backend) -> None:
    import uvicorn

    from .observability import metrics_token as token_of_metrics
    from .observability import serve_metrics

    # checked before the port opens: a --metrics-host beyond loopback needs a token
    metrics_token = token_of_metrics(settings.metrics_host)

    # an error the loop reports must not stop it, even when reporting fails too (logging
    # that imports a module while the process is out of file descriptors)
    asyncio.get_running_loop().set_exception_handler(_report_loop_error)
    # plain JSON answers (no SSE stream per call): the tools never call back to the client
    app = server.streamable_http_app(
        host=settings.host,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        max_sessions=None,  # FairSessionManager caps them
    )
    FairSessionManager.adopt(
        server.session_manager,
        per_token=settings.sessions_per_token,
        per_tenant=settings.sessions_per_tenant,
        total=settings.max_sessions,
    )
    metrics = ServerMetrics([tool.name for tool in TOOLS])
    metrics.watch(backend)
    observer = Observer(metrics, log_queries=settings.log_queries)
    cast(CodesiftServer, server).observer = observer
    if settings.metrics_port is not None:
        serve_metrics(metrics.registry, settings.metrics_host, settings.metrics_port, metrics_token)
    app = cast(Any, noting_tenant(app))  # for Observed: the tenant the bearer-token gate found
    config = uvicorn.Config(
        BearerGate(app, TokenVerifier(backend, jwts=_oidc_verifier(settings)), settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        http=guarded_h11(settings.read_timeout, connection_cap(settings)),
    )
    # /healthz, /readyz, the request log and metrics, outside the bearer-token gate
    config.app = Observed(cast(ASGIApp, config.app), observer, Readiness(backend))
    # SIGTERM/SIGINT: stop accepting, let the requests running finish (this long at most)
    config.timeout_graceful_shutdown = math.ceil(settings.shutdown_grace)
    # uvicorn raises the signal that stopped it again once it has shut down: ignored then,
    # so that a graceful stop exits 0 (while it serves, uvicorn handles both)
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, signal.SIG_IGN)
    await uvicorn.Server(config).serve()


def _oidc_verifier(settings: Settings) -> oidc.OidcVerifier | None:
    if settings.oidc_issuer is None or settings.oidc_audience is None:
        return None
    return oidc.OidcVerifier(
        oidc.OidcConfig(settings.oidc_issuer, settings.oidc_audience, settings.oidc_tenant_claim)
    )


def _report_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        loop.default_exception_handler(context)


class BearerGate:
    """The bearer tokens of /mcp, refused the way RFC 6750 and RFC 9728 describe for tokens
    issued out of band (by `codesift token create`, not by an authorization server), so
    that an OAuth-capable client (MCP Inspector, Claude Code, Cursor) reports a missing or
    rejected token instead of starting an OAuth flow that cannot succeed:

    * no credentials (or another scheme's): 401, `WWW-Authenticate: Bearer realm="codesift",
      resource_metadata="<base>/.well-known/oauth-protected-resource"`, no error code;
    * a wrong, revoked or empty token: 401, the same with error="invalid_token" and an
      error_description;
    * the database unreachable, so no token can be checked: 503, Retry-After;
    * GET /.well-known/oauth-protected-resource (and .../mcp): the resource's metadata,
      bearer tokens in the header, no authorization server, and how to get a token.

    A request with a live token goes on with the token in its scope (`user`, as the SDK's
    own authentication puts it), where the session manager (a session is its token's) and
    tenant_middleware (the token's tenant) read it. Every other path goes to the SDK's app
    unchanged."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier, settings: Settings):
        self.app = app
        self.verifier = verifier
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path in (WELL_KNOWN, WELL_KNOWN + MCP_PATH):
            await self._metadata(scope, send)
            return
        if path != MCP_PATH and not path.startswith(MCP_PATH + "/"):
            await self.app(scope, receive, send)
            return
        scheme, _, token = (Headers(scope=scope).get("authorization") or "").partition(" ")
        if scheme.lower() != "bearer":
            await self._challenge(scope, send, None, "send a bearer token: " + TOKEN_HELP)
            return
        try:
            found = await self.verifier.verify_token(token.strip())
        except ToolError as exc:  # Unreachable: the token cannot be checked
            body = {"error": "temporarily_unavailable", "error_description": str(exc)}
            await _send_json(send, 503, body, [(b"retry-after", b"5")])
            return
        if found is None:
            await self._challenge(
                scope,
                send,
                "the bearer token is not a live codesift token (unknown or revoked)",
                "the bearer token was rejected, it is unknown or revoked: " + TOKEN_HELP,
            )
            return
        scope = {**scope, "user": AuthenticatedUser(found), "auth": AuthCredentials([])}
        await self.app(scope, receive, send)

    def _base(self, scope: Scope) -> str:
        """This server's URL as the client reached it (its Host header, when that is a
        plain host[:port]), else as configured."""
        host = Headers(scope=scope).get("host") or ""
        if not _HOST.fullmatch(host):
            host = f"{self.settings.host}:{self.settings.port}"
            if ":" in self.settings.host:
                host = f"[{self.settings.host}]:{self.settings.port}"
        return f"{scope.get('scheme', 'http')}://{host}"

    async def _challenge(self, scope: Scope, send: Send, error: str | None, said: str) -> None:
        parts = ['realm="codesift"']
        if error is not None:
            parts += ['error="invalid_token"', f'error_description="{error}"']
        parts.append(f'resource_metadata="{self._base(scope)}{WELL_KNOWN}"')
        header = ("Bearer " + ", ".join(parts)).encode("ascii")
        body = {"error": "invalid_token"} if error is not None else {}
        body["error_description"] = said
        await _send_json(send, 401, body, [(b"www-authenticate", header)])

    async def _metadata(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _send_json(send, 405, {"error": "method not allowed"}, [(b"allow", b"GET, HEAD")])
            return
        document = {
            "resource": self._base(scope) + MCP_PATH,
            "resource_name": NAME,
            "bearer_methods_supported": ["header"],
            # no authorization_servers: no OAuth server issues these tokens
            "description": TOKEN_HELP + ".",
        }
        await _send_json(
            send,
            200,
            document,
            [(b"cache-control", b"max-age=3600")],
            head=scope["method"] == "HEAD",
        )


# a Host header usable in a URL as it is: name or IPv4 or [IPv6], and a port
_HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


async def _send_json(
    send: Send, status: int, body: dict, headers: list[tuple[bytes, bytes]], head: bool = False
) -> None:
    data = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode("ascii")),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if head else data})


def connection_cap(settings: Settings) -> int:
    """settings.max_connections, or fewer when the open-files limit leaves less room beside
    the database pools and FD_RESERVE: past that limit accept() fails (EMFILE)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return settings.max_connections
    pools = 2 if settings.read_dsn else 1
    room = max(1, soft - FD_RESERVE - pools * settings.pool_max)
    if room < settings.max_connections:
        _log.warning(
            "codesift: at most %d client connections at once (the open-files limit is %d;"
            " raise it with ulimit -n for more)",
            room,
            soft,
        )
    return min(room, settings.max_connections)


_BUSY_BODY = b"too many connections\n"
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n%s"
    % (len(_BUSY_BODY), _BUSY_BODY)
)


def guarded_h11(read_timeout: float, max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, guarded against clients that open connections and send
    little or nothing (slowloris):

    * a request must arrive whole, head and body, within `read_timeout` seconds of its start
      (the connection opening, or the end of the previous response), else its connection
      is closed, however steadily bytes trickle in;
    * past `max_connections` open connections, a new one closes the connection idle the
      longest: one with no request running (a head still coming, or its answer already
      sent), which costs nothing to drop; when every connection has a request running, the
      new one is answered 503 and closed.

    A process out of file descriptors cannot accept an authorised client's connection (nor
    log, nor reach the database), so both keep descriptors free."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    # connections with no request running, longest idle first (one set per server)
    idle: OrderedDict[GuardedH11Protocol, None] = OrderedDict()

    class GuardedH11Protocol(H11Protocol):
        clock: asyncio.TimerHandle | None = None
        refused = False

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            if len(self.connections) > max_connections:
                if not idle:
                    self.refused = True
                    self.connections.discard(self)
                    self.transport.write(BUSY)
                    self.transport.close()
                    return
                longest, _ = idle.popitem(last=False)
                longest.cut()
            self.track()

        def data_received(self, data: bytes) -> None:
            if self.refused:
                return
            super().data_received(data)
            self.track()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self.track()

        def connection_lost(self, exc: Exception | None) -> None:
            idle.pop(self, None)
            self.stop_clock()
            super().connection_lost(exc)

        def track(self) -> None:
            """The clock runs while a request is being read; the connection is idle while
            no request runs for it."""
            if self.transport.is_closing():
                idle.pop(self, None)
                self.stop_clock()
                return
            if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
                self.stop_clock()
            elif self.clock is None:
                self.clock = self.loop.call_later(read_timeout, self.cut)
            if self.cycle is None or self.cycle.response_complete:
                idle.setdefault(self, None)
            else:
                idle.pop(self, None)

        def stop_clock(self) -> None:
            if self.clock is not None:
                self.clock.cancel()
                self.clock = None

        def cut(self) -> None:
            """Close now, dropping unsent bytes; a running request sees a disconnect."""
            idle.pop(self, None)
            self.stop_clock()
            self.connections.discard(self)
            self.transport.abort()

    return GuardedH11Protocol


class FairSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with caps on the sessions of one token, of one tenant and
    in all. Once an opening request has established a session, each cap it passes ends a
    least recently used session: the token's own, the tenant's own, then (past the total)
    one of the tenant holding the most sessions. An ended session's id answers 404, as an
    unknown one does. So a token that opens sessions without end only ends its own and its
    tenant's, never another tenant's while that one holds fewer; an opening request that
    fails ends nothing. A request that names a session it owns makes it the most recently
    used."""

    per_token: int
    per_tenant: int
    total: int
    _used: OrderedDict[str, tuple[str | None, Any]]  # id -> (token, tenant), oldest first
    _by_token: dict[str | None, OrderedDict[str, None]]
    _by_tenant: dict[Any, OrderedDict[str, None]]

    @classmethod
    def adopt(
        cls, manager: StreamableHTTPSessionManager, per_token: int, per_tenant: int, total: int
    ) -> FairSessionManager:
        """`manager`, made one of these in place: the app built around it (its routes and
        lifespan) keeps using it, and the SDK offers no way to build the app with a subclass.
        """
        if type(manager) is not StreamableHTTPSessionManager:
            raise TypeError(f"cannot adopt {type(manager).__name__}")
        manager.__class__ = cls
        fair = cast(FairSessionManager, manager)
        fair.per_token, fair.per_tenant, fair.total = per_token, per_tenant, total
        fair._used, fair._by_token, fair._by_tenant = OrderedDict(), {}, {}
        return fair

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if session is not None and session in self._used and self._used[session] == _owner(scope):
            self._used.move_to_end(session)
            token, tenant = self._used[session]
            self._by_token[token].move_to_end(session)
            self._by_tenant[tenant].move_to_end(session)
        await super()._handle_stateful_request(scope, receive, send)

    async def _serve_opening_request(
        self,
        http_transport: StreamableHTTPServerTransport,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        await super()._serve_opening_request(http_transport, scope, receive, send)
        session = http_transport.mcp_session_id
        if session is None or self._server_instances.get(session) is not http_transport:
            return  # refused, failed or already ended
        token, tenant = _owner(scope)
        self._used[session] = (token, tenant)
        self._by_token.setdefault(token, OrderedDict())[session] = None
        self._by_tenant.setdefault(tenant, OrderedDict())[session] = None
        # the new session is the most recently used everywhere, and each cap is at least
        # 1: a loop below never picks it while another session is over the cap
        while len(self._by_token[token]) > self.per_token:
            self._end(next(iter(self._by_token[token])))
        while len(self._by_tenant[tenant]) > self.per_tenant:
            self._end(next(iter(self._by_tenant[tenant])))
        while len(self._used) > self.total:
            # the tenant with the most sessions, this one among equals: another tenant
            # gives one up only while it holds more than this one
            _, largest = max(
                self._by_tenant.items(), key=lambda item: (len(item[1]), item[0] == tenant)
            )
            oldest = next(iter(largest))
            self._end(oldest if oldest != session else next(iter(self._used)))

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _end(self, session: str) -> None:
        """End `session` now (its id answers 404 from here); its transport is terminated
        in the background."""
        self._forget(session)
        self._session_owners.pop(session, None)
        transport = self._server_instances.pop(session, None)
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session, transport)
        _log.info("ended MCP session %s, its token's or tenant's least recently used", session)

    def _forget(self, session: str) -> None:
        owner = self._used.pop(session, None)
        if owner is None:
            return
        token, tenant = owner
        for index, key in ((self._by_token, token), (self._by_tenant, tenant)):
            index[key].pop(session, None)
            if not index[key]:
                del index[key]


def _owner(scope: Scope) -> tuple[str | None, Any]:
    """(token, tenant) of a request: its token's client id (codesift-token-<sha256 prefix>)
    and the tenant TokenVerifier found for it."""
    token = getattr(scope.get("user"), "access_token", None)
    if token is None:
        return None, None
    return token.client_id, (token.claims or {}).get("tenant_id")


def project_path() -> Path:
    return Path(os.getcwd())
