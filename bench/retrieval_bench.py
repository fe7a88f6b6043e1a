"""Retrieval latency and HNSW recall at 10k, 100k and 1M symbols (prints only, never asserts).

    .venv/bin/python bench/retrieval_bench.py [--sizes 10000,100000,1000000] [--reps 5]

Data. A real repository (express: --repo, cloned from --mirror when missing) is
indexed with embeddings once into a base database (<db>_base, kept for re-runs; --rebuild-base
re-indexes it). Each run clones it into a fresh <db> and scales it up by replicating the real
rows under new paths (copies/NNNN/<path>) of the same repository: blobs, live files, symbols,
BM25 postings, import edges, with new blob SHAs and small Gaussian noise added to every
embedding (--noise is the expected norm of the noise added to a unit vector). The rows are
inserted directly with SQL (the extraction trigger is bypassed), then term/corpus statistics
are updated so BM25 sees them, secondary indexes (HNSW last) are rebuilt after the bulk load,
and the tables are vacuumed and analysed. Sizes are cumulative within one run.

Copies tie: every query term's postings repeat once per copy, so the BM25 legs read as deep
as they may for every term. --distractors PACKAGES builds the base from real, distinct code
instead: the repository's files at HEAD and the source distributions of those PyPI packages
beside them, indexed as one repository (e.g. express with Django and SymPy: about 100k
symbols, no copies at 100k). Give it a --db of its own: a base's database comment records
what it holds, and a base of the other corpus is refused. The documents are embedded by the
engine CODESIFT_EMBED_ENGINE picks (onnx-int8 is the quicker).

Measured at each size, side by side, with the express-10 questions (bench/queries/express.json),
interleaved: each timed round runs every configuration on one question before the next
question, so that this shared host's drift in speed (up to 1.5x within an hour) falls on all
of them alike (the ts_rank_cd leg, seconds per call, runs after the others):
  pack_context p50/p95, warm, as the application role (RLS on): with a precomputed
    query_embedding (embedding excluded), and letting the database embed the text;
    also as superuser (RLS bypassed) for the cost of row-level security;
  each leg function alone (bm25/ts_rank_cd/dense over symbols and files) and hybrid_search,
    to show where pack_context time goes; the peer's published hybrid query
    (bench/queries/peer_search.md) re-created over the same rows;
  bm25_symbols against exhaustive BM25 (every posting of every term summed): top-20 overlap;
  HNSW recall@10 against exact search (index scans off) at pgvector's default ef_search
    (40), and of the engine's dense_symbols leg (ef_search 100, iterative scan);
  once: embed_query cold (first call in a new connection) and warm.
At the size nearest --explain-at (100k) the slowest question's pack_context is run once with
auto_explain (nested statements, ANALYZE, BUFFERS); every statement's time is printed and the
slowest plans are written to --explain-out.

A size whose predicted load time exceeds what is left of --budget-min is skipped and reported
as not reached. The work database is dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import benchdb
import psycopg
from codesift_db.pipeline.legs import FILE_DEPTH, SYMBOL_DEPTH
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MIRROR = "https://github.com/expressjs/express.git"  # or a local mirror: --mirror PATH
DEFAULT_QUERIES = ROOT / "bench" / "queries" / "express.json"
# extra questions for recall (the express-10 ones come first)
RECALL_EXTRA = [
    "how are query string parameters parsed",
    "set a response header",
    "redirect the client to another url",
    "serve static files from a directory",
    "send a file as an attachment download",
    "parse the request body as json",
    "mount a sub application on a path",
    "handle errors thrown in middleware",
    "read the client ip address behind a proxy",
    "register a route parameter callback",
    "check whether the request is fresh or stale for caching",
    "set the content type of the response",
    "render an html page from a template with local variables",
    "enable or disable an application setting",
    "listen for http connections on a port",
    "append a value to the vary header",
    "get the hostname of the request",
    "generate an etag for the response body",
    "jsonp callback response",
    "test that a 404 is returned for unknown routes",
]
TABLES = [
    "blobs",
    "files",
    "code_symbols",
    "symbol_terms",
    "blob_terms",
    "blob_imports",
    "file_edges",
]
BENCH = "codesift_bench"  # helper schema inside the work database


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# --- databases ------------------------------------------------------------------------------


def corpus(args) -> str:
    """What the base holds, as its database's comment records it."""
    return f"{args.name} with {args.distractors}" if args.distractors else f"{args.name} copies"


def build_base(args) -> None:
    """Index the real repository with embeddings into <db>_base (kept between runs)."""
    base = f"{args.db}_base"
    if benchdb.exists(base) and not args.rebuild_base:
        with benchdb.connect(base) as c:
            ok = c.execute(
                "select count(*) from codesift.repositories where name = %s and indexed_commit"
                " is not null",
                (args.name,),
            ).fetchone()[0]
            held = c.execute(
                "select shobj_description(oid, 'pg_database') from pg_database"
                " where datname = current_database()"
            ).fetchone()[0]
        held = held or f"{args.name} copies"  # a base made before bases were labelled
        if held != corpus(args):
            raise SystemExit(
                f"{base} holds {held}, not {corpus(args)}: pass another --db, or"
                " --rebuild-base to index it again"
            )
        if ok:
            log(f"reusing {base} (--rebuild-base to re-index)")
            return
    if not (args.repo / ".git").exists():
        log(f"cloning {args.mirror} -> {args.repo}")
        subprocess.run(["git", "clone", "-q", args.mirror, str(args.repo)], check=True)
    benchdb.create(base)
    benchdb.migrate(base)
    from codesift.indexer import index_repository

    with tempfile.TemporaryDirectory() as tmp:
        tree = with_distractors(args, Path(tmp)) if args.distractors else args.repo
        log(f"indexing {tree} with embeddings into {base} (once)")
        t0 = time.perf_counter()
        with benchdb.connect(base) as conn:
            s = index_repository(
                conn, tree, name=args.name, tenant=args.tenant, show_progress=False
            )
    with benchdb.connect(base, autocommit=True) as conn:
        conn.execute(
            sql.SQL("comment on database {} is {}").format(
                sql.Identifier(base), sql.Literal(corpus(args))
            )
        )
    log(
        f"indexed {s.files} files, {s.new_symbols} symbols, embedded "
        f"{s.embedded.symbols}+{s.embedded.blobs} in {time.perf_counter() - t0:.0f} s"
    )


