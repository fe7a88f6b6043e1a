"""The databases behind `codesift mcp`: a psycopg_pool of application-role connections per
database (the primary; the replica the query tools read, if one is given), made on first use,
and one call as one transaction with the tenant set for that transaction only. A database
that cannot be reached makes every call say so at once (Unreachable) until it is back."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import psycopg
from mcp.server.mcpserver.exceptions import ToolError
from psycopg.sql import SQL, Literal

from . import db, tenants
from .errors import CodesiftError, database_message
from .mcp_settings import Settings
from .mcp_tokens import token_hash

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

APP_ROLE = "codesift_app"
# a connection attempt taking longer than this many seconds counts as the database being
# unreachable; a call waits this long for a free pooled connection
CONNECT_TIMEOUT = 5
POOL_TIMEOUT = 30.0

T = TypeVar("T")

_log = logging.getLogger("codesift.mcp")


class Unreachable(ToolError):
    """The database cannot be reached: a tool's answer says so (the SDK's ToolError)."""


def _reason(exc: Exception) -> str:
    """Why a connection failed, in libpq's words, on one line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("connection failed: ", "connection is bad: "):
        text = text.removeprefix(prefix)
    return text


class Database:
    """One database (the primary; the replica the query tools read, if one is given) behind
    a psycopg_pool of application-role connections, made on first use: a stdio server
    touches no database before a tool runs.

    A connection attempt that fails or a connection that breaks makes it `down`: every call
    then tries one connection of its own first, and while that fails is answered at once
    that the database is unreachable (a pool would keep the call waiting through its own
    backed-off retries). Once that connection succeeds, the pool is made anew (the old
    one's connections died with the server) and the server goes on, without a restart."""

    def __init__(self, settings: Settings, dsn: str, name: str, variable: str):
        self.settings = settings
        self.dsn = dsn
        self.name = name
        self.variable = variable  # where the user sets the DSN, for the error message
        self.pool: AsyncConnectionPool | None = None
        self.down: str | None = None  # why the last attempt failed
        self._lock = asyncio.Lock()

    def unreachable(self, reason: str) -> Unreachable:
        if self.settings.http:
            # a tenant holding a token learns nothing of the server's infrastructure
            return Unreachable("database unreachable: try again later")
        return Unreachable(f"database unreachable ({reason}): start it or check {self.variable}")

    def lost(self, reason: str) -> None:
        if self.down is None and self.settings.http:
            _log.warning("codesift: database %s unreachable: %s", self.name, reason)
        self.down = reason

    async def probe(self) -> None:
        """Raise Unreachable unless a connection to the database can be made now."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as exc:  # refused, timed out, refused us, a malformed DSN
            self.lost(_reason(exc))
            raise self.unreachable(_reason(exc)) from None
        await conn.close()

    async def ready(self) -> AsyncConnectionPool:
        """The pool, made now if there is none or the database was down (Unreachable while
        it still is)."""
        async with self._lock:
            if self.pool is None or self.down is not None:
                # the old pool's connections died with the server, and it would go on
                # trying to replace them in the background
                old, self.pool = self.pool, None
                if old is not None:
                    await old.close(timeout=1)
                await self.probe()
                from psycopg_pool import PoolTimeout

                pool = self._make_pool()
                try:
                    await pool.open(wait=True, timeout=CONNECT_TIMEOUT)
                except PoolTimeout:  # it went away again (the pool is closed)
                    reason = f"no connection within {CONNECT_TIMEOUT} s"
                    self.lost(reason)
                    raise self.unreachable(reason) from None
                if self.down is not None and self.settings.http:
                    _log.warning("codesift: database %s reachable again", self.name)
                self.pool, self.down = pool, None
            return self.pool

    def _make_pool(self) -> AsyncConnectionPool:
        from psycopg_pool import AsyncConnectionPool

        return AsyncConnectionPool(
            self.dsn,
            min_size=self.settings.pool_min,
            max_size=self.settings.pool_max,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
            configure=self._configure,
            reset=self._reset,
            open=False,
            name=self.name,
            timeout=POOL_TIMEOUT,
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

    async def run(self, work: Callable[[psycopg.AsyncConnection], Awaitable[T]]) -> T:
        """`work` on a pooled connection. When the connection breaks (the server went away,
        or only this connection did), once more on a new pool if the database answers a
        new connection, else Unreachable; a database error that leaves the connection
        usable is raised as it is."""
        from psycopg_pool import PoolTimeout

        reason = ""
        for _ in range(2):
            pool = await self.ready()
            try:
                async with pool.connection() as conn:
                    try:
                        return await work(conn)
                    except psycopg.Error as exc:
                        if not conn.closed:
                            raise
                        reason = _reason(exc)
            except PoolTimeout:
                # every connection busy, or none could be made: a connection of our own says
                await self.probe()
                raise ToolError(
                    f"the database is busy: no connection was free within {POOL_TIMEOUT:.0f} s;"
                    " try again"
                ) from None
            self.lost(reason)
        raise self.unreachable(reason)

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()


class Backend:
    """The databases of the server; each call is one transaction on a pooled connection that
    sets the tenant with SET LOCAL, i.e. for that transaction only."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.primary = Database(settings, settings.dsn, "codesift-mcp", "CODESIFT_DSN")
        # the query tools read from a replica when one is given; token_tenant writes (its
        # last-used stamp), so tokens are always checked on the primary
        self.reader = (
            Database(settings, settings.read_dsn, "codesift-mcp-read", "CODESIFT_READ_DSN")
            if settings.read_dsn
            else self.primary
        )

    @property
    def pool(self) -> AsyncConnectionPool:
        """The primary's pool (open() first)."""
        assert self.primary.pool is not None, "Backend.open() first"
        return self.primary.pool

    async def open(self) -> None:
        """Make the pools now (Unreachable if a database is down); a stdio server does not,
        its first tool call does."""
        await self.primary.ready()
        if self.reader is not self.primary:
            await self.reader.ready()

    async def close(self) -> None:
        if self.reader is not self.primary:
            await self.reader.close()
        await self.primary.close()

    async def ready(self, writes: bool = False) -> None:
        """Before a tool runs: over stdio, the tenant, looked up on the first call (so that
        the server starts and answers without its database). A tool that `writes`
        (sync_index) connects by itself, as the loader, and makes its tenant if missing:
        for it, only whether the primary answers now."""
        settings = self.settings
        if writes:
            await self.primary.probe()
        elif not settings.http and settings.tenant_id is None:
            import anyio

            await self.primary.probe()
            try:
                settings.tenant_id = await anyio.to_thread.run_sync(
                    resolve_tenant, settings.dsn, settings.tenant_name or "default"
                )
            except CodesiftError as exc:
                raise ToolError(str(exc)) from None

    async def tenant_of_token(self, token: str) -> int | None:
        async def lookup(conn: psycopg.AsyncConnection) -> int | None:
            cur = await conn.execute("select codesift.token_tenant(%s)", (token_hash(token),))
            row = await cur.fetchone()
            return row[0] if row else None

        return await self.primary.run(lookup)

    async def tenant_named(self, name: str) -> int | None:
        """The id of tenant `name` (an OpenID Connect token's), or None."""

        async def lookup(conn: psycopg.AsyncConnection) -> int | None:
            cur = await conn.execute("select codesift.tenant_named(%s)", (name,))
            row = await cur.fetchone()
            return row[0] if row else None

        return await self.primary.run(lookup)

    async def query(self, tenant_id: int, sql: str, params: dict) -> tuple[list, list, list]:
        """(column names, rows, notices) of one statement run as `tenant_id`."""
        notices: list[str] = []

        def on_notice(diag: psycopg.errors.Diagnostic) -> None:
            notices.append(diag.message_primary or "")

        async def statement(conn: psycopg.AsyncConnection) -> tuple[list, list]:
            notices.clear()
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
                return [c.name for c in cur.description or []], rows
            finally:
                conn.remove_notice_handler(on_notice)

        try:
            names, rows = await self.reader.run(statement)
        except psycopg.Error as exc:
            raise ToolError(_db_message(exc)) from None
        return names, rows, notices


def _db_message(exc: psycopg.Error) -> str:
    message, hint = database_message(exc)
    return f"{message} (hint: {hint})" if hint else message


def resolve_tenant(dsn: str, name: str) -> int:
    """The id of tenant `name` (stdio mode), looked up as the loader; a per-tenant login
    role gets its own tenant whatever the name."""
    with db.connect(dsn, autocommit=True) as conn:
        own = conn.execute("select codesift.current_tenant_id()").fetchone()
        if own is not None and own[0] is not None:
            return own[0]
        with db.acting_as_loader(conn):
            # an unknown one: the error every command gives
            return tenants.tenant_id(conn, name)
