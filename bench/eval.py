"""Retrieval evaluation: every query of a query set through every arm, scored per arm and kind.

    .venv/bin/python bench/eval.py --queries bench/queries/express.json \\
        --repo-path /tmp/express --name express --out bench/out/express.json

Query sets (bench/queries/express.json shape): `name`, `corpus` ({repository, commit or
measured_at_commit}) and `queries`, each with `id`, `kind`, `query`, `gold_files` and
optionally `gold_symbols` ([{path, name, start_line, end_line}]). A query may carry its own
`repository` and `commit` (swebench-dev.json, whose gold symbols are `gold_spans`:
{path: [qualified names]}); each commit is indexed as a ref of its repository (the ref named
by the full commit SHA; every query asks at its ref), and `--repo-path NAME=PATH` says where
each repository's checkout is (NAME the last part of owner/name).

Each repository is indexed into its own tenant (`--tenant`, default `eval-<repository>`, so
that BM25 statistics, which are per tenant, do not mix query sets) at the set's
commit with `codesift index`, unless that ref is already indexed at that commit with
no embedding backlog (so reruns go straight to the queries); with --checkpoint FILE every
finished query is appended to FILE, and a rerun resumes after the queries it holds.

Arms: `lexical` (BM25 alone), `lexical_tsrank` (ts_rank_cd), `dense`, `hybrid` (RRF +
recency), all stage 1 (hybrid_search; files ranked by first appearance among its rows);
`pack` (pack_context at --budget: hybrid + graph + pruning + packing; files in order of
first packed row; context_recall counts the code packed, pack_reach also the names its
outline items list: bench/eval_metrics.py) and `peer` (the peer's published file-level
hybrid query, re-created over our schema: see PEER_SQL). `peer_lexical` and `peer_dense`
(its two legs alone) can be asked for with --arms.

`bm25_files` is the plain baseline: codesift._bm25_files over the question's OR terms, file
level, nothing else.

Engines (--engines): every arm but the baselines runs under each engine, the session settings
of plpython/codesift_db/pipeline/features.py: `baseline` (codesift.retrieval_off = all:
every stage for real questions off, given the harness's embedding of the whole text),
`default` (the defaults; the engine embeds the question itself, a long one's digest), `no-X`
(feature X off alone: the ablations) and `fusion-X` (fusion X). Columns are `arm` for default
and `arm@engine` for the others; engines other than baseline and default run only
--engine-arms (hybrid, pack).

Output: rich tables (per arm, per kind, per query: the rank of the first gold hit), the JSON
of issue 5 at --out ({"arms", "by_kind", "queries"}, and "by_repository" for a set over several
repositories), and with --details a larger JSON with
every arm's ranked files, packed rows and timings per query.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from codesift_db.pipeline import features  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench import eval_metrics as m  # noqa: E402

DEFAULT_ARMS = ("bm25_files", "lexical", "lexical_tsrank", "dense", "hybrid", "pack", "peer")
# pack_lexical: pack_context with dense_weight 0 (lexical + graph + packing, no vectors read)
EXTRA_ARMS = ("peer_lexical", "peer_dense", "pack_lexical")
STAGE1 = {
    # arm: (lexical_weight, dense_weight, ranking)
    "lexical": (1.0, 0.0, "bm25"),
    "lexical_tsrank": (1.0, 0.0, "ts_rank_cd"),
    "dense": (0.0, 1.0, "bm25"),
    "hybrid": (1.0, 1.0, "bm25"),
}
PEER_LEGS = {"peer": (1.0, 1.0), "peer_lexical": (1.0, 0.0), "peer_dense": (0.0, 1.0)}
# Engines: the same arms under the settings of pipeline/features.py. `baseline` has every
# feature off (RRF k = 60, the question's own embedding); `default` is the defaults; `no-X`
# switches feature X off alone (the ablations); `fusion-X` picks fusion X.
FEATURES = features.FEATURES
DEFAULT_OFF = tuple(sorted(features.DEFAULT_OFF))  # off unless codesift.retrieval_off = none
FUSIONS = features.FUSIONS
ENGINES = {
    "baseline": ("all", ""),
    "default": ("", ""),
    # each off alone against the defaults, in which file evidence is off (DEFAULT_OFF)
    **{f"no-{f}": (",".join(dict.fromkeys([f, *DEFAULT_OFF])), "") for f in FEATURES},
    "with-evidence": ("none", ""),  # every feature on, file evidence included
    # the defaults with outline items in the pack (off by default)
    "with-outline": (",".join(f for f in DEFAULT_OFF if f != "outline"), ""),
    **{f"fusion-{f}": ("", f) for f in FUSIONS},
    # the defaults with the learned ranker of each repository (--ranker-models: its model,
    # set per query as codesift.ranker_model; the other engines rank without one)
    "ranker": ("", ""),
}
ENGINE_FREE = ("peer", "peer_lexical", "peer_dense", "bm25_files")  # arms no setting changes
BM25_FILES_SQL = """
select path from codesift._bm25_files(%(tenant)s, codesift._query_terms(%(query)s),
    array[(select id from codesift.repositories
        where tenant_id = %(tenant)s and name = %(repo)s and ref = %(ref)s)],
    null, null, %(k)s, 1.2, 0.75)