def engine_state() -> str:
    """The commit of the checkout and which engine files differ from it (read-only git)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "sql", "plpython", "loader"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    changed = [line[3:] for line in dirty if line.strip()]
    return head[:70] + (f"; uncommitted: {', '.join(changed)}" if changed else "")


# --- scaling by replication -----------------------------------------------------------------


@dataclass
class Scale:
    tenant: int
    repo_id: int
    model: str
    base_symbols: int
    stride: int
    copies: int = 0
    index_defs: list = field(default_factory=list)


def setup_helpers(conn, args) -> Scale:
    tenant, repo_id = conn.execute(
        "select r.tenant_id, r.id from codesift.repositories r join codesift.tenants t"
        " on t.id = r.tenant_id where t.name = %s and r.name = %s",
        (args.tenant, args.name),
    ).fetchone()
    model = conn.execute(
        "select value from codesift.settings where key = 'embedding_model'"
    ).fetchone()[0]
    dim = int(
        conn.execute("select value from codesift.settings where key = 'embedding_dim'").fetchone()[
            0
        ]
    )
    n_sym, max_id = conn.execute(
        "select count(*), max(id) from codesift.code_symbols where tenant_id = %s", (tenant,)
    ).fetchone()
    stride = 10 ** len(str(max_id))
    sigma = args.noise / math.sqrt(dim)
    conn.execute(
        f"""
        create schema {BENCH};
        grant usage on schema {BENCH} to codesift_app;
        create function {BENCH}.copy_sha(sha text, n integer) returns text
        language sql immutable parallel safe
        return substr(encode(sha256(convert_to(sha || ':' || n, 'UTF8')), 'hex'), 1, 40);
        create table {BENCH}.base_blobs as
            select sha from codesift.blobs where tenant_id = {tenant};
        create table {BENCH}.base_files as
            select path from codesift.files where repository_id = {repo_id};
        create table {BENCH}.base_edges as
            select id from codesift.file_edges where repository_id = {repo_id};
        create table {BENCH}.base_term_stats as
            select * from codesift.term_stats where tenant_id = {tenant};
        create table {BENCH}.base_corpus_stats as
            select * from codesift.corpus_stats where tenant_id = {tenant};
        select setseed(0.42);
        create table {BENCH}.noise as
            select i, (
                select array_agg(
                    {sigma} * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())
                )
                from generate_series(1, {dim}) where i >= 0
            )::vector({dim}) as v
            from generate_series(0, 4095) as i;
        create unique index on {BENCH}.noise (i);
        """
    )
    conn.execute(f"alter table {BENCH}.base_blobs add primary key (sha)")
    # the application role must read every relation the pipeline reads; an install that
    # forgot a grant is patched here (in the bench database only) and reported. MCP tokens
    # are read only through their security-definer lookup, never by the application role.
    missing = [
        r[0]
        for r in conn.execute(
            "select c.oid::regclass::text from pg_class c join pg_namespace n"
            " on n.oid = c.relnamespace where n.nspname = 'codesift' and c.relkind in ('r', 'v')"
            " and c.relname not in ('schema_migrations', 'mcp_tokens')"
            " and not has_table_privilege('codesift_app', c.oid, 'select')"
        ).fetchall()
    ]
    for rel in missing:
        conn.execute(f"grant select on {rel} to codesift_app")
    if missing:
        log(f"NOTE: codesift_app lacked select on {', '.join(missing)}: granted in the bench db")
    args.granted = missing
    return Scale(tenant, repo_id, model, n_sym, stride)


def columns(conn, table: str) -> list[tuple[str, str]]:
    return conn.execute(
        "select column_name, is_identity from information_schema.columns"
        " where table_schema = 'codesift' and table_name = %s and is_generated = 'NEVER'"
        " order by ordinal_position",
        (table,),
    ).fetchall()


def copy_statement(conn, table: str, sc: Scale) -> str:
    """INSERT ... SELECT copying the base rows of `table` for copies $a..$b (every column,
    so columns added by later migrations are carried over as they are)."""
    prefix = "(format('copies/%%s/', lpad(g.n::text, 4, '0')))"
    perturbed = "case when x.embedding is null then null else l2_normalize(x.embedding + nz.v) end"
    noise_join = (
        f"left join {BENCH}.noise nz"
        " on nz.i = (hashtext(x.{key}::text)::bigint + g.n * 7919) & 4095"
    )
    overrides: dict[str, str] = {}
    where = ""
    join = ""
    identity = ""
    if table == "blobs":
        overrides = {
            "sha": f"{BENCH}.copy_sha(x.sha, g.n)",
            "path_hint": f"{prefix} || x.path_hint",
            "embedding": perturbed,
        }
        join = noise_join.format(key="sha")
        where = f"x.tenant_id = {sc.tenant} and x.sha in (select sha from {BENCH}.base_blobs)"
    elif table == "files":
        overrides = {
            "path": f"{prefix} || x.path",
            "blob_sha": f"{BENCH}.copy_sha(x.blob_sha, g.n)",
        }
        where = (
            f"x.repository_id = {sc.repo_id} and x.path in (select path from {BENCH}.base_files)"
        )
    elif table == "code_symbols":
        overrides = {
            "id": f"x.id + g.n * {sc.stride}",
            "blob_sha": f"{BENCH}.copy_sha(x.blob_sha, g.n)",
            "embedding": perturbed,
        }
        join = noise_join.format(key="id")
        where = f"x.tenant_id = {sc.tenant} and x.id < {sc.stride}"
        identity = " overriding system value"
    elif table == "symbol_terms":
        overrides = {"symbol_id": f"x.symbol_id + g.n * {sc.stride}"}
        where = f"x.tenant_id = {sc.tenant} and x.symbol_id < {sc.stride}"
    elif table in ("blob_terms", "blob_imports"):
        overrides = {"blob_sha": f"{BENCH}.copy_sha(x.blob_sha, g.n)"}
        where = f"x.tenant_id = {sc.tenant} and x.blob_sha in (select sha from {BENCH}.base_blobs)"
    elif table == "file_edges":
        overrides = {
            "source_path": f"{prefix} || x.source_path",
            "target_path": f"{prefix} || x.target_path",
        }
        where = f"x.id in (select id from {BENCH}.base_edges)"
    cols, exprs = [], []
    for name, is_identity in columns(conn, table):
        if is_identity == "YES" and name not in overrides:
            continue  # a fresh identity value
        cols.append(name)
        exprs.append(overrides.get(name, f"x.{name}"))
    return (
        f"insert into codesift.{table} ({', '.join(cols)}){identity}"
        f" select {', '.join(exprs)} from codesift.{table} x"
        f" cross join generate_series(%(a)s::int, %(b)s::int) g(n) {join} where {where}"
    )


def drop_indexes(conn, sc: Scale) -> None:
    rows = conn.execute(
        "select i.indexname, i.indexdef from pg_indexes i"
        " join pg_class c on c.relname = i.indexname"
        " join pg_namespace n on n.oid = c.relnamespace and n.nspname = i.schemaname"
        " join pg_index x on x.indexrelid = c.oid"
        " where i.schemaname = 'codesift' and i.tablename = any(%s)"
        " and not x.indisprimary and not x.indisunique",
        (TABLES,),
    ).fetchall()
    sc.index_defs = rows
    for name, _ in rows:
        conn.execute(sql.SQL("drop index codesift.{}").format(sql.Identifier(name)))


def create_indexes(conn, sc: Scale, rows_hint: int) -> dict[str, float]:
    times = {}
    mem = "3GB" if rows_hint > 400_000 else "1GB"
    conn.execute(f"set maintenance_work_mem = '{mem}'")
    conn.execute("set max_parallel_maintenance_workers = 1")
    ordered = sorted(sc.index_defs, key=lambda r: "using hnsw" in r[1])
    for name, ddl in ordered:
        t0 = time.perf_counter()
        conn.execute(ddl)
        times[name] = time.perf_counter() - t0
    conn.execute("reset maintenance_work_mem")
    return times


def with_distractors(args, work: Path) -> Path:
    """A git repository in `work` holding args.repo's files at HEAD and, each in a folder of
    its own beside them, the unpacked source distributions of args.distractors."""
    from bm25_agreement_bench import commit_tree, download, unpack

    tree = work / "corpus"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(args.repo), "archive", "HEAD"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "x", "-C", str(tree)], input=archive, check=True)
    specs = [x.strip() for x in args.distractors.split(",") if x.strip()]
    log(f"downloading {', '.join(specs)} from PyPI (sdists)")
    download(specs, work / "archives", wheels=False)
    for path in sorted((work / "archives").iterdir()):
        unpack(path, tree)
    commit_tree(tree, work)
    return tree


def grow(conn, sc: Scale, target: int) -> dict | None:
    need = max(0, math.ceil(target / sc.base_symbols) - 1)
    if need <= sc.copies:
        return None
    t0 = time.perf_counter()
    drop_indexes(conn, sc)
    statements = {t: copy_statement(conn, t, sc) for t in TABLES}
    conn.execute("set session_replication_role = replica")  # no extraction trigger, no FK checks
    per_batch = max(1, 60_000 // sc.base_symbols)
    a = sc.copies + 1
    while a <= need:
        b = min(need, a + per_batch - 1)
        with conn.transaction():
            for stmt in statements.values():
                conn.execute(stmt, {"a": a, "b": b})
        log(f"  copies {a}..{b} of {need} inserted ({time.perf_counter() - t0:.0f} s)")
        a = b + 1
    conn.execute("set session_replication_role = origin")
    sc.copies = need
    factor = need + 1
    conn.execute(
        f"update codesift.term_stats t set df = b.df * {factor} from {BENCH}.base_term_stats b"
        " where t.tenant_id = b.tenant_id and t.tier = b.tier and t.term = b.term"
    )
    conn.execute(
        f"update codesift.corpus_stats c set docs = b.docs * {factor},"
        f" total_terms = b.total_terms * {factor} from {BENCH}.base_corpus_stats b"
        " where c.tenant_id = b.tenant_id and c.tier = b.tier"
    )
    load = time.perf_counter() - t0
    log(f"  loaded in {load:.0f} s; rebuilding {len(sc.index_defs)} indexes")
    index_times = create_indexes(conn, sc, sc.base_symbols * factor)
    t1 = time.perf_counter()
    for t in [*TABLES, "term_stats", "corpus_stats"]:
        conn.execute(sql.SQL("vacuum analyze codesift.{}").format(sql.Identifier(t)))
    vacuum = time.perf_counter() - t1
    build_peer(conn, sc)
    total = time.perf_counter() - t0
    hnsw = sum(v for k, v in index_times.items() if "embedding" in k)
    log(f"  indexes {sum(index_times.values()):.0f} s (HNSW {hnsw:.0f} s); total {total:.0f} s")
    return {
        "load_s": load,
        "index_s": sum(index_times.values()),
        "hnsw_s": hnsw,
        "vacuum_s": vacuum,
        "total_s": total,
        "index_times": index_times,
    }


def build_peer(conn, sc: Scale) -> None:
    """The peer's file rows: one embedding per file, a tsvector over file name, path and a
    one-line summary (here: the first 500 characters), a GIN index on it."""
    conn.execute(
        f"""
        drop table if exists {BENCH}.peer_files;
        create table {BENCH}.peer_files as
        select row_number() over () as id, r.name as repository, f.path, b.embedding,
            to_tsvector('simple', regexp_replace(f.path, '^.*/', '') || ' ' || f.path || ' '
                || left(b.content, 500)) as tsv,
            r.indexed_at as last_seen_at, b.created_at
        from codesift.files f
        join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
        join codesift.repositories r on r.id = f.repository_id
        where f.live and f.repository_id = {sc.repo_id};
        create index on {BENCH}.peer_files using gin (tsv);
        analyze {BENCH}.peer_files;
        grant select on {BENCH}.peer_files to codesift_app;
        """
    )


PEER_SQL = f"""
with dense as (
    select id, row_number() over (order by embedding <=> %(v)s::vector) as rank,
        1 - (embedding <=> %(v)s::vector) as similarity
    from {BENCH}.peer_files
    where embedding is not null and repository = %(repo)s
    order by rank limit %(k4)s
), lexical as (
    select id, row_number() over (order by ts_rank_cd(tsv, q) desc) as rank
    from {BENCH}.peer_files, plainto_tsquery('simple', %(q)s) q
    where tsv @@ q and repository = %(repo)s
    order by rank limit %(k4)s
)
select f.path,
    (coalesce(1.0 / (60 + d.rank), 0) + coalesce(1.0 / (60 + l.rank), 0))
    * exp(-0.01 * extract(epoch from now() - coalesce(f.last_seen_at, f.created_at)) / 86400)
    as score
