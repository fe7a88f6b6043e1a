"""Bounded work: every function the application role can run refuses arguments that would
make it work without bound, with an errcode and a message naming the limit.

Two tenants index the same repository name with the same content: a 12-file import clique
(every module imports every other), on which a walk over paths instead of files grows as
fanout^depth. The attacks run as the application role (codesift_app) where it may execute
the function; where a later privileges migration revokes an internal function from it,
as the owner, whose bounds must hold all the same.
"""

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import index_repos
from tests.explained import explained, index_reads, pipeline_statement

from .refusals import refused

CLIQUE_SIZE = 12
CLIQUE = {
    f"m{i}.py": "\n".join(f"from . import m{j}" for j in range(CLIQUE_SIZE) if j != i)
    + f"\n\n\ndef clique_member_{i}():\n    return {i}\n"
    for i in range(CLIQUE_SIZE)
} | {"__init__.py": ""}
MODULES = {f"m{i}.py" for i in range(CLIQUE_SIZE)}
BIG_INT = 2**31 - 1
MODEL = "all-MiniLM-L6-v2"
VECTOR = "[" + ",".join(["0.05"] * 384) + "]"
BUG_REPORT = (
    "After upgrading to the new release, opening a session against a server that answers "
    "with a redirect to itself no longer stops: the client keeps following the Location "
    "header until the process runs out of memory. Expected: follow_redirects gives up "
    "after the configured limit and raises TooManyRedirects with the last response "
    "attached. Steps: start a server that returns 302 with Location set to the same URL, "
    "call open_session on it, watch memory grow. The clique_member_3 helper is involved, "
    "and m3.py imports m4.py, which imports everything else. "
) * 4  # about 300 words


def _index_clique(dsn: str, make_repo) -> dict[str, tuple[int, int]]:
    out = {}
    for tenant in ("acme", "globex"):
        root = make_repo(CLIQUE, name=f"{tenant}-clique")
        with psycopg.connect(dsn) as conn:
            index_repository(
                conn, root, name="clique", tenant=tenant, embed=False, show_progress=False
            )
            out[tenant] = conn.execute(
                "select t.id, r.id from codesift.tenants t"
                " join codesift.repositories r on r.tenant_id = t.id"
                " where t.name = %s and r.name = 'clique'",
                (tenant,),
            ).fetchone()
    return out


@pytest.fixture
def clique(dsn, make_repo, snapshots):
    """The clique indexed as repository 'clique' by two tenants: {tenant: (tenant_id, repo)}
    (once per session, copied into this test's database)."""
    return snapshots.load("clique", _index_clique, dsn, make_repo)


def runner(db, app_connect, tenant_id: int, function: str) -> psycopg.Connection:
    """The application role's connection when it may execute the function, else the owner's
    (after the final privileges migration revokes internal functions from the role)."""
    allowed = db.execute(
        "select coalesce(bool_and(has_function_privilege('codesift_app', p.oid, 'execute')),"
        " false) from pg_proc p where p.pronamespace = 'codesift'::regnamespace"
        " and p.proname = %s",
        (function,),
    ).fetchone()[0]
    if allowed:
        return app_connect(tenant_id)
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant_id),))
    return db


WALK = (
    "select repository_id, path, hop, factor, via from codesift._graph_walk("
    "%s::bigint, %s::bigint[], %s::text[], %s::integer, %s::float8, %s::integer)"
)


# --- _graph_walk ------------------------------------------------------------------------------


@pytest.mark.parametrize("fanout", [8, 100])
def test_graph_walk_at_depth_5_on_a_clique_reaches_each_file_once(db, app_connect, clique, fanout):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, "_graph_walk")
    rows = conn.execute(WALK, (tenant, [repo], ["m0.py"], 5, 0.85, fanout)).fetchall()
    paths = [r[1] for r in rows]
    assert len(paths) == len(set(paths)) == CLIQUE_SIZE - 1
    assert set(paths) == MODULES - {"m0.py"}
    for repository_id, path, hop, factor, via in rows:
        assert repository_id == repo
        assert via[0] == "m0.py" and via[-1] == path and len(via) == hop + 1
        assert len(set(via)) == len(via)
        assert factor == pytest.approx(0.85**hop)
    # with a fanout that covers the clique every file is one hop away
    if fanout >= CLIQUE_SIZE:
        assert {r[2] for r in rows} == {1}


def test_graph_walk_from_every_file_returns_each_once(db, app_connect, clique):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, "_graph_walk")
    seeds = sorted(MODULES)
    rows = conn.execute(WALK, (tenant, [repo], seeds, 5, 0.85, 8)).fetchall()
    paths = [r[1] for r in rows]
    # a seed reached from another seed is reported (at hop 1), each file once
    assert len(paths) == len(set(paths))
    assert set(paths) <= MODULES and all(r[2] == 1 for r in rows)


def test_graph_walk_stays_in_its_tenant(db, app_connect, clique):
    acme, _ = clique["acme"]
    globex, globex_repo = clique["globex"]
    conn = runner(db, app_connect, acme, "_graph_walk")
    if conn is db:
        pytest.skip("_graph_walk is not executable by codesift_app: the owner bypasses nothing")
    for tenant in (acme, globex):
        walk = (tenant, [globex_repo], ["m0.py"], 5, 0.85, 8)
        assert conn.execute(WALK, walk).fetchall() == []
    # even where row-level security does not apply, the walk keeps to the tenant it names
    db.execute("select set_config('app.current_tenant_id', '', false)")
    assert db.execute(WALK, (acme, [globex_repo], ["m0.py"], 5, 0.85, 8)).fetchall() == []
    assert db.execute(WALK, (globex, [globex_repo], ["m0.py"], 5, 0.85, 8)).fetchall()


