"""What retrieval must show: identifiers at rank 1, a paraphrase through the dense leg,
the graph bringing an imported module and the importing test, and tenants that share a
repository name and content never seeing each other's rows."""

import psycopg
import pytest
from codesift.indexer import index_repository

ETAG_JS = """'use strict';
var crypto = require('crypto');

/**
 * Build the function that computes entity tags for response bodies.
 */
function compileETag(val) {
  if (val === false) return undefined;
  return function generateETag(body) {
    return crypto.createHash('sha1').update(body).digest('base64');
  };
}

exports.compileETag = compileETag;
"""
RESPONSE_JS = """'use strict';
var etag = require('./etag');
var res = module.exports = {};

res.clearCookie = function clearCookie(name, options) {
  var opts = Object.assign({ expires: new Date(1), path: '/' }, options);
  return this.cookie(name, '', opts);
};

res.vary = function vary(field) {
  this.headers.vary = field;
  return this;
};
"""
SESSION_PY = '''"""Sessions."""
from .hashing import scramble


def auth_v2_session_token(user_id, issued_at):
    """The opaque token that identifies a logged-in user."""
    return scramble(f"{user_id}:{issued_at}")


def parse_cookie_header(header):
    return dict(part.split("=", 1) for part in header.split("; ") if "=" in part)
'''
HASHING_PY = '''"""One-way functions."""
import hashlib


def scramble(secret: str, salt: str = "pepper") -> str:
    """Irreversibly digest a secret with sha256 so it can be stored safely."""
    return hashlib.sha256((salt + secret).encode()).hexdigest()


def format_bytes(count: int) -> str:
    for unit in ("B", "KB", "MB"):
        if count < 1024:
            return f"{count} {unit}"
        count //= 1024
    return f"{count} GB"
'''
TEST_SESSION_PY = """from auth.session import auth_v2_session_token


def test_token_is_stable():
    assert auth_v2_session_token(1, 2) == auth_v2_session_token(1, 2)
"""
FILES = {
    "web/etag.js": ETAG_JS,
    "web/response.js": RESPONSE_JS,
    "auth/__init__.py": "",
    "auth/session.py": SESSION_PY,
    "auth/hashing.py": HASHING_PY,
    "tests/test_session.py": TEST_SESSION_PY,
}


def _index(dsn, root, name, tenant, **kw):
    with psycopg.connect(dsn) as conn:
        return index_repository(conn, root, name=name, tenant=tenant, show_progress=False, **kw)


def _tenant(db, name):
    return db.execute("select id from tenants where name = %s", (name,)).fetchone()[0]


def _index_app(dsn, make_repo):
    _index(dsn, make_repo(FILES, name="app"), "app", "acme")


@pytest.fixture
def app_repo(db, dsn, make_repo, snapshots):
    """app indexed for acme (once per session, copied into this test's database)."""
    snapshots.load("contract_app", _index_app, dsn, make_repo)
    root = make_repo.folder / "app"
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(_tenant(db, "acme")),))
    return root


@pytest.mark.parametrize(
    "query, path, symbol",
    [
        ("compileETag", "web/etag.js", "compileETag"),
        ("res.clearCookie", "web/response.js", "res.clearCookie"),
        ("auth_v2_session_token", "auth/session.py", "auth_v2_session_token"),
        ("authV2SessionToken", "auth/session.py", "auth_v2_session_token"),
    ],
)
def test_identifiers_rank_first(db, app_repo, query, path, symbol):
    top = db.execute(
        "select path, symbol from hybrid_search(%s, repo => 'app', k => 5)"
        " where symbol is not null",
        (query,),
    ).fetchone()
    assert top == (path, symbol)


def test_a_paraphrase_without_shared_words_comes_through_the_dense_leg(db, app_repo):
    query = "obscure credentials so nobody recovers them"
    # every candidate here is the dense leg's alone; file consensus orders them by their
    # file's dense rank too, which can put whole-file rows above the symbol
    rows = (
        db.cursor(row_factory=psycopg.rows.dict_row)
        .execute("select path, symbol, why from hybrid_search(%s, repo => 'app', k => 5)", (query,))
        .fetchall()
    )
    hit = next((r for r in rows if r["symbol"] == "scramble"), None)
    assert hit is not None, [(r["path"], r["symbol"], r["why"]) for r in rows]
    assert hit["why"]["dense_rank"] is not None and hit["why"]["lexical_rank"] is None


