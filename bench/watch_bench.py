"""Edit-to-queryable latency under `codesift watch`: one-file edits in a repository of
2,000+ files, lexical + graph visibility and with embedding included, in one run.

    .venv/bin/python bench/watch_bench.py [--files 2400] [--edits 20] [--repo PATH]

Builds (or copies, with --repo) a git repository twice, one copy per arm, each indexed
into its own tenant of a fresh database (codesift_bench_watch on CODESIFT_DSN's server),
and starts `codesift watch --no-embed` on copy A and `codesift watch` (embedding) on copy
B. Then, alternating arms (the host drifts), each edit appends to one random Python file
a new function and an import of another module, and times from the write until:

  lexical + graph: find_symbol returns the new function and related_files shows the new
                   import edge (arm A, --no-embed);
  + embedding:     the same, and repository_status reports no embedding backlog (arm B).

The generated repository is a Python package of --files modules in folders of 50, each
importing two others and holding four functions and a class. Arm B's initial backlog
(every symbol and file of the first index) is filled with a constant vector before its
watcher starts, so that each edit embeds only what it changed; the vectors' values play
no part in what is measured. One warm-up edit per arm (the model's first load) is not
counted. Polls every 20 ms. Prints p50, p95, mean and max per arm.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchdb  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CODESIFT = ROOT / ".venv" / "bin" / "codesift"
DB = "codesift_bench_watch"
ARMS = (("lexical+graph", "bench_a", ["--no-embed"]), ("+embedding", "bench_b", []))


def module_text(i: int, n: int, rng: random.Random) -> str:
    imports = sorted({rng.randrange(n) for _ in range(2)} - {i})
    lines = [f'"""Module {i}: generated for the watch benchmark."""', ""]
    lines += [f"from pkg.d{j // 50:03d}.m{j:05d} import helper_{j}_0" for j in imports]
    lines.append("")
    for k in range(4):
        calls = " + ".join(f"helper_{j}_0(x)" for j in imports) or "0"
        lines += [
            "",
            f"def helper_{i}_{k}(x):",
            f'    """Helper {k} of module {i}: scales x and adds its neighbours."""',
            f"    total = x * {k + 1}",
            "    for step in range(3):",
            "        total += step",
            f"    return total + ({calls} if x > 1000 else 0)",
        ]
    lines += [
        "",
        "",
        f"class Record{i}:",
        f'    """A record of module {i}."""',
        "",
        "    def __init__(self, value):",
        "        self.value = value",
        "",
        "    def doubled(self):",
        "        return self.value * 2",
        "",
    ]
    return "\n".join(lines)


def git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def generate(root: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for i in range(n):
        folder = root / "pkg" / f"d{i // 50:03d}"
        if not folder.exists():
            folder.mkdir()
            (folder / "__init__.py").write_text("")
        (folder / f"m{i:05d}.py").write_text(module_text(i, n, rng))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "generated")


def python_files(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "*.py"], capture_output=True, check=True
    ).stdout
    return sorted(p.decode() for p in out.split(b"\0") if p and b"__init__" not in p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=2400, help="modules to generate")
    ap.add_argument("--edits", type=int, default=20, help="measured edits per arm")
    ap.add_argument("--repo", help="copy this git checkout instead of generating one")
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="codesift-watch-bench-"))
    source = work / "source"
    if args.repo:
        shutil.copytree(args.repo, source, symlinks=True)
    else:
        generate(source, args.files, args.seed)
    files = python_files(source)
    total = len(
        subprocess.run(
            ["git", "-C", str(source), "ls-files"], capture_output=True, check=True, text=True
        ).stdout.splitlines()
    )
    print(f"repository: {total} files ({len(files)} Python files to edit)", flush=True)

    benchdb.create(DB)
    benchdb.migrate(DB)
    dsn = benchdb.dsn(DB)
    env = {**os.environ, "CODESIFT_DSN": dsn}
    copies, watchers, logs = {}, {}, {}
    rng = random.Random(args.seed + 1)
    try:
        for arm, tenant, _flags in ARMS:
            copy = copies[arm] = work / tenant
            shutil.copytree(source, copy, symlinks=True)
            t0 = time.perf_counter()
            subprocess.run(
                [
                    str(CODESIFT),
                    "index",
                    str(copy),
                    "--name",
                    "repo",
                    "--tenant",
                    tenant,
                    "--no-embed",
                ],
                check=True,
                env=env,
                capture_output=True,
            )
            print(f"{arm}: first index {time.perf_counter() - t0:.1f} s", flush=True)
        fill_backlog(dsn, "bench_b")
        for arm, tenant, flags in ARMS:
            logs[arm] = open(work / f"{tenant}.log", "wb")  # noqa: SIM115
            watchers[arm] = subprocess.Popen(
                [
                    str(CODESIFT),
                    "watch",
                    str(copies[arm]),
                    "--name",
                    "repo",
                    "--tenant",
                    tenant,
                    *flags,
                ],
                stdout=logs[arm],
                stderr=subprocess.STDOUT,
                env=env,
            )
        with benchdb.connect(DB, autocommit=True) as conn:
            for _arm, tenant, _ in ARMS:
                row = conn.execute("select id from codesift.tenants where name = %s", (tenant,))
                TENANT_IDS[tenant] = row.fetchone()[0]
            conn.execute("set role codesift_app")
            for _arm, tenant, _ in ARMS:
                wait_started(conn, tenant, work / f"{tenant}.log")
            times: dict[str, list[float]] = {arm: [] for arm, _, _ in ARMS}
            for k in range(args.edits + 1):
                this: dict[str, float] = {}
                for arm, tenant, _ in ARMS:
                    this[arm] = edit_and_wait(
                        conn, copies[arm], tenant, files, k, rng, embedding=arm != "lexical+graph"
                    )
                    if k > 0:  # the first is a warm-up
                        times[arm].append(this[arm])
                label = "warm-up" if k == 0 else f"edit {k:2d}"
                print(
                    f"{label}: " + "  ".join(f"{arm} {t:.2f} s" for arm, t in this.items()),
                    flush=True,
                )
        report(times)
    finally:
        for proc in watchers.values():
            proc.send_signal(signal.SIGINT)
        for proc in watchers.values():
            proc.wait(timeout=60)
        for f in logs.values():
            f.close()
        benchdb.drop(DB)
        shutil.rmtree(work, ignore_errors=True)


def fill_backlog(dsn: str, tenant: str) -> None:
    """Arm B's first-index backlog filled with a constant vector (see the docstring)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        model, dim = conn.execute(
            "select (select value from codesift.settings where key = 'embedding_model'),"
            " (select value from codesift.settings where key = 'embedding_dim')::int"
        ).fetchone()
        vector = "[" + ",".join(["0.05"] * dim) + "]"
        tid = conn.execute("select id from codesift.tenants where name = %s", (tenant,)).fetchone()[
            0
        ]
        for table in ("code_symbols", "blobs"):
            conn.execute(
                f"update codesift.{table} set embedding = %s::vector, embedding_model = %s"
                " where tenant_id = %s and embedding_model is distinct from %s",
                (vector, model, tid, model),
            )


