"""`codesift mcp`: an MCP server that is a thin adapter over codesift's stored functions.

No retrieval logic lives here: every tool is one call of a stored function
(pack_context, find_symbol, related_files, explain_context, repository_status) made
as the application role with the tenant set for that call's transaction only, so psql,
a driver, a BI tool and an agent get the same answers.

* stdio (default): one tenant, named by --tenant / CODESIFT_TENANT; the way local
  agents (Claude Code, Cursor, VS Code, Codex, Continue) launch servers.
* --http: Streamable HTTP on loopback by default. Every request carries a bearer token
  (`codesift token create --tenant T`); the server looks up the token's tenant with
  codesift.token_tenant(sha256) and runs that request's queries with
  `set local app.current_tenant_id = T` inside their own transaction on a
  psycopg_pool connection, so a pooled connection never carries a tenant from one
  request into another. No token, a wrong or a revoked one: 401 and no data. Clients that
  send slowly or not at all, and tokens that open sessions without end, are bounded
  (guarded_h11, FairSessionManager).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import inspect
import json
import logging
import os
import resource
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, cast

import psycopg
from codesift_db.packing import estimate_tokens
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from psycopg.sql import SQL, Literal
from psycopg_pool import AsyncConnectionPool
from pydantic import Field
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from . import db
from .errors import CodesiftError

APP_ROLE = "codesift_app"
DEFAULT_BUDGET = 4000
# MCP clients refuse or truncate tool results much over ~25,000 tokens (Claude Code's
# default MAX_MCP_OUTPUT_TOKENS): a larger budget is refused, not silently cut
MAX_BUDGET = 25_000
MAX_QUESTION_CHARS = 20_000
MAX_NAME_CHARS = 512
MAX_PATH_CHARS = 4096
MAX_BODY_BYTES = 1 << 20  # one HTTP request's body
TOKEN_TTL = 5.0  # seconds a live token's tenant is remembered (a revocation waits this long)
# --http: descriptors kept free for stdio, the listening socket, the event loop, logging and
# imported modules, beside the database pools (connection_cap)
FD_RESERVE = 64
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

_log = logging.getLogger("codesift.mcp")

# the tenant of the request being handled (set per request by tenant_middleware)
_request_tenant: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "codesift_request_tenant", default=None
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Settings:
    dsn: str
    read_dsn: str | None = None  # a hot standby for the query tools (tokens: dsn)
    http: bool = False
    tenant_id: int | None = None  # stdio: the one tenant
    tenant_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    pool_min: int = 2
    pool_max: int = 10
    repo_path: str | None = None  # stdio: what sync_index re-indexes by default
    # --http: a client sends a whole request (head and body) within read_timeout seconds
    # of starting it; at most max_connections are open at once (fewer if the descriptor
    # limit leaves less room)
    read_timeout: float = 30.0
    max_connections: int = 1000
    # --http: MCP sessions open at once, in all, per tenant and per token; past a cap the
    # least recently used session (of that token, that tenant, the largest tenant) ends
    max_sessions: int = 10_000
    sessions_per_tenant: int = 1000
    sessions_per_token: int = 100


class Backend:
    """A psycopg_pool of application-role connections; each call is one transaction that
    sets the tenant with SET LOCAL, i.e. for that transaction only."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.pool = self._pool(settings.dsn, "codesift-mcp")
        # the query tools read from a replica when one is given; token_tenant writes (its
        # last-used stamp), so tokens are always checked on the primary
        self.read_pool = (
            self._pool(settings.read_dsn, "codesift-mcp-read") if settings.read_dsn else self.pool
        )

    def _pool(self, dsn: str, name: str) -> AsyncConnectionPool:
        return AsyncConnectionPool(
            dsn,
            min_size=self.settings.pool_min,
            max_size=self.settings.pool_max,
            kwargs={"autocommit": True},
            configure=self._configure,
            reset=self._reset,
            open=False,
            name=name,
        )

    @staticmethod
    async def _configure(conn: psycopg.AsyncConnection) -> None:
        # a superuser DSN (the embedded database's) acts as the application role, under
        # row-level security like any application; other roles are used as they are
        cur = await conn.execute("select current_setting('is_superuser') = 'on'")
        row = await cur.fetchone()
        if row is not None and row[0]:
            await conn.execute(f"set role {APP_ROLE}")
        await conn.execute("set search_path = codesift, public")

    @staticmethod
    async def _reset(conn: psycopg.AsyncConnection) -> None:
        # SET LOCAL ends with its transaction, and the pool rolls back a
        # connection returned inside one; a connection that is not idle is not reused
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raise psycopg.OperationalError("connection returned inside a transaction")

    async def open(self) -> None:
        await self.pool.open(wait=True, timeout=30)
        if self.read_pool is not self.pool:
            await self.read_pool.open(wait=True, timeout=30)

    async def close(self) -> None:
        if self.read_pool is not self.pool:
            await self.read_pool.close()
        await self.pool.close()

    async def tenant_of_token(self, token: str) -> int | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute("select codesift.token_tenant(%s)", (token_hash(token),))
            row = await cur.fetchone()
        return row[0] if row else None

    async def query(self, tenant_id: int, sql: str, params: dict) -> tuple[list, list, list]:
        """(column names, rows, notices) of one statement run as `tenant_id`."""
        notices: list[str] = []

        def on_notice(diag: psycopg.errors.Diagnostic) -> None:
            notices.append(diag.message_primary or "")

        async with self.read_pool.connection() as conn:
            conn.add_notice_handler(on_notice)
            try:
                # one network round trip: begin, the tenant for this transaction only, the
                # statement and commit go out together (pipeline mode)
                async with conn.pipeline(), conn.transaction():
                    # SET LOCAL, not set_config(): on a Citus coordinator only a SET LOCAL
                    # reaches the workers (citus.propagate_set_commands = 'local')
                    await conn.execute(
                        SQL("set local app.current_tenant_id = {}").format(
                            Literal(str(int(tenant_id)))
                        )
                    )
                    cur = await conn.execute(sql, params)
                rows = await cur.fetchall()
                names = [c.name for c in cur.description or []]
            except psycopg.Error as exc:
                raise ToolError(_db_message(exc)) from None
            finally:
                conn.remove_notice_handler(on_notice)
        return names, rows, notices


