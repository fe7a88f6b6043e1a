"""The retrieval pipeline behind pack_context and explain_context.

1. Hybrid search: four legs (BM25 and HNSW, each over symbols and over files,
   all SQL functions in sql/idempotent/003-search.sql), fused by Reciprocal
   Rank Fusion (k = 60, optional per-leg weights), then a recency decay
   exp(-lambda * age_days), age measured from the repository's newest change.
2. Graph walk over resolved import edges from the top hits, both directions.
3. Whole files too big for a quarter of the budget are replaced by their best
   symbols; then Jaccard diversity pruning (diversity.py) and greedy token
   packing (packing.py).

Every candidate keeps why it was chosen (ranks, scores, hops) and what each
stage decided, which is what explain_context returns.
"""

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from . import diversity, packing, plans

RRF_K = 60
SYMBOL_DEPTH = 40  # rows taken from each symbol leg
FILE_DEPTH = 30  # rows taken from each file leg
GRAPH_SEEDS = 3  # top hits whose import neighbourhood is walked
GRAPH_NODES = 24  # files the walk may add, best (seed score x hop decay) first
# a file reached only through the graph (no search leg found it) is context, not an answer:
# it ranks below the hits its hop decay would otherwise tie it with
NEIGHBOUR_WEIGHT = 0.7
FILE_SHARE = 0.25  # a whole file larger than this share of the budget is split into symbols
SYMBOLS_PER_FILE = 2  # symbols that stand in for an oversized file
# oversized files split into stand-ins, best first: a 4,000-token pack holds a dozen or two
# items, and each split reads every symbol of the file
SPLIT_FILES = 12
EXPANDED = "expanded:symbols"  # an oversized file replaced by its best symbols
TOO_BIG = "not_packed:too_big"  # an oversized file ranked below the SPLIT_FILES split ones
MAX_BUDGET = 200_000
# Bounds on what a caller may ask (each also checked by the SQL function that does the work):
# a question is text a person or an agent wrote, a 300-word bug report is ~2,000 characters
MAX_QUERY_CHARS = 200_000
MAX_KINDS = 64  # symbol kinds in a filter (codesift.leg_bounds)
MAX_SEARCH_K = 1000  # hybrid_search's k (codesift.leg_bounds' k at most)
# the model reads the first 256 word pieces (minilm.MAX_TOKENS): a few hundred characters
# of prose, or of code; tokenizing more only costs time
EMBED_QUERY_CHARS = 20_000
INVALID = "22023"  # invalid_parameter_value
NULL_VALUE = "22004"  # null_value_not_allowed
FLOAT_KNOBS = ("hop_decay", "jaccard_threshold", "recency_lambda", "lexical_weight", "dense_weight")


@dataclass
class Params:
    query: str
    repo: str | None
    token_budget: int
    path_prefix: str | None
    language: str | None
    kinds: list | None
    query_embedding: str | None
    graph_depth: int
    hop_decay: float
    jaccard_threshold: float
    recency_lambda: float
    lexical_weight: float
    dense_weight: float
    ranking: str
    fanout: int = 8
    k1: float = 1.2
    b: float = 0.75


def _run(plpy, query: str, types: list, args: list):
    return plans.run(plpy, query, types, args)


def _fail(plpy, message: str, hint: str | None = None, sqlstate: str = INVALID):
    # plpy.error prints hint=None as a literal 'HINT:  None': pass it only when there is one
    if hint is None:
        plpy.error(message, sqlstate=sqlstate)
    plpy.error(message, hint=hint, sqlstate=sqlstate)