@pytest.mark.parametrize(
    "depth, decay, fanout, sqlstate, says",
    [
        (100, 0.85, 8, "22023", "max_depth"),
        (6, 0.85, 8, "22023", "max_depth"),
        (-1, 0.85, 8, "22023", "max_depth"),
        (BIG_INT, 0.85, 8, "22023", "max_depth"),
        (None, 0.85, 8, "22004", "must not be null"),
        (2, None, 8, "22004", "must not be null"),
        (2, 0.85, None, "22004", "must not be null"),
        (2, float("nan"), 8, "22023", "decay"),
        (2, float("inf"), 8, "22023", "decay"),
        (2, float("-inf"), 8, "22023", "decay"),
        (2, 0.0, 8, "22023", "decay"),
        (2, 1.5, 8, "22023", "decay"),
        (2, 0.85, 1_000_000, "22023", "fanout"),
        (2, 0.85, -1, "22023", "fanout"),
    ],
)
def test_graph_walk_refuses_unbounded_arguments(
    db, app_connect, clique, depth, decay, fanout, sqlstate, says
):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, "_graph_walk")
    refused(
        conn,
        "select count(*) from codesift._graph_walk("
        "%s::bigint, %s, %s, %s::integer, %s::float8, %s::integer)",
        (tenant, [repo], ["m0.py"], depth, decay, fanout),
        sqlstate,
        says,
    )


def test_graph_walk_refuses_huge_seed_and_repository_arrays(db, app_connect, clique):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, "_graph_walk")
    seeds = [f"m{i}.py" for i in range(100_000)]
    refused(conn, WALK, (tenant, [repo], seeds, 2, 0.85, 8), says="seed")
    repos = list(range(1, 50_001))
    refused(conn, WALK, (tenant, repos, ["m0.py"], 2, 0.85, 8), says="repositories")
    many = (tenant, list(range(1, 5_001)), seeds[:100], 2, 0.85, 8)
    refused(conn, WALK, many, says="seed paths times")


def test_graph_walk_refuses_a_huge_relations_array_and_follows_only_those_asked(
    db, app_connect, clique
):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, "_graph_walk")
    walk = WALK.replace("%s::integer)", "%s::integer, %s::text[])")
    many = [f"r{i}" for i in range(101)]
    refused(conn, walk, (tenant, [repo], ["m0.py"], 2, 0.85, 8, many), says="relations")
    # the clique's edges are imports: asking for another relation reaches nothing
    assert (
        conn.execute(walk, (tenant, [repo], ["m0.py"], 2, 0.85, 8, ["co_change"])).fetchall() == []
    )
    assert conn.execute(walk, (tenant, [repo], ["m0.py"], 2, 0.85, 8, ["import"])).fetchall()


def test_pack_context_at_graph_depth_5_on_a_clique(app_connect, clique):
    tenant, _ = clique["acme"]
    conn = app_connect(tenant)
    rows = conn.execute(
        "select path, graph_hop, kind from codesift.explain_context('clique_member_3',"
        " repo => 'clique', graph_depth => 5)"
    ).fetchall()
    files = [path for path, hop, kind in rows if kind == "file" and hop is not None]
    assert files and len(files) == len(set(files))
    refused(
        conn,
        "select * from codesift.pack_context('clique_member_3', repo => 'clique',"
        " graph_depth => 6)",
        says="graph_depth",
    )


# --- the legs --------------------------------------------------------------------------------

LEGS = {
    "_tsrank_symbols": "codesift._tsrank_symbols(%(t)s, %(terms)s::text[], %(repos)s::bigint[],"
    " null, null, %(kinds)s::text[], %(k)s::integer)",
    "_tsrank_files": "codesift._tsrank_files(%(t)s, %(terms)s::text[], %(repos)s::bigint[],"
    " null, null, %(k)s::integer)",
    "_bm25_symbols": "codesift._bm25_symbols(%(t)s, %(terms)s::text[], %(repos)s::bigint[],"
    " null, null, %(kinds)s::text[], %(k)s::integer, 1.2, 0.75)",
    "_bm25_files": "codesift._bm25_files(%(t)s, %(terms)s::text[], %(repos)s::bigint[],"
    " null, null, %(k)s::integer, 1.2, 0.75)",
    "_dense_symbols": "codesift._dense_symbols(%(t)s, %(vec)s::vector, '" + MODEL + "',"
    " %(repos)s::bigint[], null, null, %(kinds)s::text[], %(k)s::integer)",
    "_dense_files": "codesift._dense_files(%(t)s, %(vec)s::vector, '" + MODEL + "',"
    " %(repos)s::bigint[], null, null, %(k)s::integer)",
}
TAKES_TERMS = {"_tsrank_symbols", "_tsrank_files", "_bm25_symbols", "_bm25_files"}
TAKES_KINDS = {"_tsrank_symbols", "_bm25_symbols", "_dense_symbols"}