TENANT_IDS: dict[str, int] = {}


def set_tenant(conn, tenant: str) -> None:
    conn.execute(
        "select set_config('app.current_tenant_id', %s, false)", (str(TENANT_IDS[tenant]),)
    )


def wait_started(conn, tenant: str, log: Path, deadline: float = 600) -> None:
    end = time.monotonic() + deadline
    while b"indexed repo" not in log.read_bytes():
        if time.monotonic() > end:
            sys.exit(f"the watcher of {tenant} did not start:\n{log.read_text()}")
        time.sleep(0.2)


def edit_and_wait(
    conn,
    root: Path,
    tenant: str,
    files: list[str],
    k: int,
    rng: random.Random,
    embedding: bool,
    deadline: float = 300,
) -> float:
    path = rng.choice(files)
    text = (root / path).read_text()
    # a module it does not import yet: the edge is new
    target = rng.choice([f for f in files if f != path and f[:-3].replace("/", ".") not in text])
    module = target[:-3].replace("/", ".")
    name = f"bench_edit_{k}_{rng.randrange(10**9)}"
    text = f"from {module} import Record{int(Path(target).stem[1:])}\n" + text
    text += f"\n\ndef {name}(x):\n    return x + {k}\n"
    set_tenant(conn, tenant)
    start = time.perf_counter()
    (root / path).write_text(text)
    end = time.monotonic() + deadline
    while True:
        found = conn.execute(
            "select count(*) from codesift.find_symbol(%s, repo => 'repo', include_body => false)"
            " where symbol_name = %s",
            (name, name),
        ).fetchone()[0]
        edge = (
            found
            and conn.execute(
                "select count(*) from codesift.related_files(%s, repo => 'repo')"
                " where related_path = %s",
                (path, target),
            ).fetchone()[0]
        )
        ready = (
            found
            and edge
            and (
                not embedding
                or conn.execute(
                    "select embedding_backlog from codesift.repository_status('repo')"
                ).fetchone()[0]
                == 0
            )
        )
        if ready:
            return time.perf_counter() - start
        if time.monotonic() > end:
            sys.exit(f"edit {k} of {tenant} not visible within {deadline} s")
        time.sleep(0.02)


def report(times: dict[str, list[float]]) -> None:
    print(
        f"\nedit-to-queryable, one-file edit, {len(next(iter(times.values())))} edits per arm"
        " (seconds)"
    )
    print(f"{'arm':<16}{'p50':>8}{'p95':>8}{'mean':>8}{'max':>8}")
    for arm, values in times.items():
        values = sorted(values)
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(
            f"{arm:<16}{statistics.median(values):>8.2f}{p95:>8.2f}"
            f"{statistics.mean(values):>8.2f}{values[-1]:>8.2f}"
        )


if __name__ == "__main__":
    main()