def validate(plpy, p: Params) -> None:
    """Bad arguments raise with an errcode and a message that says what to do."""
    if p.query is None or not str(p.query).strip():
        _fail(
            plpy,
            "query must be a non-empty question or identifier",
            hint="pass the text to search for, e.g. 'where are redirects followed?'",
        )
    if len(p.query) > MAX_QUERY_CHARS:
        _fail(
            plpy,
            f"query is {len(p.query):,} characters; at most {MAX_QUERY_CHARS:,}",
            hint="pass the question, or the part of a long report or log that matters",
        )
    for name in (
        "token_budget",
        "graph_depth",
        "hop_decay",
        "jaccard_threshold",
        "recency_lambda",
        "lexical_weight",
        "dense_weight",
        "ranking",
    ):
        if getattr(p, name) is None:
            _fail(plpy, f"{name} must not be null", hint="omit it to use its default")
    for name in FLOAT_KNOBS:
        # NaN passes every comparison below and Infinity some; both fail later as JSON
        if not math.isfinite(getattr(p, name)):
            _fail(plpy, f"{name} must be a finite number (got {getattr(p, name)})")
    if p.kinds is not None and len(p.kinds) > MAX_KINDS:
        _fail(plpy, f"kinds has {len(p.kinds)} entries; at most {MAX_KINDS}")
    if not 1 <= p.token_budget <= MAX_BUDGET:
        _fail(plpy, f"token_budget must be between 1 and {MAX_BUDGET:,} (got {p.token_budget})")
    if not 0 <= p.graph_depth <= 5:
        _fail(plpy, f"graph_depth must be between 0 and 5 (got {p.graph_depth})")
    if not 0 < p.hop_decay <= 1:
        _fail(plpy, f"hop_decay must be in (0, 1] (got {p.hop_decay})")
    if not 0 <= p.jaccard_threshold <= 1:
        _fail(plpy, f"jaccard_threshold must be in [0, 1] (got {p.jaccard_threshold})")
    if p.recency_lambda < 0:
        _fail(plpy, "recency_lambda must be >= 0 (0 disables the recency decay)")
    if p.lexical_weight < 0 or p.dense_weight < 0 or p.lexical_weight + p.dense_weight == 0:
        _fail(plpy, "lexical_weight and dense_weight must be >= 0 and not both 0")
    if p.ranking not in ("bm25", "ts_rank_cd"):
        _fail(plpy, f"ranking must be 'bm25' or 'ts_rank_cd' (got '{p.ranking}')")


# --- scope: tenant and repositories ---------------------------------------------------------

REPOS = """
select id, tenant_id, name, indexed_commit, head_commit from codesift.repositories
where ($1::bigint is null or tenant_id = $1) and ($2::text is null or name = $2)
order by name
"""


def _current_tenant(plpy) -> int | None:
    """The tenant the session acts as (codesift.current_tenant_id: a per-tenant role's own,
    else app.current_tenant_id, checked there)."""
    return plans.run(plpy, "select codesift.current_tenant_id() as t")[0]["t"]


def resolve_scope(plpy, repo: str | None) -> tuple[int, list[dict]]:
    tenant = _current_tenant(plpy)
    repos = list(_run(plpy, REPOS, ["bigint", "text"], [tenant, repo]))
    if tenant is None:
        # an owner/superuser session without a tenant: a repository name that is
        # unique across tenants identifies one; the application role sees nothing
        tenants = {r["tenant_id"] for r in repos}
        if repo is None or not repos:
            _fail(
                plpy,
                "no tenant is set for this session",
                hint="set app.current_tenant_id to your tenant's id first "
                "(select set_config('app.current_tenant_id', '42', false))",
                sqlstate="42501",
            )
        if len(tenants) > 1:
            _fail(
                plpy,
                f"repository '{repo}' exists in several tenants",
                hint="set app.current_tenant_id to choose one",
                sqlstate="42501",
            )
        tenant = tenants.pop()
    if not repos:
        names = [r["name"] for r in _run(plpy, REPOS, ["bigint", "text"], [tenant, None])]
        hint = (
            ("indexed repositories: " + ", ".join(names[:20]))
            if names
            else ("no repository is indexed yet for this tenant: run codesift index PATH")
        )
        _fail(plpy, f"unknown repository '{repo}'", hint=hint, sqlstate="42704")
    for r in repos:
        if r["indexed_commit"] is None:
            plpy.notice(f"repository '{r['name']}' has no indexed commit yet")
        elif r["head_commit"] and r["head_commit"] != r["indexed_commit"]:
            plpy.notice(
                f"repository '{r['name']}' is indexed at {r['indexed_commit'][:12]} but its "
                f"head has moved to {r['head_commit'][:12]}: results may be stale "
                "(re-run codesift index)"
            )
    return tenant, repos


# --- query embedding ------------------------------------------------------------------------


def _settings(plpy) -> dict:
    rows = plans.run(plpy, "select key, value from codesift.settings")
    return {r["key"]: r["value"] for r in rows}


