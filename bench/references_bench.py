"""The reference index (code_references): what extracting it costs, what it stores, how fast
find_references, callers and callees answer, and (with --jedi) how its answers compare
with Jedi's on Python. Prints only, never asserts.

    .venv/bin/python bench/references_bench.py CHECKOUT [--rounds 3] [--calls 30]
        [--jedi N] [--name NAME] [--keep]

On CHECKOUT's HEAD (the files `git ls-tree` lists), configurations interleaved round after
round (the host drifts):

1. extraction: extract_blob (ingest/extraction.py: terms, imports, symbols and their
   terms) of every source file of a language with reference rules, without and with
   extract_references, in this process (no server): seconds, and the ratio.
2. indexing: the real loader (no embeddings) into a fresh database from a migrated
   template, alternately with the trigger's reference extraction switched off in that
   backend (the module patched for its connection) and on: seconds, files per second,
   and the ratio of the medians.
3. storage: code_references' rows and bytes (table, indexes, TOAST) per stored symbol, next
   to code_symbols' bytes per symbol, and the size of the database on / off.
4. latency: find_references, callers and callees of --calls definitions (functions,
   methods and classes with at least one stored use, picked evenly by path) as the
   application role: p50 and p90 milliseconds.
5. --jedi N: for N Python definitions picked evenly, Jedi's get_references (pip install
   jedi into .venv; the definition itself left out) against find_references by (path,
   line): precision and recall of the resolved rows, and of all rows (resolved + by_name).

Databases: codesift_bench_refs_* on CODESIFT_DSN's server, dropped at the end (--keep
leaves the last ones).
"""

from __future__ import annotations

import argparse
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plpython"))
import benchdb  # noqa: E402
import psycopg  # noqa: E402
from codesift.indexer import index_repository  # noqa: E402
from codesift_db import budget  # noqa: E402
from codesift_db.ingest import extraction, references  # noqa: E402
from codesift_db.ingest.languages import detect_language  # noqa: E402

TEMPLATE = "codesift_bench_refs_template"
ON, OFF = "codesift_bench_refs_on", "codesift_bench_refs_off"
TENANT = "bench"
# the trigger's module, patched for one connection: no references extracted nor stored
SWITCH_OFF = """
do $$
import types
from codesift_db.ingest import extraction
extraction.references = types.SimpleNamespace(extract_references=lambda *a, **k: [])
$$ language plpython3u
"""


def head_files(checkout: Path) -> dict[str, str]:
    """Path -> text of the files at HEAD whose language has reference rules."""
    data = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=checkout, capture_output=True, check=True
    ).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or detect_language(member.name) not in references.LANGUAGES:
                continue
            raw = tar.extractfile(member)
            if raw is not None:
                out[member.name] = raw.read().decode("utf-8", "replace")
    return out


def extraction_seconds(files: dict[str, str], with_refs: bool) -> float:
    off = with_refs is False
    saved = extraction.references.extract_references
    if off:
        extraction.references.extract_references = lambda *a, **k: []  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        for path, text in files.items():
            extraction.extract_blob(path, text, detect_language(path), budget.Budget(None))
        return time.perf_counter() - start
    finally:
        extraction.references.extract_references = saved  # type: ignore[assignment]


def index_once(checkout: Path, name: str, dbname: str, with_refs: bool) -> float:
    benchdb.create(dbname, template=TEMPLATE)
    with benchdb.connect(dbname, autocommit=True) as conn:
        if not with_refs:
            conn.execute(SWITCH_OFF)
        start = time.perf_counter()
        index_repository(conn, checkout, name=name, tenant=TENANT, embed=False, show_progress=False)
        return time.perf_counter() - start


