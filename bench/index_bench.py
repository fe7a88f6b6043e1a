"""Indexing speed: a first index of a real repository and a no-change re-run (prints only).

    .venv/bin/python bench/index_bench.py [--repo /tmp/express] [--db codesift_bench_index]

Creates a fresh database on the server of CODESIFT_DSN (default: the embedded one), installs
codesift with `codesift migrate`, then runs the loader twice in a subprocess (first index,
then a no-change re-run) and prints, side by side:

  files/s, symbols/s, embeddings/s and total wall time of each run, with a phase breakdown
  (git tree walk, blob push with in-database extraction, tree record + edge resolution,
  history walk for recency, embedding) and the loader's peak memory (ru_maxrss of the
  loader process) and the server backend's peak memory (VmHWM, when /proc shows it).

Symbol and import extraction runs inside PostgreSQL (PL/Python) in the push transactions, so
"push" time is mostly server time. The database is dropped at the end unless --keep.
Without the repository, --repo /tmp/express is cloned from --mirror (a URL or a local mirror).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MIRROR = "https://github.com/expressjs/express.git"  # or a local mirror: --mirror PATH


# --- worker: one loader run, in its own process so its peak memory is its own ---------------


def worker(args: argparse.Namespace) -> None:
    import psycopg
    from codesift import git, indexer

    phases: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - t0

        return wrapper

    # measure the loader's phases without changing it: wrap the names indexer calls
    git.list_tree = timed("tree walk", git.list_tree)
    git.last_changed = timed("history (recency)", git.last_changed)
    indexer._push_blobs = timed("push + extract", indexer._push_blobs)
    indexer._record_tree = timed("record tree + edges", indexer._record_tree)
    indexer.embed_pending = timed("embedding", indexer.embed_pending)

    t0 = time.perf_counter()
    with psycopg.connect(args.dsn) as conn:
        summary = indexer.index_repository(
            conn,
            args.repo,
            name=args.name,
            tenant=args.tenant,
            embed=not args.no_embed,
            show_progress=False,
        )
        wall = time.perf_counter() - t0
        backend_pid = conn.execute("select pg_backend_pid()").fetchone()[0]
        backend_hwm_kb = None
        try:
            for line in Path(f"/proc/{backend_pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    backend_hwm_kb = int(line.split()[1])
        except OSError:
            pass
    result = {
        "wall": wall,
        "phases": phases,
        "files": summary.files,
        "new_blobs": summary.new_blobs,
        "reused_blobs": summary.reused_blobs,
        "new_symbols": summary.new_symbols,
        "edges": summary.edges,
        "embedded_symbols": summary.embedded.symbols,
        "embedded_blobs": summary.embedded.blobs,
        "skipped": dict(summary.skipped),
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "backend_hwm_kb": backend_hwm_kb,
    }
    print("RESULT " + json.dumps(result), flush=True)


# --- driver ---------------------------------------------------------------------------------


def ensure_repo(repo: Path, mirror: str) -> None:
    if (repo / ".git").exists() or (repo / "HEAD").exists():
        return
    print(f"cloning {mirror} -> {repo}", file=sys.stderr)
    subprocess.run(["git", "clone", "-q", mirror, str(repo)], check=True)


def run_worker(args: argparse.Namespace, dsn: str) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--dsn",
        dsn,
        "--repo",
        str(args.repo),
        "--name",
        args.name,
        "--tenant",
        args.tenant,
    ]
    if args.no_embed:
        cmd.append("--no-embed")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"loader run failed:\n{out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    result["children_maxrss_kb"] = max(
        before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return result


def rate(n: float, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("nan")


def fmt(v, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.2f}{unit}" if abs(v) < 100 else f"{v:,.0f}{unit}"
    return f"{v:,}{unit}"


def report(repo: Path, first: dict, again: dict, db_size: int) -> None:
    def row(label, a, b, unit="", ratio=True):
        r = ""
        if ratio and isinstance(a, int | float) and isinstance(b, int | float) and a:
            r = f"{b / a:.3f}x"
        print(f"  {label:<34}{fmt(a, unit):>14}{fmt(b, unit):>14}{r:>10}")

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nindex_bench: {repo} (python {sys.version.split()[0]}, {os.cpu_count()} cores,"
        f" load average now {load})"
    )
    print(f"  {'':<34}{'first run':>14}{'no-change':>14}{'re/first':>10}")
    row("files in tree", first["files"], again["files"])
    row("new blobs pushed", first["new_blobs"], again["new_blobs"])
    row("blobs already stored (reused)", first["reused_blobs"], again["reused_blobs"])
    row("new symbols extracted", first["new_symbols"], again["new_symbols"])
    row("import edges resolved", first["edges"], again["edges"])
    emb = [r["embedded_symbols"] + r["embedded_blobs"] for r in (first, again)]
    row("embeddings computed", emb[0], emb[1])
    row("total wall time", first["wall"], again["wall"], " s")
    for phase in first["phases"]:
        row(f"  {phase}", first["phases"][phase], again["phases"].get(phase), " s")
    print("  rates (per second of wall time; per second of the phase doing the work)")
    row("files/s (wall)", rate(first["files"], first["wall"]), rate(again["files"], again["wall"]))
    for r in (first, again):
        r["sym_wall"] = rate(r["new_symbols"], r["wall"])
        r["sym_push"] = rate(r["new_symbols"], r["phases"].get("push + extract", 0))
        n = r["embedded_symbols"] + r["embedded_blobs"]
        r["emb_wall"] = rate(n, r["wall"])
        r["emb_phase"] = rate(n, r["phases"].get("embedding", 0)) if n else None
    row("symbols/s (wall)", first["sym_wall"], again["sym_wall"], ratio=False)
    row("symbols/s (push + extract)", first["sym_push"], again["sym_push"], ratio=False)
    row("embeddings/s (wall)", first["emb_wall"], again["emb_wall"], ratio=False)
    row("embeddings/s (embedding phase)", first["emb_phase"], again["emb_phase"], ratio=False)
    mb = 1024.0
    row("loader peak RSS (ru_maxrss)", first["maxrss_kb"] / mb, again["maxrss_kb"] / mb, " MB")
    if first["backend_hwm_kb"] and again["backend_hwm_kb"]:
        row(
            "server backend peak RSS (VmHWM)",
            first["backend_hwm_kb"] / mb,
            again["backend_hwm_kb"] / mb,
            " MB",
        )
    print(f"  database size after both runs: {db_size / 1024 / 1024:,.1f} MB")
    if first["skipped"]:
        print("  skipped: " + ", ".join(f"{k}: {v}" for k, v in sorted(first["skipped"].items())))
    print(
        "  (re-run ratio: no-change time / first-run time; the re-run must push and embed nothing)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--repo", type=Path, default=Path("/tmp/express"), help="git checkout to index")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="clone source when --repo is missing")
    ap.add_argument("--name", default="express", help="repository name in codesift")
    ap.add_argument("--tenant", default="bench", help="tenant name")
    ap.add_argument(
        "--db", default="codesift_bench_index", help="fresh database to create (codesift_bench*)"
    )
    ap.add_argument("--no-embed", action="store_true", help="skip embeddings (extraction only)")
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dsn", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    import benchdb
    import psycopg

    ensure_repo(args.repo, args.mirror)
    dsn = benchdb.dsn(args.db)
    benchdb.create(args.db)
    try:
        took = benchdb.migrate(args.db)
        print(f"created {args.db} and migrated it in {took:.1f} s", file=sys.stderr)
        first = run_worker(args, dsn)
        print(f"first run: {first['wall']:.1f} s", file=sys.stderr)
        again = run_worker(args, dsn)
        with psycopg.connect(dsn) as conn:
            size = conn.execute("select pg_database_size(current_database())").fetchone()[0]
        report(args.repo, first, again, size)
    finally:
        if not args.keep:
            benchdb.drop(args.db)


if __name__ == "__main__":
    main()