from dense d
full outer join lexical l on d.id = l.id
join {BENCH}.peer_files f on f.id = coalesce(d.id, l.id)
order by score desc
limit %(k)s
"""


# --- measurements ---------------------------------------------------------------------------


def app_conn(dbname: str, tenant: int, superuser: bool = False) -> psycopg.Connection:
    conn = benchdb.connect(dbname, autocommit=True)
    if not superuser:
        conn.execute("set role codesift_app")
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return conn


def timed(conn, query: str, params) -> float:
    t0 = time.perf_counter()
    conn.execute(query, params).fetchall()
    return (time.perf_counter() - t0) * 1000


ROUNDS: dict[str, int] = {}  # timed rounds actually run, per configuration


@dataclass
class Config:
    """One measured configuration: a statement, its connection and one parameter set per
    question, with the seconds its timed rounds may take."""

    label: str
    conn: psycopg.Connection
    query: str
    params: list
    budget_s: float


def interleaved(configs: list[Config], reps: int) -> dict[str, tuple[list, list]]:
    """label -> (all ms, per-question median ms). One warm-up call per parameter set, then up
    to reps rounds (fewer when a configuration's round would not fit in its budget_s, at least
    one). Within a round every configuration runs the same question back to back: this shared
    host's speed drifts by up to 1.5x within an hour, and measured one after the other, the
    configurations would be compared across that drift instead of side by side."""
    rounds = {}
    for cfg in configs:
        t0 = time.perf_counter()
        for p in cfg.params:
            cfg.conn.execute(cfg.query, p).fetchall()
        warm = time.perf_counter() - t0
        rounds[cfg.label] = max(1, min(reps, int(cfg.budget_s / max(warm, 1e-6))))
        ROUNDS[cfg.label] = min(ROUNDS.get(cfg.label, rounds[cfg.label]), rounds[cfg.label])
    per = {cfg.label: [[] for _ in cfg.params] for cfg in configs}
    for r in range(max(rounds.values())):
        for i in range(len(configs[0].params)):
            for cfg in configs:
                if r < rounds[cfg.label]:
                    per[cfg.label][i].append(timed(cfg.conn, cfg.query, cfg.params[i]))
    return {
        label: ([t for ts in runs for t in ts], [statistics.median(ts) for ts in runs])
        for label, runs in per.items()
    }


PACK = (
    "select * from codesift.pack_context(%(q)s, repo => %(repo)s, token_budget => 4000,"
    " query_embedding => %(v)s::vector)"
)
PACK_EMBED = "select * from codesift.pack_context(%(q)s, repo => %(repo)s, token_budget => 4000)"
HYBRID = (
    "select * from codesift.hybrid_search(%(q)s, repo => %(repo)s, k => 20,"
    " query_embedding => %(v)s::vector)"
)
# each leg as pack_context calls it: the rows it asks of each leg
SLOW = "tsrank_symbols"  # the ts_rank_cd option, kept for comparison: seconds at 100k
LEGS = {
    "bm25_symbols": "select * from codesift._bm25_symbols(%(t)s, %(terms)s, %(ids)s, null, null,"
    f" null, {SYMBOL_DEPTH}, 1.2, 0.75)",
    "bm25_files": "select * from codesift._bm25_files(%(t)s, %(terms)s, %(ids)s, null, null,"
    f" {FILE_DEPTH}, 1.2, 0.75)",
    "tsrank_symbols": "select * from codesift._tsrank_symbols(%(t)s, %(terms)s, %(ids)s, null,"
    f" null, null, {SYMBOL_DEPTH})",
    "dense_symbols": "select * from codesift._dense_symbols(%(t)s, %(v)s::vector, %(model)s,"
    f" %(ids)s, null, null, null, {SYMBOL_DEPTH})",
    "dense_files": "select * from codesift._dense_files(%(t)s, %(v)s::vector, %(model)s, %(ids)s,"
    f" null, null, {FILE_DEPTH})",
}


def embed_times(dbname: str, tenant: int, repo: str, queries: list[str], cold_runs: int) -> dict:
    cold, cold_pack = [], []
    for i in range(cold_runs):
        with app_conn(dbname, tenant) as c:
            cold.append(timed(c, "select codesift.embed_query(%s)", (queries[i % len(queries)],)))
        with app_conn(dbname, tenant) as c:
            cold_pack.append(timed(c, PACK_EMBED, {"q": queries[i % len(queries)], "repo": repo}))
    with app_conn(dbname, tenant) as c:
        c.execute("select codesift.embed_query('warm up')")
        warm = [timed(c, "select codesift.embed_query(%s)", (q,)) for q in queries * 3]
    return {"cold": cold, "cold_pack": cold_pack, "warm": warm}


def query_vectors(dbname: str, tenant: int, texts: list[str]) -> list[str]:
    with app_conn(dbname, tenant) as c:
        out = []
        for t in texts:
            v = c.execute("select codesift.embed_query(%s)::text", (t,)).fetchone()[0]
            if v is None:
                sys.exit("embed_query returned null: the server has no embedding model")
            out.append(v)
        return out


EF_SEARCH = (40, 100, 400)  # 40 is pgvector's default; dense_symbols sets 100


def recall(conn, sc: Scale, vectors: list[str]) -> dict:
    """recall@10 of the HNSW index at several ef_search and of dense_symbols, vs exact search.
    Copies of one base row are near-duplicates, so also: recall of distinct base rows (copies
    folded: id mod stride) and the mean top-10 distance of the index over the exact one."""
    plain = (
        "select id, embedding <=> %(v)s::vector from codesift.code_symbols"
        " where embedding is not null order by embedding <=> %(v)s::vector limit %(k)s"
    )
    plan = "\n".join(
        r[0] for r in conn.execute("explain " + plain, {"v": vectors[0], "k": 10}).fetchall()
    )
    exact, exact_ms = [], []
    for v in vectors:
        with conn.transaction():
            conn.execute("set local enable_indexscan = off")
            conn.execute("set local enable_bitmapscan = off")
            t0 = time.perf_counter()
            exact.append(conn.execute(plain, {"v": v, "k": 10}).fetchall())
            exact_ms.append((time.perf_counter() - t0) * 1000)
    out: dict = {"exact_ms": statistics.median(exact_ms)}
    out["uses_index"] = "code_symbols_embedding" in plan
    for ef in EF_SEARCH:
        hits, folded, ratio, ms = 0, [], [], []
        for v, ex in zip(vectors, exact, strict=True):
            with conn.transaction():
                conn.execute(f"set local hnsw.ef_search = {ef}")
                ap = conn.execute(plain, {"v": v, "k": 10}).fetchall()
                t0 = time.perf_counter()
                conn.execute(plain, {"v": v, "k": 100}).fetchall()
                ms.append((time.perf_counter() - t0) * 1000)
            hits += len({r[0] for r in ex} & {r[0] for r in ap})
            base = {r[0] % sc.stride for r in ex}
            folded.append(len(base & {r[0] % sc.stride for r in ap}) / len(base))
            ratio.append(statistics.mean(r[1] for r in ap) / statistics.mean(r[1] for r in ex))
        out[f"r10_ef{ef}"] = hits / (10 * len(vectors))
        out[f"folded_ef{ef}"] = statistics.mean(folded)
        out[f"ratio_ef{ef}"] = statistics.mean(ratio)
        out[f"top100_ms_ef{ef}"] = statistics.median(ms)
    hits_leg = 0
    for v, ex in zip(vectors, exact, strict=True):
        leg = conn.execute(
            LEGS["dense_symbols"],
            {"t": sc.tenant, "v": v, "model": sc.model, "ids": [sc.repo_id]},
        ).fetchall()
        hits_leg += len({r[0] for r in ex} & {r[0] for r in leg[:10]})
    out["leg_r10"] = hits_leg / (10 * len(vectors))
    out["hnsw_r10"] = out["r10_ef40"]
    return out


def measure(dbname: str, sc: Scale, args, queries: list[str], vectors: list[str]) -> dict:
    res: dict = {}
    with app_conn(dbname, sc.tenant, superuser=True) as c:
        res["symbols"], res["embedded"] = c.execute(
            "select count(*), count(embedding) from codesift.code_symbols"
        ).fetchone()
        res["files"] = c.execute(
            "select count(*) from codesift.files where live and repository_id = %s", (sc.repo_id,)
        ).fetchone()[0]
        res["postings"] = c.execute(
            "select reltuples::bigint from pg_class where oid = 'codesift.symbol_terms'::regclass"
        ).fetchone()[0]
        res["db_mb"] = (
            c.execute("select pg_database_size(current_database())").fetchone()[0] / 2**20
        )
    packs = [{"q": q, "repo": args.name, "v": v} for q, v in zip(queries, vectors, strict=True)]
    budget = args.config_budget_s
    with app_conn(dbname, sc.tenant) as c, app_conn(dbname, sc.tenant, superuser=True) as su:
        legs = []
        for q, v in zip(queries, vectors, strict=True):
            terms = c.execute("select codesift._query_terms(%s)", (q,)).fetchone()[0]
            legs.append(
                {"t": sc.tenant, "terms": terms, "ids": [sc.repo_id], "v": v, "model": sc.model}
            )
        peer = [{**p, "k": 10, "k4": 40} for p in packs]
        configs = [
            Config("pack", c, PACK, packs, budget),
            Config("pack_embed", c, PACK_EMBED, packs, budget),
            Config("hybrid", c, HYBRID, packs, budget),
            *(Config(n, c, query, legs, budget / 2) for n, query in LEGS.items() if n != SLOW),
            Config("peer", c, PEER_SQL, peer, budget),
            Config("pack_su", su, PACK, packs, budget / 2),
        ]
        log(
            "  interleaved: pack_context (precomputed embedding, database embeds, superuser),"
            " hybrid_search, the legs, the peer's query"
        )
        timings = interleaved(configs, args.reps)
        # seconds per call at 100k: on its own, not between the others
        log(f"  {SLOW}")
        timings |= interleaved([Config(SLOW, c, LEGS[SLOW], legs, budget / 2)], args.reps)
        res["pack"], res["pack_per_query"] = timings["pack"]
        for label in ("pack_embed", "hybrid", "peer", "pack_su"):
            res[label] = timings[label][0]
        res["legs"] = {name: timings[name][0] for name in LEGS}
    with app_conn(dbname, sc.tenant, superuser=True) as c:
        log("  recall")
        res["recall"] = recall(c, sc, args.recall_vectors)
    with app_conn(dbname, sc.tenant) as c:
        log("  BM25 leg against exhaustive BM25")
        res["bm25_agreement"] = bm25_agreement(c, sc, legs)
    return res


# --- BM25: the bounded leg against exhaustive scoring --------------------------------------

# every posting of every query term summed: what bm25_symbols would return reading everything
EXHAUSTIVE_BM25 = """
with idf as (select * from codesift._bm25_idf(%(t)s, 'symbol', %(terms)s))
select p.symbol_id
from idf
join codesift.symbol_terms p on p.tenant_id = %(t)s and p.term = idf.term
group by p.symbol_id
order by sum(idf.idf * codesift.bm25_weight(p.tf, p.dl, idf.avgdl))
    desc, p.symbol_id