def test_graph_brings_the_imported_module_and_the_importing_test(db, app_repo):
    rows = db.execute(
        "select path, graph_hop from explain_context('auth_v2_session_token', repo => 'app')"
        " where graph_hop is not null"
    ).fetchall()
    hops = dict(rows)
    assert hops.get("auth/hashing.py") == 1  # what the hit imports
    assert hops.get("tests/test_session.py") == 1  # the test that imports the hit


def test_tenants_sharing_a_repository_name_and_content_stay_apart(
    db, dsn, make_repo, app_repo, app_connect
):
    acme = _tenant(db, "acme")
    conn = app_connect(acme)
    before = conn.execute(
        "select path, symbol, score from hybrid_search('session token scramble', repo => 'app')"
    ).fetchall()
    # globex indexes a repository with the same name and the same files, plus its own
    other = make_repo(
        {
            **FILES,
            "auth/globex_vault.py": "from auth.session import auth_v2_session_token\n\n\n"
            "def globex_vault_unlock(user):\n    return auth_v2_session_token(user, 0)\n",
        },
        name="globex-app",
    )
    _index(dsn, other, "app", "globex")
    globex_only = {"auth/globex_vault.py"}
    queries = [
        "select path from pack_context('globex_vault_unlock session token', repo => 'app')",
        "select path from explain_context('globex_vault_unlock session token', repo => 'app')",
        "select path from hybrid_search('globex_vault_unlock', repo => 'app')",
        "select path from pack_context('globex_vault_unlock')",
    ]
    for sql in queries:
        paths = {p for (p,) in conn.execute(sql).fetchall()}
        assert not paths & globex_only, sql
    # graph edges: in globex, auth/session.py is imported by the vault; never in acme's walk
    walked = {
        p
        for (p,) in conn.execute(
            "select path from explain_context('auth_v2_session_token', repo => 'app')"
            " where graph_hop is not null"
        ).fetchall()
    }
    assert "auth/globex_vault.py" not in walked
    # BM25 statistics: acme's scores are exactly what they were before globex arrived
    after = conn.execute(
        "select path, symbol, score from hybrid_search('session token scramble', repo => 'app')"
    ).fetchall()
    assert after == before
    assert conn.execute("select count(*) from term_stats where term = 'globex'").fetchone()[0] == 0
    assert conn.execute("select count(*) from repositories").fetchone()[0] == 1
    assert db.execute("select count(*) from repositories where name = 'app'").fetchone()[0] == 2


PACK_COLUMNS = [
    "rank",
    "repository",
    "path",
    "start_line",
    "end_line",
    "symbol",
    "kind",
    "blob_sha",
    "ref",
    "indexed_commit",
    "score",
    "tokens",
    "truncated",
    "text",
    "why",
]
EXPLAIN_COLUMNS = [
    "candidate",
    "repository",
    "ref",
    "path",
    "start_line",
    "end_line",
    "symbol",
    "kind",
    "lexical_rank",
    "dense_rank",
    "rrf",
    "recency",
    "graph_hop",
    "score",
    "decision",
    "pruned_by",
    "packed",
    "tokens",
    "why",
]
LANGUAGES = {".py": "python", ".js": "javascript"}
BOTH_LANGUAGES = "compileETag auth_v2_session_token scramble"


def _dict_rows(db, sql, args=()):
    cur = db.cursor(row_factory=psycopg.rows.dict_row)
    rows = cur.execute(sql, args).fetchall()
    return [c.name for c in cur.description], rows


@pytest.mark.parametrize(
    "function, columns",
    [("pack_context", PACK_COLUMNS), ("explain_context", EXPLAIN_COLUMNS)],
)
def test_rows_end_with_the_blob_language_and_the_citation(db, app_repo, function, columns):
    names, rows = _dict_rows(db, f"select * from {function}(%s, repo => 'app')", (BOTH_LANGUAGES,))
    # added after every older column: positional readers keep working
    assert names == [*columns, "language", "citation"]
    stored = dict(
        db.execute(
            "select f.path, b.language from files f"
            " join blobs b on b.tenant_id = f.tenant_id and b.sha = f.blob_sha where f.live"
        ).fetchall()
    )
    assert {r["language"] for r in rows} >= {"python", "javascript"}
    for r in rows:
        assert r["language"] == stored[r["path"]], r
        extension = r["path"][r["path"].rfind(".") :]
        assert r["language"] == LANGUAGES.get(extension), r
        assert r["citation"] == f"app:{r['path']}:{r['start_line']}-{r['end_line']}", r