def _leg(db, app_connect, clique, leg, **overrides):
    tenant, repo = clique["acme"]
    conn = runner(db, app_connect, tenant, leg)
    args = {"t": tenant, "terms": ["clique", "member"], "repos": [repo], "kinds": None}
    args |= {"vec": VECTOR, "k": 10} | overrides
    return conn, f"select count(*) from {LEGS[leg]}", args


@pytest.mark.parametrize("leg", sorted(LEGS))
def test_every_leg_answers_within_its_bounds(db, app_connect, clique, leg):
    conn, sql, args = _leg(db, app_connect, clique, leg, k=1000)
    assert conn.execute(sql, args).fetchone()[0] >= 0
    conn, sql, args = _leg(db, app_connect, clique, leg, k=0)
    assert conn.execute(sql, args).fetchone()[0] == 0


@pytest.mark.parametrize("leg", sorted(LEGS))
@pytest.mark.parametrize(
    "k, sqlstate", [(BIG_INT, "22023"), (1001, "22023"), (-1, "22023"), (None, "22004")]
)
def test_every_leg_refuses_a_huge_k(db, app_connect, clique, leg, k, sqlstate):
    conn, sql, args = _leg(db, app_connect, clique, leg, k=k)
    refused(conn, sql, args, sqlstate, says="k must")


@pytest.mark.parametrize("leg", sorted(LEGS))
def test_every_leg_refuses_huge_arrays(db, app_connect, clique, leg):
    conn, sql, args = _leg(db, app_connect, clique, leg, repos=list(range(1, 100_001)))
    refused(conn, sql, args, says="repositories")
    if leg in TAKES_TERMS:
        terms = [f"term{i}" for i in range(100_000)]
        conn, sql, args = _leg(db, app_connect, clique, leg, terms=terms)
        refused(conn, sql, args, says="terms")
    if leg in TAKES_KINDS:
        conn, sql, args = _leg(db, app_connect, clique, leg, kinds=["function"] * 10_000)
        refused(conn, sql, args, says="kinds")


SMALL_SCOPE = "select codesift._bm25_small_scope(%s, %s, %s, null, null, null, %s)"


# a repository of acme's many times the clique's size, whose functions also return
CROWD = {f"crowd/c{i:03d}.py": f"def member_{i}():\n    return {i}\n" for i in range(300)}


def test_the_small_scope_listing_stays_in_its_tenant_and_bounds(
    db, dsn, app_connect, make_repo, clique
):
    """_bm25_small_scope lists the symbols of a scope the BM25 symbol leg may score whole
    (the clique's, beside a large repository of acme's): as acme, its own however deep the
    read it is weighed against, nothing of globex's by globex's ids, and arrays past the
    legs' limits refused."""
    (acme, acme_repo), (globex, globex_repo) = clique["acme"], clique["globex"]
    index_repos(dsn, make_repo, {"crowd": ("acme", CROWD)})
    conn = runner(db, app_connect, acme, "_bm25_small_scope")
    terms = ["member", "return"]
    own = conn.execute(SMALL_SCOPE, (acme, terms, [acme_repo], BIG_INT)).fetchone()[0]
    clique_ids = db.execute(
        "select s.id from code_symbols s join files f on f.tenant_id = s.tenant_id"
        " and f.blob_sha = s.blob_sha and f.live where f.repository_id = %s",
        (acme_repo,),
    ).fetchall()
    assert own and sorted(own) == sorted({i for (i,) in clique_ids})
    # globex's statistics and files are not acme's to read
    assert conn.execute(SMALL_SCOPE, (globex, terms, [globex_repo], BIG_INT)).fetchone()[0] is None
    assert conn.execute(SMALL_SCOPE, (acme, terms, [globex_repo], BIG_INT)).fetchone()[0] == []
    assert conn.execute(SMALL_SCOPE, (acme, terms, [acme_repo], -BIG_INT)).fetchone()[0] is None
    # no read weighed against (null): the scope listed whatever its size, still its tenant's
    crowd = db.execute("select id from repositories where name = 'crowd'").fetchone()[0]
    crowd_and_clique = conn.execute(
        SMALL_SCOPE, (acme, terms, [acme_repo, crowd], None)
    ).fetchone()[0]
    assert len(crowd_and_clique) == len(own) + len(CROWD)
    for tenant in (globex, acme):  # globex's files are not acme's to list
        assert conn.execute(SMALL_SCOPE, (tenant, terms, [globex_repo], None)).fetchone()[0] == []
    for args, says in [
        ((acme, [f"t{i}" for i in range(100_000)], [acme_repo], 10), "terms"),
        ((acme, terms, list(range(1, 100_001)), 10), "repositories"),
    ]:
        refused(conn, SMALL_SCOPE, args, says=says)
    filtered = (
        "select codesift._bm25_small_scope(%s, %s, %s, %s, %s, %s, %s)"  # path, language, kinds
    )
    refused(
        conn,
        filtered,
        (acme, terms, [acme_repo], None, None, ["function"] * 10_000, 10),
        says="kinds",
    )
    # a path filter is compared with the stored paths, never opened: one leading out of the
    # repository, an absolute one or one of a megabyte lists nothing
    for prefix in ["../", "/etc/", "m1.py/../../", "x" * 1_000_000]:
        for reading in (BIG_INT, None):  # weighed against a read, or listed up to the most
            listed = conn.execute(
                filtered, (acme, terms, [acme_repo], prefix, None, None, reading)
            ).fetchone()[0]
            assert listed == [], (prefix[:20], reading)
    assert (
        conn.execute(
            filtered, (acme, terms, [acme_repo], None, "x" * 1_000_000, None, BIG_INT)
        ).fetchone()[0]
        == []
    )