def embed_query(plpy, text: str, settings: dict | None = None) -> str | None:
    """The query's vector as a pgvector literal, or None (with a NOTICE) without a model."""
    settings = settings if settings is not None else _settings(plpy)
    try:
        from . import minilm
    except ImportError as exc:  # numpy or tokenizers missing on this server
        plpy.notice(f"query embedding unavailable ({exc}): lexical + graph only")
        return None
    if settings.get("embedding_model") != minilm.MODEL_NAME or not minilm.model_available():
        plpy.notice(
            f"the embedding model {settings.get('embedding_model')} is not available in this "
            "server's Python: lexical + graph only (or pass query_embedding)"
        )
        return None
    # the model truncates to its first word pieces anyway: never tokenize megabytes
    vector = minilm.get_model().encode([text[:EMBED_QUERY_CHARS]])[0]
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _query_vector(plpy, p: Params) -> tuple[str | None, str]:
    settings = _settings(plpy)
    model, dim = settings.get("embedding_model", ""), int(settings.get("embedding_dim", 0))
    if p.query_embedding is not None:
        given = _run(plpy, "select vector_dims($1::vector) as d", ["text"], [p.query_embedding])
        given = given[0]["d"]
        if given != dim:
            _fail(
                plpy,
                f"query_embedding has {given} dimensions; this database expects {dim}",
                hint=f"embed the query with {model} ({dim} dimensions)",
                sqlstate="22000",
            )
        return p.query_embedding, model
    return embed_query(plpy, p.query, settings), model


# --- 1. hybrid search -----------------------------------------------------------------------


def rrf(ranks: dict, weights: dict, k: int = RRF_K) -> float:
    """Reciprocal Rank Fusion of 1-based ranks per leg (a missing leg contributes nothing)."""
    return sum(weights[leg] / (k + rank) for leg, rank in ranks.items() if rank is not None)


def _legs(plpy, p: Params, tenant: int, repo_ids: list, terms: list, vector, model) -> dict:
    lex_sym = lex_file = []
    if terms:
        if p.ranking == "bm25":
            lex_sym = _run(
                plpy,
                "select symbol_id, score from codesift.bm25_symbols("
                "$1, $2, $3, $4, $5, $6, $7, $8, $9)",
                [
                    "bigint",
                    "text[]",
                    "bigint[]",
                    "text",
                    "text",
                    "text[]",
                    "int",
                    "float8",
                    "float8",
                ],
                [
                    tenant,
                    terms,
                    repo_ids,
                    p.path_prefix,
                    p.language,
                    p.kinds,
                    SYMBOL_DEPTH,
                    p.k1,
                    p.b,
                ],
            )
            lex_file = _run(
                plpy,
                "select repository_id, path, score from codesift.bm25_files("
                "$1, $2, $3, $4, $5, $6, $7, $8)",
                ["bigint", "text[]", "bigint[]", "text", "text", "int", "float8", "float8"],
                [tenant, terms, repo_ids, p.path_prefix, p.language, FILE_DEPTH, p.k1, p.b],
            )
        else:
            lex_sym = _run(
                plpy,
                "select symbol_id, score from codesift.tsrank_symbols($1, $2, $3, $4, $5, $6, $7)",
                ["bigint", "text[]", "bigint[]", "text", "text", "text[]", "int"],
                [tenant, terms, repo_ids, p.path_prefix, p.language, p.kinds, SYMBOL_DEPTH],
            )
            lex_file = _run(
                plpy,
                "select repository_id, path, score from codesift.tsrank_files("
                "$1, $2, $3, $4, $5, $6)",
                ["bigint", "text[]", "bigint[]", "text", "text", "int"],
                [tenant, terms, repo_ids, p.path_prefix, p.language, FILE_DEPTH],
            )
    dense_sym = dense_file = []
    if vector is not None:
        dense_sym = _run(
            plpy,
            "select symbol_id, distance from codesift.dense_symbols("
            "$1, $2::vector, $3, $4, $5, $6, $7, $8)",
            ["bigint", "text", "text", "bigint[]", "text", "text", "text[]", "int"],
            [tenant, vector, model, repo_ids, p.path_prefix, p.language, p.kinds, SYMBOL_DEPTH],
        )
        if not p.kinds:
            dense_file = _run(
                plpy,
                "select repository_id, path, distance from "
                "codesift.dense_files($1, $2::vector, $3, $4, $5, $6, $7)",
                ["bigint", "text", "text", "bigint[]", "text", "text", "int"],
                [tenant, vector, model, repo_ids, p.path_prefix, p.language, FILE_DEPTH],
            )
    if p.kinds:
        lex_file = []  # a symbol-kind filter asks for symbols only
    return {
        "lex_sym": lex_sym,
        "lex_file": lex_file,
        "dense_sym": dense_sym,
        "dense_file": dense_file,
    }


