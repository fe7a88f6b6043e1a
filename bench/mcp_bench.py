"""What the MCP adapter adds: search_code round trips over stdio and over Streamable HTTP
against a direct pack_context call, side by side in one run; and how long `codesift mcp`
takes to start, against another checkout's code (prints only, never asserts).

    .venv/bin/python bench/mcp_bench.py [--repo PATH] [--rounds 6] [--out bench/results/mcp.txt]
    .venv/bin/python bench/mcp_bench.py --cold-only --before /tmp/before [--cold-rounds 20]

Cold start (--before PATH: a checkout of the code to compare with, e.g. the previous commit's
from `git worktree add /tmp/before HEAD`; run with this venv, its loader/ and plpython/
first on PYTHONPATH): a stdio `codesift mcp` process from its start to its answer to
`initialize` (what an agent waits for), and to its answer to the `tools/list` that follows,
for this checkout's code and the other's, alternating run by run. --cold-only skips the
round trips (and the indexing they need).

Data: a real repository (default: the click package installed in .venv, committed into a
temporary git repository; --repo for any checkout) indexed with embeddings into a fresh
database <db>_mcp_bench on CODESIFT_DSN's server (dropped at the end unless --keep).

Arms, on the same questions and the same SQL (pack_context with a 4,000-token budget, every
row fetched), warm, interleaved question by question (the host drifts):
  direct   psycopg as codesift_app, one pipelined transaction: set_config(tenant, true) +
           pack_context (what the server does for each call, without MCP around it)
  stdio    the SDK's client -> `codesift mcp` subprocess (tool search_code)
  http     the SDK's client -> `codesift mcp --http` on loopback with a bearer token
The first round warms every arm and is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
from codesift.db import database_dsn
from codesift.indexer import index_repository
from codesift.mcp_tokens import create_token
from codesift.migrate import migrate
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.mcp.harness import http_server, http_session, stdio_session  # noqa: E402

QUESTIONS = [
    "how are command line options parsed?",
    "where is the help text formatted?",
    "how does a group dispatch to its subcommands?",
    "prompt the user for confirmation",
    "where are environment variables read for options?",
    "how is shell completion generated?",
    "echo with colors to the terminal",
    "progress bar rendering",
    "how are parameter types converted and validated?",
    "where is the context object created and passed?",
    "open a file lazily",
    "BadParameter error message",
]
TENANT = "bench"
REPO = "bench"


def git(root: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def default_repo(tmp: Path) -> Path:
    import click

    root = tmp / "click"
    shutil.copytree(Path(click.__file__).parent, root, ignore=shutil.ignore_patterns("*.pyc"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "import")
    return root


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


async def run_arms(dsn: str, tenant_id: int, token: str, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"direct": [], "stdio": [], "http": []}
    params = {"repo": REPO, "budget": 4000}
    pack = (
        "select rank, repository, path, start_line, end_line, symbol, kind, blob_sha,"
        " indexed_commit, score, tokens, truncated, text"
        " from codesift.pack_context(%(q)s, repo => %(repo)s, token_budget => %(budget)s)"
    )
    direct = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await direct.execute("set role codesift_app")
    with http_server(dsn) as url:
        async with stdio_session(dsn, TENANT) as stdio, http_session(url, token) as http:

            async def arm_direct(q):
                # as the MCP server does it: one pipelined transaction per call
                async with direct.pipeline(), direct.transaction():
                    await direct.execute(
                        "select set_config('app.current_tenant_id', %s, true)", (str(tenant_id),)
                    )
                    cur = await direct.execute(pack, {**params, "q": q})
                return await cur.fetchall()

            async def arm_stdio(q):
                return await stdio.call_tool("search_code", {"question": q, "repo": REPO})

            async def arm_http(q):
                return await http.call_tool("search_code", {"question": q, "repo": REPO})

            arms = [("direct", arm_direct), ("stdio", arm_stdio), ("http", arm_http)]
            for r in range(rounds + 1):
                for i, q in enumerate(QUESTIONS):
                    order = arms[(i + r) % 3 :] + arms[: (i + r) % 3]  # rotate who goes first
                    for name, fn in order:
                        t0 = time.perf_counter()
                        result = await fn(q)
                        elapsed = (time.perf_counter() - t0) * 1000
                        if name != "direct" and result.is_error:
                            raise RuntimeError(f"{name}: {result.content}")
                        if r > 0:
                            times[name].append(elapsed)
    await direct.close()
    return times


# `codesift mcp` as .venv/bin/codesift runs it, from whichever checkout PYTHONPATH names
LAUNCH = "import sys; sys.argv[0] = 'codesift'; from codesift.cli import main; sys.exit(main())"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "mcp_bench", "version": "0"},
    },
}


def cold_start(tree: Path, dsn: str) -> tuple[float, float]:
    """(ms to the answer to initialize, ms to the answer to tools/list) of one stdio
    `codesift mcp` of the code in `tree`, counted from the process's start."""
    env = {
        **os.environ,
        "CODESIFT_DSN": dsn,
        "PYTHONPATH": f"{tree / 'loader'}:{tree / 'plpython'}",
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "mcp", "--tenant", TENANT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def answer(ident: int) -> None:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"codesift mcp from {tree} exited (rc {proc.wait()})")
            if json.loads(line).get("id") == ident:
                return

    try:
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        answer(1)
        initialized = time.perf_counter()
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write("\n" + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        proc.stdin.write("\n")
        proc.stdin.flush()
        answer(2)
        listed = time.perf_counter()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return (initialized - t0) * 1000, (listed - t0) * 1000


def run_cold(dsn: str, before: Path, rounds: int) -> list[str]:
    """The cold start of this checkout's `codesift mcp` and of `before`'s, alternating (which
    goes first alternates too); the first run of each warms the page cache, not counted."""
    trees = {"before": before.resolve(), "after": ROOT}
    times: dict[str, dict[str, list[float]]] = {k: {"init": [], "list": []} for k in trees}
    for r in range(rounds + 1):
        for name in sorted(trees, reverse=r % 2 == 1):
            init, listed = cold_start(trees[name], dsn)
            if r > 0:
                times[name]["init"].append(init)
                times[name]["list"].append(listed)
    lines = [
        f"cold start of a stdio `codesift mcp`, process start to answer (ms; {rounds} runs"
        " each, alternating)",
        f"before: {before}",
        "",
        f"{'arm':<20}{'p50':>9}{'p95':>9}{'mean':>9}{'p50 ratio':>11}",
    ]
    for what, label in (("init", "initialize"), ("list", "tools/list")):
        base = percentile(times["before"][what], 0.5)
        for name in trees:
            t = times[name][what]
            lines.append(
                f"{label + ' ' + name:<20}{percentile(t, 0.5):>9.0f}{percentile(t, 0.95):>9.0f}"
                f"{statistics.mean(t):>9.0f}{percentile(t, 0.5) / base:>10.2f}x"
            )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo", type=Path, help="a git checkout (default: click from .venv)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", type=Path, help="also write the report here")
    ap.add_argument("--keep", action="store_true", help="keep the bench database")
    ap.add_argument("--before", type=Path, help="cold start: a checkout to compare with")
    ap.add_argument("--cold-rounds", type=int, default=20)
    ap.add_argument("--cold-only", action="store_true", help="only the cold start (--before)")
    args = ap.parse_args()
    if args.cold_only and not args.before:
        ap.error("--cold-only needs --before")

    dbname = "codesift_mcp_bench"
    admin = psycopg.connect(database_dsn("postgres"), autocommit=True)
    admin.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(dbname)))
    admin.execute(sql.SQL("create database {}").format(sql.Identifier(dbname)))
    dsn = database_dsn(dbname)
    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn)
            conn.execute(
                sql.SQL("alter database {} set search_path = codesift, public").format(
                    sql.Identifier(dbname)
                )
            )
        if args.cold_only:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("insert into codesift.tenants (name) values (%s)", (TENANT,))
            report = "\n".join(run_cold(dsn, args.before, args.cold_rounds)) + "\n"
            print(report, end="")
            if args.out:
                args.out.write_text(report)
            return
        repo = args.repo or default_repo(tmp)
        t0 = time.perf_counter()
        with psycopg.connect(dsn) as conn:
            s = index_repository(conn, repo, name=REPO, tenant=TENANT, show_progress=False)
            tenant_id = conn.execute(
                "select id from codesift.tenants where name = %s", (TENANT,)
            ).fetchone()[0]
        indexed = time.perf_counter() - t0
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("set role codesift_loader")
            _, token = create_token(conn, TENANT, "bench")
            symbols = conn.execute(
                "select symbols from codesift.repository_status(%s)", (REPO,)
            ).fetchone()
        times = asyncio.run(run_arms(dsn, tenant_id, token, args.rounds))
        cold = run_cold(dsn, args.before, args.cold_rounds) if args.before else []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not args.keep:
            admin.execute(
                sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(dbname))
            )
        admin.close()

    n = len(times["direct"])
    lines = [
        "MCP search_code round trip vs a direct pack_context call (ms, warm, interleaved)",
        f"repository: {repo.name if args.repo else 'click (from .venv)'}, {s.files} files,"
        f" {symbols[0] if symbols else '?'} symbols, embedded; indexed in {indexed:.1f} s",
        f"{len(QUESTIONS)} questions x {args.rounds} rounds = {n} calls per arm; budget 4,000"
        f" tokens; host: {os.cpu_count()} CPUs",
        "",
        f"{'arm':<8}{'p50':>9}{'p95':>9}{'mean':>9}{'p50 ratio':>11}{'p95 ratio':>11}",
    ]
    base50 = percentile(times["direct"], 0.5)
    base95 = percentile(times["direct"], 0.95)
    for name in ("direct", "stdio", "http"):
        t = times[name]
        p50, p95 = percentile(t, 0.5), percentile(t, 0.95)
        lines.append(
            f"{name:<8}{p50:>9.1f}{p95:>9.1f}{statistics.mean(t):>9.1f}"
            f"{p50 / base50:>10.2f}x{p95 / base95:>10.2f}x"
        )
    lines.append("")
    lines.append(
        "adapter overhead at the p50: stdio "
        f"{percentile(times['stdio'], 0.5) - base50:+.1f} ms, http "
        f"{percentile(times['http'], 0.5) - base50:+.1f} ms"
    )
    if cold:
        lines += ["", *cold]
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
