"""Two runs of bench/eval.py side by side, per arm: the same queries over two indexes that
differ in one thing (e.g. documents embedded by the float32 or the int8 engine).

    .venv/bin/python bench/eval_side_by_side.py fp32=A.json[,A2.json] int8=B.json[,B2.json] \
        [--details fp32=A-details.json int8=B-details.json]

Each side is one or more --out JSONs of eval.py (a query set split over runs, e.g. one per
repository, is joined). r1/r5/r10/MRR are recomputed from each query's first gold file rank
(strict), so joined runs weigh every query once. Every rank that differs is listed. With
--details, the pack arms' context recall is compared too, and so is what the arms that read
no vector returned: if those differ, the two runs did not run the same code or index, and the
comparison says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

CUTS = (1, 5, 10)
# arms that read no document vector: equal across the two sides unless something else differs
VECTOR_FREE = ("bm25_files", "lexical", "lexical_tsrank", "pack_lexical")


def _side(spec: str) -> tuple[str, list[Path]]:
    label, _, files = spec.partition("=")
    if not files:
        raise argparse.ArgumentTypeError(f"{spec!r}: LABEL=FILE[,FILE...]")
    return label, [Path(f) for f in files.split(",")]


def _ranks(files: list[Path]) -> tuple[list[str], dict[str, dict[str, int | None]]]:
    arms: list[str] = []
    ranks: dict[str, dict[str, int | None]] = {}
    for f in files:
        doc = json.loads(f.read_text())
        arms += [a for a in doc["arms"] if a not in arms]
        for q in doc["queries"]:
            ranks[q["id"]] = q["first_hit_rank"]
    return arms, ranks


def _score(ranks: dict[str, dict[str, int | None]], arm: str, metric: str) -> float:
    hits = [r.get(arm) for r in ranks.values()]
    if metric == "mrr":
        return statistics.mean(0.0 if h is None else 1.0 / h for h in hits)
    k = int(metric[1:])
    return statistics.mean(1.0 if h is not None and h <= k else 0.0 for h in hits)


def _details(files: list[Path]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for f in files:
        out.update(json.loads(f.read_text())["queries"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("a", type=_side)
    ap.add_argument("b", type=_side)
    ap.add_argument("--details", nargs=2, type=_side, metavar="LABEL=FILE[,FILE]")
    args = ap.parse_args()
    (la, fa), (lb, fb) = args.a, args.b
    arms, ra = _ranks(fa)
    _, rb = _ranks(fb)
    if set(ra) != set(rb):
        raise SystemExit(f"the two sides hold different queries: {sorted(set(ra) ^ set(rb))}")
    print(f"{len(ra)} queries; {la} vs {lb}")
    metrics = [f"r{k}" for k in CUTS] + ["mrr"]
    print(f"{'arm':16}" + "".join(f"{m + ' ' + la:>12}{lb:>7}" for m in metrics))
    for arm in arms:
        cells = "".join(f"{_score(ra, arm, m):>12.3f}{_score(rb, arm, m):>7.3f}" for m in metrics)
        print(f"{arm:16}{cells}")
    differ = [
        (q, arm, ra[q].get(arm), rb[q].get(arm))
        for q in ra
        for arm in arms
        if ra[q].get(arm) != rb[q].get(arm)
    ]
    print(
        f"first gold file ranks that differ ({la} -> {lb}): {len(differ)} of {len(ra) * len(arms)}"
    )
    for q, arm, x, y in differ:
        print(f"  {q} {arm}: {'-' if x is None else x} -> {'-' if y is None else y}")
    if not args.details:
        return
    da, db = (_details(files) for _, files in args.details)
    for arm in ("pack", "pack_lexical"):
        recall = [
            (da[q]["arms"][arm]["context_recall"], db[q]["arms"][arm]["context_recall"])
            for q in da
            if arm in da[q]["arms"] and da[q]["arms"][arm]["context_recall"] is not None
        ]
        if recall:
            a, b = (statistics.mean(x) for x in zip(*recall, strict=True))
            print(f"{arm} context recall: {la} {a:.3f}, {lb} {b:.3f} ({len(recall)} queries)")
    same = all(
        da[q]["arms"][arm].get(key) == db[q]["arms"][arm].get(key)
        for q in da
        for arm in VECTOR_FREE
        if arm in da[q]["arms"]
        for key in ("files", "packed")
    )
    print(
        "control: the arms that read no vector returned "
        + (
            "the same files and packs on both sides"
            if same
            else "DIFFERENT results: not comparable"
        )
    )


if __name__ == "__main__":
    main()