"""
STAGE1_ROWS = 300  # rows asked of hybrid_search; file lists are cut to --k after dedupe

# The peer's hybrid query (bench/queries/peer_search.md) over our schema. Adaptations:
# * its file rows are codesift.files (live, one repository) joined to the blob;
# * its tsvector (file name, file path, one-line summary) is built on the fly with
#   to_tsvector('simple', ...): we store no summaries, so the summary is the peer's own
#   fallback, the first 500 characters of the file;
# * its file embedding is our blob embedding (path + the first 1,500 characters);
# * last_seen_at ("when the loader last saw the file") is the repository's indexed_at (every
#   live file was seen by the last index run), falling back to the blob's created_at.
# Kept: plainto_tsquery('simple') AND semantics, ts_rank_cd, row_number() window ranks
# (dense over every embedded file, so no HNSW walk), limit 4k per leg, full outer join,
# 1/(60 + rank) per leg (0 when missing), exp(-0.01 * age_days), order by score limit k.
PEER_SQL = """
with params as (
    select %(embedding)s::vector as qvec, plainto_tsquery('simple', %(query)s) as tsq
),
docs as (
    select f.path, b.embedding,
        to_tsvector('simple', regexp_replace(f.path, '^.*/', '') || ' ' || f.path || ' '
            || left(b.content, 500)) as tsv,
        coalesce(r.indexed_at, b.created_at) as last_seen_at
    from codesift.files f
    join codesift.repositories r on r.id = f.repository_id
    join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
    where f.live and f.tenant_id = %(tenant)s and r.name = %(repo)s and r.ref = %(ref)s
),
dense as (
    select d.path,
        row_number() over (order by d.embedding <=> p.qvec) as dense_rank,
        1 - (d.embedding <=> p.qvec) as similarity
    from docs d, params p
    where d.embedding is not null and p.qvec is not null
    order by dense_rank
    limit 4 * %(k)s
),
lexical as (
    select d.path,
        row_number() over (order by ts_rank_cd(d.tsv, p.tsq) desc) as lexical_rank,
        ts_rank_cd(d.tsv, p.tsq) as text_rank
    from docs d, params p
    where d.tsv @@ p.tsq
    order by lexical_rank
    limit 4 * %(k)s
),
fused as (
    select coalesce(dense.path, lexical.path) as path,
        %(dense_weight)s::float8 * coalesce(1.0 / (60 + dense.dense_rank), 0)::float8
            + %(lexical_weight)s::float8
            * coalesce(1.0 / (60 + lexical.lexical_rank), 0)::float8 as rrf,
        dense.dense_rank, lexical.lexical_rank
    from dense full outer join lexical on dense.path = lexical.path
)
select fused.path, fused.dense_rank, fused.lexical_rank,
    fused.rrf * exp(-0.01 * extract(epoch from now() - docs.last_seen_at) / 86400.0) as score
from fused join docs on docs.path = fused.path
where fused.rrf > 0
order by score desc, fused.path
limit %(k)s
"""

STAGE1_SQL = """
select path, start_line, end_line, symbol, kind
from codesift.hybrid_search(%(query)s, repo => %(repo)s, ref => %(ref)s, k => %(rows)s,
    query_embedding => %(embedding)s::vector, lexical_weight => %(lw)s,
    dense_weight => %(dw)s, ranking => %(ranking)s{recency})
order by rank
"""

PACK_SQL = """
select path, start_line, end_line, symbol, kind, tokens, why->'outlined'
from codesift.pack_context(%(query)s, repo => %(repo)s, ref => %(ref)s,
    token_budget => %(budget)s,
    query_embedding => %(embedding)s::vector, dense_weight => %(dw)s{recency})
order by rank
"""


def _with_recency(sql: str, recency: float | None) -> str:
    """The engine's default recency decay unless --recency-lambda overrides it."""
    return sql.replace("{recency}", "" if recency is None else ", recency_lambda => %(recency)s")


INDEXED = """
select r.id, r.indexed_commit,
    (select count(*) from codesift.live_files v
     join codesift.blobs b on b.tenant_id = v.tenant_id and b.sha = v.blob_sha
     where v.repository_id = r.id
       and (b.embedding is null or b.embedding_model is distinct from s.value)) as blobs_left,
    (select count(*) from codesift.live_files v
     join codesift.code_symbols c on c.tenant_id = v.tenant_id and c.blob_sha = v.blob_sha
     where v.repository_id = r.id
       and (c.embedding is null or c.embedding_model is distinct from s.value)) as symbols_left
from codesift.repositories r
join codesift.tenants t on t.id = r.tenant_id
left join codesift.settings s on s.key = 'embedding_model'
where t.name = %s and r.name = %s and r.ref = %s
"""