# the BM25 legs with a depth factor asked (no weights, factor 8): they list the scope's files
SCOPED_LEGS = {leg: LEGS[leg][:-1] + ", null, 8)" for leg in ("_bm25_symbols", "_bm25_files")}


def _cte_rows(plan: dict, name: str) -> list[int]:
    """The actual rows of every node of an EXPLAIN (json) plan that computes CTE `name`."""
    found = [plan["Actual Rows"]] if plan.get("Subplan Name") == f"CTE {name}" else []
    for child in plan.get("Plans", []):
        found += _cte_rows(child, name)
    return found


@pytest.mark.parametrize("leg", sorted(SCOPED_LEGS))
def test_a_scope_repeating_ids_lists_each_repository_once(db, clique, leg):
    """The legs list a scope's live files repository by repository: 10,000 copies of a
    repository's id (the most a leg takes), mixed with another tenant's, list what one copy
    lists (not 10,000 times as much: 67 s for a pytest ref) and find the rows of one copy."""
    (acme, acme_repo), (_, globex_repo) = clique["acme"], clique["globex"]

    def ask(repos):
        args = {"t": acme, "terms": ["clique", "member"], "repos": repos, "kinds": None, "k": 10}
        rows, plans = explained(db, f"select * from {SCOPED_LEGS[leg]}", args)
        return rows, [n for plan in plans for n in _cte_rows(plan, "in_scope")]

    one, listed = ask([acme_repo])
    assert one and listed and listed[0] > 0
    many, listed_many = ask([acme_repo, globex_repo] * 5_000)
    assert many == one
    assert listed_many == listed


def _cte_scan_loops(plan: dict, name: str) -> list[int]:
    """The loops of every node of an EXPLAIN (json) plan that reads CTE `name`."""
    found = [plan["Actual Loops"]] if plan.get("CTE Name") == name else []
    for child in plan.get("Plans", []):
        found += _cte_scan_loops(child, name)
    return found


@pytest.mark.parametrize("leg", sorted(SCOPED_LEGS))
def test_a_scope_is_read_once_however_large_the_planner_thinks_it(db, clique, leg):
    """A leg asked of part of a tenant sums only the postings of the scope's rows. Written
    as `in (select ...)` beside the unscoped case, that was a subplan, hashed only while the
    planner's estimate of the scope (its tenant's size) fits in work_mem and past it read
    once per posting: 17 s for flask's 2,453 symbols in a tenant of 1.1M. With the tables'
    statistics those of a large deployment's, the scope is read once and the rows are the
    same."""
    acme, acme_repo = clique["acme"]
    args = {"t": acme, "terms": ["clique", "member"], "repos": [acme_repo], "kinds": None, "k": 10}
    expected = db.execute(f"select * from {SCOPED_LEGS[leg]}", args).fetchall()
    assert expected
    for table in ("files", "code_symbols", "blobs"):  # the planner reads rows per page
        db.execute(
            "update pg_class set reltuples = 10000000, relpages = greatest(relpages, 1)"
            " where oid = %s::regclass",
            (table,),
        )
    db.execute("set work_mem = '64kB'")  # the least: nothing the planner thinks large fits
    try:
        rows, plans = explained(db, f"select * from {SCOPED_LEGS[leg]}", args)
    finally:
        db.execute("reset work_mem")
    loops = [n for plan in plans for n in _cte_scan_loops(plan, "in_scope")]
    assert rows == expected
    assert loops and set(loops) == {1}


# --- the entry points ------------------------------------------------------------------------

