"""Start `codesift mcp` as a subprocess and talk to it with the MCP SDK's own client."""

import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

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