def storage(name: str) -> None:
    sizes = {}
    for dbname in (OFF, ON):
        with benchdb.connect(dbname, autocommit=True) as conn:
            conn.execute("vacuum analyze")
            sizes[dbname] = conn.execute("select pg_database_size(current_database())").fetchone()[
                0
            ]
    with benchdb.connect(ON) as conn:
        symbols, sym_bytes = conn.execute(
            "select count(*), pg_total_relation_size('codesift.code_symbols')"
            " from codesift.code_symbols"
        ).fetchone()
        rows, ref_bytes, table = conn.execute(
            "select count(*), pg_total_relation_size('codesift.code_references'),"
            " pg_relation_size('codesift.code_references') from codesift.code_references"
        ).fetchone()
        calls = conn.execute(
            "select count(*) from codesift.code_references where is_call"
        ).fetchone()[0]
        bound = conn.execute(
            "select count(*) from codesift.code_references where import_line is not null"
        ).fetchone()[0]
    print(f"storage ({name}): {symbols:,} symbols, {rows:,} references ({calls:,} calls,")
    print(f"  {bound:,} bound to an import): {rows / max(symbols, 1):.1f} references per symbol")
    print(
        f"  code_references {ref_bytes / 1e6:.1f} MB (table {table / 1e6:.1f} MB, the rest"
        f" indexes): {ref_bytes / max(rows, 1):.0f} bytes per reference,"
        f" {ref_bytes / max(symbols, 1):.0f} bytes per symbol"
    )
    print(
        f"  code_symbols {sym_bytes / 1e6:.1f} MB: {sym_bytes / max(symbols, 1):.0f} bytes per"
        f" symbol; references / symbols bytes {ref_bytes / max(sym_bytes, 1):.2f}"
    )
    print(
        f"  database off {sizes[OFF] / 1e6:.1f} MB, on {sizes[ON] / 1e6:.1f} MB:"
        f" ratio on/off {sizes[ON] / sizes[OFF]:.3f}; code_references / the rest of the"
        f" database {ref_bytes / max(sizes[ON] - ref_bytes, 1):.3f}"
    )


def app_connection(dbname: str) -> psycopg.Connection:
    with benchdb.connect(dbname) as owner:
        row = owner.execute("select id from codesift.tenants where name = %s", (TENANT,)).fetchone()
    assert row is not None
    conn = psycopg.connect(benchdb.dsn(dbname), autocommit=True, user="codesift_app")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
    conn.add_notice_handler(lambda n: None)
    return conn


