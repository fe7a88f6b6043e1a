"""codesift.resolve_edges on repositories of namesakes, with the code of an earlier commit
('before') and of the working tree ('after'), side by side in one database.

    .venv/bin/python bench/resolve_edges_bench.py [--sizes 3000,4000] [--rounds 3] [--before REV]

For each size N it builds two git repositories of 2N one-line files and indexes them into a
fresh database (codesift_bench_edges on CODESIFT_DSN's server) with the real loader:

  namesakes: d0001/test_x.py and d0001/x.py, ... (every test's name names N files)
  distinct:  test_m0001.py and m0001.py, ...

Then, round after round, alternating the arms (the host drifts), it times one
resolve_edges of the whole repository: 'after' is codesift.resolve_edges (the working
tree's plpython/, which the server imports), 'before' the same function of REV's
plpython/codesift_db, extracted to a temporary folder and imported by the server under
another name in a DO block. Prints the median seconds of each arm, their ratio, and the
edges each stored (the same count, or the row says so). No statement_timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdb  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DB = "codesift_bench_edges"
# the last commit whose resolution compared every test with every file of its name
BEFORE = "246989c930274913acfea59e112e02e090cbab5f"
LAYOUTS = {
    "namesakes": lambda i: (f"d{i:04d}/test_x.py", f"d{i:04d}/x.py"),
    "distinct": lambda i: (f"test_m{i:04d}.py", f"m{i:04d}.py"),
}
# imports the earlier package as before_codesift_db (its relative imports follow) and runs
# its resolution of repository %(repo)s
BEFORE_CALL = """
import importlib.util, sys
name = "before_codesift_db"
if name not in sys.modules:
    folder = %(folder)s
    spec = importlib.util.spec_from_file_location(
        name, folder + "/__init__.py", submodule_search_locations=[folder]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
from before_codesift_db.extraction import resolve_repository_edges
resolve_repository_edges(plpy, %(repo)d)
"""


def make_repo(root: Path, layout: str, n: int) -> None:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for i in range(n):
        for path in LAYOUTS[layout](i):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text("x = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        + ["commit", "-q", "-m", "namesakes"],
        cwd=root,
        check=True,
    )


def extract_before(rev: str, folder: Path) -> Path:
    """REV's plpython/codesift_db in folder (readable by the server's OS user)."""
    folder.mkdir()
    archive = subprocess.run(
        ["git", "archive", rev, "plpython/codesift_db"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    for p in [folder, *folder.rglob("*")]:
        if p.suffix in (".py", ".sql"):  # today's schema: the table was renamed by 022
            p.write_text(p.read_text().replace("code_symbol_edges", "file_edges"))
        p.chmod(0o755 if p.is_dir() else 0o644)
    return folder / "plpython" / "codesift_db"


def edges(conn, repo: int) -> int:
    return conn.execute(
        "select count(*) from codesift.file_edges where repository_id = %s"
        " and relation <> 'co_change'",
        (repo,),
    ).fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="3000,4000", help="N, files of each kind")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=BEFORE, help="the commit of the 'before' arm")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="codesift-edges-bench-"))
    work.chmod(0o755)
    before = extract_before(args.before, work / "before")
    benchdb.create(DB)
    benchdb.migrate(DB)
    repos: dict[tuple[str, int], int] = {}
    with benchdb.connect(DB, autocommit=True) as conn:
        conn.execute("set statement_timeout = 0")
        for n in sizes:
            for layout in LAYOUTS:
                root = work / f"{layout}-{n}"
                make_repo(root, layout, n)
                summary = index_repository(
                    conn, root, name=root.name, tenant="bench", embed=False, show_progress=False
                )
                repos[layout, n] = conn.execute(
                    "select id from codesift.repositories where name = %s", (root.name,)
                ).fetchone()[0]
                print(f"indexed {root.name}: {summary.edges} edges", file=sys.stderr)
        times: dict[tuple[str, int, str], list[float]] = {}
        counts: dict[tuple[str, int, str], int] = {}
        for r in range(args.rounds):
            for (layout, n), repo in repos.items():
                arms = ("before", "after") if r % 2 == 0 else ("after", "before")
                for arm in arms:
                    start = time.perf_counter()
                    if arm == "after":
                        conn.execute("select codesift.resolve_edges(%s)", (repo,))
                    else:
                        body = BEFORE_CALL % {"folder": json.dumps(str(before)), "repo": repo}
                        conn.execute(f"do language plpython3u $bench$ {body} $bench$")
                    times.setdefault((layout, n, arm), []).append(time.perf_counter() - start)
                    counts[layout, n, arm] = edges(conn, repo)
    load = os.getloadavg()[0]
    print(
        f"# codesift.resolve_edges of a whole repository of 2N files: before = {args.before[:12]}"
    )
    print(f"# after = the working tree; median of {args.rounds} rounds, arms alternated")
    print(f"# {os.cpu_count()} CPUs, load average {load_start:.1f} at start, {load:.1f} at end")
    print(f"{'layout':<10} {'N':>6} {'before s':>10} {'after s':>10} {'ratio':>8}  edges")
    for (layout, n), _repo in repos.items():
        b = statistics.median(times[layout, n, "before"])
        a = statistics.median(times[layout, n, "after"])
        cb, ca = counts[layout, n, "before"], counts[layout, n, "after"]
        same = f"{ca}" if ca == cb else f"{cb} before, {ca} after"
        print(f"{layout:<10} {n:>6} {b:>10.2f} {a:>10.2f} {b / a:>7.0f}x  {same}")
    benchdb.drop(DB)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