GOLD_TEXT = """
select b.content
from codesift.files f
join codesift.repositories r on r.id = f.repository_id
join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
where f.live and r.tenant_id = %s and r.name = %s and r.ref = %s and f.path = %s
"""

GOLD_LINES = """
select min(s.start_line), max(s.end_line)
from codesift.files f
join codesift.repositories r on r.id = f.repository_id
join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
where f.live and r.tenant_id = %s and r.name = %s and r.ref = %s and f.path = %s
    and s.qualified_name = %s
"""


# --- query sets -----------------------------------------------------------------------------


@dataclass
class Target:
    """One repository at one commit: its name in the database and its checkout; the commit
    (resolved to its full SHA by resolve_commit) is the name of its indexed ref."""

    name: str
    path: Path
    commit: str | None
    source: str = ""  # owner/name as the query set says
    tenant: str = ""  # filled by evaluate: --tenant or eval-<repository>
    tenant_id: int | None = None


@dataclass
class Query:
    id: str
    kind: str
    text: str
    gold_files: list[str]
    gold_symbols: list[m.GoldSymbol]
    target: Target
    extra: dict = field(default_factory=dict)


def first_chars(text: str, n: int) -> str:
    """The text's first n characters, ending at a word's end when one ends in them."""
    if len(text) <= n:
        return text
    cut = text[: n + 1]
    end = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:end] if end > 0 else cut[:n]).rstrip()


def _short(repository: str) -> str:
    return repository.rstrip("/").split("/")[-1]


def parse_repo_paths(values: list[str]) -> tuple[dict[str, Path], Path | None]:
    """--repo-path values: NAME=PATH pairs and at most one bare PATH."""
    named: dict[str, Path] = {}
    bare: Path | None = None
    for v in values or []:
        name, sep, path = v.partition("=")
        if sep and name and not os.path.exists(v):
            named[name] = Path(path).expanduser()
            named[_short(name)] = Path(path).expanduser()
        elif bare is None:
            bare = Path(v).expanduser()
        else:
            raise SystemExit(f"--repo-path {v}: give NAME=PATH when there are several")
    return named, bare


def _gold_symbols(q: dict) -> list[m.GoldSymbol]:
    out = [
        m.GoldSymbol(s["path"], s.get("name") or "", s.get("start_line"), s.get("end_line"))
        for s in q.get("gold_symbols") or []
    ]
    for path, names in (q.get("gold_spans") or {}).items():
        out.extend(m.GoldSymbol(path, n) for n in names)
    return out


def load_queries(
    doc: dict,
    repo_paths: list[str] | None,
    name: str | None = None,
    skip_missing: bool = False,
    skipped: dict | None = None,
) -> list[Query]:
    """The set's queries, each tied to the repository and commit it is asked against.

    With skip_missing, queries on repositories without a checkout are left out (counted in
    skipped); otherwise they are an error."""
    skipped = {} if skipped is None else skipped
    named, bare = parse_repo_paths(repo_paths or [])
    corpus = doc.get("corpus") or {}
    default_repo = corpus.get("repository")
    default_commit = corpus.get("commit") or corpus.get("measured_at_commit")
    targets: dict[tuple, Target] = {}
    queries = []
    for q in doc["queries"]:
        repository = q.get("repository") or q.get("repo") or default_repo
        own_commit = q.get("commit")
        commit = own_commit or default_commit
        short = _short(repository) if repository else None
        path = named.get(repository or "") or named.get(short or "") or bare
        if path is None and skip_missing:
            skipped[repository] = skipped.get(repository, 0) + 1
            continue
        if path is None:
            raise SystemExit(
                f"query {q['id']}: no checkout for repository {repository!r}: "
                f"pass --repo-path {short or 'NAME'}=PATH"
            )
        # each commit is a ref of its repository (named by the full commit it resolves to)
        db_name = name or short or Path(path).name
        key = (db_name, commit)
        if key not in targets:
            targets[key] = Target(db_name, Path(path), commit, repository or "")
        queries.append(
            Query(
                id=q["id"],
                kind=q.get("kind") or "default",
                text=q["query"],
                gold_files=list(q.get("gold_files") or []),
                gold_symbols=_gold_symbols(q),
                target=targets[key],
            )
        )
    return queries


# --- indexing -------------------------------------------------------------------------------


def resolve_commit(target: Target) -> str:
    """The full SHA of the target's commit (HEAD when the set names none), kept on it."""
    from codesift import git

    commit = git.resolve_commit(git.repo_root(target.path), target.commit or "HEAD")
    if target.commit and not commit.startswith(target.commit):
        raise SystemExit(f"{target.path}: {target.commit} resolves to {commit}")
    target.commit = commit
    return commit