TEN_MB = "redirect " * (10 * 1024 * 1024 // 9)


@pytest.mark.parametrize(
    "sql",
    [
        "select count(*) from codesift.pack_context(%s, repo => 'clique')",
        "select codesift.pack_context_text(%s, repo => 'clique')",
        "select count(*) from codesift.explain_context(%s, repo => 'clique')",
        "select count(*) from codesift.hybrid_search(%s, repo => 'clique')",
    ],
)
def test_a_10_mb_query_is_refused_with_a_hint(app_connect, clique, sql):
    conn = app_connect(clique["acme"][0])
    error = refused(conn, sql, (TEN_MB,), says="characters")
    assert error.diag.message_hint  # says what to pass instead


def test_a_300_word_bug_report_still_works(app_connect, clique):
    conn = app_connect(clique["acme"][0])
    assert 250 <= len(BUG_REPORT.split()) <= 400
    rows = conn.execute(
        "select path from codesift.pack_context(%s, repo => 'clique')", (BUG_REPORT,)
    ).fetchall()
    assert rows
    assert conn.execute(
        "select count(*) from codesift.hybrid_search(%s, repo => 'clique', k => 1000)",
        (BUG_REPORT,),
    ).fetchone()[0]


def test_embed_query_reads_a_bounded_prefix_of_10_mb(app_connect, clique):
    conn = app_connect(clique["acme"][0])
    whole = conn.execute("select codesift.embed_query(%s)::text", (TEN_MB,)).fetchone()[0]
    prefix = conn.execute("select codesift.embed_query(%s)::text", (TEN_MB[:5_000],)).fetchone()[0]
    # the model reads the first 256 word pieces: the same vector (or none without a model)
    assert whole == prefix


@pytest.mark.parametrize(
    "k, sqlstate", [(BIG_INT, "22023"), (1001, "22023"), (0, "22023"), (None, "22004")]
)
def test_hybrid_search_refuses_a_huge_k(app_connect, clique, k, sqlstate):
    conn = app_connect(clique["acme"][0])
    refused(
        conn,
        "select count(*) from codesift.hybrid_search('clique_member_3', repo => 'clique',"
        " k => %s::integer)",
        (k,),
        sqlstate,
        says="k must",
    )


def test_pack_context_refuses_a_huge_kinds_array(app_connect, clique):
    conn = app_connect(clique["acme"][0])
    refused(
        conn,
        "select count(*) from codesift.pack_context('clique_member_3', repo => 'clique',"
        " kinds => %s::text[])",
        (["function"] * 10_000,),
        says="kinds",
    )


# --- long questions (issue 16): reading, mentioned files, term weights, settings -----------

HOSTILE_FRAMES = "".join(
    f'  File "/srv/app/pkg{i}/secret_globex_{i}.py", line {i}, in handler_{i}\n'
    for i in range(3000)
)
HOSTILE = (
    "Crash in m3.py when clique_member_3 runs\n\n```\n"
    + HOSTILE_FRAMES
    + "```\n"
    + " ".join(f"`Ident{i}_name`" for i in range(4000))
)
HOSTILE = (HOSTILE * 4)[:200_000]


@pytest.fixture
def secret(db, dsn, make_repo, clique):
    """globex alone also has secret_globex_1.py (the file acme's question names)."""
    root = make_repo(
        CLIQUE | {"secret_globex_1.py": "def handler_1():\n    return 'globex only'\n"},
        name="globex-secret",
    )
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="clique", tenant="globex", embed=False, show_progress=False
        )
    return clique


@pytest.mark.parametrize(
    "sql",
    [
        "select path, why from codesift.pack_context(%s, repo => 'clique')",
        "select path, why from codesift.explain_context(%s, repo => 'clique')",
        "select path, why from codesift.hybrid_search(%s, repo => 'clique', k => 1000)",
    ],
)
def test_a_200k_question_of_identifiers_and_frames_answers_in_its_tenant(app_connect, secret, sql):
    conn = app_connect(secret["acme"][0])
    assert len(HOSTILE) == 200_000
    rows = conn.execute(sql, (HOSTILE,)).fetchall()
    assert rows  # m3.py and clique_member_3 are named: an answer, not an error
    paths = {r[0] for r in rows}
    assert not any("secret_globex" in p for p in paths)  # globex's file, named by acme
    assert paths <= MODULES | {"__init__.py"}
    # the file the title names came in through the mention leg
    assert any(r[1].get("mention_rank") for r in rows if r[0] == "m3.py")


def test_globex_finds_its_own_mentioned_file(app_connect, secret):
    conn = app_connect(secret["globex"][0])
    rows = conn.execute(
        "select path, symbol, why from codesift.hybrid_search(%s, repo => 'clique', k => 100)",
        (HOSTILE,),
    ).fetchall()
    assert "secret_globex_1.py" in {r[0] for r in rows}
    # handler_1, a frame's function, is a definition of globex's alone: named, it is found
    assert any(r[1] == "handler_1" and r[2].get("mention_rank") for r in rows)


@pytest.mark.parametrize("leg", ["_bm25_symbols", "_bm25_files"])
@pytest.mark.parametrize(
    "weights, says",
    [
        ([1.0], "weights has 1 entries for 2 terms"),
        ([1.0] * 100_000, "weights has 100000 entries"),
        ([1.0, float("nan")], "term weights"),
        ([1.0, -1.0], "term weights"),
        ([1.0, 1e300], "term weights"),
    ],
)
def test_term_weights_are_bounded(db, app_connect, clique, leg, weights, says):
    conn, sql, args = _leg(db, app_connect, clique, leg)
    sql = sql.replace(", 1.2, 0.75)", ", 1.2, 0.75, %(weights)s::float8[])")
    refused(conn, sql, args | {"weights": weights}, says=says)
    ok = conn.execute(sql, args | {"weights": [2.0, 0.0]}).fetchone()[0]
    assert ok >= 0


@pytest.mark.parametrize("leg", ["_bm25_symbols", "_bm25_files"])
def test_a_hostile_depth_factor_reads_at_most_8_times_deeper(db, app_connect, clique, leg):
    conn, sql, args = _leg(db, app_connect, clique, leg)
    sql = sql.replace(", 1.2, 0.75)", ", 1.2, 0.75, null, %(factor)s::integer)")
    rows = {f: conn.execute(sql, args | {"factor": f}).fetchone()[0] for f in (1, 8, None)}
    assert rows[1] == rows[8] == rows[None] > 0
    # out of range: kept to 1..8, no error and no unbounded read
    for factor in (2_147_483_647, 0, -2_147_483_648):
        assert conn.execute(sql, args | {"factor": factor}).fetchone()[0] == rows[1]
    # another tenant's repository stays invisible however deep the leg reads
    globex_repo = clique["globex"][1]
    deep = conn.execute(sql, args | {"repos": [globex_repo], "factor": 8}).fetchone()[0]
    assert deep == 0


