"""Whether the question's own evidence could bring the gold definitions the pack misses:
each gold symbol of a query set (as bench/pack_misses.py classifies it) whose file the
pack reaches, ranked among the definitions of its file by the question's weighted terms
(BM25 over the symbol tier's statistics, the weights pipeline/question.py gives) and by the
cosine similarity of its vector to the question's (the digest of a long question, as the
dense leg embeds it), and whether it calls or is called by a definition the pack holds
(codesift.callers / codesift.callees). Prints counts only, never asserts.

    .venv/bin/python bench/pack_miss_evidence.py --queries bench/queries/swebench-dev.json \\
        --repo-path requests=/tmp/requests --repo-path flask=/tmp/flask ...

A definition that ranks first or second in its file by either order is one that more
stand-ins or an in-file stage could add; one that ranks low by both, and touches nothing
packed, is out of reach of the question's words, its vector and the call graph. Module-level
gold (imports, top-level statements, a module docstring) has no definition to rank.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "plpython"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from codesift_db.pipeline import question  # noqa: E402
from codesift_db.pipeline.params import Params  # noqa: E402

from bench import eval_metrics as m  # noqa: E402
from bench import gold_queries  # noqa: E402
from bench.pack_misses import classify  # noqa: E402

# pack_misses.EXPLAIN's rows, and the name of each
EXPLAIN_NAMED = """
select path, start_line, end_line, decision, packed, symbol
from codesift.explain_context(%s, repo => %s, ref => %s, token_budget => %s)
order by candidate
"""

# the definitions of one live file at a ref, each with its BM25 against the question's
# weighted terms and the cosine similarity of its vector (null without one)
IN_FILE = """
with idf as materialized (
    select
        t.term,
        ln(1 + ((c.docs - t.df)::float8 + 0.5) / (t.df + 0.5)) * coalesce(w.weight, 1.0) as idf,
        c.total_terms::float8 / greatest(c.docs, 1) as avgdl
    from codesift.corpus_stats as c
    join codesift.term_stats as t on c.tenant_id = t.tenant_id and c.tier = t.tier
    left join unnest(%(terms)s::text[], %(weights)s::float8[]) as w (term, weight)
        on t.term = w.term
    where c.tenant_id = %(tenant)s and c.tier = 'symbol' and t.term = any(%(terms)s::text[])
)
select
    s.start_line, s.end_line,
    coalesce((
        select sum(i.idf * codesift.bm25_weight(x.tf, x.dl, i.avgdl, %(k1)s, %(b)s))
        from idf as i
        join codesift.symbol_terms as x
            on x.symbol_id = s.id and x.term = i.term and x.tenant_id = s.tenant_id
    ), 0) as lexical,
    1 - (s.embedding <=> %(vector)s::vector) as similarity
from codesift.repositories as r
join codesift.files as f on f.tenant_id = r.tenant_id and f.repository_id = r.id
join codesift.code_symbols as s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
where
    r.tenant_id = %(tenant)s and r.name = %(repo)s and r.indexed_commit = %(commit)s
    and f.path = %(path)s and f.live and s.kind not in ('section', 'block')
"""
CALLERS = "select caller from codesift.callers(%s, repo => %s, ref => %s, path => %s)"
CALLEES = "select definition_symbol from codesift.callees(%s, repo => %s, ref => %s, path => %s)"
MODULE_LEVEL = ("imports", "impl", "docstring")
BUCKETS = ((1, "1"), (2, "2"), (5, "3-5"), (10, "6-10"))


def bucket(rank: int | None) -> str:
    if rank is None:
        return "none"
    return next((label for cut, label in BUCKETS if rank <= cut), "> 10")


LEXICAL, SIMILARITY = 2, 3  # IN_FILE's columns


def rank_in_file(rows: list[tuple], gold: m.GoldSymbol, column: int) -> int | None:
    """The gold definition's rank among its file's by IN_FILE's column (LEXICAL or
    SIMILARITY); None when no row is the gold's or it scores nothing."""
    own = [r for r in rows if m.overlaps(r[0], r[1], gold.start_line, gold.end_line)]
    if not own:
        return None
    best = max((r[column] or 0.0) for r in own)
    if best <= 0:
        return None
    return 1 + sum(1 for r in rows if (r[column] or 0.0) > best)


def touches_pack(conn, q, gold: m.GoldSymbol, packed_names: set) -> bool:
    """Whether the gold calls, or is called by, a definition the pack holds."""
    args = (gold.name, q.target.name, q.target.commit, gold.path)
    near = {r[0] for r in conn.execute(CALLERS, args).fetchall()}
    near |= {r[0] for r in conn.execute(CALLEES, args).fetchall()}
    return bool(near & packed_names)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gold_queries.add_arguments(ap)
    args = ap.parse_args(argv)
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    conn, queries = gold_queries.open_queries(args)
    with conn:
        for q in queries:
            tenant = q.target.tenant_id
            gold_queries.act_as(conn, q)
            rows = conn.execute(
                EXPLAIN_NAMED, (q.text, q.target.name, q.target.commit, args.budget)
            ).fetchall()
            packed_names = {r[5] for r in rows if r[4] and r[5]}
            reading = question.read(q.text)
            terms, weights = question.weighted_terms(reading)
            asked = reading.digest if question.is_long(q.text) and reading.digest else q.text
            vector = conn.execute("select codesift.embed_query(%s)::text", (asked,)).fetchone()[0]
            for gold in q.gold_symbols:
                fate, where = classify(rows, gold)
                if where != "file packed" or not gold.resolved:
                    continue
                group = counts[fate if fate in ("packed", "no candidate") else "left out"]
                group["gold symbols"] += 1
                if gold.name.split(":")[0] in MODULE_LEVEL:
                    group["module-level (no definition to rank)"] += 1
                    continue
                found = conn.execute(
                    IN_FILE,
                    {
                        "terms": terms,
                        "weights": weights,
                        "tenant": tenant,
                        "vector": vector,
                        "repo": q.target.name,
                        "commit": q.target.commit,
                        "path": gold.path,
                        "k1": Params.k1,
                        "b": Params.b,
                    },
                ).fetchall()
                lexical = rank_in_file(found, gold, LEXICAL)
                near = rank_in_file(found, gold, SIMILARITY)
                group[f"by the question's terms: {bucket(lexical)}"] += 1
                group[f"by its vector: {bucket(near)}"] += 1
                top2 = (lexical or 99) <= 2 or (near or 99) <= 2
                group["first or second in its file by either"] += top2
                group["calls or is called by a packed definition"] += touches_pack(
                    conn, q, gold, packed_names
                )
    print(f"{len(queries)} queries, {args.budget} tokens; gold symbols whose file the pack holds")
    for fate in ("packed", "left out", "no candidate"):
        group = counts.get(fate)
        if not group:
            continue
        total = group["gold symbols"]
        print(f"  {fate}: {total}")
        for label, n in sorted(group.items()):
            if label != "gold symbols":
                print(f"    {n:4d}  {n / total:6.1%}  {label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