def fuse(legs: dict, lexical_weight: float, dense_weight: float) -> dict:
    """Candidates keyed ('s', symbol_id) or ('f', repository_id, path) with ranks and RRF."""
    items: dict = {}

    def add(key, leg, rank, raw):
        item = items.setdefault(
            key,
            {
                "key": key,
                "lexical_rank": None,
                "dense_rank": None,
                "lexical_score": None,
                "dense_distance": None,
            },
        )
        item[f"{leg}_rank"] = rank
        item["lexical_score" if leg == "lexical" else "dense_distance"] = raw

    for rank, r in enumerate(legs["lex_sym"], 1):
        add(("s", r["symbol_id"]), "lexical", rank, r["score"])
    for rank, r in enumerate(legs["dense_sym"], 1):
        add(("s", r["symbol_id"]), "dense", rank, r["distance"])
    for rank, r in enumerate(legs["lex_file"], 1):
        add(("f", r["repository_id"], r["path"]), "lexical", rank, r["score"])
    for rank, r in enumerate(legs["dense_file"], 1):
        add(("f", r["repository_id"], r["path"]), "dense", rank, r["distance"])
    weights = {"lexical": lexical_weight, "dense": dense_weight}
    for item in items.values():
        item["rrf"] = rrf({"lexical": item["lexical_rank"], "dense": item["dense_rank"]}, weights)
    return items


# --- hydration: paths, lines, text, recency -------------------------------------------------

# A symbol that may stand in for its oversized file: small enough ($n tokens, the largest
# text packed whole) and not a container of other symbols (a nested class or a section).
STAND_IN = (
    "(s.token_count <= ${n} and not (s.parent is not null and s.kind in ('class', 'section')))"
)

# last_changed comes as seconds since the epoch: the recency decay needs only differences
SYMBOL_ROWS = f"""
select distinct on (s.id) s.id, s.blob_sha, s.qualified_name, s.kind, s.start_line,
    s.end_line, s.body, coalesce({STAND_IN.format(n=3)}, false) as stand_in,
    f.path, f.repository_id,
    extract(epoch from f.last_changed)::float8 as last_changed
from codesift.code_symbols s
join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live
where s.tenant_id = $4 and s.id = any($1) and f.repository_id = any($2)
order by s.id, f.path
"""

# Whole-file text only for files small enough to be packed whole ($3 tokens): a large file
# is split into its symbols anyway, and reading it would dominate the query's time. Line
# count and token estimate are stored at extraction.
FILE_ROWS = """
select f.repository_id, f.path, f.blob_sha,
    extract(epoch from f.last_changed)::float8 as last_changed, b.line_count as lines,
    case when b.token_count <= $3 then b.content end as content
from unnest($1::bigint[], $2::text[]) as k(repository_id, path)
join codesift.files f on f.tenant_id = $4 and f.repository_id = k.repository_id
    and f.path = k.path and f.live
join codesift.blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha
"""