@pytest.mark.parametrize(
    "setting, value, says",
    [
        ("codesift.retrieval_off", "kinds,drop table x", "unknown features"),
        ("codesift.retrieval_off", "x" * 100_000, "unknown features"),
        ("codesift.fusion", "convex; select 1", "codesift.fusion"),
        ("codesift.fusion", "y" * 100_000, "codesift.fusion"),
    ],
)
def test_retrieval_settings_refuse_unknown_values(app_connect, clique, setting, value, says):
    conn = app_connect(clique["acme"][0])
    conn.execute("select set_config(%s, %s, false)", (setting, value))
    error = refused(
        conn,
        "select count(*) from codesift.pack_context('clique_member_3', repo => 'clique')",
        says=says,
    )
    assert len(str(error)) < 2_000
    conn.execute("select set_config(%s, '', false)", (setting,))
    assert conn.execute(
        "select count(*) from codesift.pack_context('clique_member_3', repo => 'clique')"
    ).fetchone()[0]


SCOPE_FACTOR = "select codesift._bm25_scope_factor(%s::bigint, %s::bigint[])"
# what the legs read with when no factor is asked: the scope's own, by the same count
DEPTH_FACTOR_UNASKED = "select codesift._bm25_depth_factor(%s::bigint, %s::bigint[], null)"
DEPTH_FACTOR = "select codesift._bm25_depth_factor(%s::bigint, %s::bigint[], %s::integer)"


@pytest.mark.parametrize("factor_sql", [SCOPE_FACTOR, DEPTH_FACTOR_UNASKED])
def test_bm25_scope_factor_counts_only_the_sessions_own_repositories(
    db, app_connect, clique, factor_sql
):
    # globex holds 9 refs of one repository, and 80 times more files than one ref's: a
    # one-ref scope reads 8x deeper, at most; a scope of every ref reads no deeper
    (globex, globex_repo), (acme, acme_repo) = clique["globex"], clique["acme"]
    refs = [globex_repo]
    for i in range(8):
        refs += db.execute(
            "insert into repositories (tenant_id, name, ref, is_default) values (%s, 'clique', %s,"
            " false) returning id",
            (globex, f"refs/heads/b{i}"),
        ).fetchone()
    live = db.execute(
        "select count(*) from files where repository_id = %s and live", (globex_repo,)
    ).fetchone()[0]
    db.execute(
        "update corpus_stats set docs = %s where tenant_id = %s and tier = 'file'",
        (80 * live, globex),
    )
    own = app_connect(globex)
    assert own.execute(factor_sql, (globex, [globex_repo])).fetchone()[0] == 8
    assert own.execute(factor_sql, (globex, refs)).fetchone()[0] == 1
    db.execute(
        "update corpus_stats set docs = %s where tenant_id = %s and tier = 'file'",
        (3 * live, globex),
    )
    assert own.execute(factor_sql, (globex, [globex_repo])).fetchone()[0] == 3
    # acme asking about globex's id sees none of its repositories or files: nothing is told
    other = app_connect(acme)
    assert other.execute(factor_sql, (globex, [globex_repo])).fetchone()[0] == 1
    assert other.execute(factor_sql, (acme, [acme_repo])).fetchone()[0] == 1
    # hostile arguments: a clean factor of 1, no error, no unbounded work
    for tenant, repos in [(None, None), (acme, None), (acme, []), (acme, [acme_repo] * 100_000)]:
        assert other.execute(factor_sql, (tenant, repos)).fetchone()[0] == 1


def test_an_asked_depth_factor_is_kept_to_1_8_for_any_tenant_and_scope(app_connect, clique):
    """codesift._bm25_depth_factor with a factor asked reads nothing: another tenant's ids
    and hostile scopes get the asked factor kept to 1..8, never an error or a count."""
    (globex, globex_repo), (acme, acme_repo) = clique["globex"], clique["acme"]
    conn = app_connect(acme)
    scopes = [
        (globex, [globex_repo]),
        (None, None),
        (acme, []),
        (acme, [acme_repo] * 100_000),
        (-(2**63), [2**63 - 1]),
    ]
    for tenant, repos in scopes:
        for asked, kept in [(-2_147_483_648, 1), (0, 1), (5, 5), (2_147_483_647, 8)]:
            assert conn.execute(DEPTH_FACTOR, (tenant, repos, asked)).fetchone()[0] == kept


TIER_DEPTH = "select codesift._bm25_tier_depth(%s::bigint, %s, %s::integer, %s::integer)"


