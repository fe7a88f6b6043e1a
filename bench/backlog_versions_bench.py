"""The embedding-backlog count of this checkout against that of an earlier commit, side by
side in one run, on a tenant already indexed (prints only, never asserts).

    CODESIFT_DSN=<database> .venv/bin/python bench/backlog_versions_bench.py \\
        --against 97bf240 --tenant corpus

Both versions of plpython/codesift_db/sql/embedding_backlog.sql are prepared in one session
as generic plans, as PL/Python runs them (pipeline/degraded.py, plans.run_generic), and asked
of each repository of the tenant alone and of all of them at once, in turn (interleaved).
Reported per scope: the counts (which must agree) and the p50 ms of each version. The earlier
version runs against today's indexes: a partial index added since may serve it too.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from codesift.db import current_dsn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plpython"))

from codesift_db.pipeline import degraded  # noqa: E402

STATEMENT = "plpython/codesift_db/sql/embedding_backlog.sql"
TYPES = "bigint, bigint[], int, int"


def statement_at(rev: str | None) -> str:
    if rev is None:
        return (ROOT / STATEMENT).read_text()
    return subprocess.run(
        ["git", "show", f"{rev}:{STATEMENT}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def timed(conn, name: str, args: list) -> tuple[tuple, float]:
    start = time.perf_counter()
    row = conn.execute(f"execute {name}(%s, %s, %s, %s)", args).fetchone()
    return tuple(row), (time.perf_counter() - start) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the earlier commit")
    ap.add_argument("--tenant", required=True, help="an indexed tenant's name")
    ap.add_argument("--reps", type=int, default=5, help="calls of each version per scope")
    args = ap.parse_args()

    # EXECUTE takes its arguments inline: bound on the client
    with psycopg.connect(
        current_dsn(), autocommit=True, cursor_factory=psycopg.ClientCursor
    ) as conn:
        conn.execute("set plan_cache_mode = force_generic_plan")
        conn.execute("set jit = off")  # as the pipeline's functions run
        for name, rev in (("backlog_old", args.against), ("backlog_new", None)):
            conn.execute(f"prepare {name}({TYPES}) as {statement_at(rev)}")
        tenant = conn.execute(
            "select id from codesift.tenants where name = %s", (args.tenant,)
        ).fetchone()
        if tenant is None:
            sys.exit(f"no tenant named {args.tenant!r}")
        repos = conn.execute(
            "select id, name from codesift.repositories where tenant_id = %s order by id",
            (tenant[0],),
        ).fetchall()
        scopes = [([rid], name) for rid, name in repos]
        scopes.append(([rid for rid, _ in repos], "all of them"))
        caps = [degraded.BACKLOG_CAP + 1, degraded.SCOPE_CAP + 1]
        print(f"embedding backlog count: tenant {args.tenant}, {args.against} against this one")
        head = ("counts (old)", "counts (new)")
        print(f"{'scope':<14}{head[0]:>28}{head[1]:>28}{'old p50':>10}{'new p50':>10}")
        for ids, label in scopes:
            call = [tenant[0], ids, *caps]
            times: dict[str, list[float]] = {"backlog_old": [], "backlog_new": []}
            counts = {}
            for _ in range(args.reps + 1):  # the first call of each warms the cache
                for name in times:
                    counts[name], ms = timed(conn, name, call)
                    times[name].append(ms)
            old, new = (statistics.median(t[1:]) for t in times.values())
            print(
                f"{label:<14}{counts['backlog_old']!s:>28}{counts['backlog_new']!s:>28}"
                f"{old:>10.1f}{new:>10.1f}"
            )


if __name__ == "__main__":
    main()