def ensure_indexed(
    dsn: str, target: Target, tenant: str, embed: bool = True, progress: bool = True
) -> str:
    """Index target into tenant at its commit unless it already is; returns what was done."""
    from codesift import git
    from codesift.indexer import index_repository

    root = git.repo_root(target.path)
    commit = resolve_commit(target)
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(INDEXED, (tenant, target.name, commit)).fetchone()
        if row and row[1] == commit and (not embed or row[2] + row[3] == 0):
            return "already indexed"
        start = time.monotonic()
        summary = index_repository(
            conn,
            root,
            name=target.name,
            tenant=tenant,
            ref=commit,
            embed=embed,
            show_progress=progress,
        )
    return (
        f"indexed {summary.files} files, {summary.new_blobs} new blobs, "
        f"{summary.embedded.symbols} symbols + {summary.embedded.blobs} files embedded "
        f"in {time.monotonic() - start:.0f}s"
    )


# SWE-bench's gold spans name a file's import statements `imports` (`imports:N`)
IMPORT_SPAN = re.compile(r"imports(:\d+)?")
IMPORT_LINE = re.compile(r"(import|from)\s")


def import_lines(text: str) -> tuple[int | None, int | None]:
    """First and last line of a file's top-level import statements (a parenthesised
    import's continuation lines included), or (None, None)."""
    lo = hi = None
    open_paren = False
    for number, line in enumerate(text.split("\n"), 1):
        if open_paren or IMPORT_LINE.match(line):
            lo = lo or number
            hi = number
            open_paren = (open_paren or "(" in line) and ")" not in line
    return lo, hi


def _gold_range(conn, q: Query, g: m.GoldSymbol) -> tuple[int | None, int | None]:
    key = (q.target.tenant_id, q.target.name, q.target.commit, g.path)
    if IMPORT_SPAN.fullmatch(g.name):
        row = conn.execute(GOLD_TEXT, key).fetchone()
        return import_lines(row[0]) if row and row[0] else (None, None)
    return conn.execute(GOLD_LINES, (*key, g.name)).fetchone()


def resolve_gold_lines(conn, queries: list[Query]) -> int:
    """Give gold symbols known only by name their line range from the index (the import
    statements for `imports`); count misses."""
    missing = 0
    for q in queries:
        resolved = []
        for g in q.gold_symbols:
            if not g.resolved:
                lo, hi = _gold_range(conn, q, g)
                if lo is not None:
                    g = m.GoldSymbol(g.path, g.name, lo, hi)
                else:
                    missing += 1
            resolved.append(g)
        q.gold_symbols = resolved
    return missing


EXPLAIN_SQL = """
select candidate, path, start_line, end_line, symbol, kind, lexical_rank, dense_rank, rrf,
    graph_hop, score, decision, pruned_by, packed, tokens
from codesift.explain_context(%(query)s, repo => %(repo)s, ref => %(ref)s,
    token_budget => %(budget)s,
    query_embedding => %(embedding)s::vector{recency})
order by candidate
"""


def explain_miss(
    conn, q: Query, embedding: str | None, budget: int, recency: float | None, top: int = 8
) -> dict:
    """explain_context for one query: the top candidates and the best one on each gold file."""
    cols = [
        "candidate",
        "path",
        "start_line",
        "end_line",
        "symbol",
        "kind",
        "lexical_rank",
        "dense_rank",
        "rrf",
        "graph_hop",
        "score",
        "decision",
        "pruned_by",
        "packed",
        "tokens",
    ]
    rows = [
        dict(zip(cols, r, strict=True))
        for r in conn.execute(
            _with_recency(EXPLAIN_SQL, recency),
            {
                "query": q.text,
                "repo": q.target.name,
                "ref": q.target.commit,
                "budget": budget,
                "embedding": embedding,
                "recency": recency,
            },
        ).fetchall()
    ]
    gold = {}
    for r in rows:
        if r["path"] in q.gold_files and r["path"] not in gold:
            gold[r["path"]] = r
    return {"candidates": len(rows), "top": rows[:top], "gold": gold}


# --- arms -----------------------------------------------------------------------------------


def _rows(cur_rows) -> list[m.Row]:
    """Rows of (path, start_line, end_line, symbol, kind[, tokens[, outlined names]])."""
    return [
        m.Row(
            r[0],
            r[1],
            r[2],
            r[4],
            r[3],
            r[5] if len(r) > 5 else None,
            tuple(m.Listed(**e) for e in r[6] or ()) if len(r) > 6 else (),
        )
        for r in cur_rows
    ]


