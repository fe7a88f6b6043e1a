"""The BM25 legs of this checkout against those of an earlier commit, side by side in one run,
on tenants already indexed (prints only, never asserts).

    CODESIFT_DSN=<eval database> .venv/bin/python bench/bm25_versions_bench.py \\
        --against 75a7369 --tenants eval-pytest,eval-requests,eval-flask,eval-seaborn

The earlier commit's codesift._bm25_symbols and codesift._bm25_files are created as session
functions (pg_temp) beside the installed ones, so both versions read the same postings in the
same session, question by question (interleaved). Questions: the --short set (express-10) as
they are, and the --long set's texts cut to 300 words and read as pipeline/question.py reads a
long question (weighted terms); each is asked at one ref of the tenant, in turn, as the eval
asks a SWE-bench instance at its commit, with the scope's depth factor passed in as the
pipeline passes it (pipeline/legs.py). Reported per tenant and kind: p50 ms of each version,
and the mean top-20 overlap with exhaustive BM25 (every posting of every term summed, the
weights applied, live in the ref) and how often the first result is the same. With
--path-prefix both versions and exhaustive BM25 keep only the paths under it (a mean ms
column then too: a filter costs most in the questions that deepen).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from codesift.db import current_dsn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plpython"))

from bm25_agreement_bench import EXHAUSTIVE  # noqa: E402
from codesift_db.pipeline import question  # noqa: E402
from codesift_db.pipeline.query import terms as query_terms  # noqa: E402
from question_sets import (  # noqa: E402
    add_question_options,
    add_repos_option,
    column,
    parser,
    repositories,
    short_and_long,
)

LEXICAL_SQL = "sql/idempotent/003-lexical.sql"
LEGS = {  # leg: (its function, the statement after the function's name, the row's key, tier)
    "symbols": (
        "_bm25_symbols",
        "(%s, %s, %s, %s, null, null, 40, 1.2, 0.75, %s, %s)",
        "symbol_id",
        "symbol",
    ),
    "files": ("_bm25_files", "(%s, %s, %s, %s, null, 30, 1.2, 0.75, %s, %s)", "path", "file"),
}


def earlier_functions(rev: str) -> str:
    """The earlier commit's two BM25 leg functions, renamed into pg_temp."""
    text = subprocess.run(
        ["git", "show", f"{rev}:{LEXICAL_SQL}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    out = []
    for function, *_ in LEGS.values():
        start = text.index(f"create or replace function codesift.{function}(")
        end = text.index(f"comment on function codesift.{function}(", start)
        out.append(
            text[start:end].replace(f"codesift.{function}(", f"pg_temp.before{function}(", 1)
        )
    return "\n".join(out)


def questions(
    short: Path, long: Path, words: int, first: int = 20
) -> list[tuple[str, list[str], list | None]]:
    """(kind, terms, weights) of the first `first` questions of each set: a long question's
    terms weighted as the pipeline weighs them (pipeline/question.py)."""
    out: list[tuple[str, list[str], list | None]] = []
    texts = short_and_long(short, long, words, first)
    shorts = [pair for pair in texts if pair[0] == "short"][:first]
    for kind, text in shorts + [pair for pair in texts if pair[0] == "long"]:
        reading = question.read(text) if kind == "long" else None
        if reading is not None and reading.long:
            ts, weights = question.weighted_terms(reading)
            out.append((kind, list(ts), list(weights)))
        else:
            out.append((kind, query_terms(text), None))
    return out


def measure(
    conn, tenant_name: str, qs: list, reps: int, names: str | None, prefix: str | None
) -> None:
    tenant = conn.execute("select id from codesift.tenants where name = %s", (tenant_name,))
    tenant_id = tenant.fetchone()[0]
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant_id),))
    refs = repositories(conn, tenant_id, tenant_name, names)
    for leg, (function, call, key, tier) in LEGS.items():
        versions = {"before": f"pg_temp.before{function}", "now": f"codesift.{function}"}
        stats: dict = {}
        for i, (kind, ts, weights) in enumerate(qs):
            ref = refs[i % len(refs)]
            exact = column(
                conn,
                EXHAUSTIVE[tier],
                {"t": tenant_id, "r": [ref], "terms": ts, "weights": weights, "p": prefix},
            )
            # as pipeline/legs.py calls them: the scope's depth factor read once, passed in
            factor = conn.execute(
                "select codesift._bm25_scope_factor(%s, %s)", (tenant_id, [ref])
            ).fetchone()[0]
            for version, name in versions.items():
                args = (tenant_id, ts, [ref], prefix, weights, factor)
                got = column(conn, f"select {key} from {name}{call}", args)  # warm
                for _ in range(reps):
                    t0 = time.perf_counter()
                    got = column(conn, f"select {key} from {name}{call}", args)
                    stats.setdefault((kind, version, "ms"), []).append(
                        (time.perf_counter() - t0) * 1000
                    )
                if exact:
                    top = got[:20]
                    stats.setdefault((kind, version, "overlap"), []).append(
                        len(set(top) & set(exact)) / len(exact)
                    )
                    stats.setdefault((kind, version, "first"), []).append(top[:1] == exact[:1])
        for kind in ("short", "long"):
            cells = []
            for version in ("before", "now"):
                times = stats[(kind, version, "ms")]
                overlap = statistics.mean(stats.get((kind, version, "overlap"), [0]))
                first = statistics.mean(stats.get((kind, version, "first"), [0]))
                mean = f" {statistics.mean(times):7.1f}" if prefix else ""
                cells.append(f"{statistics.median(times):7.1f}{mean} {overlap:6.3f} {first:5.2f}")
            print(f"{tenant_name:14} {len(refs):>4} {leg:8} {kind:6} {cells[0]}  | {cells[1]}")


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--against", required=True, help="the earlier commit (git revision)")
    ap.add_argument("--tenants", required=True, help="comma-separated tenant names")
    add_question_options(ap)
    ap.add_argument("--reps", type=int, default=3, help="timed calls per question and version")
    add_repos_option(ap)
    ap.add_argument(
        "--first", type=int, default=20, help="the first N questions of each set (default 20)"
    )
    ap.add_argument(
        "--path-prefix", help="ask every question under this path prefix (default: none)"
    )
    args = ap.parse_args()
    qs = questions(args.short, args.long, args.words, args.first)
    with psycopg.connect(current_dsn(), autocommit=True) as conn:
        conn.execute("set jit = off")
        conn.execute(earlier_functions(args.against))
        print(f"BM25 legs: {args.against} (before) against this checkout (now); ")
        mean = ", mean ms" if args.path_prefix else ""
        print(f"per version: p50 ms{mean}, top-20 overlap with exhaustive BM25, same first result")
        if args.path_prefix:
            print(f"every question under the path prefix {args.path_prefix!r}")
        print(f"{'tenant':14} {'refs':>4} {'leg':8} {'kind':6} {'before':>20}  | {'now':>20}")
        for tenant in args.tenants.split(","):
            measure(conn, tenant.strip(), qs, args.reps, args.repos, args.path_prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