# Stand-ins a large file's candidate symbols cannot supply: symbols of the file that are not
# candidates ($5), may stand in ($4 tokens) and hold at least two query terms ($6: a tsquery
# of every pair of terms, matched against the symbol's lexemes, which are its BM25 terms);
# each file's best $7 by how many query terms ($3) they hold, the first in the file on ties.
# Only the chosen ones' text is read. $6 is bound as a tsquery: as `$6::tsquery` over a text
# parameter, the cached generic plan parsed the query again for every symbol (3 ms of a 1 ms
# statement).
FILE_SYMBOLS = f"""
select r.repository_id, r.path, s.id, s.qualified_name, s.kind, s.start_line, s.end_line,
    s.body, s.blob_sha, r.overlap
from (
    select f.repository_id, f.path, s.id, o.overlap,
        row_number() over (
            partition by f.repository_id, f.path order by o.overlap desc, s.start_line
        ) as nth
    from unnest($1::bigint[], $2::text[]) as k(repository_id, path)
    join codesift.files f on f.tenant_id = $8 and f.repository_id = k.repository_id
        and f.path = k.path and f.live
    join codesift.code_symbols s on s.tenant_id = f.tenant_id and s.blob_sha = f.blob_sha
    -- lexemes that are query terms: ts_delete drops them (8x faster than unnesting)
    cross join lateral (
        select length(s.lexemes) - length(ts_delete(s.lexemes, $3::text[])) as overlap
    ) o
    where {STAND_IN.format(n=4)}
        and not s.id = any($5)
        and s.lexemes @@ $6
) as r
join codesift.code_symbols s on s.tenant_id = $8 and s.id = r.id
where r.nth <= $7
order by r.path, r.nth
"""
PAIR_TERMS = 12  # terms paired for the two-term test (66 pairs); a longer query keeps its first


def _two_terms_query(terms: list) -> str:
    """A tsquery text matching a document that holds at least two of `terms`."""
    words = ["'" + t.replace("'", "''").replace("\\", "\\\\") + "'" for t in terms[:PAIR_TERMS]]
    pairs = [f"({a} & {b})" for i, a in enumerate(words) for b in words[i + 1 :]]
    return " | ".join(pairs) or "'x' & !'x'"  # fewer than two terms: matches nothing


# the newest change among each repository's live files: one probe of files_live_changed
NEWEST = """
select r.id as repository_id,
    extract(epoch from (select max(f.last_changed) from codesift.files f
        where f.tenant_id = $2 and f.repository_id = r.id and f.live))::float8 as newest
from unnest($1::bigint[]) as r(id)
"""


def _symbol_item(row: dict) -> dict:
    return {
        "key": ("s", row["id"]),
        "repository_id": row["repository_id"],
        "path": row["path"],
        "start_line": row["start_line"],
        "end_line": row["end_line"],
        "symbol": row["qualified_name"],
        "kind": row["kind"],
        "blob_sha": row["blob_sha"],
        "text": row["body"],
        "last_changed": row.get("last_changed"),
        "stand_in": row.get("stand_in", False),
    }


def _file_tokens(budget: int) -> int:
    """Largest text (in estimated tokens) packed whole under this budget: a larger file is
    split into its symbols, and no symbol larger than this stands in for it."""
    return int(budget * FILE_SHARE)


def hydrate(plpy, items: dict, tenant: int, repo_ids: list, max_file_tokens: int) -> None:
    """Fill path, lines, text and last_changed; drop candidates that are no longer live.
    Files over max_file_tokens get text None: they are too big to pack whole."""
    symbol_ids = [k[1] for k in items if k[0] == "s"]
    found = set()
    if symbol_ids:
        rows = _run(
            plpy,
            SYMBOL_ROWS,
            ["bigint[]", "bigint[]", "int", "bigint"],
            [symbol_ids, repo_ids, max_file_tokens, tenant],
        )
        for row in rows:
            items[("s", row["id"])].update(_symbol_item(row))
            found.add(("s", row["id"]))
    files = [k for k in items if k[0] == "f"]
    if files:
        rows = _run(
            plpy,
            FILE_ROWS,
            ["bigint[]", "text[]", "int", "bigint"],
            [[k[1] for k in files], [k[2] for k in files], max_file_tokens, tenant],
        )
        for row in rows:
            key = ("f", row["repository_id"], row["path"])
            text = row["content"].rstrip("\n") if row["content"] is not None else None
            items[key].update(
                {
                    "repository_id": row["repository_id"],
                    "path": row["path"],
                    "start_line": 1,
                    "end_line": row["lines"],
                    "symbol": None,
                    "kind": "file",
                    "blob_sha": row["blob_sha"],
                    "text": text,
                    "last_changed": row["last_changed"],
                }
            )
            found.add(key)
    for key in [k for k in items if k not in found]:
        del items[key]