def run_arm(conn, arm: str, q: Query, embedding: str | None, tenant_id: int, args) -> list:
    """The rows one arm returns for one query."""
    common = {
        "query": q.text,
        "repo": q.target.name,
        "ref": q.target.commit,
        "embedding": embedding,
        "recency": args.recency_lambda,
    }
    if arm in STAGE1:
        lw, dw, ranking = STAGE1[arm]
        rows = conn.execute(
            _with_recency(STAGE1_SQL, args.recency_lambda),
            {**common, "rows": STAGE1_ROWS, "lw": lw, "dw": dw, "ranking": ranking},
        ).fetchall()
        return _rows(rows)
    if arm in ("pack", "pack_lexical"):
        return _rows(
            conn.execute(
                _with_recency(PACK_SQL, args.recency_lambda),
                {**common, "budget": args.budget, "dw": 1.0 if arm == "pack" else 0.0},
            ).fetchall()
        )
    if arm == "bm25_files":
        rows = conn.execute(BM25_FILES_SQL, {**common, "tenant": tenant_id, "k": args.k}).fetchall()
        return [m.Row(r[0], kind="file") for r in rows]
    if arm in PEER_LEGS:
        lw, dw = PEER_LEGS[arm]
        rows = conn.execute(
            PEER_SQL,
            {
                **common,
                "tenant": tenant_id,
                "k": args.k,
                "lexical_weight": lw,
                "dense_weight": dw,
            },
        ).fetchall()
        return [m.Row(r[0], kind="file") for r in rows]
    raise SystemExit(f"unknown arm {arm!r} (known: {', '.join(DEFAULT_ARMS + EXTRA_ARMS)})")


@dataclass
class Options:
    arms: tuple = DEFAULT_ARMS
    budget: int = 4000
    k: int = 20
    tenant: str | None = None  # None: eval-<repository>
    embed: bool = True
    index: bool = True
    progress: bool = True
    explain: bool = False
    recency_lambda: float | None = None  # None: the engine's default (0.0001)
    engines: tuple = ("baseline", "default")
    engine_arms: tuple | None = (
        None  # arms run under engines other than baseline/default (None: all)
    )
    checkpoint: str | None = None  # JSON lines of finished queries: a rerun resumes after them
    ranker_models: dict = field(default_factory=dict)  # repository -> model (engine ranker)


def _read_checkpoint(path: str | None, labels: list) -> dict[str, tuple[dict, dict]]:
    """Queries an earlier run finished: id -> (arm label -> QueryResult, details), from the
    JSON lines at path, where every line is one query with every arm of this run."""
    if not path or not Path(path).exists():
        return {}
    wanted = {label for label, _, _ in labels}
    done = {}
    for line in Path(path).read_text().splitlines():
        try:
            entry = json.loads(line)
            if set(entry["results"]) >= wanted:
                results = {
                    k: m.QueryResult(**v) for k, v in entry["results"].items() if k in wanted
                }
                done[entry["id"]] = (results, entry["info"])
        except (json.JSONDecodeError, TypeError, KeyError, AttributeError):
            continue  # a line a crash cut short, or not one of ours: that query runs again
    return done


def _write_checkpoint(path: str | None, qid: str, results: dict, info: dict) -> None:
    if path:
        line = {"id": qid, "results": {k: asdict(v) for k, v in results.items()}, "info": info}
        with open(path, "a") as f:
            f.write(json.dumps(line, default=str) + "\n")


def arm_labels(opts: Options) -> list[tuple[str, str, str]]:
    """(label, arm, engine) per column: `arm` under `default`, `arm@engine` under the others;
    arms no engine setting changes run once."""
    labels = []
    for arm in opts.arms:
        if arm in ENGINE_FREE:
            labels.append((arm, arm, "default"))
            continue
        for engine in opts.engines:
            if (
                engine not in ("baseline", "default")
                and opts.engine_arms
                and arm not in opts.engine_arms
            ):
                continue
            labels.append((arm if engine == "default" else f"{arm}@{engine}", arm, engine))
    return labels


def engine_settings(engine: str) -> tuple[str, str]:
    """(codesift.retrieval_off, codesift.fusion) of an engine; `no-X+Y` switches X and Y off."""
    if engine in ENGINES:
        return ENGINES[engine]
    if engine.startswith("no-") and all(f in FEATURES for f in engine[3:].split("+")):
        return ",".join(dict.fromkeys([*engine[3:].split("+"), *DEFAULT_OFF])), ""
    raise SystemExit(f"unknown engine {engine!r}; known: {', '.join(ENGINES)} or no-X+Y")


def set_engine(conn, engine: str) -> None:
    """The session settings that select an engine (pipeline/features.py)."""
    off, fusion = engine_settings(engine)
    conn.execute("select set_config('codesift.retrieval_off', %s, false)", (off,))
    conn.execute("select set_config('codesift.fusion', %s, false)", (fusion,))