def _db_message(exc: psycopg.Error) -> str:
    diag = exc.diag
    message = diag.message_primary or type(exc).__name__
    if diag.message_hint:
        message += f" (hint: {diag.message_hint})"
    return message


class TokenVerifier:
    """Bearer tokens -> tenant, looked up in the database by sha256. A live token is
    remembered for TOKEN_TTL seconds (so a revocation takes effect within that); an unknown
    or revoked one is asked about again every time."""

    def __init__(self, backend: Backend, ttl: float = TOKEN_TTL):
        self.backend = backend
        self.ttl = ttl
        self._live: dict[str, tuple[int, float]] = {}  # sha256 -> (tenant, until)

    async def verify_token(self, token: str) -> AccessToken | None:
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


def _tenant(settings: Settings) -> int:
    tenant = _request_tenant.get() if settings.http else settings.tenant_id
    if tenant is None:
        raise ToolError("no tenant for this request: send a bearer token")
    return tenant


def _budget(token_budget: int) -> int:
    if not 1 <= token_budget <= MAX_BUDGET:
        raise ToolError(
            f"token_budget must be between 1 and {MAX_BUDGET:,} (got {token_budget}): MCP "
            "clients refuse larger tool results; narrow the question, or use path_prefix"
        )
    return token_budget


def _bounded(text: str, budget: int) -> str:
    """Text cut at a line end to at most `budget` estimated tokens."""
    if estimate_tokens(text) <= budget:
        return text
    lines, used = [], 0
    for line in text.split("\n"):
        cost = estimate_tokens(line + "\n")
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) + "\n... (cut at the token budget)"


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return str(value)


def _result(text: str, rows: list[dict], notices: list[str]) -> CallToolResult:
    if notices:
        text = "\n".join(f"note: {n}" for n in notices) + ("\n\n" + text if text else "")
    structured = {"rows": _jsonable(rows), "notices": notices}
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
OptName = Annotated[str | None, Field(max_length=MAX_NAME_CHARS)]
OptPath = Annotated[str | None, Field(max_length=MAX_PATH_CHARS)]
OptRef = Annotated[
    str | None,
    Field(
        max_length=MAX_NAME_CHARS,
        description="An indexed ref (branch, tag or commit) of the repository; default: "
        "its default ref (list_repositories shows them).",
    ),
]
Budget = Annotated[int, Field(description="Token budget of the answer (1..25,000).")]


