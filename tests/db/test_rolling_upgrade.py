"""Upgrading while serving: an earlier release's `codesift mcp --http` (its own loader code,
from git history: tag v0.2.0's commit) keeps running while this checkout's `codesift
migrate` upgrades the database under it, and answers every call afterwards, until it is
replaced. README "Upgrading while serving" says why the calls pause while migrate runs and
which migrations need more than that.

An earlier commit than the release (before migration 022, say) cannot be served here: the
test cluster's PL/Python imports this checkout's plpython/, which reads tables that
migration created (file_edges), so the old version's stored functions fail on it.
"""

import asyncio
import io
import os
import re
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from tests.conftest import _dsn_of
from tests.db.test_upgrade import RELEASES, _git
from tests.mcp.harness import free_port, http_session, text_of

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
CODESIFT = str(ROOT / ".venv" / "bin" / "codesift")
# the earlier versions served while this checkout migrates
OLD_VERSIONS = {"v0.2.0": RELEASES["v0.2.0"][0]}
FILES = {
    "shop/cart.py": (
        "from shop.prices import price_of\n\n\n"
        "def cart_total(items):\n    return sum(price_of(i) for i in items)\n"
    ),
    "shop/prices.py": "def price_of(item):\n    return item['price'] * 100\n",
    "tests/test_cart.py": (
        "from shop.cart import cart_total\n\n\n"
        "def test_cart_total():\n    assert cart_total([]) == 0\n"
    ),
}
CALLS = [
    ("search_code", {"question": "cart total price"}),
    ("find_symbol", {"name": "cart_total"}),
    ("related_files", {"path": "shop/prices.py"}),
    ("list_repositories", {}),
]
CLIENTS = 3  # concurrent sessions calling the old server


def old_tree(commit: str, target: Path) -> Path:
    """loader/, plpython/ and sql/ of `commit`, written from git history into `target`."""
    listed = _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if listed.returncode != 0:
        pytest.skip(f"commit {commit} is not in this checkout's history (a shallow clone?)")
    archive = _git("archive", "--format=tar", commit, "loader", "plpython", "sql")
    assert archive.returncode == 0, archive.stderr.decode(errors="replace")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target


def old_codesift(tree: Path, dsn: str, *args: str) -> str:
    """Run the earlier version's CLI (its loader first on the path); its output."""
    done = subprocess.run(
        [PYTHON, "-m", "codesift", *args],
        env={**os.environ, "PYTHONPATH": str(tree / "loader"), "CODESIFT_DSN": dsn},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout + done.stderr


@contextmanager
def old_server(tree: Path, dsn: str):
    """The earlier version's `codesift mcp --http` on a free loopback port: its /mcp URL."""
    port = free_port()
    errors = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        [PYTHON, "-m", "codesift", "mcp", "--http", "--port", str(port), "--pool-size", "4"],
        env={**os.environ, "PYTHONPATH": str(tree / "loader"), "CODESIFT_DSN": dsn},
        stdout=subprocess.DEVNULL,
        stderr=errors,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                errors.seek(0)
                raise RuntimeError(f"the old codesift mcp --http exited: {errors.read()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the old server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        errors.seek(0)
        err = errors.read()
        errors.close()
        if err.strip():
            print(err, file=sys.stderr)


class Calls:
    """What the clients saw: each call's (started, ended, tool, error or None)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float, str, str | None]] = []

    async def loop(self, url: str, token: str, rounds: int) -> None:
        async with http_session(url, token) as session:
            for i in range(rounds * len(CALLS)):
                name, arguments = CALLS[i % len(CALLS)]
                started = time.monotonic()
                try:
                    result = await session.call_tool(name, arguments)
                    error = text_of(result) if result.is_error else None
                    if error is None and not (result.structured_content or {}).get("rows"):
                        error = "no rows"
                except Exception as exc:  # a transport or protocol failure is a failure too
                    error = f"{type(exc).__name__}: {exc}"
                self.seen.append((started, time.monotonic(), name, error))

    async def clients(self, url: str, token: str, rounds: int) -> None:
        await asyncio.gather(*(self.loop(url, token, rounds) for _ in range(CLIENTS)))


@pytest.mark.parametrize("version", sorted(OLD_VERSIONS))
def test_the_old_server_answers_after_the_new_migrate(
    version, blank_postgresql, make_repo, tmp_path
):
    """The upgrade README "Upgrading while serving" describes: the old version's server
    keeps running (its process, its pooled connections) while its traffic pauses for the
    new migrate, then answers every call against the upgraded database until it is
    replaced; the migrate itself succeeds while that server holds its connections open.

    The test cluster's PL/Python imports this checkout's plpython/, so the old version's
    own stored functions run here with newer server-side Python than they shipped with:
    what they answer before the upgrade is not asserted (a real server runs the old
    version's plpython/ until the upgrade), only that they answered at all."""
    tree = old_tree(OLD_VERSIONS[version], tmp_path / "old")
    blank_postgresql.autocommit = True
    dsn = _dsn_of(blank_postgresql)
    old_codesift(tree, dsn, "migrate")
    repo = make_repo(FILES, "shop")
    old_codesift(tree, dsn, "index", str(repo), "--tenant", "acme")
    printed = old_codesift(tree, dsn, "token", "create", "--tenant", "acme", "--label", "old")
    token = re.search(r"csk_[A-Za-z0-9_-]{20,}", printed)
    assert token is not None, printed
    with psycopg.connect(dsn) as conn:
        before = {r[0] for r in conn.execute("select name from codesift.schema_migrations")}

    calls = Calls()
    with old_server(tree, dsn) as url:
        asyncio.run(calls.clients(url, token.group(0), rounds=1))
        answered_before = len(calls.seen)
        # the pause: no call in flight while the new migrate runs (README: PL/Python)
        done = subprocess.run(
            [CODESIFT, "migrate"],
            env={**os.environ, "CODESIFT_DSN": dsn},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        migrated_at = time.monotonic()
        asyncio.run(calls.clients(url, token.group(0), rounds=2))

    assert answered_before == CLIENTS * len(CALLS)
    with psycopg.connect(dsn) as conn:
        after = {r[0] for r in conn.execute("select name from codesift.schema_migrations")}
    assert after > before, "the new migrate applied nothing new"
    after_upgrade = [c for c in calls.seen if c[0] > migrated_at]
    assert len(after_upgrade) == 2 * CLIENTS * len(CALLS)
    failed = [(name, error) for _, _, name, error in after_upgrade if error is not None]
    assert failed == [], failed[:10]
    print(f"{version}: applied {sorted(after - before)}; {len(after_upgrade)} calls after it")