def test_find_symbol_cites_in_the_same_format(db, app_repo):
    row = db.execute(
        "select path, start_line, end_line, citation from find_symbol('scramble', repo => 'app')"
    ).fetchone()
    assert row[3] == f"app:{row[0]}:{row[1]}-{row[2]}"


def test_pack_context_flat_spreads_why_into_typed_columns(db, app_repo):
    # the graph brings hashing.py and the test into this pack: graph columns are not all null
    query = "auth_v2_session_token"
    pack_names, packed = _dict_rows(
        db, "select * from pack_context(%s, repo => 'app', token_budget => 2000)", (query,)
    )
    flat_names, flat = _dict_rows(
        db, "select * from pack_context_flat(%s, repo => 'app', token_budget => 2000)", (query,)
    )
    why_keys = set(packed[0]["why"])
    # pack_context's columns in its order (but why), then one column per key of why
    row_columns = [n for n in pack_names if n != "why"]
    assert flat_names[: len(row_columns)] == row_columns
    assert sorted(flat_names[len(row_columns) :]) == sorted(why_keys)
    assert len(flat) == len(packed) > 1
    for p, f in zip(packed, flat, strict=True):
        assert {k: f[k] for k in pack_names if k != "why"} == {
            k: p[k] for k in pack_names if k != "why"
        }
        assert {k: f[k] for k in why_keys - {"degraded"}} == {
            k: v for k, v in p["why"].items() if k != "degraded"
        }, p["path"]
        # why.degraded as text: 'code: detail' each, null when the answer is not degraded
        said = "; ".join(f"{d['code']}: {d['detail']}" for d in p["why"]["degraded"])
        assert f["degraded"] == (said or None)
    assert any(f["graph_hop"] is not None for f in flat)
    walked = next(f for f in flat if f["graph_path"])
    assert isinstance(walked["graph_path"], list) and isinstance(walked["graph_edges"], list)
    assert isinstance(walked["graph_hop"], int)
    assert all(isinstance(f["rrf"], float) and isinstance(f["path_prior"], float) for f in flat)
    assert {f["file_kind"] for f in flat} >= {"code"}
    types = dict(
        db.execute(
            "select a.name, format_type(a.type, null) from pg_proc p,"
            " unnest(p.proargnames, p.proallargtypes, p.proargmodes) as a(name, type, mode)"
            " where p.proname = 'pack_context_flat' and a.mode = 't'"
        ).fetchall()
    )
    assert types["lexical_rank"] == "integer" and types["dense_distance"] == "double precision"
    assert types["graph_path"] == "text[]" and types["called_by"] == "text"
    assert types["degraded"] == "text"


PACK_STAGES = ["prepare", "question", "legs", "mentions", "fusion", "hydrate", "consensus"]
PACK_STAGES += ["recency", "graph", "standins", "callees", "fill", "languages"]
PACK_STAGES += ["rerank"]  # the learned ranker, timed also without a model (pipeline/rerank.py)


def test_explain_context_says_where_the_time_went(db, app_repo):
    rows = db.execute(
        "select why->'stage_ms' from explain_context('scramble the session token', repo => 'app')"
    ).fetchall()
    assert rows
    stage_ms = rows[0][0]
    assert set(stage_ms) - {"embed"} == set(PACK_STAGES)  # embed: when a model answers
    assert all(isinstance(ms, (int, float)) and ms >= 0 for ms in stage_ms.values())
    assert all(r[0] == stage_ms for r in rows)  # one call's timings on each of its rows
    # outlines (off by default): their stage is timed when they are on
    db.execute("set codesift.retrieval_off = 'evidence'")
    stage_ms = db.execute(
        "select why->'stage_ms' from explain_context('scramble the session token', repo => 'app')"
    ).fetchone()[0]
    assert set(stage_ms) - {"embed"} == {*PACK_STAGES, "outline"}


@pytest.mark.parametrize(
    ("call", "stages"),
    [
        ("select count(*) from pack_context(%s, repo => 'app')", "fill"),
        ("select count(*) from hybrid_search(%s, repo => 'app')", "recency"),
    ],
)
def test_codesift_timing_is_a_notice_of_each_stage(db, app_repo, call, stages):
    notices = []
    db.add_notice_handler(lambda n: notices.append(n.message_primary))
    db.execute(call, ("scramble the session token",))
    assert not any(n.startswith("codesift.timing:") for n in notices)
    db.execute("set codesift.timing = on")
    db.execute(call, ("scramble the session token",))
    timing = [n for n in notices if n.startswith("codesift.timing:")]
    assert len(timing) == 1 and f" {stages} " in timing[0] and "; total " in timing[0]
