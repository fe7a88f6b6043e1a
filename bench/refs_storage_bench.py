"""Many commits of one repository: as refs of one repository against as one repository per
commit (what the evaluation harness did before refs). Rows per table, database size and
wall time, both arms in one run, interleaved commit by commit.

    .venv/bin/python bench/refs_storage_bench.py --repo-path /tmp/pytest \\
        --queries bench/queries/swebench-dev.json --repository pytest-dev/pytest

Each arm indexes into a bench database of its own (one tenant), without embeddings: vectors
are keyed by content in both arms, so they follow the blobs, which both arms share per
tenant the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import benchdb  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402

ARMS = {"refs": "codesift_bench_as_refs", "repositories": "codesift_bench_as_repos"}
TABLES = (
    "repositories",
    "files",
    "blobs",
    "code_symbols",
    "blob_imports",
    "file_edges",
    "symbol_terms",
    "blob_terms",
    "term_stats",
)


def commits_of(queries: Path, repository: str) -> list[str]:
    data = json.loads(queries.read_text())
    seen: dict[str, None] = {}
    for q in data["queries"]:
        if q.get("repository") == repository:
            seen.setdefault(q["commit"], None)
    return list(seen)


def index_one(conn, repo: Path, arm: str, commit: str) -> float:
    name = repo.name if arm == "refs" else f"{repo.name}@{commit[:12]}"
    start = time.perf_counter()
    index_repository(
        conn, repo, name=name, tenant="bench", ref=commit, embed=False, show_progress=False
    )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo-path", type=Path, required=True, help="a checkout of the repository")
    ap.add_argument("--queries", type=Path, required=True, help="a query set with commits")
    ap.add_argument("--repository", required=True, help="owner/name in the query set")
    args = ap.parse_args()

    commits = commits_of(args.queries, args.repository)
    if not commits:
        sys.exit(f"no query of {args.repository} in {args.queries}")
    seconds = {arm: 0.0 for arm in ARMS}
    conns = {}
    try:
        for arm, db in ARMS.items():
            benchdb.create(db)
            benchdb.migrate(db)
            conns[arm] = benchdb.connect(db, autocommit=True)
            conns[arm].execute("set role codesift_loader")
        for i, commit in enumerate(commits):
            order = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))
            for arm in order:
                seconds[arm] += index_one(conns[arm], args.repo_path, arm, commit)
            print(f"{i + 1:3d}/{len(commits)} {commit[:12]}", flush=True)
        rows = {arm: {} for arm in ARMS}
        sizes = {}
        for arm, conn in conns.items():
            conn.execute("reset role")
            for table in TABLES:
                rows[arm][table] = conn.execute(
                    f"select count(*) from codesift.{table}"
                ).fetchone()[0]
            sizes[arm] = conn.execute("select pg_database_size(current_database())").fetchone()[0]
    finally:
        for conn in conns.values():
            conn.close()
        for db in ARMS.values():
            benchdb.drop(db)

    print(f"\n{args.repository}: {len(commits)} commits, refs of one repository vs one per commit")
    print(f"{'table':20s} {'refs':>10s} {'repositories':>13s} {'ratio':>7s}")
    for table in TABLES:
        a, b = rows["refs"][table], rows["repositories"][table]
        print(f"{table:20s} {a:10d} {b:13d} {b / max(a, 1):7.2f}")
    a, b = sizes["refs"] / 2**20, sizes["repositories"] / 2**20
    print(f"{'database MiB':20s} {a:10.1f} {b:13.1f} {b / a:7.2f}")
    a, b = seconds["refs"], seconds["repositories"]
    print(f"{'index wall s':20s} {a:10.1f} {b:13.1f} {b / a:7.2f}")


if __name__ == "__main__":
    main()