def definitions(conn, name: str, k: int, python_only: bool = False) -> list[tuple]:
    """k (path, qualified name, name, start line, kind) of definitions with a stored use,
    evenly by path."""
    rows = conn.execute(
        "select distinct on (f.path, s.qualified_name) f.path, s.qualified_name, s.name,"
        " s.start_line, s.kind from codesift.code_symbols s"
        " join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha"
        " join codesift.repositories r on r.id = f.repository_id and r.name = %s"
        " where f.live and s.kind in ('function', 'method', 'class', 'route') and s.part <= 1"
        " and exists (select from codesift.code_references c where c.tenant_id = s.tenant_id"
        " and c.name = s.name)"
        " order by f.path, s.qualified_name, s.start_line",
        (name,),
    ).fetchall()
    if python_only:
        rows = [r for r in rows if detect_language(r[0]) == "python"]
    step = max(1, len(rows) // max(k, 1))
    return rows[::step][:k]


def timed(conn, sql: str, params: tuple) -> float:
    start = time.perf_counter()
    conn.execute(sql, params).fetchall()
    return (time.perf_counter() - start) * 1000


def latency(name: str, k: int, rounds: int) -> None:
    conn = app_connection(ON)
    picked = definitions(conn, name, k)
    calls = {
        "find_references": "select * from codesift.find_references(%s, repo => %s, path => %s)",
        "callers": "select * from codesift.callers(%s, repo => %s, path => %s)",
        "callees": "select * from codesift.callees(%s, repo => %s, path => %s)",
    }
    times: dict[str, list[float]] = {c: [] for c in calls}
    rows: dict[str, list[int]] = {c: [] for c in calls}
    for path, qualified, *_ in picked:  # a first round warms caches and counts the rows
        for call, sql in calls.items():
            rows[call].append(len(conn.execute(sql, (qualified, name, path)).fetchall()))
    for _ in range(rounds):
        for path, qualified, *_ in picked:
            for call, sql in calls.items():
                times[call].append(timed(conn, sql, (qualified, name, path)))
    print(f"latency ({len(picked)} definitions x {rounds} rounds, application role):")
    print(f"  {'call':<16} {'p50 ms':>8} {'p90 ms':>8} {'rows p50':>9} {'rows max':>9}")
    for call, values in times.items():
        values.sort()
        p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
        counts = rows[call] or [0]
        print(
            f"  {call:<16} {statistics.median(values):>8.1f} {p90:>8.1f}"
            f" {statistics.median(counts):>9.0f} {max(counts):>9}"
        )
    conn.close()


def jedi_agreement(checkout: Path, name: str, k: int) -> None:
    import jedi

    conn = app_connection(ON)
    picked = definitions(conn, name, k, python_only=True)
    data = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=checkout, capture_output=True, check=True
    ).stdout
    totals = {"resolved": [0, 0, 0], "all": [0, 0, 0]}  # hits, ours, theirs
    per: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(root, filter="data")
        project = jedi.Project(root)
        live = {r[0] for r in conn.execute("select path from codesift.files where live")}
        for path, qualified, short, start, _kind in picked:
            source = (root / path).read_text(encoding="utf-8", errors="replace")
            lines = source.split("\n")
            pattern = re.compile(rf"\b(?:def|class)\s+({re.escape(short)})\b")
            at = None
            for n in range(start - 1, min(len(lines), start + 40)):
                m = pattern.search(lines[n])
                if m:
                    at = (n + 1, m.start(1))
                    break
            if at is None:
                continue
            script = jedi.Script(source, path=root / path, project=project)
            theirs = set()
            for ref in script.get_references(*at, scope="project", include_builtins=False):
                if ref.module_path is None:
                    continue
                rel = str(Path(ref.module_path).relative_to(root)) if ref.module_path else ""
                if rel in live and (rel, ref.line) != (path, at[0]):
                    theirs.add((rel, ref.line))
            rows = conn.execute(
                "select path, line, resolution from codesift.find_references(%s, repo => %s,"
                " path => %s, max_rows => 1000)",
                (qualified, name, path),
            ).fetchall()
            for label, ours in (
                ("resolved", {(p, n) for p, n, res in rows if res == "resolved"}),
                ("all", {(p, n) for p, n, _ in rows}),
            ):
                t = totals[label]
                t[0] += len(ours & theirs)
                t[1] += len(ours)
                t[2] += len(theirs)
            resolved = {(p, n) for p, n, res in rows if res == "resolved"}
            per.append(
                f"    {path}:{at[0]} {qualified}: jedi {len(theirs)}, ours resolved "
                f"{len(resolved)} ({len(resolved & theirs)} agree), all {len(rows)}"
            )
    print(
        f"agreement with Jedi {jedi.__version__} ({len(per)} Python definitions, by path and line):"
    )
    for label, (hits, ours, theirs) in totals.items():
        precision = hits / ours if ours else float("nan")
        recall = hits / theirs if theirs else float("nan")
        print(
            f"  {label:<9} precision {precision:.3f} ({hits}/{ours})"
            f"  recall {recall:.3f} ({hits}/{theirs})"
        )
    print("\n".join(per))
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--name", help="repository name (default: the checkout folder's)")
    ap.add_argument("--rounds", type=int, default=3, help="indexing rounds per configuration")
    ap.add_argument("--calls", type=int, default=30, help="definitions whose lookups are timed")
    ap.add_argument("--jedi", type=int, default=0, metavar="N")
    ap.add_argument("--keep", action="store_true", help="leave the databases")
    args = ap.parse_args()
    checkout = args.checkout.resolve()
    name = args.name or checkout.name
    files = head_files(checkout)
    lines = sum(t.count("\n") for t in files.values())
    print(f"{name}: {len(files)} files with reference rules at HEAD, {lines:,} lines")
    extract = {False: [], True: []}
    for r in range(args.rounds + 1):
        for mode in (False, True) if r % 2 else (True, False):
            seconds = extraction_seconds(files, mode)
            if r:
                extract[mode].append(seconds)
    off, on = statistics.median(extract[False]), statistics.median(extract[True])
    print(
        f"extraction (no server, median of {args.rounds}): without references {off:.2f} s,"
        f" with {on:.2f} s: ratio {on / off:.2f} ({lines / off:,.0f} vs {lines / on:,.0f}"
        " lines/s)"
    )
    benchdb.create(TEMPLATE)
    benchdb.migrate(TEMPLATE)
    index = {False: [], True: []}
    try:
        for r in range(args.rounds):
            for mode in (False, True) if r % 2 == 0 else (True, False):
                seconds = index_once(checkout, name, ON if mode else OFF, mode)
                index[mode].append(seconds)
                print(f"  round {r + 1}: references {'on ' if mode else 'off'} {seconds:.1f} s")
        with benchdb.connect(ON) as conn:
            blobs = conn.execute("select count(*) from codesift.blobs").fetchone()[0]
        off, on = statistics.median(index[False]), statistics.median(index[True])
        print(
            f"indexing ({blobs} blobs, median of {args.rounds}): references off {off:.1f} s"
            f" ({blobs / off:.1f} blobs/s), on {on:.1f} s ({blobs / on:.1f} blobs/s):"
            f" ratio {on / off:.2f}"
        )
        storage(name)
        latency(name, args.calls, max(args.rounds, 3))
        if args.jedi:
            jedi_agreement(checkout, name, args.jedi)
    finally:
        if not args.keep:
            for dbname in (ON, OFF, TEMPLATE):
                benchdb.drop(dbname)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