def _age_days(last_changed: float | None, newest: float | None) -> float:
    """Days between two epoch-second timestamps (0 when either is unknown)."""
    if last_changed is None or newest is None:
        return 0.0
    return max(0.0, (newest - last_changed) / 86400.0)


# Questions about behaviour are answered by implementation code: tests (which repeat the
# names they test) and changelogs (which mention everything) are weighted down, not out.
TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/|(^|/)test_[^/]*$|_test\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$|Tests?\.(java|cs|kt)$|_spec\.rb$"
)
CHANGELOG_PATH = re.compile(r"(^|/)(changelog|changes|history|news|releases?)[^/]*$", re.I)
TEST_PRIOR = 0.9
CHANGELOG_PRIOR = 0.6


# a pure function of the path, asked about every candidate of every query: the same paths
# come back query after query, and the regexes cost more than the rest of the stage
@lru_cache(maxsize=65_536)
def path_prior(path: str) -> float:
    if CHANGELOG_PATH.search(path):
        return CHANGELOG_PRIOR
    if TEST_PATH.search(path):
        return TEST_PRIOR
    return 1.0


def apply_recency(plpy, items: dict, tenant: int, repo_ids: list, lam: float) -> None:
    newest = {
        r["repository_id"]: r["newest"]
        for r in _run(plpy, NEWEST, ["bigint[]", "bigint"], [repo_ids, tenant])
    }
    for item in items.values():
        age = _age_days(item.get("last_changed"), newest.get(item["repository_id"]))
        item["age_days"] = round(age, 1)
        item["recency"] = math.exp(-lam * age) if lam else 1.0
        item["prior"] = path_prior(item["path"])
        item["score"] = item["rrf"] * item["recency"] * item["prior"]


# --- 2. graph walk --------------------------------------------------------------------------


def expand_graph(plpy, items: dict, p: Params, tenant: int, repo_ids: list) -> None:
    if p.graph_depth == 0 or not items:
        return
    ranked = sorted(items.values(), key=lambda i: -i["score"])
    seeds, seed_score = [], {}
    for item in ranked:
        if item["path"] not in seed_score:
            seed_score[item["path"]] = item["score"]
            seeds.append(item["path"])
        if len(seeds) == GRAPH_SEEDS:
            break
    rows = _run(
        plpy,
        "select repository_id, path, hop, factor, via"
        " from codesift.graph_walk($1, $2, $3, $4, $5, $6)",
        ["bigint", "bigint[]", "text[]", "int", "float8", "int"],
        [tenant, repo_ids, seeds, p.graph_depth, p.hop_decay, p.fanout],
    )
    reached = []
    for r in rows:
        via = list(r["via"])
        score = seed_score.get(via[0], 0.0) * r["factor"] * path_prior(r["path"])
        reached.append((score, r["repository_id"], r["path"], r["hop"], via))
    reached.sort(key=lambda x: (-x[0], x[3], x[2]))
    new_keys = []
    for score, repository_id, path, hop, via in reached:
        key = ("f", repository_id, path)
        graph = {"graph_hop": hop, "graph_path": via}
        if key in items:
            items[key].update(graph)
            items[key]["score"] = max(items[key]["score"], score)
            continue
        if len(new_keys) == GRAPH_NODES:
            continue  # hub files reach hundreds: only the best become candidates
        items[key] = {
            "key": key,
            "lexical_rank": None,
            "dense_rank": None,
            "rrf": 0.0,
            "lexical_score": None,
            "dense_distance": None,
            "recency": 1.0,
            "score": score * NEIGHBOUR_WEIGHT,
            **graph,
        }
        new_keys.append(key)
    if new_keys:
        subset = {k: items.pop(k) for k in new_keys}
        hydrate(plpy, subset, tenant, repo_ids, _file_tokens(p.token_budget))
        items.update(subset)


# --- 3. oversized files stand in by their best symbols --------------------------------------