def set_ranker_model(conn, engine: str, q: Query, opts: Options) -> None:
    """The `ranker` engine's model of the query's repository (none for the other engines)."""
    model = (
        opts.ranker_models.get(_short(q.target.source or q.target.name))
        if engine == "ranker"
        else None
    )
    if engine == "ranker" and model is None:
        raise SystemExit(f"no ranker model for {q.target.name} in --ranker-models")
    conn.execute(
        "select set_config('codesift.ranker_model', %s, false)",
        (json.dumps(model) if model else "",),
    )


def name_tenant(target: Target, pattern: str | None = None) -> None:
    """The target's tenant (--tenant, `{repository}` filled in; eval-<repository> by default)
    and its full commit."""
    tenant = pattern or "eval-{repository}"
    target.tenant = tenant.replace("{repository}", _short(target.source or target.name))
    resolve_commit(target)


def find_tenants(conn, targets) -> None:
    """Each target's tenant_id, from its tenant's name; an error when it was never indexed."""
    for target in targets:
        row = conn.execute(
            "select id from codesift.tenants where name = %s", (target.tenant,)
        ).fetchone()
        if row is None:
            raise SystemExit(f"tenant {target.tenant!r} does not exist: run without --no-index")
        target.tenant_id = row[0]


def evaluate(dsn: str, queries: list[Query], opts: Options, log=print) -> tuple[dict, dict]:
    """Index what is needed, run every query through every arm; (report, details)."""
    targets = {id(q.target): q.target for q in queries}.values()
    for target in targets:
        name_tenant(target, opts.tenant)
        if opts.index:
            done = ensure_indexed(dsn, target, target.tenant, opts.embed, opts.progress)
            log(f"{target.name} @ {target.commit[:12]} (tenant {target.tenant}): {done}")
    per_query: dict[str, dict[str, m.QueryResult]] = {}
    details: dict = {"queries": {}}
    labels = arm_labels(opts)
    with psycopg.connect(dsn, autocommit=True) as conn:
        find_tenants(conn, targets)
        missing = resolve_gold_lines(conn, queries)
        if missing:
            log(f"{missing} gold symbols not found in the index: matched by name only")
        current = None
        done = _read_checkpoint(opts.checkpoint, labels)
        for q in queries:
            if q.id in done:  # finished by an earlier run (--checkpoint)
                per_query[q.id], details["queries"][q.id] = done[q.id]
                continue
            tenant_id = q.target.tenant_id
            if tenant_id != current:
                conn.execute(
                    "select set_config('app.current_tenant_id', %s, false)", (str(tenant_id),)
                )
                current = tenant_id
            start = time.monotonic()
            set_engine(conn, "baseline")
            embedding = conn.execute("select codesift.embed_query(%s)::text", (q.text,)).fetchone()[
                0
            ]
            embed_ms = (time.monotonic() - start) * 1000
            per_query[q.id] = {}
            info = {
                "gold_files": q.gold_files,
                "gold_symbols": [
                    f"{g.path}:{g.start_line}-{g.end_line} {g.name}" for g in q.gold_symbols
                ],
                "kind": q.kind,
                "repository": q.target.name,
                "embed_ms": round(embed_ms, 1),
                "arms": {},
            }
            for label, arm, engine in labels:
                set_engine(conn, engine)
                set_ranker_model(conn, engine, q, opts)
                # the engine embeds the question itself (a long one's digest) unless it reads
                # questions as the baseline does: then the harness's embedding of the whole text
                own = (
                    engine == "baseline"
                    or "question" in engine_settings(engine)[0].split(",")
                    or arm in ENGINE_FREE
                )
                start = time.monotonic()
                rows = run_arm(conn, arm, q, embedding if own else None, tenant_id, opts)
                ms = (time.monotonic() - start) * 1000
                result = m.score_query(
                    rows,
                    q.gold_files,
                    q.gold_symbols,
                    k=opts.k,
                    packed=arm in ("pack", "pack_lexical"),
                    symbol_level=not arm.startswith("peer"),
                )
                per_query[q.id][label] = result
                info["arms"][label] = {
                    "first_hit_rank": result.rank,
                    "first_hit_rank_lenient": result.rank_lenient,
                    "files": result.files[:10],
                    "symbol_hit": result.symbol_hit,
                    "context_recall": result.context_recall,
                    "pack_reach": result.pack_reach,
                    "tokens": result.tokens,
                    "ms": round(ms, 1),
                }
                if arm in ("pack", "pack_lexical"):
                    info["arms"][label]["packed"] = [
                        f"{r.path}:{r.start_line}-{r.end_line} {r.symbol or r.kind} ({r.tokens})"
                        for r in rows
                    ]
            if opts.explain and any(
                arm in info["arms"] and info["arms"][arm]["first_hit_rank"] != 1
                for arm in ("hybrid", "pack")
            ):
                set_engine(conn, "default")
                info["explain"] = explain_miss(conn, q, None, opts.budget, opts.recency_lambda)
            details["queries"][q.id] = info
            _write_checkpoint(opts.checkpoint, q.id, per_query[q.id], info)
    kinds = {q.id: q.kind for q in queries}
    result = m.report(per_query, kinds, tuple(label for label, _, _ in labels))
    repositories = {q.id: q.target.name for q in queries}
    if len(set(repositories.values())) > 1:
        result["by_repository"] = m.report(
            per_query, repositories, tuple(label for label, _, _ in labels)
        )["by_kind"]
    details["context_hit"] = m.context_hit_rate(
        [per_query[q.id]["pack"] for q in queries if "pack" in per_query[q.id]]
    )
    return result, details


