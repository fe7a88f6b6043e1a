"""file_outline, repo_map, find_references and callers latency on an indexed repository
(prints only, never asserts).

    .venv/bin/python bench/navigation_bench.py CHECKOUT [--rounds 20] [--outlines 20]
        [--synthetic N] [--methods M] [--keep]

Indexes CHECKOUT's HEAD with the real loader (no embeddings) into a fresh database,
codesift_bench_nav on CODESIFT_DSN's server, as tenant 'bench'; with --synthetic N, also a
generated repository of N Python modules, each importing 3 others (a few hubs imported by
many) and holding a class of M methods (each calling the one before; each method name
shared by NAMESAKES classes) and a function, M + 2 symbols a module (N = 10,000 and M = 8:
100,000 symbols), to see the calls at scale. Then, as the application role with the
tenant set, round after round with the calls interleaved (the host drifts), it times:

  outline:big    file_outline of the --outlines files with the most symbols
  outline:any    file_outline of --outlines files picked evenly by path
  outline:unknown  file_outline of a path no file has (the error, with the nearest paths)
  map:B          repo_map of the whole repository with token_budget B (1000, 2000, 8000)
  map:prefix     repo_map of its largest top-level folder (budget 2000)
  owner map:2000 stored / ranked now   the same map as the owner, from the stored ranks and
                 with them hidden (ranked on the fly, as before they were stored)
  refs:any       find_references of --outlines functions and methods picked evenly by path
  callers:any    callers of the same definitions

and prints the median (p50) and p90 milliseconds of each, after one warm-up round. The
first call on a new connection (importing the module and NumPy in the backend) is printed
on its own. --keep leaves the database for another run (--reuse skips indexing).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdb  # noqa: E402
import psycopg  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402

DB = "codesift_bench_nav"
TENANT = "bench"
BUDGETS = (1000, 2000, 8000)
NAMESAKES = 10  # classes of the synthetic repository defining each method name


def synthetic(root: Path, n: int, methods: int = 1, seed: int = 7) -> None:
    """n modules m00000.py.. in folders of 100, each importing 3 others (one of 10 hubs),
    each with a class of `methods` methods and a function."""
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    name = [f"pkg/d{i // 100:03d}/m{i:05d}" for i in range(n)]
    for i in range(n):
        path = root / f"{name[i]}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        targets = {rng.randrange(10), rng.randrange(n), rng.randrange(n)} - {i}
        imports = "".join(f"from {name[t].replace('/', '.')} import f{t}\n" for t in targets)
        # each method name is shared by the classes of NAMESAKES modules, as `get` or
        # `run` are in real code
        m = [f"m{j}_{i % (n // NAMESAKES or 1)}" for j in range(methods)]
        previous = [f"self.{m[j - 1]}() + " if j else "" for j in range(methods)]
        body = "".join(
            f"    def {m[j]}(self):\n        return {previous[j]}{i}\n\n" for j in range(methods)
        )
        calls = " + ".join(f"f{t}(x)" for t in sorted(targets))
        path.write_text(
            imports + f"\n\nclass C{i}:\n{body}\n"
            f"def f{i}(x):\n    return C{i}().{m[-1]}() + {calls or 0}\n"
        )
    for d in {p.rsplit("/", 1)[0] for p in name} | {"pkg"}:
        (root / d / "__init__.py").write_text("")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        + ["commit", "-q", "-m", "synthetic"],
        cwd=root,
        check=True,
    )


def index(root: Path, name: str) -> float:
    start = time.perf_counter()
    with benchdb.connect(DB) as conn:
        index_repository(conn, root, name=name, tenant=TENANT, embed=False, show_progress=False)
    return time.perf_counter() - start


def app_connection() -> psycopg.Connection:
    with benchdb.connect(DB) as owner:
        row = owner.execute("select id from codesift.tenants where name = %s", (TENANT,)).fetchone()
    assert row is not None
    conn = psycopg.connect(benchdb.dsn(DB), autocommit=True, user="codesift_app")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    conn.add_notice_handler(lambda n: None)
    return conn


def sizes(conn, repo: str) -> dict:
    row = conn.execute(
        "select live_files, symbols, edges from codesift.repository_status(%s)", (repo,)
    ).fetchone()
    return {"files": row[0], "symbols": row[1], "edges": row[2]}


def pick(conn, repo: str, k: int) -> tuple[list[str], list[str], str | None]:
    """(the k files with the most symbols, k files evenly by path, the largest folder)."""
    counts = conn.execute(
        "select f.path, count(s.id) from codesift.files f"
        " join codesift.repositories r on r.id = f.repository_id and r.name = %s"
        " left join codesift.code_symbols s on s.tenant_id = f.tenant_id"
        " and s.blob_sha = f.blob_sha where f.live group by f.path order by f.path",
        (repo,),
    ).fetchall()
    big = [p for p, _ in sorted(counts, key=lambda c: -c[1])[:k]]
    step = max(1, len(counts) // k)
    even = [p for p, _ in counts[::step][:k]]
    folders: dict[str, int] = {}
    for p, _ in counts:
        if "/" in p:
            folders[p.split("/", 1)[0] + "/"] = folders.get(p.split("/", 1)[0] + "/", 0) + 1
    folder = max(folders, key=lambda f: folders[f]) if folders else None
    return big, even, folder


def definitions(conn, repo: str, k: int) -> list[tuple[str, str]]:
    """k (path, qualified name) of functions and methods, evenly by path."""
    rows = conn.execute(
        "select f.path, s.qualified_name from codesift.code_symbols s"
        " join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha"
        " join codesift.repositories r on r.id = f.repository_id and r.name = %s"
        " where f.live and s.kind in ('function', 'method') and s.part <= 1"
        " order by f.path, s.start_line",
        (repo,),
    ).fetchall()
    step = max(1, len(rows) // max(k, 1))
    return [tuple(r) for r in rows[::step][:k]]


def timed(conn, sql: str, params: tuple) -> float:
    start = time.perf_counter()
    conn.execute(sql, params).fetchall()
    return (time.perf_counter() - start) * 1000


def owner_connection() -> psycopg.Connection:
    conn = benchdb.connect(DB)
    conn.autocommit = True
    row = conn.execute("select id from codesift.tenants where name = %s", (TENANT,)).fetchone()
    assert row is not None
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    conn.add_notice_handler(lambda n: None)
    return conn


def timed_hidden(conn, repo_map: str, repo: str, hide: int | None) -> float:
    """repo_map(repo, budget 2000) in a transaction rolled back afterwards; with `hide` (a
    repository id) its files' stored ranks are cleared first (not timed), so the map ranks
    them on the fly."""
    with conn.transaction() as tx:
        if hide is not None:
            conn.execute(
                "update codesift.files set centrality = null where repository_id = %s", (hide,)
            )
        ms = timed(conn, repo_map, (repo, None, 2000))
        raise psycopg.Rollback(tx)
    return ms


def timed_error(conn, sql: str, params: tuple) -> float:
    """The milliseconds of a call that fails (an unknown file: the hint's nearest paths)."""
    start = time.perf_counter()
    try:
        conn.execute(sql, params).fetchall()
    except psycopg.errors.UndefinedObject:
        return (time.perf_counter() - start) * 1000
    raise AssertionError(f"{params} did not fail")


def bench(repo: str, rounds: int, k: int) -> None:
    conn = app_connection()
    print(f"{repo}: {sizes(conn, repo)}")
    big, even, folder = pick(conn, repo, k)
    outline = "select * from codesift.file_outline(%s, repo => %s)"
    repo_map = "select * from codesift.repo_map(repo => %s, path_prefix => %s, token_budget => %s)"
    calls: dict[str, Callable[[int], float]] = {
        "outline:big": lambda r: timed(conn, outline, (big[r % len(big)], repo)),
        "outline:any": lambda r: timed(conn, outline, (even[r % len(even)], repo)),
        "outline:unknown": lambda r: timed_error(conn, outline, (even[0] + "x/y.zz", repo)),
    }
    for b in BUDGETS:
        calls[f"map:{b}"] = lambda r, b=b: timed(conn, repo_map, (repo, None, b))
    if folder:
        calls[f"map:prefix {folder}"] = lambda r: timed(conn, repo_map, (repo, folder, 2000))
    # the same map from the stored ranks and ranked on the fly (as before they were
    # stored), side by side: an owner session with the tenant set, the stored ranks hidden
    # in a transaction that is rolled back after each call
    owner = owner_connection()
    repo_id = conn.execute(
        "select id from codesift.repositories where name = %s and is_default", (repo,)
    ).fetchone()[0]
    calls["owner map:2000 stored"] = lambda r: timed_hidden(owner, repo_map, repo, None)
    calls["owner map:2000 ranked now"] = lambda r: timed_hidden(owner, repo_map, repo, repo_id)
    start = time.perf_counter()
    with owner.transaction():
        ranked = owner.execute("select codesift.rank_files(%s)", (repo_id,)).fetchone()[0]
    print(
        f"  rank_files (at index time): {ranked} files in "
        f"{(time.perf_counter() - start) * 1000:.1f} ms"
    )
    defs = definitions(conn, repo, k)
    refs = "select * from codesift.find_references(%s, repo => %s, path => %s)"
    callers = "select * from codesift.callers(%s, repo => %s, path => %s)"
    if defs:
        calls["refs:any"] = lambda r: timed(
            conn, refs, (defs[r % len(defs)][1], repo, defs[r % len(defs)][0])
        )
        calls["callers:any"] = lambda r: timed(
            conn, callers, (defs[r % len(defs)][1], repo, defs[r % len(defs)][0])
        )
    cold = app_connection()
    first = timed(cold, repo_map, (repo, None, 2000))
    cold.close()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds + 1):
        for name, call in calls.items():
            ms = call(r)
            if r:  # the first round warms caches
                times[name].append(ms)
    print(f"  first repo_map on a new connection: {first:.1f} ms")
    print(f"  {'call':<24} {'p50 ms':>8} {'p90 ms':>8}")
    for name, values in times.items():
        values.sort()
        p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
        print(f"  {name:<24} {statistics.median(values):>8.1f} {p90:>8.1f}")
    rows = conn.execute(repo_map, (repo, None, 2000)).fetchall()
    print(f"  map:2000 packs {len(rows)} files, {sum(r[4] for r in rows)} tokens; top 5:")
    for r in rows[:5]:
        print(f"    {r[0]:>3} {r[2]}  centrality {r[3]:.4f}  {r[4]} tokens")
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--name", help="repository name (default: the checkout folder's)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--outlines", type=int, default=20)
    ap.add_argument("--synthetic", type=int, default=0, metavar="N")
    ap.add_argument("--methods", type=int, default=1, metavar="M", help="methods per class")
    ap.add_argument("--reuse", action="store_true", help="use the database a --keep run left")
    ap.add_argument("--keep", action="store_true", help="leave the database")
    args = ap.parse_args()
    name = args.name or args.checkout.resolve().name
    if not (args.reuse and benchdb.exists(DB)):
        benchdb.create(DB)
        benchdb.migrate(DB)
        print(f"indexed {name} in {index(args.checkout, name):.1f} s")
        if args.synthetic:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp) / "synthetic"
                root.mkdir()
                synthetic(root, args.synthetic, args.methods)
                seconds = index(root, "synthetic")
                print(
                    f"indexed synthetic ({args.synthetic} modules, {args.methods} methods a"
                    f" class) in {seconds:.1f} s"
                )
    try:
        bench(name, args.rounds, args.outlines)
        if args.synthetic:
            bench("synthetic", args.rounds, args.outlines)
    finally:
        if not args.keep:
            benchdb.drop(DB)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
