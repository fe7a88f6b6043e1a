"""Extraction of adversarial 1 MiB blobs, before and after the per-blob limits.

The PL/Python trigger extracts every inserted blob (symbols, doc comments, symbol terms,
imports, the file's terms) and PostgreSQL cannot cancel it while it runs. This benchmark
times that per-blob work on files built to hurt it, with the code of an earlier commit
('before', imported from git) and with the working tree ('after', extraction.extract_blob
with the default budget.Budget, and again with caps only, no deadline), side by side:

    .venv/bin/python bench/extraction_adversarial_bench.py [--before REV] [--timeout S]

Each case runs in its own process, killed after --timeout seconds (60): a case the old code
cannot finish prints '>60 s (stopped)'. Columns: the time, the items kept (symbols or
sections + imports), the items counted over a cap (from the blob's extraction_limited flag;
'at least' when counting stopped) and the flag itself. Times are wall-clock and CPU seconds
on this machine; the budget is wall-clock, so on a loaded machine the 'after' runs stop at
it ('time budget' in the flag) with less done. The caps and counts do not vary
(tests/unit/test_extraction_limits.py asserts them).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the last commit before the per-blob limits
BEFORE = "9122df86692b7d148b0525f710bbf882d9548201"
MODULES = ("__init__", "symbols", "imports", "identifiers", "packing", "plans", "extraction")
MIB = 1 << 20


def fill(unit) -> str:
    parts, n, i = [], 0, 0
    while n < MIB:
        part = unit(i)
        parts.append(part)
        n += len(part)
        i += 1
    return "".join(parts)[:MIB]


# name -> (file kind, path, language, content)
CASES = {
    "headings": ("markdown, '# heading N' lines", "HEADINGS.md", "markdown"),
    "nested-headings": ("markdown, levels 1-6 in turn", "LEVELS.md", "markdown"),
    "blank-heading": ("markdown, one heading with 1M blanks", "BLANKS.md", "markdown"),
    "python-functions": ("python, one-line functions", "many.py", "python"),
    "js-functions": ("javascript, one-line functions", "many.js", "javascript"),
    "js-declarators": ("javascript, one var, 30k functions", "decl.js", "javascript"),
    "parens-one-line": ("python, '(' x 1M on one line", "deep.py", "python"),
    "parens-nested": ("python, '(\\n' x 512k", "deep.py", "python"),
    "braces-nested": ("javascript, '{\\n' x 512k", "deep.js", "javascript"),
    "braces-text": ("unknown language, '{\\n' x 512k", "deep.txt", None),
    "js-nested-functions": ("javascript, nested functions", "nest.js", "javascript"),
    "deep-assignment": ("javascript, 50k '(' around a function", "assign.js", "javascript"),
    "python-imports": ("python, 'import m N' lines", "imports.py", "python"),
    "js-imports": ("javascript, import ... from lines", "imports.js", "javascript"),
    "js-deep-requires": ("javascript, requires 20k levels deep", "requires.js", "javascript"),
}


def content(name: str) -> str:
    if name == "headings":
        return fill(lambda i: f"# heading {i}\n")
    if name == "nested-headings":
        return fill(lambda i: "#" * (1 + i % 6) + f" heading {i}\n")
    if name == "blank-heading":
        return "# a" + " " * (MIB - 5) + "b\n"
    if name == "python-functions":
        return fill(lambda i: f"def f{i}(): pass\n")
    if name == "js-functions":
        return fill(lambda i: f"function f{i}() {{}}\n")
    if name == "js-declarators":
        body = fill(lambda i: f"  f{i} = function () {{}},\n")
        return "var first = 1,\n" + body.rsplit("\n", 1)[0].rstrip(",") + ";\n"
    if name == "parens-one-line":
        return "(" * MIB
    if name == "parens-nested":
        return "(\n" * (MIB // 2)
    if name in ("braces-nested", "braces-text"):
        return "{\n" * (MIB // 2)
    if name == "js-nested-functions":
        return "function f(){\n" * (MIB // 14)
    if name == "deep-assignment":
        half = (MIB - 40) // 4
        return "(\n" * half + "x = function () { return 1 }\n" + ")\n" * half
    if name == "python-imports":
        return fill(lambda i: f"import m{i}\n")
    if name == "js-imports":
        return fill(lambda i: f"import {{ a{i} }} from './m{i}';\n")
    if name == "js-deep-requires":
        depth = 20_000
        inner = fill(lambda i: f"const a{i} = require('./m{i}');\n")[: MIB - 30 * depth]
        inner = inner.rsplit("\n", 1)[0] + "\n"
        return "function f() {\n" * depth + inner + "}\n" * depth
    raise KeyError(name)


# --------------------------------------------------------------------------- workers


def _old_blob(mods, path: str, text: str, language: str | None) -> dict:
    """The per-blob work of the old on_blobs_inserted, without the database."""
    symbols, import_extraction, identifiers, packing, extraction = mods
    lines = text.split("\n")
    found = 0
    for sym in symbols.extract_symbols(path, text, language):
        sym["doc"] = symbols.leading_comment(lines, sym["start_line"]) if sym["part"] <= 1 else ""
        terms = extraction.symbol_terms(sym, path)
        len(terms.split())
        packing.estimate_tokens(sym["body"])
        found += 1
    imps = len(import_extraction.extract_imports(path, text, language)) if language else 0
    terms = (
        (identifiers.path_terms(path) if path else "") + " " + identifiers.identifier_terms(text)
    )
    whole = text.rstrip("\n")
    packing.estimate_tokens(whole)
    return {"symbols": found, "imports": imps, "limited": None}


def worker(which: str, name: str, before: str) -> None:
    if which == "before":
        folder = Path(tempfile.mkdtemp(prefix="codesift-before-")) / "codesift_db"
        folder.mkdir()
        for module in MODULES:
            source = subprocess.run(
                ["git", "show", f"{before}:plpython/codesift_db/{module}.py"],
                cwd=ROOT,
                capture_output=True,
                check=True,
            ).stdout
            (folder / f"{module}.py").write_bytes(source)
        sys.path.insert(0, str(folder.parent))
    else:
        sys.path.insert(0, str(ROOT / "plpython"))
    from codesift_db import identifiers, packing

    # the old tree was flat, its import extraction in imports.py; today's write side is ingest/
    ingest = "codesift_db" if which == "before" else "codesift_db.ingest"
    extraction = importlib.import_module(f"{ingest}.extraction")
    symbols = importlib.import_module(f"{ingest}.symbols")
    import_extraction = importlib.import_module(
        "codesift_db.imports" if which == "before" else f"{ingest}.import_extraction"
    )

    _, path, language = CASES[name]
    text = content(name)
    start, cpu = time.perf_counter(), time.process_time()
    if which == "before":
        result = _old_blob(
            (symbols, import_extraction, identifiers, packing, extraction), path, text, language
        )
    else:
        from codesift_db import budget

        limits = budget.Budget() if which == "after" else budget.unlimited()
        blob = extraction.extract_blob(path, text, language, limits)
        result = {
            "symbols": len(blob["symbols"]),
            "imports": len(blob["imports"]),
            "limited": blob["limited"],
        }
    result["seconds"] = time.perf_counter() - start
    result["cpu"] = time.process_time() - cpu
    result["size"] = len(text.encode())
    print(json.dumps(result))


# --------------------------------------------------------------------------- the table


def run(which: str, name: str, before: str, timeout: float) -> dict:
    command = [sys.executable, __file__, "--worker", which, name, "--before", before]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"stopped": True}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def over_cap(limited: str | None) -> str:
    """Items counted over the caps, from the flag ('' when none)."""
    if not limited:
        return ""
    counts = re.findall(
        r"(symbols|sections|imports|symbol text) cap \d+ \((at least )?(\d+)", limited
    )
    total = sum(int(n) for _, _, n in counts)
    if not counts:
        return ""
    return (">=" if any(a for _, a, _ in counts) else "") + str(total)


def cell(result: dict, timeout: float) -> tuple[str, str]:
    """('wall s / cpu s', items kept)."""
    if result.get("stopped"):
        return f">{timeout:g} s (stopped)", "-"
    if "error" in result:
        return "error", " ".join(result["error"])[:40]
    times = f"{result['seconds']:.2f} / {result['cpu']:.2f} s"
    return times, str(result["symbols"] + result["imports"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--worker", nargs=2, metavar=("WHICH", "CASE"), help=argparse.SUPPRESS)
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.before)
        return
    names = args.cases or list(CASES)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# extraction of adversarial blobs: before = {args.before[:12]}, after = working tree")
    print(
        f"# {os.cpu_count()} CPUs, load average {load:.1f} at start;"
        f" per-case limit {args.timeout:g} s"
    )
    print("# times: wall / CPU seconds of the per-blob work; kept: symbols + imports stored")
    print("# after: the trigger's default budget (2 s); caps only: no deadline, every count exact")
    header = (
        f"{'file kind':38} {'size':>9} {'before':>17} {'kept':>6} "
        f"{'after':>15} {'kept':>6} {'over cap':>9} {'caps only':>15} {'kept':>6} "
        f"{'over cap':>9}  flag (after || caps only, where different)"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        kind = CASES[name][0]
        old = run("before", name, args.before, args.timeout)
        new = run("after", name, args.before, args.timeout)
        caps = run("caps-only", name, args.before, args.timeout)
        old_time, old_kept = cell(old, args.timeout)
        new_time, new_kept = cell(new, args.timeout)
        caps_time, caps_kept = cell(caps, args.timeout)
        size = new.get("size") or old.get("size") or 0
        limited = new.get("limited") or ""
        exact = caps.get("limited") or ""
        flag = limited if exact == limited else f"{limited} || {exact}"
        print(
            f"{kind:38} {size:>9,} {old_time:>17} {old_kept:>6} "
            f"{new_time:>15} {new_kept:>6} {over_cap(limited):>9} "
            f"{caps_time:>15} {caps_kept:>6} {over_cap(exact):>9}  {flag}",
            flush=True,
        )


if __name__ == "__main__":
    main()
