"""diff_context on real commits: does the pack at 4,000 tokens hold each commit's changed
definitions, their direct callers and the tests that reach them? And how long do
diff_context and impact take (p50)?

For the last N non-merge commits of each repository that change a few Python files
(flask, requests: the mirrors in /tmp/eval), the commit and its parent are indexed as two
refs of one repository (lexical only, no embeddings: index_repository(embed=False), as
bench/eval.py's ensure_indexed does) into a bench database of its own, then:

* changed definitions (the truth, from git, not from changed_symbols): the lines
  `git diff -U0 PARENT COMMIT` adds or changes in a .py file (for a pure deletion, the line
  where it happened), each given to the innermost definition file_outline lists at the
  commit (functions, classes, methods);
* their direct callers: codesift.callers of each changed definition at the commit,
  resolved through imports (by-name matches left out), less the changed definitions;
* the tests that reach them: the test definitions (in test files) among those callers and
  among the resolved callers of the direct callers (two hops);

and one item of diff_context(repo, PARENT, COMMIT, 4000) "holds" one of them when it cites
the same file at the commit with lines overlapping it, or, for a caller_list or test_list
item, when one of its lines ('START-END name') names lines overlapping it ("by name"; the
"(bodies)" sets count the items packed whole or cut only). Per commit and set: all held or not
(a commit without callers or tests counts for that set only where it has some); the
fractions are over the commits, also the mean share held.

    .venv/bin/python bench/diff_context_eval.py [--commits 20] [--keep]

Writes bench/results/diff-context.txt (no machine paths), with the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPOS = {"flask": Path("/tmp/eval/flask"), "requests": Path("/tmp/eval/requests")}
DBNAME = "codesift_bench_diff_context"
TENANT = "bench"
BUDGET = 4000
MAX_PY_FILES = 8  # a commit changing more is a sweep, not a change to review
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
LISTED_LINE = re.compile(r"^(\d+)-(\d+) ")  # a listing's line (diff_listing.py)
TEST_FILE = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_test\.py$")
DEFINITION_KINDS = ("function", "method", "class")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def commits(repo: Path, n: int) -> list[tuple[str, str]]:
    """(parent, commit) of the last n non-merge commits changing 1..MAX_PY_FILES .py files
    outside tests and docs at least once."""
    out = []
    for sha in git(repo, "log", "--no-merges", "--format=%H", "-n", "400", "--", "*.py").split():
        files = [
            f
            for f in git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split()
            if f.endswith(".py")
        ]
        code = [f for f in files if not TEST_FILE.search(f) and not f.startswith("docs/")]
        if not code or len(files) > MAX_PY_FILES:
            continue
        parent = git(repo, "rev-parse", f"{sha}^").strip()
        out.append((parent, sha))
        if len(out) == n:
            break
    return out


def changed_lines(repo: Path, parent: str, sha: str) -> dict[str, set[int]]:
    """The commit's new-side changed lines per .py file (git diff -U0)."""
    out: dict[str, set[int]] = {}
    path = None
    for line in git(repo, "diff", "-U0", parent, sha, "--", "*.py").split("\n"):
        if line.startswith("+++ "):
            path = None if line[4:] == "/dev/null" else line[6:]
        m = HUNK.match(line)
        if m and path:
            start, count = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
            lines = out.setdefault(path, set())
            lines.update(range(start, start + count) if count else [max(start, 1)])
    return out


def index(conn, repo_path: Path, name: str, ref: str) -> None:
    from codesift.indexer import index_repository

    index_repository(
        conn, repo_path, name=name, tenant=TENANT, ref=ref, embed=False, show_progress=False
    )


def innermost(defs: list[tuple], line: int) -> tuple | None:
    holding = [d for d in defs if d[1] <= line <= d[2]]
    return max(holding, key=lambda d: (d[1], -d[2])) if holding else None


