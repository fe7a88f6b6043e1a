"""What the MCP adapter adds: search_code round trips over stdio and over Streamable HTTP
against a direct pack_context call, side by side in one run (prints only, never asserts).

    .venv/bin/python bench/mcp_bench.py [--repo PATH] [--rounds 6] [--out bench/results/mcp.txt]

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo", type=Path, help="a git checkout (default: click from .venv)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", type=Path, help="also write the report here")
    ap.add_argument("--keep", action="store_true", help="keep the bench database")
    args = ap.parse_args()

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
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        args.out.write_text(report)


if __name__ == "__main__":
    main()