def split_big_files(plpy, items: dict, tenant: int, budget: int, terms: list) -> list[dict]:
    """Whole files over FILE_SHARE of the budget are not packed whole: the best-scored
    SPLIT_FILES of them are 'expanded', their best symbols (already candidates first, by
    score, then other symbols by query-term overlap) taking the file's score; the others
    are 'not_packed:too_big'."""
    extra: list[dict] = []
    # hydrate left the text of files too big to pack whole out
    big = sorted(
        (item for item in items.values() if item["kind"] == "file" and item["text"] is None),
        key=lambda i: -i["score"],
    )
    for item in big[SPLIT_FILES:]:
        item["decision"] = TOO_BIG
    big = big[:SPLIT_FILES]
    if not big:
        return extra
    limit = _file_tokens(budget)  # a stand-in must not eat the budget the file could not
    # candidates that may stand in for a file (hydrate judged them): its symbols, same blob
    candidates: dict = {}
    for item in items.values():
        if item.get("stand_in"):
            candidates.setdefault(item["blob_sha"], []).append(item)
    for found in candidates.values():
        found.sort(key=lambda i: (-i["score"], i["start_line"]))
    short = [i for i in big if len(candidates.get(i["blob_sha"], ())) < SYMBOLS_PER_FILE]
    others: dict = {}
    if short:
        for row in _run(
            plpy,
            FILE_SYMBOLS,
            ["bigint[]", "text[]", "text[]", "int", "bigint[]", "tsquery", "int", "bigint"],
            [
                [i["repository_id"] for i in short],
                [i["path"] for i in short],
                terms,
                limit,
                [k[1] for k in items if k[0] == "s"],
                _two_terms_query(terms),
                SYMBOLS_PER_FILE,
                tenant,
            ],
        ):
            others.setdefault((row["repository_id"], row["path"]), []).append(row)
    for item in big:
        item["decision"] = EXPANDED
        chosen = candidates.get(item["blob_sha"], [])[:SYMBOLS_PER_FILE]
        rows = others.get((item["repository_id"], item["path"]), [])
        for i, stand_in in enumerate(chosen + rows[: SYMBOLS_PER_FILE - len(chosen)]):
            score = item["score"] * (1 - 0.01 * (i + 1))
            if i < len(chosen):  # a candidate already: it only gains the file's score
                stand_in["score"] = max(stand_in["score"], score)
                stand_in["via_file"] = item["path"]
                continue
            new = _symbol_item(
                {
                    **stand_in,
                    "repository_id": item["repository_id"],
                    "path": item["path"],
                    "last_changed": item.get("last_changed"),
                }
            )
            new.update(
                {
                    "lexical_rank": None,
                    "dense_rank": None,
                    "rrf": 0.0,
                    "recency": item.get("recency", 1.0),
                    "score": score,
                    "via_file": item["path"],
                    "graph_hop": item.get("graph_hop"),
                }
            )
            extra.append(new)
    for new in extra:
        items.setdefault(new["key"], new)
    return extra


# --- the whole pipeline ---------------------------------------------------------------------


def hybrid(plpy, p: Params) -> tuple[dict, list, list]:
    """Stage 1: validated, scoped, fused, hydrated, recency-decayed candidates."""
    validate(plpy, p)
    tenant, repos = resolve_scope(plpy, p.repo)
    repo_ids = [r["id"] for r in repos]
    terms = _run(plpy, "select codesift.query_terms($1) as t", ["text"], [p.query])[0]["t"]
    terms = list(terms or [])
    vector, model = _query_vector(plpy, p)
    if not terms and vector is None:
        plpy.notice("the query has no searchable terms and no embedding: nothing to return")
        return {}, terms, repos
    legs = _legs(plpy, p, tenant, repo_ids, terms, vector, model)
    items = fuse(legs, p.lexical_weight, p.dense_weight)
    hydrate(plpy, items, tenant, repo_ids, _file_tokens(p.token_budget))
    apply_recency(plpy, items, tenant, repo_ids, p.recency_lambda)
    return items, terms, repos


