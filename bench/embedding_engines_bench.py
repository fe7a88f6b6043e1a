"""Embedding throughput on real symbols: today's NumPy MiniLM against the ONNX Runtime engine.

    .venv/bin/python bench/embedding_engines_bench.py PATH_TO_A_GIT_REPOSITORY \
        [--symbols 1000] [--rounds 3] [--ref HEAD]

Reads the repository with git (a checkout or a bare git directory), extracts its symbols with
codesift's own extraction and builds the text the loader embeds for each (embedtext), takes the
first --symbols of them, then, in one process, alternates the engines round after round (the
host drifts; a shared machine more so) and prints for each: texts/s (wall), CPU seconds per
text (all threads; steadier when other work shares the cores), and the one-query latency.
Vectors are checked against each other (min cosine over every symbol) and against the committed
sentence-transformers fixture (tests/unit/minilm_reference.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "plpython"), str(ROOT / "loader")]

import numpy as np  # noqa: E402
from codesift_db.embed import minilm, minilm_onnx  # noqa: E402
from codesift_db.embedtext import symbol_text  # noqa: E402
from codesift_db.ingest.symbols import extract_symbols  # noqa: E402

EXTENSIONS = (".py", ".js", ".ts", ".go", ".rs", ".java", ".c", ".rb", ".md")
QUERY = "where is the session cookie signed?"


def git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, check=True).stdout


def real_symbols(repo: str, ref: str, limit: int) -> list[str]:
    """The embedding texts of the first `limit` symbols of the tree at ref, by path."""
    paths = git(repo, "ls-tree", "-r", "--name-only", ref).decode().splitlines()
    texts: list[str] = []
    for path in sorted(p for p in paths if p.endswith(EXTENSIONS)):
        source = git(repo, "show", f"{ref}:{path}").decode("utf-8", "replace")
        for s in extract_symbols(path, source):
            texts.append(
                symbol_text(
                    path,
                    s["kind"],
                    s["qualified_name"],
                    s.get("signature"),
                    s["body"],
                    s.get("doc"),
                )
            )
            if len(texts) == limit:
                return texts
    return texts


def timed(encode, texts: list[str]) -> tuple[float, float, np.ndarray]:
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = encode(texts)
    return time.perf_counter() - wall, time.process_time() - cpu, vectors


def query_ms(encode, n: int = 20) -> float:
    latencies = []
    for _ in range(n):
        start = time.perf_counter()
        encode([QUERY])
        latencies.append(time.perf_counter() - start)
    return 1000 * statistics.median(latencies)


def fixture_cosine(encode) -> float:
    ref = json.loads((ROOT / "tests/unit/minilm_reference.json").read_text())
    got = encode(ref["texts"])
    want = np.asarray(ref["vectors"], dtype=np.float64)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    return float((got * want).sum(axis=1).min())


def query_path(rounds: int, n: int = 200) -> None:
    """One short query through today's call and through embedders.from_settings."""
    from codesift_db.embed import embedders

    settings = {"embedding_model": minilm.MODEL_NAME, "embedding_dim": "384"}
    paths = {
        "minilm (today)": lambda texts: minilm.get_model().encode(texts),
        "from_settings": lambda texts: embedders.from_settings(settings).encode(texts),
    }
    for encode in paths.values():
        encode([QUERY])
    medians: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, encode in paths.items():
            medians[name].append(query_ms(encode, n))
    old, new = (statistics.median(m) for m in medians.values())
    print(f"one query, median of {rounds} rounds x {n}: today {old:.2f} ms, ", end="")
    print(f"embedders.from_settings {new:.2f} ms, old/new {old / new:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("repo", help="a git checkout or git directory to take real symbols from")
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--symbols", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per engine")
    ap.add_argument(
        "--query-path",
        action="store_true",
        help="only the query path: embed_query's embedder (embedders.from_settings, built-in) "
        "against today's direct minilm call, one short text, alternating",
    )
    args = ap.parse_args()
    if args.query_path:
        query_path(args.rounds)
        return
    if not minilm_onnx.available():
        sys.exit("onnxruntime and onnx are not installed (make install): nothing to compare")

    texts = real_symbols(args.repo, args.ref, args.symbols)
    numpy_model = minilm.get_model()
    start = time.perf_counter()
    onnx_model = minilm_onnx.get_model()
    build_s = time.perf_counter() - start
    tokens = [len(t) for t in numpy_model._token_ids(texts)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} before the run")
    print(f"repository: {args.repo} at {args.ref}: {len(texts)} symbols, word pieces mean ", end="")
    print(f"{statistics.mean(tokens):.0f}, max {max(tokens)}; {minilm._default_workers()} threads")
    print(f"onnx engine: graph built and session created in {build_s:.2f} s")

    engines = {"numpy (today)": numpy_model.encode, "onnx runtime": onnx_model.encode}
    results: dict[str, dict[str, list[float]]] = {
        name: {"rate": [], "cpu": [], "query": []} for name in engines
    }
    vectors: dict[str, np.ndarray] = {}
    for encode in engines.values():  # warm-up: first-touch of the weights, thread pools
        encode(texts[:16])
    for _ in range(args.rounds):
        for name, encode in engines.items():
            wall, cpu, vectors[name] = timed(encode, texts)
            results[name]["rate"].append(len(texts) / wall)
            results[name]["cpu"].append(cpu / len(texts))
            results[name]["query"].append(query_ms(encode))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average after the run: {load}")

    old, new = (results[n] for n in engines)
    print(f"{'':28}{'numpy (today)':>16}{'onnx runtime':>16}{'new/old':>10}")
    rows = [
        ("throughput (texts/s)", "rate", lambda o, n: n / o),
        ("CPU s per text", "cpu", lambda o, n: o / n),
        ("one query (ms, p50)", "query", lambda o, n: o / n),
    ]
    for label, key, ratio in rows:
        o, n = statistics.median(old[key]), statistics.median(new[key])
        print(f"{label:28}{o:>16.3f}{n:>16.3f}{ratio(o, n):>9.2f}x")
    print("(ratios: how many times better the new engine is; CPU and query: old / new)")
    for name in engines:
        each = " ".join(f"{x:.2f}" for x in results[name]["rate"])
        print(f"  {name} texts/s per round: {each}")
    a, b = vectors.values()
    cos = (a * b).sum(axis=1)
    print(f"cosine onnx vs numpy over {len(texts)} symbols: min {cos.min():.7f}")
    for name, encode in engines.items():
        print(
            f"cosine vs the sentence-transformers fixture, {name}: min {fixture_cosine(encode):.7f}"
        )


if __name__ == "__main__":
    main()