# --- output ---------------------------------------------------------------------------------


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer() and value > 1:
        return f"{value:.0f}"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def metrics_table(title: str, arms: dict) -> Table:
    table = Table(title=title)
    table.add_column("arm")
    for key in m.METRIC_KEYS:
        table.add_column(key, justify="right")
    for arm, metrics in arms.items():
        table.add_row(
            arm,
            *(
                _fmt(round(metrics[k]) if k == "tokens" and metrics[k] else metrics[k])
                for k in m.METRIC_KEYS
            ),
        )
    return table


def print_report(console: Console, name: str, report: dict, details: dict, queries, peer_results):
    console.print(metrics_table(f"{name}: all {len(report['queries'])} queries", report["arms"]))
    for kind, arms in report["by_kind"].items():
        n = sum(1 for q in queries if q.kind == kind)
        console.print(metrics_table(f"{name}: kind {kind} ({n} queries)", arms))
    for repository, arms in report.get("by_repository", {}).items():
        n = sum(1 for q in queries if q.target.name == repository)
        console.print(metrics_table(f"{name}: repository {repository} ({n} queries)", arms))
    if details.get("context_hit") is not None:
        console.print(
            f"pack: at least one gold file in the pack for {details['context_hit']:.0%} of queries"
        )
    if peer_results:
        table = Table(title="the peer's published numbers (lenient matching)")
        table.add_column("arm")
        keys = sorted({k for v in peer_results.values() for k in v})
        for key in keys:
            table.add_column(key, justify="right")
        for arm, values in peer_results.items():
            table.add_row(arm, *(_fmt(values.get(k)) for k in keys))
        console.print(table)
    arms = list(report["arms"])
    table = Table(title="rank of the first gold file per arm (strict; - = not in the top k)")
    table.add_column("query")
    table.add_column("kind")
    for arm in arms:
        table.add_column(arm, justify="right")
    table.add_column("hybrid top 3")
    for entry in report["queries"]:
        info = details["queries"][entry["id"]]
        top = info["arms"].get("hybrid", {}).get("files", [])[:3]
        table.add_row(
            entry["id"],
            info["kind"],
            *(_fmt(entry["first_hit_rank"].get(arm)) for arm in arms),
            ", ".join(top),
        )
    console.print(table)
    for entry in report["queries"]:
        info = details["queries"][entry["id"]]
        if "explain" in info:
            print_explain(console, entry["id"], info)


def _cand(r: dict) -> list[str]:
    where = f"{r['path']}:{r['start_line']}-{r['end_line']}"
    return [
        str(r["candidate"]),
        where,
        r["symbol"] or r["kind"],
        _fmt(r["lexical_rank"]),
        _fmt(r["dense_rank"]),
        _fmt(r["graph_hop"]),
        f"{r['score']:.4f}",
        (r["decision"] or "") + (f" by {r['pruned_by']}" if r["pruned_by"] else ""),
        "yes" if r["packed"] else "",
        _fmt(r["tokens"]),
    ]


