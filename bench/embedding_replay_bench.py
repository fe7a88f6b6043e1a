"""Replaying a repository's history commit by commit: vectors computed and wall time per
commit, embedding by content (reuse) against today's embedding of every new row.

    .venv/bin/python bench/embedding_replay_bench.py --repo-path /tmp/flask --commits 50

The repository is indexed at the commit before the last N (first-parent history), then
at each of the N commits in order, into two tenants of one bench database: `reuse` embeds
by content (a text the tenant embedded before takes its stored vector) and `every_row`
computes a vector for every row without one, which is what the loader did before vectors
were keyed by content. Both arms index the same commits, interleaved (the order alternates
per commit, so the host's drift falls on both); wall time per commit is index + embedding.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import benchdb  # noqa: E402
from codesift.embedder import Embedding  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402

DB = "codesift_bench_replay"
ARMS = {"reuse": True, "every_row": False}


def first_parent_commits(repo: Path, n: int) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--first-parent", f"-n{n + 1}", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return list(reversed(out))


def index_and_embed(
    conn, repo: Path, commit: str, tenant: str, reuse: bool
) -> tuple[int, int, float]:
    """(rows embedded, vectors computed, seconds) for one commit into one arm's tenant."""
    start = time.perf_counter()
    summary = index_repository(
        conn, repo, name="replay", tenant=tenant, ref=commit, embed=False, show_progress=False
    )
    tenant_id = conn.execute(
        "select id from codesift.tenants where name = %s", (tenant,)
    ).fetchone()[0]
    stats = Embedding(conn, reuse=reuse).drain(conn, tenant_id)
    del summary
    return stats.symbols + stats.blobs, stats.computed, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo-path", type=Path, required=True, help="a git checkout to replay")
    ap.add_argument("--commits", type=int, default=50, help="how many recent commits to replay")
    ap.add_argument("--keep", action="store_true", help="keep the bench database afterwards")
    args = ap.parse_args()

    commits = first_parent_commits(args.repo_path, args.commits)
    benchdb.create(DB)
    benchdb.migrate(DB)
    results: dict[str, list[tuple[int, int, float]]] = {arm: [] for arm in ARMS}
    try:
        with benchdb.connect(DB, autocommit=True) as conn:
            conn.execute("set role codesift_loader")
            for i, commit in enumerate(commits):
                order = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))
                for arm in order:
                    results[arm].append(
                        index_and_embed(conn, args.repo_path, commit, arm, ARMS[arm])
                    )
                r, e = results["reuse"][-1], results["every_row"][-1]
                print(
                    f"{i:3d} {commit[:10]}  rows {e[0]:5d}  vectors: every_row {e[1]:5d}"
                    f"  reuse {r[1]:4d}   seconds: every_row {e[2]:6.2f}  reuse {r[2]:6.2f}",
                    flush=True,
                )
    finally:
        if not args.keep:
            benchdb.drop(DB)

    print()
    replayed = len(commits) - 1
    print(f"repository {args.repo_path.name}: first index at {commits[0][:10]}, then {replayed}")
    for label, part in (("first index", slice(0, 1)), ("replay", slice(1, None))):
        e, r = results["every_row"][part], results["reuse"][part]
        ev, rv = sum(x[1] for x in e), sum(x[1] for x in r)
        es, rs = sum(x[2] for x in e), sum(x[2] for x in r)
        print(
            f"{label:12s} vectors computed: every_row {ev:6d}  reuse {rv:6d}"
            f"  ratio {ev / max(rv, 1):5.1f}x | wall s: every_row {es:7.1f}  reuse {rs:7.1f}"
            f"  ratio {es / max(rs, 1e-9):4.1f}x"
        )
        if label == "replay":
            med = {
                arm: [statistics.median(x[i] for x in rows) for i in (1, 2)]
                for arm, rows in (("every_row", e), ("reuse", r))
            }
            print(
                f"{'':12s} per commit median: vectors every_row {med['every_row'][0]:.0f}"
                f" reuse {med['reuse'][0]:.0f}; seconds every_row {med['every_row'][1]:.2f}"
                f" reuse {med['reuse'][1]:.2f}"
            )


if __name__ == "__main__":
    main()