def truth(conn, repo: str, repo_path: Path, parent: str, sha: str):
    """(changed definitions, direct callers, tests), each a set of (path, start, end)."""
    changed: set[tuple] = set()
    named: dict[tuple, str] = {}
    for path, lines in changed_lines(repo_path, parent, sha).items():
        try:
            defs = conn.execute(
                "select qualified_name, start_line, end_line, kind from codesift.file_outline("
                "%s, repo => %s, ref => %s)",
                (path, repo, sha),
            ).fetchall()
        except psycopg.Error:
            continue  # deleted at the commit, or ignored
        defs = [d for d in defs if d[3] in DEFINITION_KINDS]
        for line in lines:
            d = innermost(defs, line)
            if d is not None:
                changed.add((path, d[1], d[2]))
                named[(path, d[1], d[2])] = f"{repo}:{path}:{d[1]}-{d[2]}"

    def resolved_callers(cited: str) -> set[tuple]:
        rows = conn.execute(
            "select path, start_line, end_line from codesift.callers(%s, repo => %s,"
            " ref => %s, max_rows => 1000) where resolution = 'resolved' and start_line"
            " is not null",
            (cited, repo, sha),
        ).fetchall()
        return {tuple(r) for r in rows}

    direct: set[tuple] = set()
    for key in changed:
        direct |= resolved_callers(named[key])
    direct -= changed
    tests = {c for c in direct if TEST_FILE.search(c[0])}
    for c in [c for c in direct if not TEST_FILE.search(c[0])]:
        tests |= {
            t for t in resolved_callers(f"{repo}:{c[0]}:{c[1]}-{c[2]}") if TEST_FILE.search(t[0])
        }
    direct = {c for c in direct if not TEST_FILE.search(c[0])}
    return changed, direct, tests


def held(wanted: set[tuple], packed: list[tuple]) -> int:
    return sum(
        1 for path, a, b in wanted if any(p == path and s <= b and a <= e for p, s, e in packed)
    )


def packed_lines(rows: list[tuple], sha: str) -> tuple[list[tuple], list[tuple]]:
    """(path, start, end) of what the rows at the commit pack whole or cut, and of what
    their listings name (one per 'START-END name' line of a caller_list or test_list)."""
    bodies, listed = [], []
    for path, start, end, ref, role, text in rows:
        if ref != sha:
            continue
        if not role.endswith("_list"):
            bodies.append((path, start, end))
            continue
        for line in text.split("\n")[1:]:
            m = LISTED_LINE.match(line)
            if m:
                listed.append((path, int(m.group(1)), int(m.group(2))))
    return bodies, listed