limit 20
"""


def bm25_agreement(conn, sc: Scale, legs: list[dict]) -> dict:
    """Top-20 overlap of bm25_symbols with exhaustive BM25, and how often the top symbol is the
    same. Copies of one base symbol tie exactly, so ids are folded (id mod stride) into the
    base symbol they copy; the overlap is of distinct base symbols."""
    overlap, top1, exhaustive_ms = [], [], []
    for p in legs:
        t0 = time.perf_counter()
        exact = [r[0] for r in conn.execute(EXHAUSTIVE_BM25, p).fetchall()]
        exhaustive_ms.append((time.perf_counter() - t0) * 1000)
        leg = [r[0] for r in conn.execute(LEGS["bm25_symbols"], p).fetchall()[:20]]
        if exact and leg:
            base = {i % sc.stride for i in exact}
            overlap.append(len(base & {i % sc.stride for i in leg}) / len(base))
            top1.append(exact[0] % sc.stride == leg[0] % sc.stride)
    return {
        "overlap": statistics.mean(overlap) if overlap else float("nan"),
        "top1": statistics.mean(top1) if top1 else float("nan"),
        "exhaustive_ms": statistics.median(exhaustive_ms),
    }


# --- EXPLAIN via auto_explain ---------------------------------------------------------------


def explain(dbname: str, sc: Scale, args, query: str, vector: str) -> list[tuple[float, str]]:
    notices: list[str] = []
    conn = benchdb.connect(dbname, autocommit=True)
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    try:
        conn.execute("load 'auto_explain'")
        for k, v in {
            "log_min_duration": "0",
            "log_analyze": "on",
            "log_buffers": "on",
            "log_timing": "on",
            "log_nested_statements": "on",
            "log_level": "notice",
        }.items():
            conn.execute(f"set auto_explain.{k} = '{v}'")
        conn.execute("set auto_explain.log_min_duration = -1")  # warm the backend first
        conn.execute("set role codesift_app")
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(sc.tenant),))
        params = {"q": query, "repo": args.name, "v": vector}
        for _ in range(2):
            conn.execute(PACK, params).fetchall()
        notices.clear()
        conn.execute("reset role")
        conn.execute("set auto_explain.log_min_duration = 0")
        conn.execute("set role codesift_app")
        conn.execute(PACK, params).fetchall()
    finally:
        conn.close()
    plans = []
    for n in notices:
        m = re.match(r"duration: ([\d.]+) ms\s+plan:\n?(.*)", n, re.S)
        if m:
            plans.append((float(m.group(1)), m.group(2)))
    return plans


def query_text(plan: str) -> str:
    """The statement text auto_explain logged (empty for the body of a SQL function)."""
    text = plan.split("Query Text:", 1)[-1]
    lines = []
    for line in text.splitlines():
        if "(cost=" in line:
            break
        lines.append(line)
    return "\n".join(lines)


PROFILE_FN = f"""
create or replace function {BENCH}.profile_pack(q text, repo text, v text) returns text
language plpython3u volatile as $$
import cProfile, io, pstats
plan = plpy.prepare(
    "select * from codesift.pack_context($1, repo => $2, token_budget => 4000,"
    " query_embedding => $3::vector)", ["text", "text", "text"])
