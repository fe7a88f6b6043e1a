"""Helpers for the tests of `codesift watch` and `codesift hook`: the real CLI in a
subprocess, polling with a generous deadline (never a timing assertion), queries as
the application role, and a loopback TCP proxy that can drop the database away."""

import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parents[1]
CODESIFT = ROOT / ".venv" / "bin" / "codesift"
PYTHON = ROOT / ".venv" / "bin" / "python"


def run_codesift(dsn: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The codesift CLI against dsn, to its end: (returncode, stdout, stderr)."""
    return subprocess.run(
        [str(CODESIFT), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn},
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


DEADLINE = 120.0  # seconds: a loaded 2-core host; never a measurement

T = TypeVar("T")


def poll(
    what: str, check: Callable[[], T], deadline: float = DEADLINE, log: Path | None = None
) -> T:
    """check()'s first truthy value; fails with `what` (and the log) at the deadline."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise AssertionError(f"not within {deadline:g} s: {what}\n{tail}")
        time.sleep(0.2)


class Watch:
    """`codesift watch PATH ...` running in the background, its output in a file; with a
    driver, that Python source runs instead (PATH and the args in its sys.argv)."""

    def __init__(
        self, dsn: str, root: Path, *args: str, log: Path, driver: str | None = None
    ) -> None:
        self.log = log
        self.out = open(log, "wb")  # noqa: SIM115 (closed in stop)
        command = [str(CODESIFT), "watch"] if driver is None else [str(PYTHON), "-u", "-c", driver]
        self.proc = subprocess.Popen(
            [*command, str(root), *args],
            stdout=self.out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "250"},
            # as a terminal's foreground job: Ctrl-C (SIGINT) delivered, even when the tests
            # themselves run in the background with SIGINT ignored (which children inherit)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, count: int = 1) -> None:
        poll(
            f"{needle!r} x{count} in the watch log",
            lambda: self.text().count(needle) >= count,
            log=self.log,
        )

    def stop(self) -> int:
        """Ctrl-C, and its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        return self.proc.returncode

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def tenant_id(db: psycopg.Connection, name: str = "default") -> int | None:
    row = db.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()
    return row[0] if row else None


class Asker:
    """pack_context asked as the application role, on one connection (opened once the
    tenant exists): (path, text) of each packed row."""

    def __init__(self, app_connect, db: psycopg.Connection, tenant: str = "default") -> None:
        self.app_connect, self.db, self.tenant = app_connect, db, tenant
        self.conn: psycopg.Connection | None = None

    def __call__(self, question: str, repo: str) -> list[tuple]:
        if self.conn is None:
            tid = tenant_id(self.db, self.tenant)
            if tid is None:
                return []
            self.conn = self.app_connect(tid)
        return self.conn.execute(
            "select path, text from codesift.pack_context(%s, repo => %s, token_budget => 4000)",
            (question, repo),
        ).fetchall()


def live_paths(db: psycopg.Connection, repo: str, tenant: str = "default") -> dict[str, str]:
    rows = db.execute(
        "select f.path, f.blob_sha from codesift.files f"
        " join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id"
        " join codesift.tenants t on t.id = r.tenant_id"
        " where t.name = %s and r.name = %s and f.live",
        (tenant, repo),
    ).fetchall()
    return dict(rows)


def stored_text(db: psycopg.Connection, needle: str) -> int:
    """How many stored blobs (any tenant) contain `needle`."""
    row = db.execute(
        "select count(*) from codesift.blobs where strpos(content, %s) > 0", (needle,)
    ).fetchone()
    return row[0]


class Proxy:
    """A loopback TCP port forwarding to the database (unix socket or TCP): stopping it
    drops every connection through it, as a database restart does."""

    def __init__(self, dsn: str) -> None:
        params = conninfo_to_dict(dsn)
        host = params.get("host") or "/var/run/postgresql"
        port = int(params.get("port") or 5432)
        if host.startswith("/"):
            self.target: tuple = (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}")
        else:
            self.target = (socket.AF_INET, (host, port))
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        self.port = listener.getsockname()[1]
        listener.close()
        self.dsn = make_conninfo(dsn, host="127.0.0.1", port=str(self.port))
        self.listener: socket.socket | None = None
        self.sockets: list[socket.socket] = []
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.listener = listener
        self.thread = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        self.thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.socket(self.target[0], socket.SOCK_STREAM)
            try:
                server.connect(self.target[1])
            except OSError:
                client.close()
                continue
            self.sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [])
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            return
        finally:
            a.close()
            b.close()

    def stop(self) -> None:
        if self.listener is not None:
            try:
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
            except OSError:
                pass
            self.listener.close()
            self.listener = None
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.sockets = []
