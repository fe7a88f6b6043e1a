"""Embedding throughput on real symbols: the NumPy MiniLM, the ONNX Runtime engine (float32)
and the int8 ONNX engine (per-channel MatMul weights), side by side.

    .venv/bin/python bench/embedding_engines_bench.py PATH_TO_A_GIT_REPOSITORY \
        [--symbols 1000] [--rounds 3] [--ref HEAD]

Reads the repository with git (a checkout or a bare git directory), extracts its symbols with
codesift's own extraction and builds the text the loader embeds for each (embedtext), takes the
first --symbols of them, then, in one process, alternates the engines round after round (the
host drifts; a shared machine more so) and prints for each: texts/s (wall), CPU seconds per
text (all threads; steadier when other work shares the cores), and the one-query latency.
Vectors are checked against each other (cosine over every symbol) and against the committed
sentence-transformers fixture (tests/unit/minilm_reference.json).

Retrieval, not only cosine: each Python function with a docstring is a query (the docstring's
first paragraph) for that function's text without its docstring, among all of them; the MRR
is printed for float32 documents, int8 documents, and half of each, all asked with float32
queries (the database embeds queries in float32), and for int8 queries on int8
documents.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
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


_DOCSTRING = re.compile(r'[rRbBuU]?("""|\'\'\')(.*?)\1', re.S)


def docstring_pairs(repo: str, ref: str, limit: int) -> tuple[list[str], list[str]]:
    """(queries, documents): the first paragraph of each Python function's docstring and the
    function's embedding text with its docstring taken out, for the first `limit` of them."""
    paths = git(repo, "ls-tree", "-r", "--name-only", ref).decode().splitlines()
    queries: list[str] = []
    documents: list[str] = []
    for path in sorted(p for p in paths if p.endswith(".py")):
        source = git(repo, "show", f"{ref}:{path}").decode("utf-8", "replace")
        for s in extract_symbols(path, source):
            doc = (s.get("docstring") or "").strip().split("\n\n")[0]
            if s["kind"] not in ("function", "method") or len(doc) < 20:
                continue
            body = _DOCSTRING.sub("", s["body"], count=1)
            documents.append(symbol_text(path, s["kind"], s["qualified_name"], None, body))
            queries.append(" ".join(doc.split()))
            if len(queries) == limit:
                return queries, documents
    return queries, documents


def mrr(queries: np.ndarray, documents: np.ndarray) -> float:
    """Mean reciprocal rank of document i for query i."""
    scores = queries @ documents.T
    own = scores[np.arange(len(scores)), np.arange(len(scores))][:, None]
    ranks = 1 + (scores > own).sum(axis=1)
    return float(np.mean(1.0 / ranks))


def timed(encode, texts: list[str]) -> tuple[float, float, np.ndarray]:
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = encode(texts)
    return time.perf_counter() - wall, time.process_time() - cpu, vectors


def claimed(encode, claim: int):
    """encode, or encode over slices of `claim` texts (the worker's calls), stacked."""
    if claim <= 0:
        return encode
    return lambda texts: np.concatenate(
        [encode(texts[i : i + claim]) for i in range(0, len(texts), claim)]
    )


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
        "--claim",
        type=int,
        default=0,
        help="encode the texts N at a time, as the worker does with each claim of the queue "
        "(embedder.BATCH); 0: all in one call",
    )
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
    onnx_model = minilm_onnx.OnnxMiniLM()
    build_s = time.perf_counter() - start
    start = time.perf_counter()
    int8_model = minilm_onnx.OnnxMiniLM(int8=True)
    int8_build_s = time.perf_counter() - start
    tokens = [len(t) for t in numpy_model._token_ids(texts)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} before the run")
    print(f"repository: {args.repo} at {args.ref}: {len(texts)} symbols, word pieces mean ", end="")
    print(f"{statistics.mean(tokens):.0f}, max {max(tokens)}; {minilm._default_workers()} threads")
    print(f"onnx engine: graph built and session created in {build_s:.2f} s")
    print(
        f"int8 engine: graph built, quantized (or read from the cache), session in "
        f"{int8_build_s:.2f} s"
    )

    engines = {
        "numpy": claimed(numpy_model.encode, args.claim),
        "onnx fp32": claimed(onnx_model.encode, args.claim),
        "onnx int8": claimed(int8_model.encode, args.claim),
    }
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

    med = {n: {k: statistics.median(v) for k, v in r.items()} for n, r in results.items()}
    header = "".join(f"{n:>13}" for n in engines)
    print(f"{'':24}{header}{'int8/fp32':>11}{'int8/numpy':>11}")
    for label, key in (
        ("throughput (texts/s)", "rate"),
        ("CPU s per text", "cpu"),
        ("one query (ms, p50)", "query"),
    ):
        values = "".join(f"{med[n][key]:>13.3f}" for n in engines)

        def better(old: str, key: str = key) -> float:
            o, n = med[old][key], med["onnx int8"][key]
            return n / o if key == "rate" else o / n

        print(f"{label:24}{values}{better('onnx fp32'):>10.2f}x{better('numpy'):>10.2f}x")
    print("(ratios: how many times better int8 is; CPU and query: old / new)")
    for name in engines:
        each = " ".join(f"{x:.2f}" for x in results[name]["rate"])
        print(f"  {name} texts/s per round: {each}")
    fp32, int8 = vectors["onnx fp32"], vectors["onnx int8"]
    cos = (vectors["numpy"] * fp32).sum(axis=1)
    print(f"cosine onnx fp32 vs numpy over {len(texts)} symbols: min {cos.min():.7f}")
    cos = (int8 * vectors["numpy"]).sum(axis=1)
    print(
        f"cosine onnx int8 vs numpy over {len(texts)} symbols: min {cos.min():.4f}, "
        f"1st percentile {np.percentile(cos, 1):.4f}, mean {cos.mean():.4f}"
    )
    for name, encode in engines.items():
        print(
            f"cosine vs the sentence-transformers fixture, {name}: min {fixture_cosine(encode):.7f}"
        )

    queries, documents = docstring_pairs(args.repo, args.ref, args.symbols)
    if len(queries) < 10:
        return
    q32 = numpy_model.encode(queries)
    d32, d8 = numpy_model.encode(documents), int8_model.encode(documents)
    q8 = int8_model.encode(queries)
    half = np.array(random.Random(0).sample(range(len(documents)), len(documents) // 2))
    mixed = d32.copy()
    mixed[half] = d8[half]
    print(f"docstring -> function retrieval, {len(queries)} Python functions (MRR):")
    print(f"  fp32 queries, fp32 documents:        {mrr(q32, d32):.4f}")
    print(f"  fp32 queries, int8 documents:        {mrr(q32, d8):.4f}")
    print(f"  fp32 queries, half int8 half fp32:   {mrr(q32, mixed):.4f}")
    print(f"  int8 queries, int8 documents:        {mrr(q8, d8):.4f}")
    gap = (q32 * d8).sum(axis=1) - (q32 * d32).sum(axis=1)
    print(
        "  query-to-own-function similarity, int8 minus fp32 documents: "
        f"mean {gap.mean():+.4f}, sd {gap.std():.4f}"
    )


if __name__ == "__main__":
    main()
