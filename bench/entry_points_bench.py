"""The lookups and navigation calls an agent makes, timed on an indexed tenant of any size
(prints only, never asserts).

    CODESIFT_DSN=<database> .venv/bin/python bench/entry_points_bench.py --tenant corpus \\
        --names get:corpus,simplify:corpus,url_for:flask --reps 3

As the database owner with the tenant set, for each repository of the tenant and for all of
them at once: repository_status; then for each NAME:REPOSITORY of --names, find_symbol,
find_references, callers and impact of the name in that repository. Each call runs once to
warm the backend, then --reps times; printed: rows returned, the fastest and the median
milliseconds. A call that fails prints its error instead. Run it against two checkouts (the
server reads plpython/ of the one it was started from) to put an earlier engine beside
this one; a large tenant with several repositories (bench/bm25_agreement_bench.py
--add-packages builds one) shows what a ref that is a small part of its tenant costs.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "loader"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from codesift.db import current_dsn  # noqa: E402

from bench.question_sets import parser  # noqa: E402

BY_NAME = ("find_symbol", "find_references", "callers", "impact")
NAME_CALL = {
    "find_symbol": "select count(*) from codesift.find_symbol(%s, repo => %s)",
    "find_references": "select count(*) from codesift.find_references(%s, repo => %s)",
    "callers": "select count(*) from codesift.callers(%s, repo => %s)",
    "impact": "select count(*) from codesift.impact(%s, repo => %s)",
}
STATUS = "select count(*) from codesift.repository_status(%s)"


def timed(conn, sql: str, args: tuple, reps: int) -> str:
    """`rows  fastest  median` of the call, or its error."""
    try:
        conn.execute(sql, args).fetchone()  # warms the backend's plans and imports
        times, rows = [], 0
        for _ in range(reps):
            start = time.perf_counter()
            rows = conn.execute(sql, args).fetchone()[0]
            times.append((time.perf_counter() - start) * 1000)
    except psycopg.Error as e:
        return f"error: {(e.diag.message_primary or str(e)).splitlines()[0][:80]}"
    return f"{rows:6d} {min(times):10.1f} {statistics.median(times):10.1f}"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tenant", required=True, help="an indexed tenant's name")
    ap.add_argument(
        "--names",
        default="",
        help="NAME:REPOSITORY pairs, comma-separated: the definitions looked up",
    )
    ap.add_argument("--reps", type=int, default=3, help="timed calls of each")
    ap.add_argument("--timeout-s", type=int, default=120, help="statement_timeout of a call")
    args = ap.parse_args()
    pairs = [p.split(":", 1) for p in args.names.split(",") if p.strip()]
    if any(len(p) != 2 or not all(p) for p in pairs):
        ap.error("--names takes NAME:REPOSITORY pairs, e.g. get:corpus,url_for:flask")

    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        found = conn.execute(
            "select id from codesift.tenants where name = %s", (args.tenant,)
        ).fetchone()
        if found is None:
            sys.exit(f"no tenant named {args.tenant!r}")
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(found[0]),))
        conn.execute("select set_config('statement_timeout', %s, false)", (f"{args.timeout_s}s",))
        repos = [
            r
            for (r,) in conn.execute(
                "select distinct name from codesift.repositories order by name"
            ).fetchall()
        ]
        print(f"entry points: tenant {args.tenant} ({len(repos)} repositories), {args.reps} calls")
        print(f"{'call':<44}{'rows':>6}{'min ms':>11}{'p50 ms':>11}")
        for repo in [*repos, None]:
            label = f"repository_status({repo or 'all'})"
            print(f"{label:<44}{timed(conn, STATUS, (repo,), args.reps)}")
        for name, repo in pairs:
            for function in BY_NAME:
                label = f"{function}({name}, {repo})"
                print(f"{label:<44}{timed(conn, NAME_CALL[function], (name, repo), args.reps)}")


if __name__ == "__main__":
    main()