def timed(conn, sql: str, args: tuple) -> tuple[float, list]:
    start = time.perf_counter()
    rows = conn.execute(sql, args).fetchall()
    return (time.perf_counter() - start) * 1000, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="reuse the bench database")
    args = parser.parse_args()
    if not (args.keep and benchdb.exists(DBNAME)):
        benchdb.create(DBNAME)
        benchdb.migrate(DBNAME)
    dsn = benchdb.dsn(DBNAME)
    report = [
        "# diff_context on real commits (bench/diff_context_eval.py)",
        f"# token_budget {BUDGET}; lexical index only (no embeddings); load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "# truth: changed = the innermost definition (file_outline at the commit) of each line"
        " git diff -U0 changes; callers = codesift.callers of each, resolved only;",
        "# tests = test definitions among the callers and the callers' resolved callers;",
        "# held = a packed item cites the same file at the commit with overlapping lines, or a",
        "# caller_list/test_list line names lines overlapping it ('by name'; '(bodies)': those",
        "# packed whole or cut only);",
        "# a commit counts for a set only when it has some; latency: the second call of each",
        "",
    ]
    totals: dict[str, list] = {}
    all_latency: dict[str, list[float]] = {"diff_context": [], "impact": [], "callers": []}
    for repo, path in REPOS.items():
        picked = commits(path, args.commits)
        with psycopg.connect(dsn, autocommit=True) as conn:
            start = time.monotonic()
            for parent, sha in picked:
                index(conn, path, repo, parent)
                index(conn, path, repo, sha)
            print(
                f"{repo}: {2 * len(picked)} refs indexed in {time.monotonic() - start:.0f} s",
                file=sys.stderr,
            )
            tenant = conn.execute(
                "select id from codesift.tenants where name = %s", (TENANT,)
            ).fetchone()[0]
            conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
            conn.execute("set role codesift_app")
            sets = ("changed", "callers", "tests", "all")
            stats: dict[str, list[float]] = {k: [] for k in sets}
            stats.update({k + " (bodies)": [] for k in sets})
            latency: dict[str, list[float]] = {"diff_context": [], "impact": [], "callers": []}
            lines = []
            for parent, sha in picked:
                changed, direct, tests = truth(conn, repo, path, parent, sha)
                sql = (
                    "select path, start_line, end_line, ref, role, text from codesift.diff_context("
                    "repo => %s, base_ref => %s, head_ref => %s, token_budget => %s)"
                )
                timed(conn, sql, (repo, parent, sha, BUDGET))  # warm: plans, caches
                ms, rows = timed(conn, sql, (repo, parent, sha, BUDGET))
                latency["diff_context"].append(ms)
                bodies, listed = packed_lines(rows, sha)
                packed = bodies + listed
                if changed:
                    first = sorted(changed)[0]
                    cited = f"{repo}:{first[0]}:{first[1]}-{first[2]}"
                    isql = "select count(*) from codesift.impact(%s, repo => %s, ref => %s)"
                    timed(conn, isql, (cited, repo, sha))
                    ims, _ = timed(conn, isql, (cited, repo, sha))
                    latency["impact"].append(ims)
                    # the same definition's callers, in the same run: a yardstick of the load
                    csql = "select count(*) from codesift.callers(%s, repo => %s, ref => %s)"
                    timed(conn, csql, (cited, repo, sha))
                    cms, _ = timed(conn, csql, (cited, repo, sha))
                    latency["callers"].append(cms)
                counts = {}
                for label, wanted in (("changed", changed), ("callers", direct), ("tests", tests)):
                    h, whole = held(wanted, packed), held(wanted, bodies)
                    counts[label] = (h, len(wanted), h - whole)
                    if wanted:
                        stats[label].append(h / len(wanted))
                        stats[label + " (bodies)"].append(whole / len(wanted))
                union = changed | direct | tests
                if union:
                    stats["all"].append(held(union, packed) / len(union))
                    stats["all (bodies)"].append(held(union, bodies) / len(union))
                lines.append(
                    f"{repo} {sha[:10]}: "
                    + ", ".join(
                        f"{k} {h}/{n}" + (f" ({by_name} by name)" if by_name else "")
                        for k, (h, n, by_name) in counts.items()
                    )
                    + f"; diff_context {ms:.1f} ms"
                )
            report.append(f"## {repo}: {len(picked)} commits")
            report += lines
            report.append("")
            report += summary(stats, latency)
            report.append("")
            for k in stats:
                totals.setdefault(k, []).extend(stats[k])
            for k in latency:
                all_latency[k].extend(latency[k])
    report.append("## both repositories")
    report += summary(totals, all_latency)
    text = "\n".join(report) + "\n"
    out = ROOT / "bench" / "results" / "diff-context.txt"
    out.write_text(text)
    print(text)


def summary(stats: dict[str, list[float]], latency: dict[str, list[float]]) -> list[str]:
    out = []
    for label, shares in stats.items():
        if not shares:
            out.append(f"{label:16}: no commit has any")
            continue
        full = sum(1 for s in shares if s == 1.0)
        out.append(
            f"{label:16}: all held in {full}/{len(shares)} commits ({full / len(shares):.2f}),"
            f" mean share held {statistics.mean(shares):.2f}"
        )
    for name, values in latency.items():
        if values:
            out.append(
                f"{name} p50 {statistics.median(values):.1f} ms, max {max(values):.1f} ms"
                f" ({len(values)} calls)"
            )
    if latency["callers"] and latency["diff_context"]:
        yardstick = statistics.median(latency["callers"])
        out.append(
            f"p50 ratios to callers (same run): diff_context "
            f"{statistics.median(latency['diff_context']) / yardstick:.1f}x, impact "
            f"{statistics.median(latency['impact']) / yardstick:.1f}x"
        )
    return out


if __name__ == "__main__":
    main()