def test_bm25_tier_depth_grows_with_the_sessions_own_documents_only(db, app_connect, clique):
    """Unset, a leg reads one posting per 50 of the tier's documents (over the depth factor,
    shared among the terms past 8) when that is more than 2,000, up to 8,000 (files: 1,000
    to 4,000); another
    tenant's size is never read, and hostile arguments get a clean depth."""
    (globex, _), (acme, _) = clique["globex"], clique["acme"]
    for tier, docs in [("symbol", 300_000), ("file", 250_000)]:
        db.execute(
            "update corpus_stats set docs = %s where tenant_id = %s and tier = %s",
            (docs, globex, tier),
        )
    own = app_connect(globex)
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 3)).fetchone()[0] == 6_000
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 8)).fetchone()[0] == 6_000
    # the file tier: half the default, one per 50 files between, half the most
    assert own.execute(TIER_DEPTH, (globex, "file", 1, 3)).fetchone()[0] == 4_000
    assert own.execute(TIER_DEPTH, (globex, "file", 2, 3)).fetchone()[0] == 2_500
    assert own.execute(TIER_DEPTH, (globex, "file", 8, 3)).fetchone()[0] == 1_000
    # a long question's terms share it: 12 terms read 4,000, 80 no deeper than 2,000
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 12)).fetchone()[0] == 4_000
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 80)).fetchone()[0] == 2_000
    # one ref of many: the scope's share of the documents, which the leg reads deeper
    assert own.execute(TIER_DEPTH, (globex, "symbol", 2, 3)).fetchone()[0] == 3_000
    assert own.execute(TIER_DEPTH, (globex, "symbol", 8, 3)).fetchone()[0] == 2_000
    db.execute(
        "update corpus_stats set docs = 10000000 where tenant_id = %s and tier = 'symbol'",
        (globex,),
    )
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 3)).fetchone()[0] == 8_000  # the most
    own.execute("set codesift.bm25_depth = 3000")  # a setting is read as it is
    assert own.execute(TIER_DEPTH, (globex, "symbol", 1, 3)).fetchone()[0] == 3_000
    assert own.execute(TIER_DEPTH, (globex, "file", 1, 3)).fetchone()[0] == 1_500
    # acme asking with globex's id sees none of its statistics: the default, nothing told
    other = app_connect(acme)
    assert other.execute(TIER_DEPTH, (globex, "symbol", 1, 3)).fetchone()[0] == 2_000
    for tenant, tier, factor, terms in [
        (None, None, None, None),
        (acme, "nonsense", 1, 3),
        (acme, "symbol", -(2**31), -(2**31)),
        (acme, "symbol", 0, 0),
        (-(2**63), "file", 2**31 - 1, 2**31 - 1),
    ]:
        got = other.execute(TIER_DEPTH, (tenant, tier, factor, terms)).fetchone()[0]
        assert got == (1_000 if tier == "file" else 2_000)


# more functions that hold "member" than the BM25 symbol leg ever scores exactly
WIDE = {
    f"wide/w{f:02d}.py": "".join(f"def member_{f}_{i}():\n    return {i}\n\n\n" for i in range(100))
    for f in range(11)
}
DEEPEST = (
    "select count(*) from codesift._bm25_symbols(%s, array['member'], %s::bigint[], %s, null,"
    " null, 1000, 1.2, 0.75)"
)


def test_the_deepest_bm25_read_scores_at_most_1000_and_stays_in_its_tenant(
    db, dsn, app_connect, make_repo, clique
):
    """codesift.bm25_depth at its largest reads every posting and would score one candidate
    per 40 of them: at most 1,000 of the 1,100 are scored exactly (one probe of the (symbol,
    term) index each), and globex's tenant id or repository, or a prefix leading out of the
    repository, gives nothing however deep."""
    (acme, _), (globex, globex_repo) = clique["acme"], clique["globex"]
    index_repos(dsn, make_repo, {"wide": ("acme", WIDE)})
    wide = db.execute("select id from repositories where name = 'wide'").fetchone()[0]
    conn = runner(db, app_connect, acme, "_bm25_symbols")
    conn.execute("select set_config('codesift.bm25_depth', '1000000', false)")

    before = index_reads(db, "symbol_terms_symbol_term", session=conn)
    assert conn.execute(DEEPEST, (acme, [wide], None)).fetchone()[0] == 1000
    assert index_reads(db, "symbol_terms_symbol_term", session=conn) - before == 1000
    assert conn.execute(DEEPEST, (acme, [globex_repo], None)).fetchone()[0] == 0
    assert conn.execute(DEEPEST, (globex, [globex_repo], None)).fetchone()[0] == 0
    assert conn.execute(DEEPEST, (acme, [wide], "wide/")).fetchone()[0] == 1000
    for prefix in ["../", "/etc/", "wide/../../", "x" * 1_000_000]:
        assert conn.execute(DEEPEST, (acme, [wide], prefix)).fetchone()[0] == 0, prefix[:20]


# the BM25 legs under a filter, read one posting a term: too few pass, and the deeper read
# would reach the terms' postings, so the leg sums them for the filter's scope alone (its
# files listed by a statement of their own, the filters passed as values)
WHOLE_READ = {
    "_bm25_symbols": "select * from codesift._bm25_symbols(%s, %s, %s, %s, %s, null, 50, 1.2,"
    " 0.75)",
    "_bm25_files": "select * from codesift._bm25_files(%s, %s, %s, %s, %s, 50, 1.2, 0.75)",
}


@pytest.mark.parametrize("leg", sorted(WHOLE_READ))
def test_a_filtered_whole_read_stays_in_its_tenant_and_repository(db, app_connect, clique, leg):
    """As acme: its own clique under its own prefix; nothing through globex's repository,
    nothing under a prefix leading out of the repository or quoting its way out of the
    statement, nothing under a megabyte of prefix or language."""
    (acme, acme_repo), (_, globex_repo) = clique["acme"], clique["globex"]
    conn = runner(db, app_connect, acme, leg)
    conn.execute("select set_config('codesift.bm25_depth', '1', false)")
    terms = ["clique", "member", "return"]

    def ask(repos, prefix, lang=None):
        return conn.execute(WHOLE_READ[leg], (acme, terms, repos, prefix, lang)).fetchall()

    own = ask([acme_repo], "")
    assert own
    assert ask([globex_repo], "") == []
    for prefix in ["../", "/etc/", "x' or '1'='1", "%", "x" * 1_000_000]:
        assert ask([acme_repo], prefix) == [], prefix[:20]
    assert ask([acme_repo], "", "x' or '1'='1") == []
    assert ask([acme_repo], "", "x" * 1_000_000) == []