def build_server(settings: Settings, backend: Backend) -> MCPServer:
    auth: AuthSettings | None = None
    verifier: TokenVerifier | None = None
    if settings.http:
        # tokens are ours (codesift token create), not OAuth's: the issuer is this server
        auth = AuthSettings.model_validate(
            {"issuer_url": f"http://{settings.host}:{settings.port}", "resource_server_url": None}
        )
        verifier = TokenVerifier(backend)

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

    server = MCPServer(
        name="codesift",
        instructions=(
            "codesift answers questions about indexed code from PostgreSQL. Prefer search_code "
            "over grep for 'where/how is X done' questions; find_symbol when you know a name; "
            "related_files before changing a file (who imports it, which tests cover it)."
        ),
        auth=auth,
        token_verifier=verifier,
        middleware=[tenant_middleware] if settings.http else None,
        log_level="WARNING",
    )

    # the ref tools search when they name none: the repository's default, or after
    # sync_index of the worktree (stdio) that worktree's ref, so that edits show
    session: dict[str, str | None] = {"ref": None}

    def at(ref: str | None) -> str | None:
        return ref if ref is not None else session["ref"]

    def tool(**kwargs):
        """server.tool with the docstring as one clean paragraph (no source indentation)."""

        def register(fn):
            description = " ".join(inspect.cleandoc(fn.__doc__ or "").split())
            server.add_tool(fn, description=description, **kwargs)
            return fn

        return register

    @tool(annotations=READ_ONLY)
    async def search_code(
        question: Question,
        repo: OptName = None,
        token_budget: Budget = DEFAULT_BUDGET,
        path_prefix: OptPath = None,
        language: OptName = None,
        ref: OptRef = None,
    ) -> CallToolResult:
        """Search the indexed code with a question in plain words or identifiers and get the
        relevant code itself, ranked, de-duplicated and packed under a token budget, each
        piece headed by its citation '# repo/path:start-end (symbol)'. Use it instead of
        grep or reading many files when you need to know where or how something is done
        ('where are redirects followed?'). Narrow with repo, path_prefix or language."""
        _budget(token_budget)
        _, rows, notices = await backend.query(
            _tenant(settings),
            "select rank, repository, path, start_line, end_line, symbol, kind, blob_sha,"
            " ref, indexed_commit, score, tokens, truncated, text"
            " from codesift.pack_context(%(q)s, repo => %(repo)s, token_budget => %(budget)s,"
            " path_prefix => %(prefix)s, language => %(lang)s, ref => %(ref)s)",
            {
                "q": question,
                "repo": repo,
                "budget": token_budget,
                "prefix": path_prefix,
                "lang": language,
                "ref": at(ref),
            },
        )
        # the same text pack_context_text returns: the items in rank order
        text = "\n\n".join(r[13] for r in rows) if rows else "no code matched the question"
        keys = (
            "rank repository path start_line end_line symbol kind blob_sha ref indexed_commit"
            " score tokens truncated"
        ).split()
        return _result(text, [dict(zip(keys, r[:13], strict=True)) for r in rows], notices)

    @tool(annotations=READ_ONLY)
    async def find_symbol(
        name: Name,
        repo: OptName = None,
        kind: Annotated[str | None, Field(max_length=64)] = None,
        path_prefix: OptPath = None,
        include_body: bool = True,
        max_results: Annotated[int, Field(ge=1, le=50)] = 10,
        token_budget: Budget = DEFAULT_BUDGET,
        ref: OptRef = None,
    ) -> CallToolResult:
        """Jump to a definition: the exact function, class, method or section named `name`
        (or a qualified name like 'Session.send'), with its file, lines, signature, doc
        comment and body. Exact only: when nothing is named so, it returns no match and the
        nearest names, never a guess. Use it instead of grepping for 'def name' or
        'class Name' when you know the identifier."""
        _budget(token_budget)
        names, rows, notices = await backend.query(
            _tenant(settings),
            "select * from codesift.find_symbol(%(name)s, repo => %(repo)s, kind => %(kind)s,"
            " path_prefix => %(prefix)s, max_results => %(n)s, include_body => %(body)s,"
            " ref => %(ref)s)",
            {
                "ref": at(ref),
                "name": name,
                "repo": repo,
                "kind": kind,
                "prefix": path_prefix,
                "n": max_results,
                "body": include_body,
            },
        )
        found = [dict(zip(names, r, strict=True)) for r in rows]
        parts = []
        for f in found:
            head = f"# {f['citation']} ({f['symbol_kind']} {f['symbol']}, {f['match']} match)"
            block = [head]
            if f["doc"]:
                block.append(f["doc"])
            block.append(f["body"] if include_body and f["body"] else f["signature"] or "")
            parts.append("\n".join(block))
        text = _bounded("\n\n".join(parts), token_budget) if parts else "no exact match"
        return _result(text, [{k: v for k, v in f.items() if k != "body"} for f in found], notices)

    @tool(annotations=READ_ONLY)
    async def related_files(
        path: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)],
        repo: OptName = None,
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        max_results: Annotated[int, Field(ge=1, le=200)] = 50,
        ref: OptRef = None,
    ) -> CallToolResult:
        """The import-graph neighbourhood of a file: what it imports and what imports it
        (with the imported names), up to `depth` hops, tests marked. Use it before changing
        a file to see its callers and the tests that cover it, instead of grepping imports.
        `path` is relative to the repository root, as search results cite it."""
        names, rows, notices = await backend.query(
            _tenant(settings),
            "select * from codesift.related_files(%(path)s, repo => %(repo)s,"
            " depth => %(depth)s, max_results => %(n)s, ref => %(ref)s)",
            {"path": path, "repo": repo, "depth": depth, "n": max_results, "ref": at(ref)},
        )
        found = [dict(zip(names, r, strict=True)) for r in rows]
        lines = [
            f"{f['repository']}/{f['related_path']}  {f['relation']} (hop {f['hop']}"
            + (f", via {f['via']}" if f["hop"] > 1 else "")
            + ")"
            + (f" names: {', '.join(f['names'])}" if f["names"] else "")
            + ("  [test]" if f["is_test"] else "")
            for f in found
        ]
        text = "\n".join(lines) if lines else f"no related files for '{path}'"
        return _result(_bounded(text, DEFAULT_BUDGET), found, notices)

    @tool(annotations=READ_ONLY)
    async def explain_search(
        question: Question,
        repo: OptName = None,
        token_budget: Budget = DEFAULT_BUDGET,
        path_prefix: OptPath = None,
        language: OptName = None,
        max_candidates: Annotated[int, Field(ge=1, le=200)] = 40,
        ref: OptRef = None,
    ) -> CallToolResult:
        """Why search_code chose what it chose: every candidate with its lexical and dense
        ranks, graph hop, score and decision (packed, pruned as a near-duplicate, over
        budget). Use it when search_code missed something you expected, to see whether it
        was not found or found and dropped."""
        _budget(token_budget)
        names, rows, notices = await backend.query(
            _tenant(settings),
            "select candidate, repository, path, start_line, end_line, symbol, kind,"
            " lexical_rank, dense_rank, graph_hop, round(score::numeric, 5)::float8 as score,"
            " decision, packed, tokens"
            " from codesift.explain_context(%(q)s, repo => %(repo)s,"
            " token_budget => %(budget)s, path_prefix => %(prefix)s, language => %(lang)s,"
            " ref => %(ref)s) order by candidate limit %(n)s",
            {
                "ref": at(ref),
                "q": question,
                "repo": repo,
                "budget": token_budget,
                "prefix": path_prefix,
                "lang": language,
                "n": max_candidates,
            },
        )
        found = [dict(zip(names, r, strict=True)) for r in rows]
        lines = ["# candidate  path:lines  symbol  lex dense hop  score  decision"]
        for f in found:
            lines.append(
                f"{f['candidate']:>3}  {f['repository']}/{f['path']}:{f['start_line']}-"
                f"{f['end_line']}  {f['symbol'] or '-'}  {f['lexical_rank'] or '-'} "
                f"{f['dense_rank'] or '-'} {f['graph_hop'] if f['graph_hop'] is not None else '-'}"
                f"  {f['score']}  {f['decision']}"
            )
        return _result(_bounded("\n".join(lines), DEFAULT_BUDGET), found, notices)

    async def _status(repo: str | None) -> tuple[list[dict], list[str]]:
        names, rows, notices = await backend.query(
            _tenant(settings), "select * from codesift.repository_status(%(repo)s)", {"repo": repo}
        )
        return [dict(zip(names, r, strict=True)) for r in rows], notices

    @tool(annotations=READ_ONLY)
    async def list_repositories() -> CallToolResult:
        """The repositories you can search, one line per indexed ref (branch, tag or commit;
        the default one is what tools use when they name no ref), each with its indexed
        commit, whether the index
        is stale (the checkout moved past it), file, symbol and edge counts and the
        embedding backlog. Call it first to learn the repository names other tools take."""
        found, notices = await _status(None)
        lines = [
            f"{f['repository']} @ {f['ref']}{' (default)' if f['is_default'] else ''}:"
            f" {(f['indexed_commit'] or '-')[:12]}"
            f"{' (stale: head ' + f['head_commit'][:12] + ')' if f['stale'] else ''}"
            f", {f['live_files']} files, {f['symbols']} symbols, {f['edges']} edges,"
            f" embedding backlog {f['embedding_backlog']}"
            for f in found
        ]
        text = "\n".join(lines) if lines else "no repository is indexed yet"
        return _result(text, found, notices)

    @server.resource(
        "codesift://repositories",
        name="repositories",
        description="The tenant's indexed repositories with their status (JSON).",
        mime_type="application/json",
    )
    async def repositories_resource() -> str:
        found, _ = await _status(None)
        return json.dumps(_jsonable(found), indent=1)

    @server.resource(
        "codesift://repositories/{name}",
        name="repository-status",
        description="One repository's status: indexed commit, stale, counts, backlog (JSON).",
        mime_type="application/json",
    )
    async def repository_resource(name: str) -> str:
        found, _ = await _status(name[:MAX_NAME_CHARS])
        if not found:
            raise ToolError(f"unknown repository '{name[:80]}'")
        return json.dumps(_jsonable(found[0]), indent=1)

    if not settings.http:
        # writing to the index from a shared HTTP server is not an agent's job: stdio only
        @tool(
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=True
            )
        )
        async def sync_index(
            path: OptPath = None,
            name: OptName = None,
            worktree: bool = True,
        ) -> CallToolResult:
            """Re-index the local checkout incrementally (only new or changed files; with
            worktree, uncommitted changes too, as the ref 'HEAD:worktree', which the other
            tools then search unless they name a ref), so that search results reflect
            edits you just made. Call it after changing files when searches look stale."""
            import anyio

            target = path or settings.repo_path or os.getcwd()
            summary = await anyio.to_thread.run_sync(_sync_index, settings, target, name, worktree)
            session["ref"] = summary["ref"] if worktree else None
            return _result(summary["text"], [summary], [])

    return server