def run(plpy, p: Params) -> list[dict]:
    """Every candidate in score order with each stage's decision (explain_context's rows)."""
    items, terms, repos = hybrid(plpy, p)
    if not items:
        return []
    tenant = repos[0]["tenant_id"]  # resolve_scope: one tenant's repositories
    repo_ids = [r["id"] for r in repos]
    by_id = {r["id"]: r for r in repos}
    expand_graph(plpy, items, p, tenant, repo_ids)
    split_big_files(plpy, items, tenant, p.token_budget, terms)
    ordered = sorted(items.values(), key=lambda i: (-i["score"], i["path"], i["start_line"]))
    for item in ordered:
        repo = by_id[item["repository_id"]]
        item["id"] = ":".join(str(x) for x in item["key"])
        item["repository"] = repo["name"]
        item["indexed_commit"] = repo["indexed_commit"]
    candidates = [i for i in ordered if i.get("decision") not in (EXPANDED, TOO_BIG)]
    expanded = [i for i in ordered if i.get("decision") in (EXPANDED, TOO_BIG)]
    pruned = diversity.prune(candidates, p.jaccard_threshold)
    packed = packing.pack(pruned, p.token_budget)
    for item in expanded:
        item.update({"packed": False, "tokens": 0, "truncated": False, "packed_text": None})
    result = sorted(packed + expanded, key=lambda i: (-i["score"], i["path"], i["start_line"]))
    for rank, item in enumerate(result, 1):
        item["candidate_rank"] = rank
    return result


def why(item: dict) -> dict:
    return {
        "lexical_rank": item.get("lexical_rank"),
        "lexical_score": item.get("lexical_score"),
        "dense_rank": item.get("dense_rank"),
        "dense_distance": item.get("dense_distance"),
        "rrf": item.get("rrf"),
        "recency": item.get("recency"),
        "age_days": item.get("age_days"),
        "path_prior": item.get("prior"),
        "graph_hop": item.get("graph_hop"),
        "graph_path": item.get("graph_path"),
        "stands_in_for_file": item.get("via_file"),
    }


def pack_rows(plpy, p: Params) -> list[dict]:
    import json

    rows = []
    for item in run(plpy, p):
        if not item.get("packed"):
            continue
        rows.append(
            {
                "rank": len(rows) + 1,
                "repository": item["repository"],
                "path": item["path"],
                "start_line": item["start_line"],
                "end_line": item["end_line"],
                "symbol": item["symbol"],
                "kind": item["kind"],
                "blob_sha": item["blob_sha"],
                "indexed_commit": item["indexed_commit"],
                "score": item["score"],
                "tokens": item["tokens"],
                "truncated": item["truncated"],
                "text": item["packed_text"],
                "why": json.dumps(why(item)),
            }
        )
    return rows


def explain_rows(plpy, p: Params) -> list[dict]:
    import json

    return [
        {
            "candidate": item["candidate_rank"],
            "repository": item["repository"],
            "path": item["path"],
            "start_line": item["start_line"],
            "end_line": item["end_line"],
            "symbol": item["symbol"],
            "kind": item["kind"],
            "lexical_rank": item.get("lexical_rank"),
            "dense_rank": item.get("dense_rank"),
            "rrf": item.get("rrf"),
            "recency": item.get("recency"),
            "graph_hop": item.get("graph_hop"),
            "score": item["score"],
            "decision": item.get("decision"),
            "pruned_by": item.get("pruned_by"),
            "packed": item.get("packed", False),
            "tokens": item.get("tokens", 0),
            "why": json.dumps(why(item)),
        }
        for item in run(plpy, p)
    ]


def search_rows(plpy, p: Params, k: int) -> list[dict]:
    """Stage 1 alone (hybrid_search): fused, recency-decayed candidates, best first."""
    import json

    if k is None:
        _fail(plpy, "k must not be null", hint="omit it for 20 rows", sqlstate=NULL_VALUE)
    if not 1 <= k <= MAX_SEARCH_K:
        _fail(plpy, f"k must be between 1 and {MAX_SEARCH_K:,} (got {k})")
    items, _, repos = hybrid(plpy, p)
    by_id = {r["id"]: r for r in repos}
    ordered = sorted(items.values(), key=lambda i: (-i["score"], i["path"], i["start_line"]))
    ordered = [i for i in ordered if i["score"] > 0][:k]
    return [
        {
            "rank": n,
            "repository": by_id[i["repository_id"]]["name"],
            "path": i["path"],
            "start_line": i["start_line"],
            "end_line": i["end_line"],
            "symbol": i["symbol"],
            "kind": i["kind"],
            "blob_sha": i["blob_sha"],
            "indexed_commit": by_id[i["repository_id"]]["indexed_commit"],
            "score": i["score"],
            "why": json.dumps(why(i)),
        }
        for n, i in enumerate(ordered, 1)
    ]