plpy.execute(plan, [q, repo, v])
prof = cProfile.Profile()
prof.enable()
plpy.execute(plan, [q, repo, v])
prof.disable()
out = io.StringIO()
pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats("codesift_db|execute", 22)
return out.getvalue()
$$;
grant execute on function {BENCH}.profile_pack(text, text, text) to codesift_app;
"""


def profile(dbname: str, sc: Scale, args, query: str, vector: str) -> str:
    """cProfile of one warm pack_context call inside the backend (PL/Python's own view)."""
    with benchdb.connect(dbname, autocommit=True) as conn:
        conn.execute(PROFILE_FN)
    with app_conn(dbname, sc.tenant) as conn:
        text = conn.execute(
            f"select {BENCH}.profile_pack(%s, %s, %s)", (query, args.name, vector)
        ).fetchone()[0]
    return text.replace(f"{ROOT}/", "")  # paths relative to the checkout, not this machine's


def print_explain(plans: list[tuple[float, str]], out: Path, query: str) -> None:
    def first_line(text: str) -> str:
        text = re.sub(r"\s+", " ", query_text(text)).strip()[:110]
        return text or "(body of the SQL function above)"

    total = max((d for d, _ in plans), default=0.0)
    print(f"\n  auto_explain of pack_context({query!r}) at this size (one warm call, ANALYZE):")
    print(f"  {'ms':>9}  statement (nested; the outermost is pack_context itself)")
    for d, text in sorted(plans, key=lambda p: -p[0])[:14]:
        print(f"  {d:9.2f}  {first_line(text)}")

    # the slowest statement whose top plan node is real work, not a call of a function
    def top_node(text: str) -> str:
        return next((ln.strip() for ln in text.splitlines() if "(cost=" in ln), "")

    inner = [p for p in plans if not top_node(p[1]).startswith(("Function Scan", "Result"))]
    if inner:
        d, text = max(inner, key=lambda p: p[0])
        print(f"\n  slowest statement doing the work ({d:.1f} ms of {total:.1f} ms), plan:")
        for line in text.splitlines()[:70]:
            print("    " + line[:150])
    print(f"  (all {len(plans)} plans: {out})")


# --- report ---------------------------------------------------------------------------------


def report(results: dict, loads: dict, emb: dict, skipped: dict, args) -> None:
    sizes = list(results)
    w = 14

    def line(label: str, values: list, fmt: str = "{:,.1f}") -> None:
        cells = []
        for v in values:
            if v is None or (isinstance(v, float) and math.isnan(v)):
                cells.append("-")
            else:
                cells.append(fmt.format(v) if not isinstance(v, str) else v)
        print(f"  {label:<46}" + "".join(f"{c:>{w}}" for c in cells))

    def p(key_fn, q):
        return [pct(key_fn(results[s]), q) for s in sizes]

    print(f"\nengine measured: {args.engine}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nretrieval_bench ({os.cpu_count()} cores, load average now {load};"
        f" up to {args.reps} rounds x {len(args.queries)} express-10 questions)"
    )
    print(f"  corpus: {corpus(args)}")
    line("target size", sizes, "{:,}")
    line("symbols reached", [results[s]["symbols"] for s in sizes], "{:,}")
    line("live files", [results[s]["files"] for s in sizes], "{:,}")
    line("BM25 postings (symbol tier)", [results[s]["postings"] for s in sizes], "{:,}")
    line("database size (MB)", [results[s]["db_mb"] for s in sizes], "{:,.0f}")
    line(
        "load s (rows) / index rebuild s",
        [
            f"{loads[s]['load_s']:.0f}/{loads[s]['index_s']:.0f}" if loads.get(s) else "-"
            for s in sizes
        ],
    )
    line("  of which HNSW build s", [loads[s]["hnsw_s"] if loads.get(s) else None for s in sizes])
    print("  latency, ms (warm; application role with RLS unless noted)")
    line("pack_context p50, precomputed embedding", p(lambda r: r["pack"], 0.5))
    line("pack_context p95, precomputed embedding", p(lambda r: r["pack"], 0.95))
    line("pack_context p50, database embeds query", p(lambda r: r["pack_embed"], 0.5))
    line("pack_context p95, database embeds query", p(lambda r: r["pack_embed"], 0.95))
    line("pack_context p50, superuser (no RLS)", p(lambda r: r["pack_su"], 0.5))
    line("hybrid_search p50 (stage 1 only, k=20)", p(lambda r: r["hybrid"], 0.5))
    for leg in LEGS:
        line(f"  leg {leg} p50", p(lambda r, leg=leg: r["legs"].get(leg, []), 0.5))
        line(f"  leg {leg} p95", p(lambda r, leg=leg: r["legs"].get(leg, []), 0.95))
    print("  bm25_symbols against exhaustive BM25 (every posting summed; copies folded)")
    for key, label, fmt in (
        ("overlap", "top-20 overlap (distinct base symbols)", "{:.3f}"),
        ("top1", "same top symbol", "{:.2f}"),
        ("exhaustive_ms", "exhaustive BM25 p50 ms", "{:,.1f}"),
    ):
        line(f"  {label}", [results[s].get("bm25_agreement", {}).get(key) for s in sizes], fmt)
    line("peer hybrid SQL p50 (k=10, files only)", p(lambda r: r["peer"], 0.5))
    line("peer hybrid SQL p95", p(lambda r: r["peer"], 0.95))
    print("  ratios")
    base = sizes[0]

    def ratio(a, b):
        return [pct(a(results[s]), 0.5) / pct(b(results[s]), 0.5) for s in sizes]

    line(
        "pack p50 / its p50 at smallest size",
        [pct(results[s]["pack"], 0.5) / pct(results[base]["pack"], 0.5) for s in sizes],
        "{:.2f}x",
    )
    line(
        "pack p50 db-embeds / precomputed",
        ratio(lambda r: r["pack_embed"], lambda r: r["pack"]),
        "{:.2f}x",
    )
    line("pack p50 RLS / superuser", ratio(lambda r: r["pack"], lambda r: r["pack_su"]), "{:.2f}x")
    line("peer p50 / pack p50", ratio(lambda r: r["peer"], lambda r: r["pack"]), "{:.2f}x")
    line(
        "bm25_symbols p50 / pack p50",
        ratio(lambda r: r["legs"]["bm25_symbols"], lambda r: r["pack"]),
        "{:.2f}x",
    )
    line(
        "tsrank_symbols p50 / bm25_symbols p50",
        ratio(lambda r: r["legs"]["tsrank_symbols"], lambda r: r["legs"]["bm25_symbols"]),
        "{:.2f}x",
    )
    print(f"  HNSW recall@10 vs exact search ({len(args.recall_vectors)} questions)")

    def rec(key):
        return [results[s]["recall"].get(key) for s in sizes]

    for ef in EF_SEARCH:
        note = " (pgvector default)" if ef == 40 else ""
        line(f"index, ef_search {ef}{note}", rec(f"r10_ef{ef}"), "{:.3f}")
    for ef in EF_SEARCH:
        line(f"  copies folded (distinct base rows), ef {ef}", rec(f"folded_ef{ef}"), "{:.3f}")
    for ef in EF_SEARCH:
        line(f"  mean top-10 distance index/exact, ef {ef}", rec(f"ratio_ef{ef}"), "{:.3f}")
    for ef in EF_SEARCH:
        line(f"  HNSW top-100 p50 ms, ef {ef}", rec(f"top100_ms_ef{ef}"), "{:.1f}")
    line("dense_symbols leg (ef 200, iterative), top 10", rec("leg_r10"), "{:.3f}")
    line(
        "plain top-10 plan uses the HNSW index",
        ["yes" if results[s]["recall"]["uses_index"] else "NO" for s in sizes],
    )
    line("exact search p50 ms (index scans off)", [results[s]["recall"]["exact_ms"] for s in sizes])
    if args.granted:
        print(
            f"  NOTE: the install does not grant codesift_app select on {', '.join(args.granted)}"
            " (pack_context fails for the application role); granted in the bench db"
        )
    for s, why in skipped.items():
        print(f"  {s:,} symbols: not reached ({why})")
    near = min(sizes, key=lambda s: abs(math.log(s / 100_000)))
    target = "  target: warm pack_context p50 < 50 ms at 100k symbols excluding query embedding:"
    if abs(math.log(near / 100_000)) < 0.1:
        p50 = pct(results[near]["pack"], 0.5)
        verdict = "met" if p50 < 50 else "NOT met"
        print(f"{target} {p50:.1f} ms at {results[near]['symbols']:,} symbols ({verdict})")
    else:
        print(f"{target} 100k not measured in this run (--sizes)")
    print("  query embedding in the database (embed_query; once, size-independent)")
    print(
        f"    cold, first call in a new connection: median {statistics.median(emb['cold']):,.0f}"
        f" ms of {len(emb['cold'])} connections ({', '.join(f'{x:.0f}' for x in emb['cold'])})"
    )
    print(
        f"    cold pack_context (new connection, db embeds): median"
        f" {statistics.median(emb['cold_pack']):,.0f} ms"
    )
    print(
        f"    warm: p50 {pct(emb['warm'], 0.5):.1f} ms, p95 {pct(emb['warm'], 0.95):.1f} ms;"
        f" cold / warm p50 = {statistics.median(emb['cold']) / pct(emb['warm'], 0.5):.0f}x"
    )
    print(
        "  timed rounds per question (min over sizes; --reps, fewer when a configuration would"
        " exceed --config-budget-s): " + ", ".join(f"{k} {v}" for k, v in ROUNDS.items())
    )
    slow = {
        s: sorted(zip(results[s]["pack_per_query"], args.queries, strict=True))[-1] for s in sizes
    }
    for s in sizes:
        print(f"  slowest question at {s:,}: {slow[s][1]!r} p50 {slow[s][0]:.1f} ms")


def measure_size(args, sc, conn, size, target, vectors, results, loads) -> None:
    log(f"growing to {target:,} symbols")
    before = sc.base_symbols * (sc.copies + 1)
    loads[size] = grow(conn, sc, size)
    if loads[size]:
        loads[size]["added"] = target - before
    log(f"measuring at {size:,}")
    results[size] = measure(args.db, sc, args, args.queries, vectors)
    args.explain_out.with_suffix(".partial.json").write_text(
        json.dumps({str(k): v for k, v in results.items()}, default=str)
    )
    sizes = [int(x) for x in args.sizes.split(",")]
    if abs(math.log(size / args.explain_at)) < 0.01 or (size == sizes[-1] and "plans" not in args):
        per = results[size]["pack_per_query"]
        worst = max(range(len(per)), key=per.__getitem__)
        args.plans = (
            size,
            args.queries[worst],
            explain(args.db, sc, args, args.queries[worst], vectors[worst]),
            profile(args.db, sc, args, args.queries[worst], vectors[worst]),
        )
        with args.explain_out.open("w") as fh:  # now, in case a later size is interrupted
            for d, text in sorted(args.plans[2], key=lambda p: -p[0]):
                fh.write(f"==== {d:.3f} ms\n{text}\n\n")
            fh.write("==== cProfile\n" + args.plans[3])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--sizes", default="10000,100000,1000000", help="symbol counts, ascending")
    ap.add_argument("--reps", type=int, default=5, help="timed rounds over the 10 questions")
    ap.add_argument("--noise", type=float, default=0.25, help="noise norm added to copies")
    ap.add_argument("--db", default="codesift_bench_retrieval", help="work database")
    ap.add_argument("--repo", type=Path, default=Path("/tmp/express"), help="git checkout")
    ap.add_argument("--mirror", default=DEFAULT_MIRROR, help="clone source for --repo")
    ap.add_argument("--name", default="express", help="repository name")
    ap.add_argument("--tenant", default="bench", help="tenant name")
    ap.add_argument("--queries", type=Path, default=DEFAULT_QUERIES, help="express-10 json")
    ap.add_argument("--explain-at", type=int, default=100_000, help="size to EXPLAIN at")
    ap.add_argument(
        "--explain-out",
        type=Path,
        default=Path("/tmp/retrieval_bench_explain.txt"),
        help="where every auto_explain plan is written",
    )
    ap.add_argument("--budget-min", type=float, default=150, help="skip sizes past this budget")
    ap.add_argument(
        "--config-budget-s",
        type=float,
        default=90,
        help="seconds per measured configuration and size; fewer rounds (>= 1) when slower",
    )
    ap.add_argument("--cold-runs", type=int, default=3, help="fresh connections for cold embed")
    ap.add_argument(
        "--distractors",
        default="",
        help="PyPI packages (pip specs, comma-separated) whose sdists join the base",
    )
    ap.add_argument("--rebuild-base", action="store_true", help="re-index the base database")
    ap.add_argument("--keep", action="store_true", help="keep the work database")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    # a background job ignores SIGINT: make SIGINT and SIGTERM end the current size and
    # still print what was measured
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    benchdb.check_name(args.db)
    started = time.perf_counter()

    args.engine = engine_state()  # what the migrations below install
    build_base(args)
    benchdb.create(args.db, template=f"{args.db}_base")
    benchdb.migrate(args.db)
    results: dict = {}
    loads: dict = {}
    skipped: dict = {}
    try:
        with benchdb.connect(args.db, autocommit=True) as conn:
            sc = setup_helpers(conn, args)
            build_peer(conn, sc)
            data = json.loads(args.queries.read_text())
            args.queries = [q["query"] for q in data["queries"]]
            vectors = query_vectors(args.db, sc.tenant, args.queries)
            args.recall_vectors = vectors + query_vectors(args.db, sc.tenant, RECALL_EXTRA)
            log(f"base: {sc.base_symbols} symbols; cold/warm embed_query")
            emb = embed_times(args.db, sc.tenant, args.name, args.queries, args.cold_runs)
            rate = None  # seconds per symbol of the last load + index rebuild
            for size in sizes:
                budget_left = args.budget_min * 60 - (time.perf_counter() - started)
                target = sc.base_symbols * max(1, math.ceil(size / sc.base_symbols))
                if rate is not None:
                    predicted = rate * (target - sc.base_symbols * (sc.copies + 1)) * 1.3
                    if predicted > budget_left:
                        skipped[size] = (
                            f"predicted load {predicted / 60:.0f} min > {budget_left / 60:.0f}"
                            " min left of --budget-min"
                        )
                        log(f"skipping {size:,}: {skipped[size]}")
                        continue
                try:
                    measure_size(args, sc, conn, size, target, vectors, results, loads)
                except KeyboardInterrupt:
                    skipped[size] = (
                        "interrupted (SIGINT) after"
                        f" {(time.perf_counter() - started) / 60:.0f} min of the run"
                    )
                    log(f"{size:,}: {skipped[size]}")
                    break
                if loads.get(size):
                    rate = loads[size]["total_s"] / max(1, loads[size]["added"])
        report(results, loads, emb, skipped, args)
        if "plans" in args:
            size, q, plans, prof = args.plans
            print(f"\n  EXPLAIN at {results[size]['symbols']:,} symbols")
            print_explain(plans, args.explain_out, q)
            print("\n  cProfile of the same call inside the backend (cumulative, codesift_db):")
            for line in prof.strip().splitlines():
                if line.strip() and not line.startswith(("   Ordered", "   List reduced")):
                    print("    " + line[:150])
            m = re.search(
                r"^\s*\S+\s+([\d.]+)\s+\S+\s+([\d.]+)\s+\S+\s+\{built-in method plpy.exe",
                prof,
                re.M,
            )
            if m:
                sql_s, total_s = float(m.group(1)), float(m.group(2))
                print(
                    f"  split: {sql_s * 1000:.0f} ms inside SQL statements (plpy.execute self),"
                    f" {(total_s - sql_s) * 1000:.0f} ms in PL/Python, of {total_s * 1000:.0f} ms"
                )
        print(f"\n  total bench time {(time.perf_counter() - started) / 60:.1f} min")
    finally:
        if not args.keep:
            benchdb.drop(args.db)


if __name__ == "__main__":
    main()
