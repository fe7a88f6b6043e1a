"""The cost of reading a question (plpython/codesift_db/pipeline/question.py) in this checkout
against an earlier commit's, side by side in one run, and whether the two read the query sets
alike (prints only, never asserts).

    .venv/bin/python bench/question_read_bench.py --against ea6f63d

Inputs: hostile stack traces of every language the reader knows (20,000 characters after the
cut at SCAN_CHARS, built to make its patterns backtrack), plain prose, and every question of
the query sets. Reported: the best of --reps timings of read() per input and version, and the
questions whose Reading differs between the versions.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plpython"))

from codesift_db.pipeline import question  # noqa: E402

MODULE = "plpython/codesift_db/pipeline/question.py"
SETS = ("bench/queries/swebench-dev.json", "bench/queries/express.json", "bench/queries/gin.json")
HOSTILE = {
    "python": 'File "' + "a/" * 3000 + 'x.py", line 1, in f\n',
    "ipython": "File " + "a/" * 3000 + "x.py:1, in " + "f" * 3000 + "(\n",
    "javascript": "    at " + "a." * 3000 + "b (" + "x/" * 3000 + "y.js:1:1)\n",
    "jvm": "\tat " + "a." * 5000 + "b(" + "x" * 5000 + ".java:1)\n",
    "go": "a." * 3000 + "(*T).f(" + "x" * 3000 + ")\n\t" + "y/" * 3000 + "z.go:1\n",
    "ruby": "y/" * 3000 + "x.rb:1:in `" + "f" * 3000 + "'\n",
    "csharp": "   at " + "A." * 3000 + "F(" + "x" * 3000 + ") in " + "y/" * 3000 + "z.cs:line 1\n",
    "rust": "  1: " + "a::" * 3000 + "\n      at " + "x/" * 3000 + "y.rs:1:1\n",
    "gdb": "#1  0x1 in " + "a::" * 3000 + " (" + "x" * 3000 + ") at " + "y/" * 3000 + "z.c:1\n",
    "asan": "    #1 0x1 in " + "f" * 3000 + " " + "y/" * 3000 + ".c:1:1\n",
    "php": "#1 " + "y/" * 3000 + "x.php(1): " + "A\\" * 3000 + "->f()\n",
    "prose": "the quick brown fox jumps over the lazy dog and reads the logs again\n",
}


def load_at(revision: str):
    """question.py as it was at `revision`, imported beside this checkout's."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{revision}:{MODULE}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(f"/tmp/codesift-question-{revision}.py")
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("codesift_db.pipeline._question_then", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "codesift_db.pipeline"
    spec.loader.exec_module(module)
    return module


def best_ms(module, text: str, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        module.read(text)
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def questions(path: str) -> list[tuple[str, str]]:
    doc = json.loads((ROOT / path).read_text(encoding="utf-8"))
    rows = doc["queries"] if isinstance(doc, dict) else doc
    return [(row["id"], row["query"]) for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the earlier commit (git revision)")
    parser.add_argument("--reps", type=int, default=5, help="timed reads per input and version")
    args = parser.parse_args(argv)
    then = load_at(args.against)
    print(
        f"question.read(): {args.against} (before) against this checkout (now), best of {args.reps}"
    )
    print(f"{'input':12} {'before ms':>10} {'now ms':>10}")
    for name, line in HOSTILE.items():
        text = "Crash\n" + line * (question.SCAN_CHARS // len(line) + 1)
        before, now = best_ms(then, text, args.reps), best_ms(question, text, args.reps)
        print(f"{name:12} {before:10.2f} {now:10.2f}")
    for path in SETS:
        rows = questions(path)
        before = sum(best_ms(then, q, args.reps) for _, q in rows)
        now = sum(best_ms(question, q, args.reps) for _, q in rows)
        differ = [
            qid
            for qid, q in rows
            if dataclasses.asdict(then.read(q)) != dataclasses.asdict(question.read(q))
        ]
        print(f"{Path(path).stem}: {len(rows)} questions, {before:.1f} ms -> {now:.1f} ms in all")
        print(f"  read differently: {len(differ)}" + (f" ({', '.join(differ)})" if differ else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