def _sync_index(settings: Settings, path: str, name: str | None, worktree: bool) -> dict:
    from .errors import CodesiftError
    from .indexer import index_repository

    try:
        with db.connect(settings.dsn, autocommit=True) as conn, db.acting_as_loader(conn):
            s = index_repository(
                conn,
                path,
                name=name,
                tenant=settings.tenant_name or "default",
                worktree=worktree,
                show_progress=False,
            )
    except CodesiftError as exc:
        raise ToolError(str(exc)) from None
    text = (
        f"indexed {s.repository} @ {s.ref} ({s.commit[:12]}): "
        f"{s.files} files, {s.new_blobs} new blobs, {s.new_symbols} new symbols, "
        f"{s.removed_paths} paths removed, {s.edges} edges, embedded "
        f"{s.embedded.symbols} symbols + {s.embedded.blobs} files"
    )
    return {
        "text": text,
        "repository": s.repository,
        "ref": s.ref,
        "commit": s.commit,
        "files": s.files,
        "new_blobs": s.new_blobs,
        "skipped": dict(s.skipped),
    }


def resolve_tenant(dsn: str, name: str) -> int:
    """The id of tenant `name` (stdio mode), looked up as the loader; a per-tenant login
    role gets its own tenant whatever the name."""
    with db.connect(dsn, autocommit=True) as conn:
        own = conn.execute("select codesift.current_tenant_id()").fetchone()
        if own is not None and own[0] is not None:
            return own[0]
        with db.acting_as_loader(conn):
            row = conn.execute(
                "select id from codesift.tenants where name = %s", (name,)
            ).fetchone()
    if row is None:
        raise CodesiftError(
            f"unknown tenant '{name}': index a repository for it first (codesift index PATH"
            f" --tenant {name}), or pass --tenant"
        )
    return row[0]


def serve(settings: Settings) -> None:
    import anyio

    async def main() -> None:
        backend = Backend(settings)
        await backend.open()
        try:
            server = build_server(settings, backend)
            if settings.http:
                await _serve_http(server, settings)
            else:
                await server.run_stdio_async()
        finally:
            await backend.close()

    anyio.run(main)


async def _serve_http(server: MCPServer, settings: Settings) -> None:
    import uvicorn

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
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        access_log=False,
        http=guarded_h11(settings.read_timeout, connection_cap(settings)),
    )
    await uvicorn.Server(config).serve()


def _report_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        loop.default_exception_handler(context)


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