DENSE = {
    "_dense_symbols": "select * from codesift._dense_symbols(%s, %s::vector, '" + MODEL + "',"
    " %s, %s, %s, null, 40)",
    "_dense_files": "select * from codesift._dense_files(%s, %s::vector, '" + MODEL + "',"
    " %s, %s, %s, 30)",
}


@pytest.mark.parametrize("leg", sorted(DENSE))
def test_a_dense_leg_stays_in_its_tenant_repository_and_ef_search_bound(
    db, app_connect, clique, leg
):
    """Both tenants' clique given vectors. As acme: its own rows; nothing through globex's
    tenant id or repository; nothing under a prefix leading out of the repository, quoting
    its way out of the statement or a megabyte long; the widest codesift.ef_search answers
    within pgvector's bound and anything wider is refused, naming the setting."""
    (acme, acme_repo), (globex, globex_repo) = clique["acme"], clique["globex"]
    for table in ("code_symbols", "blobs"):
        db.execute(
            f"update codesift.{table} set embedding = %s::vector, embedding_model = %s",
            (VECTOR, MODEL),
        )
    db.commit()
    conn = runner(db, app_connect, acme, leg)

    def ask(tenant, repos, prefix=None, lang=None):
        return conn.execute(DENSE[leg], (tenant, VECTOR, repos, prefix, lang)).fetchall()

    assert ask(acme, [acme_repo])
    assert ask(globex, [globex_repo]) == []
    assert ask(acme, [globex_repo]) == []
    assert ask(globex, [acme_repo]) == []
    for prefix in ["../", "/etc/", "m1.py/../../", "x' or '1'='1", "x" * 1_000_000]:
        assert ask(acme, [acme_repo], prefix) == [], prefix[:20]
    assert ask(acme, [acme_repo], None, "x" * 1_000_000) == []
    conn.execute("select set_config('codesift.ef_search', '1000', false)")
    assert ask(acme, [acme_repo])
    for wider in ("1001", str(BIG_INT), "9" * 100_000):
        conn.execute("select set_config('codesift.ef_search', %s, false)", (wider,))
        refused(
            conn, DENSE[leg], (acme, VECTOR, [acme_repo], None, None), says="codesift.ef_search"
        )
    conn.execute("reset codesift.ef_search")
    assert ask(acme, [acme_repo])


def test_the_backlog_count_and_the_hydration_read_their_tenants_rows_only(db, app_connect, clique):
    """The statements that count a scope's embedding backlog and read the candidates' text
    (sql/embedding_backlog.sql, sql/hydrate_symbols.sql), run as the application role acting
    as acme: acme's counts and rows; globex's tenant id, its repository or its symbols give
    nothing (the owner, who bypasses row-level security, reads them), nor do 100,000
    repository ids or symbol ids that name nothing of acme's."""
    (acme, acme_repo), (globex, globex_repo) = clique["acme"], clique["globex"]
    backlog = pipeline_statement("embedding_backlog")
    hydrate = pipeline_statement("hydrate_symbols")
    many = list(range(10**12, 10**12 + 100_000))
    ids = {
        tenant: [
            i
            for (i,) in db.execute(
                "select id from codesift.code_symbols where tenant_id = %s", (tenant,)
            ).fetchall()
        ]
        for tenant in (acme, globex)
    }

    def count(conn, tenant, repos):
        args = {"p1": tenant, "p2": repos, "p3": 1001, "p4": 10001}
        return conn.execute(backlog, args).fetchone()[:2]

    def rows(conn, tenant, symbols, repos):
        args = {"p1": symbols, "p2": repos, "p3": 1000, "p4": tenant}
        return conn.execute(hydrate, args).fetchall()

    # the clique is indexed without vectors: globex's backlog and rows are there to be read
    assert min(count(db, globex, [globex_repo])) > 0
    assert len(rows(db, globex, ids[globex], [globex_repo])) == len(ids[globex]) > 0

    conn = app_connect(acme)
    assert count(conn, acme, [acme_repo]) == count(db, globex, [globex_repo])
    for tenant, repos in ((globex, [globex_repo]), (acme, [globex_repo]), (globex, [acme_repo])):
        assert count(conn, tenant, repos) == (0, 0), (tenant, repos)
    assert count(conn, acme, many) == (0, 0)
    assert count(conn, acme, [globex_repo, *many]) == (0, 0)

    assert len(rows(conn, acme, ids[acme], [acme_repo])) == len(ids[acme])
    assert rows(conn, globex, ids[globex], [globex_repo]) == []
    assert rows(conn, acme, ids[globex], [globex_repo]) == []
    assert rows(conn, globex, ids[acme], [acme_repo]) == []
    assert rows(conn, acme, ids[acme], [globex_repo]) == []
    assert rows(conn, acme, many, [acme_repo]) == []
    assert rows(conn, acme, ids[acme], many) == []
