"""Past one machine: pack_context on one node, through a Citus coordinator and on a hot
standby, side by side in one run; then concurrent read throughput with 1, 2 and 3 nodes
serving reads (the primary, plus one or two standbys). Prints only, never asserts.

    .venv/bin/python bench/scale_bench.py [--repo PATH] [--rounds 5] [--seconds 15]
        [--clients 4] [--out bench/results/scale.txt]

Needs Citus for the installed PostgreSQL (or CITUS_SOURCE, see scripts/citus.sh). Starts
its own clusters in a temporary folder, on ports 55460-55475 (unix sockets for the primary
and standbys, 127.0.0.1 for Citus), and stops them at the end:
  single   scripts/db.sh: one PostgreSQL, the primary
  replica  scripts/replica.sh: a streaming hot standby of it (two for the throughput part)
  citus    scripts/citus.sh: a coordinator and two workers, queried through the coordinator
Data: a real repository (default: the click package installed in .venv, committed into a
temporary git repository; --repo for any checkout), indexed with embeddings into the primary
and into the Citus cluster as tenant 'bench'. Questions are asked as codesift_app with the
tenant set by SET LOCAL in each transaction (what the MCP server does), every row fetched.
Latency: warm (the first round is not counted), arms interleaved question by question and
rotated (the host drifts). Throughput: --clients threads, each with its own connection to
one of the serving nodes (round robin), asking for --seconds; queries per second.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from codesift.indexer import index_repository
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from mcp_bench import QUESTIONS, default_repo, percentile  # noqa: E402

TENANT = "bench"
PACK = (
    "select rank, repository, path, start_line, end_line, symbol, blob_sha, score, tokens, text"
    " from codesift.pack_context(%s, token_budget => 4000)"
)


def script(name: str, env: dict, *args: str) -> str:
    done = subprocess.run(
        [str(ROOT / "scripts" / name), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        sys.exit(f"scripts/{name} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def exported(output: str, name: str) -> str:
    match = re.search(rf"^export {name}='(.*)'$", output, re.M)
    assert match, output
    return match.group(1)


def index(dsn: str, repo: Path) -> int:
    with psycopg.connect(dsn) as conn:
        index_repository(conn, repo, name="bench", tenant=TENANT, show_progress=False)
        return conn.execute(
            "select id from codesift.tenants where name = %s", (TENANT,)
        ).fetchone()[0]


def caught_up(primary: str, standbys: list[str]) -> None:
    with psycopg.connect(primary, autocommit=True) as p:
        target = p.execute("select pg_current_wal_lsn()").fetchone()[0]
    for standby in standbys:
        with psycopg.connect(standby, autocommit=True) as s:
            while not s.execute(
                "select pg_wal_lsn_diff(pg_last_wal_replay_lsn(), %s) >= 0", (target,)
            ).fetchone()[0]:
                time.sleep(0.2)


class Asker:
    """One connection as codesift_app; each question in its own transaction, tenant by SET LOCAL."""

    def __init__(self, dsn: str, tenant_id: int):
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("set role codesift_app")
        self.set_tenant = sql.SQL("set local app.current_tenant_id = {}").format(
            sql.Literal(str(tenant_id))
        )

    def ask(self, question: str) -> list:
        with self.conn.transaction():
            self.conn.execute(self.set_tenant)
            return self.conn.execute(PACK, (question,)).fetchall()

    def close(self) -> None:
        self.conn.close()


def latency(arms: dict[str, Asker], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in arms}
    names = list(arms)
    answers: dict[str, list] = {}
    for r in range(rounds + 1):
        for i, q in enumerate(QUESTIONS):
            k = (i + r) % len(names)
            for name in names[k:] + names[:k]:
                t0 = time.perf_counter()
                rows = arms[name].ask(q)
                elapsed = (time.perf_counter() - t0) * 1000
                if r > 0:
                    times[name].append(elapsed)
                answers.setdefault(f"{name}:{q}", rows)
    # the same rows from every arm (what makes the comparison fair)
    for q in QUESTIONS:
        first = answers[f"{names[0]}:{q}"]
        for name in names[1:]:
            if answers[f"{name}:{q}"] != first:
                print(f"note: {name} answered {q!r} differently from {names[0]}")
    return times


def throughput(dsns: list[str], tenant_id: int, clients: int, seconds: float) -> float:
    askers = [Asker(dsns[i % len(dsns)], tenant_id) for i in range(clients)]
    for a in askers:
        a.ask(QUESTIONS[0])  # warm each backend (model load, plans)
    done = [0] * clients
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        n = 0
        while time.monotonic() < stop:
            askers[i].ask(QUESTIONS[(i + n) % len(QUESTIONS)])
            n += 1
        done[i] = n

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    for a in askers:
        a.close()
    return sum(done) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repo", type=Path, help="a git checkout (default: click from .venv)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--out", type=Path, help="also write the report here")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="codesift-scale-bench-"))
    primary_env = {"CODESIFT_DB_DIR": str(tmp / "primary"), "CODESIFT_DB_PORT": "55460"}
    replica_envs = [
        {
            **primary_env,
            "CODESIFT_REPLICA_DIR": str(tmp / f"standby{n}"),
            "CODESIFT_REPLICA_PORT": str(55461 + n),
        }
        for n in range(2)
    ]
    citus_env = {"CODESIFT_CITUS_DIR": str(tmp / "citus"), "CODESIFT_CITUS_PORT": "55470"}
    lines: list[str] = []
    try:
        repo = args.repo or default_repo(tmp)
        t0 = time.monotonic()
        primary = exported(script("db.sh", primary_env, "start"), "CODESIFT_DSN")
        coordinator = exported(script("citus.sh", citus_env, "start"), "CODESIFT_DSN")
        setup = time.monotonic() - t0
        t0 = time.monotonic()
        single_tenant = index(primary, repo)
        index_single = time.monotonic() - t0
        t0 = time.monotonic()
        citus_tenant = index(coordinator, repo)
        index_citus = time.monotonic() - t0
        standbys = [
            exported(script("replica.sh", e, "start"), "CODESIFT_READ_DSN") for e in replica_envs
        ]
        caught_up(primary, standbys)

        with psycopg.connect(primary) as c:
            symbols = c.execute("select count(*) from codesift.code_symbols").fetchone()[0]
            files = c.execute("select count(*) from codesift.files").fetchone()[0]
        lines.append(f"data: {repo.name}, {files} files, {symbols} symbols; tenant '{TENANT}'")
        lines.append(
            f"setup (primary + Citus coordinator and 2 workers): {setup:.0f} s; indexing with "
            f"embeddings: one node {index_single:.1f} s, Citus {index_citus:.1f} s "
            f"({index_citus / index_single:.2f}x)"
        )

        arms = {
            "single": Asker(primary, single_tenant),
            "citus": Asker(coordinator, citus_tenant),
            "replica": Asker(standbys[0], single_tenant),
        }
        times = latency(arms, args.rounds)
        for a in arms.values():
            a.close()
        base50 = statistics.median(times["single"])
        base95 = percentile(times["single"], 0.95)
        lines.append("")
        lines.append(
            f"pack_context latency, ms ({len(QUESTIONS)} questions x {args.rounds} rounds, warm,"
            " interleaved)"
        )
        lines.append(
            f"{'arm':<10}{'p50':>9}{'p95':>9}{'mean':>9}{'p50 ratio':>11}{'p95 ratio':>11}"
        )
        for name, ts in times.items():
            p50, p95 = statistics.median(ts), percentile(ts, 0.95)
            lines.append(
                f"{name:<10}{p50:>9.1f}{p95:>9.1f}{statistics.mean(ts):>9.1f}"
                f"{p50 / base50:>10.2f}x{p95 / base95:>10.2f}x"
            )

        lines.append("")
        lines.append(
            f"concurrent pack_context throughput, {args.clients} clients for {args.seconds:g} s"
            " each, round robin over the nodes serving reads"
        )
        lines.append(f"{'nodes':<34}{'queries/s':>10}{'ratio':>8}")
        serving = [
            ("1: primary", [primary]),
            ("2: primary + 1 standby", [primary, standbys[0]]),
            ("3: primary + 2 standbys", [primary, *standbys]),
        ]
        base = None
        for label, dsns in serving:
            qps = throughput(dsns, single_tenant, args.clients, args.seconds)
            base = base or qps
            lines.append(f"{label:<34}{qps:>10.2f}{qps / base:>7.2f}x")
        lines.append(f"(host: {os.cpu_count()} CPUs shared by every node of this run)")
    finally:
        for e in replica_envs:
            subprocess.run(
                [str(ROOT / "scripts/replica.sh"), "stop"],
                env={**os.environ, **e},
                capture_output=True,
            )
        subprocess.run(
            [str(ROOT / "scripts/citus.sh"), "stop"],
            env={**os.environ, **citus_env},
            capture_output=True,
        )
        subprocess.run(
            [str(ROOT / "scripts/db.sh"), "stop"],
            env={**os.environ, **primary_env},
            capture_output=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