def print_explain(console: Console, qid: str, info: dict) -> None:
    ex = info["explain"]
    ranks = {a: v["first_hit_rank"] for a, v in info["arms"].items()}
    table = Table(
        title=f"explain_context for {qid} ({ex['candidates']} candidates; first gold rank "
        f"hybrid {_fmt(ranks.get('hybrid'))}, pack {_fmt(ranks.get('pack'))})"
    )
    for col in ("#", "where", "symbol", "lex", "dense", "hop", "score", "decision", "packed"):
        table.add_column(col)
    table.add_column("tok", justify="right")
    for r in ex["top"]:
        table.add_row(*_cand(r))
    for r in ex["gold"].values():
        if r not in ex["top"]:
            table.add_row(*_cand(r), style="bold")
    missing = [p for p in info.get("gold_files", []) if p not in ex["gold"]]
    console.print(table)
    if missing:
        console.print(f"  gold files never a candidate: {', '.join(missing)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Evaluate retrieval arms on a query set with gold files (issue 5).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--queries", required=True, help="query set JSON (express.json shape)")
    parser.add_argument(
        "--repo-path",
        "--repo",
        action="append",
        default=[],
        metavar="[NAME=]PATH",
        help="git checkout of the repository (NAME=PATH once per repository for multi-repo sets)",
    )
    parser.add_argument("--name", help="repository name in the database (default: from corpus)")
    parser.add_argument(
        "--tenant",
        help="tenant to index into (default: eval-{repository}, one per repository; "
        "{repository} is replaced by the repository's name)",
    )
    parser.add_argument(
        "--arms",
        default=",".join(DEFAULT_ARMS),
        help=f"comma-separated arms (default: all of {', '.join(DEFAULT_ARMS)}; "
        f"also {', '.join(EXTRA_ARMS)})",
    )
    parser.add_argument("--budget", type=int, default=4000, help="pack token budget")
    parser.add_argument("--k", type=int, default=20, help="files kept per arm (default 20)")
    parser.add_argument("--out", "--json", dest="out", help="write the issue-5 JSON here")
    parser.add_argument("--details", help="write per-query details (files, packs, timings) here")
    parser.add_argument("--dsn", help="database (default: $CODESIFT_DSN or the embedded server)")
    parser.add_argument("--limit", type=int, help="only the first N queries")
    parser.add_argument("--ids", help="only these comma-separated query ids")
    parser.add_argument(
        "--first-chars",
        type=int,
        metavar="N",
        help="ask each question cut to its first N characters, at a word's end (an issue "
        "as briefly as an agent may pass it)",
    )
    parser.add_argument(
        "--recency-lambda",
        type=float,
        help="recency decay passed to hybrid_search/pack_context (default: the engine's 0.0001)",
    )
    parser.add_argument(
        "--engines",
        default="baseline,default",
        help="comma-separated engines each arm runs under (default baseline,default; also "
        + ", ".join(e for e in ENGINES if e not in ("baseline", "default"))
        + ")",
    )
    parser.add_argument(
        "--engine-arms",
        default="hybrid,pack",
        help="arms run under the engines other than baseline and default (default hybrid,pack)",
    )
    parser.add_argument(
        "--checkpoint",
        metavar="FILE",
        help="append each finished query to FILE (JSON lines); a rerun with the same FILE and "
        "arms skips the queries it holds (resume after a crash or a stop)",
    )
    parser.add_argument(
        "--ranker-models",
        metavar="FILE",
        help="JSON {repository: model} for the ranker engine (bench/ranker_bench.py --models)",
    )
    parser.add_argument("--no-index", action="store_true", help="do not index, query as is")
    parser.add_argument("--no-embed", action="store_true", help="index without embeddings")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="for queries where hybrid or pack missed rank 1, print explain_context's top "
        "candidates and the best candidate on each gold file",
    )
    args = parser.parse_args(argv)
    if args.first_chars is not None and args.first_chars < 1:
        parser.error(f"--first-chars must be at least 1 (got {args.first_chars})")

    from codesift.db import current_dsn

    dsn = args.dsn or current_dsn()
    doc = json.loads(Path(args.queries).read_text())
    if args.ids:
        wanted = set(args.ids.split(","))
        doc["queries"] = [q for q in doc["queries"] if q["id"] in wanted]
    skipped: dict = {}
    named, bare = parse_repo_paths(args.repo_path)
    queries = load_queries(
        doc, args.repo_path, args.name, skip_missing=bool(named) and bare is None, skipped=skipped
    )
    if args.limit:
        queries = queries[: args.limit]
    if args.first_chars:
        for q in queries:
            q.text = first_chars(q.text, args.first_chars)
    if skipped:
        print(
            "skipped queries of repositories without --repo-path: "
            + ", ".join(f"{r} ({n})" for r, n in skipped.items())
        )
    if not queries:
        raise SystemExit("no queries selected")
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    unknown = [a for a in arms if a not in DEFAULT_ARMS + EXTRA_ARMS]
    if unknown:
        parser.error(f"unknown arms: {', '.join(unknown)}")
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    for e in engines:
        engine_settings(e)
    console = Console(width=None if sys.stdout.isatty() else 180)
    opts = Options(
        arms=arms,
        budget=args.budget,
        k=args.k,
        tenant=args.tenant,
        embed=not args.no_embed,
        index=not args.no_index,
        progress=sys.stderr.isatty(),
        explain=args.explain,
        recency_lambda=args.recency_lambda,
        engines=engines,
        engine_arms=tuple(a for a in args.engine_arms.split(",") if a),
        checkpoint=args.checkpoint,
        ranker_models=json.loads(Path(args.ranker_models).read_text())
        if args.ranker_models
        else {},
    )
    started = time.monotonic()
    report, details = evaluate(dsn, queries, opts, log=console.print)
    print_report(
        console, doc.get("name", "eval"), report, details, queries, doc.get("peer_results")
    )
    console.print(f"{len(queries)} queries x {len(arms)} arms in {time.monotonic() - started:.0f}s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        console.print(f"wrote {args.out}")
    if args.details:
        Path(args.details).parent.mkdir(parents=True, exist_ok=True)
        Path(args.details).write_text(json.dumps(details, indent=1, default=str) + "\n")
        console.print(f"wrote {args.details}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
