"""Start `codesift mcp` as a subprocess and talk to it with the MCP SDK's own client."""

import asyncio
import concurrent.futures
import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parents[2]
CODESIFT = str(ROOT / ".venv" / "bin" / "codesift")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def stdio_session(dsn: str, tenant: str, cwd: Path | None = None) -> AsyncIterator:
    params = StdioServerParameters(
        command=CODESIFT,
        args=["mcp", "--tenant", tenant],
        env={"CODESIFT_DSN": dsn, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd=str(cwd) if cwd else None,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


class SharedStdioServer:
    """One `codesift mcp` over stdio that several tests call in turn (a module's tests that
    only read: one server start instead of one each). call(tool, args) from synchronous
    code; the MCP session runs on an event loop in a thread of its own."""

    def __init__(self, dsn: str, tenant: str, cwd: Path | None = None):
        self.dsn, self.tenant, self.cwd = dsn, tenant, cwd
        self.indexed = None  # what the database holds, as its indexing function said
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> "SharedStdioServer":
        self._thread.start()
        opened: concurrent.futures.Future = concurrent.futures.Future()
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(opened), self._loop)
        try:
            self._session = opened.result(timeout=120)
        except BaseException:
            self.__exit__()
            raise
        return self

    async def _serve(self, opened: concurrent.futures.Future) -> None:
        # the session is opened and closed in this one task, as the SDK's task groups require
        self._stop = asyncio.Event()
        try:
            async with stdio_session(self.dsn, self.tenant, cwd=self.cwd) as session:
                opened.set_result(session)
                await self._stop.wait()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc)
            raise

    @property
    def session(self) -> ClientSession:
        return self._session

    def run(self, awaitable):
        """Await a call of `session` on the session's loop; its result."""
        return asyncio.run_coroutine_threadsafe(awaitable, self._loop).result(timeout=120)

    def call(self, tool: str, args: dict):
        return self.run(self._session.call_tool(tool, args))

    def calls(self, calls: Sequence[tuple[str, dict]]) -> list:
        return [self.call(tool, args) for tool, args in calls]

    def __exit__(self, *exc: object) -> None:
        try:
            if hasattr(self, "_stop"):
                self._loop.call_soon_threadsafe(self._stop.set)
            with contextlib.suppress(Exception):  # a failed start raised its error already
                self._serving.result(timeout=30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()


@contextmanager
def shared_stdio_server(
    snapshots, folder: Path, key: str, index, tenant: str, cwd: str | None = None
) -> Iterator[SharedStdioServer]:
    """A SharedStdioServer for `tenant` (in folder/cwd) over a database of its own that holds
    snapshots.load(key, index), the repositories copied into `folder` (conftest.Snapshots);
    its `indexed` is what index returned."""
    with (
        snapshots.database(key, index, folder) as (dsn, indexed),
        SharedStdioServer(dsn, tenant, folder / cwd if cwd else None) as server,
    ):
        server.indexed = indexed
        yield server


@contextmanager
def shop_server(snapshots, tmp_path_factory, repos: dict) -> Iterator[SharedStdioServer]:
    """shared_stdio_server for acme in the checkout of `shop`, over `repos` ({name: (tenant,
    files)}, one of them shop for acme), indexed once per session."""
    folder = tmp_path_factory.mktemp("shop")
    key = "mcp_shop_" + "_".join(sorted(repos))
    with shared_stdio_server(
        snapshots, folder, key, snapshots.repos(repos), "acme", "shop"
    ) as server:
        yield server


@contextmanager
def http_server(dsn: str, pool_size: int = 4, args: Sequence[str] = ()):
    """`codesift mcp --http` on a free loopback port; yields its /mcp URL."""
    with http_server_process(dsn, pool_size, args) as (url, _):
        yield url


@contextmanager
def http_server_process(
    dsn: str, pool_size: int = 4, args: Sequence[str] = (), nofile: int | None = None
):
    """`codesift mcp --http ARGS` on a free loopback port, with at most `nofile` open files
    (RLIMIT_NOFILE) when given; yields its /mcp URL and the process. Its stderr is kept in a
    file and printed when it ends."""
    port = free_port()

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    errors = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [CODESIFT, "mcp", "--http", "--port", str(port), "--pool-size", str(pool_size), *args],
        env={**os.environ, "CODESIFT_DSN": dsn},
        stdout=subprocess.DEVNULL,
        stderr=errors,
        text=True,
        preexec_fn=limit_files,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"codesift mcp --http exited: {errors.read()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        errors.seek(0)
        err = errors.read()
        errors.close()
        if err.strip():
            print(err, file=sys.stderr)


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class DatabaseSwitch:
    """A loopback TCP port that forwards to the test database while switched up, and where
    nothing listens while down: a DSN pointing at it (`.dsn`) reaches a database that can be
    taken away and brought back under a running server, the real one untouched. Down also
    cuts the connections open through it, as a database that stops does."""

    def __init__(self, dsn: str):
        params = conninfo_to_dict(dsn)
        host = str(params.get("host") or "localhost")
        port = int(params.get("port") or 5432)
        self.target: str | tuple[str, int] = (
            f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port)
        )
        self.port = free_port()
        params.pop("hostaddr", None)
        self.dsn = make_conninfo(**{**params, "host": "127.0.0.1", "port": str(self.port)})
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def __enter__(self) -> "DatabaseSwitch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port))
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it
            listener.close()
        with self._lock:
            cut, self._open = self._open, []
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # switched down
            family = socket.AF_UNIX if isinstance(self.target, str) else socket.AF_INET
            server = socket.socket(family, socket.SOCK_STREAM)
            try:
                server.connect(self.target)
            except OSError:
                client.close()
                server.close()
                continue
            with self._lock:
                self._open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
