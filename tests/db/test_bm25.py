"""The BM25 legs: exact Okapi scores, bounded reading that deepens instead of starving,
and what the query path stores at extraction (posting lengths and impacts, line counts)."""

import math
import re

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift.migrate import SQL_DIR
from codesift_db.packing import estimate_tokens

from tests.conftest import commit, write_files
from tests.explained import explained, index_reads, nodes

# 30 modules mention "retry"; only the 5 under core/ pass a path filter, and they mention it
# least, so they are the last postings of the term in impact order
FILES = {
    **{
        f"noise/mod{i:02d}.py": f"def retry_{i}():\n    return retry(retry(retry({i})))\n"
        for i in range(25)
    },
    **{
        f"core/worker{i}.py": (
            f"def backoff_{i}(attempt):\n"
            f"    # one retry per attempt, waiting longer each time\n"
            f"    delay = compute_delay(attempt, factor={i})\n"
            f"    return schedule(retry, delay)\n\n\n"
        )
        for i in range(5)
    },
}
TERMS = ["retry"]


def _index_jobs(dsn, make_repo):
    root = make_repo(FILES, name="jobs")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="jobs", tenant="acme", show_progress=False, embed=False)


@pytest.fixture
def indexed(db, dsn, make_repo, snapshots):
    """jobs indexed for acme (once per session, copied into this test's database)."""
    snapshots.load("bm25_jobs", _index_jobs, dsn, make_repo)
    tenant, repo = db.execute(
        "select t.id, r.id from tenants t join repositories r on r.tenant_id = t.id"
    ).fetchone()
    return {"tenant": tenant, "repo": repo}


def _symbols(db, ctx, depth=None, prefix=None, k=100):
    if depth is not None:
        db.execute("select set_config('codesift.bm25_depth', %s, false)", (str(depth),))
    rows = db.execute(
        "select s.qualified_name, b.score from _bm25_symbols(%s, %s, %s, %s, null, null, %s,"
        " 1.2, 0.75) b join code_symbols s on s.id = b.symbol_id",
        (ctx["tenant"], TERMS, [ctx["repo"]], prefix, k),
    ).fetchall()
    db.execute("reset codesift.bm25_depth")
    return rows


def _files(db, ctx, depth=None, prefix=None, k=40):
    if depth is not None:
        db.execute("select set_config('codesift.bm25_depth', %s, false)", (str(depth),))
    rows = db.execute(
        "select path, score from _bm25_files(%s, %s, %s, %s, null, %s, 1.2, 0.75)",
        (ctx["tenant"], TERMS, [ctx["repo"]], prefix, k),
    ).fetchall()
    db.execute("reset codesift.bm25_depth")
    return rows


def test_scores_are_okapi_bm25_from_the_statistics(db, indexed):
    t = indexed["tenant"]
    docs, total = db.execute(
        "select docs, total_terms from corpus_stats where tenant_id = %s and tier = 'symbol'", (t,)
    ).fetchone()
    df = db.execute(
        "select df from term_stats where tenant_id = %s and tier = 'symbol' and term = 'retry'",
        (t,),
    ).fetchone()[0]
    idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
    expected = {}
    for name, tf, dl in db.execute(
        "select s.qualified_name, p.tf, s.term_count from symbol_terms p"
        " join code_symbols s on s.id = p.symbol_id where p.term = 'retry'"
    ).fetchall():
        expected[name] = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / (total / docs)))
    got = dict(_symbols(db, indexed))
    assert set(got) == set(expected)
    for name, score in got.items():
        assert score == pytest.approx(expected[name], rel=1e-9)


def test_bounded_reading_deepens_until_filters_pass_k(db, indexed):
    exact = _symbols(db, indexed, prefix="core/")
    assert sorted(n for n, _ in exact) == [f"backoff_{i}" for i in range(5)]
    # one posting per term at first: the filter rejects it, the leg reads 8, 64, ... more
    assert _symbols(db, indexed, depth=1, prefix="core/") == exact
    assert len(_symbols(db, indexed, depth=1, prefix="core/", k=3)) == 3
    exact_files = _files(db, indexed, prefix="core/")
    assert len(exact_files) == 5
    assert _files(db, indexed, depth=1, prefix="core/") == exact_files


def test_shallow_reading_keeps_the_best_impacts(db, indexed):
    # depth 8 without filters: 8 postings of 'retry' are read, the 8 best in impact order,
    # and the exact ranking's top 8 are exactly those (one term: score = idf * impact-order)
    exact = _symbols(db, indexed)
    assert len(exact) == 30
    shallow = _symbols(db, indexed, depth=8, k=8)
    assert [s for _, s in shallow] == pytest.approx([s for _, s in exact[:8]])


# a rare term in 5 functions and a common one in 60 others: with the common term's weight
# low, its postings add less than a tenth of the rare term's idf to any score
LIGHT_FILES = {
    **{f"heavy/h{i}.py": f"def heavy_{i}():\n    return quasar(quasar({i}))\n" for i in range(5)},
    **{f"light/l{i:02d}.py": f"def light_{i}():\n    return nebula({i})\n" for i in range(60)},
}


def _impact_postings_read(db) -> int:
    return index_reads(db, "symbol_terms_impact", "idx_tup_read")


def test_postings_that_add_little_are_read_only_when_too_few_pass(db, dsn, make_repo):
    root = make_repo(LIGHT_FILES, name="sky")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="sky", tenant="acme", show_progress=False, embed=False)
    tenant, repo = db.execute("select tenant_id, id from repositories").fetchone()

    def leg(k):
        before = _impact_postings_read(db)
        names = [
            n
            for (n,) in db.execute(
                "select s.name from _bm25_symbols(%s, %s, %s, null, null, null, %s, 1.2, 0.75,"
                " %s) b join code_symbols s on s.id = b.symbol_id",
                (tenant, ["quasar", "nebula"], [repo], k, [1.0, 0.05]),
            ).fetchall()
        ]
        return names, _impact_postings_read(db) - before

    names, read = leg(5)
    assert sorted(names) == [f"heavy_{i}" for i in range(5)]
    assert read < 60  # the light term's 60 postings were not read
    names, read = leg(6)  # five cannot fill six: every posting may count
    assert sorted(names)[:5] == [f"heavy_{i}" for i in range(5)]
    assert len(names) == 6 and names[5].startswith("light_")
    assert read >= 60


# 260 functions that mention "retry": more candidates than the fewest scored exactly
MANY = {f"many/m{i:03d}.py": f"def m{i}():\n    return retry({i})\n" for i in range(260)}


def _exact_probes(db) -> int:
    return index_reads(db, "symbol_terms_symbol_term")


@pytest.mark.parametrize(
    ("depth", "scored"),
    [(None, 100), ("40", 40), ("4000", 100), ("6000", 150), ("8000", 200), ("1000000", 260)],
)
def test_the_deeper_a_term_is_read_the_more_candidates_are_scored_exactly(
    db, dsn, make_repo, snapshots, depth, scored
):
    """At least 100 (k 10), or one per 40 postings a term reads (this tier of 260 symbols
    reads 2,000 unset), of the candidates the read found (40 read find 40, a million all
    260): one probe of the (symbol, term) index each."""
    snapshots.load_repos("bm25_many", {"many": ("acme", MANY)}, dsn, make_repo)
    tenant, repo = db.execute("select tenant_id, id from repositories").fetchone()
    if depth is not None:
        db.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    before = _exact_probes(db)
    rows = db.execute(
        "select symbol_id from _bm25_symbols(%s, %s, %s, null, null, null, 10, 1.2, 0.75)",
        (tenant, TERMS, [repo]),
    ).fetchall()
    assert len(rows) == 10
    assert _exact_probes(db) - before == scored


def test_postings_carry_length_and_impact(db, indexed):
    bad = db.execute(
        "select count(*) from symbol_terms p join code_symbols s on s.id = p.symbol_id"
        " where p.dl is distinct from s.term_count or p.impact is null"
    ).fetchone()[0]
    assert bad == 0
    bad = db.execute(
        "select count(*) from blob_terms p join blobs b on b.tenant_id = p.tenant_id"
        " and b.sha = p.blob_sha where p.dl is distinct from b.term_count or p.impact is null"
    ).fetchone()[0]
    assert bad == 0


SYMBOL_STATS_FROM_POSTINGS = """
select
    (select count(distinct symbol_id) from symbol_terms where tenant_id = %(t)s),
    (select coalesce(sum(tf), 0) from symbol_terms where tenant_id = %(t)s),
    (select array_agg(row(term, n) order by term) from (
        select term, count(*) as n from symbol_terms where tenant_id = %(t)s group by term
    ) as d)
"""
SYMBOL_STATS = """
select c.docs, c.total_terms, (
    select array_agg(row(term, df) order by term) from term_stats
    where tenant_id = %(t)s and tier = 'symbol'
)
from corpus_stats as c where c.tenant_id = %(t)s and c.tier = 'symbol'
"""


def test_symbol_statistics_are_the_postings_counts_in_every_tenant(db, dsn, indexed, make_repo):
    # a second tenant indexed in two runs (the second adds a blob and changes one) next to
    # the first: its statistics count its own postings, exactly
    root = make_repo({"a.py": "def retry_once(job):\n    return retry(job)\n"}, name="second")
    for step in range(2):
        if step:
            write_files(root, {"a.py": "def retry_twice(job):\n    return retry(retry(job))\n"})
            write_files(
                root, {"b.py": "class Backoff:\n    def delay(self, n):\n        return n\n"}
            )
            commit(root, "more")
        with psycopg.connect(dsn) as conn:
            index_repository(
                conn, root, name="second", tenant="globex", show_progress=False, embed=False
            )
    for (tenant,) in db.execute("select id from tenants").fetchall():
        expected = db.execute(SYMBOL_STATS_FROM_POSTINGS, {"t": tenant}).fetchone()
        assert db.execute(SYMBOL_STATS, {"t": tenant}).fetchone() == expected
        assert expected[0] > 0


def test_line_count_ignores_trailing_newlines(db, dsn, make_repo):
    root = make_repo({"a.txt": "one\ntwo\n\n\n", "b.txt": "x", "c.txt": ""}, name="lines")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="lines", tenant="acme", show_progress=False, embed=False)
    counts = dict(
        db.execute(
            "select f.path, b.line_count from files f join blobs b"
            " on b.tenant_id = f.tenant_id and b.sha = f.blob_sha"
        ).fetchall()
    )
    assert counts == {"a.txt": 2, "b.txt": 1, "c.txt": 1}
    tokens = dict(db.execute("select content, token_count from blobs").fetchall())
    assert tokens == {t: estimate_tokens(t.rstrip("\n")) for t in tokens}


def test_migration_backfill_matches_extraction(db, indexed):
    """The query-path migration's backfill gives rows written before it what extraction
    writes now (impacts at today's statistics)."""
    before = db.execute("select symbol_id, term, dl from symbol_terms order by 1, 2").fetchall()
    blobs = db.execute("select sha, line_count, token_count from blobs order by 1").fetchall()
    symbols = db.execute("select id, token_count from code_symbols order by 1").fetchall()
    db.execute("update symbol_terms set dl = null, impact = null")
    db.execute("update blob_terms set dl = null, impact = null")
    db.execute("update blobs set line_count = null, token_count = null")
    db.execute("update code_symbols set token_count = null")
    text = (SQL_DIR / "incremental" / "007-query-path.sql").read_text()
    statements = [
        u for u in re.split(r";\s*\n", text) if re.match(r"\s*(update |create function pg_temp)", u)
    ]
    assert len(statements) == 5
    for statement in statements:
        db.execute(statement)
    assert db.execute("select symbol_id, term, dl from symbol_terms order by 1, 2").fetchall() == (
        before
    )
    assert db.execute("select sha, line_count, token_count from blobs order by 1").fetchall() == (
        blobs
    )
    assert db.execute("select id, token_count from code_symbols order by 1").fetchall() == symbols
    nulls = db.execute(
        "select (select count(*) from symbol_terms where impact is null)"
        " + (select count(*) from blob_terms where impact is null or dl is null)"
    ).fetchone()[0]
    assert nulls == 0


@pytest.mark.parametrize("depth", ["0", "-5"])
def test_a_depth_below_one_reads_one(db, indexed, depth):
    assert _symbols(db, indexed, depth=depth, prefix="core/") == _symbols(
        db, indexed, prefix="core/"
    )


# another repository of acme's whose 80 modules mention "retry" more densely than any of
# jobs': their postings come first in impact order
CROWD = {f"crowd/c{i:02d}.py": f"def r{i}():\n    return retry(retry)\n" for i in range(80)}


@pytest.mark.parametrize("leg", ["symbols", "files"])
def test_a_scope_of_one_repository_of_many_sums_only_its_own_postings(
    db, dsn, indexed, make_repo, leg
):
    """A depth factor of 5 or more (a scope that is a fifth or less of the tenant) sums only
    the postings of what is live in the scope: the same rows as summing every posting, none
    of the other repository's, and an exhaustive read's order."""
    root = make_repo(CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    crowd = db.execute("select id from repositories where name = 'crowd'").fetchone()[0]
    if leg == "symbols":
        sql = (
            "select f.repository_id, f.path, b.score from _bm25_symbols(%s, %s, %s, null, null,"
            " null, 10, 1.2, 0.75, null, %s) b join code_symbols s on s.id = b.symbol_id"
            " join files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live"
            " and f.repository_id = any(%s) order by b.score desc, f.path"
        )
    else:
        sql = (
            "select b.repository_id, b.path, b.score from _bm25_files(%s, %s, %s, null, null,"
            " 10, 1.2, 0.75, null, %s) b where b.repository_id = any(%s)"
            " order by b.score desc, b.path"
        )
    scope = [indexed["repo"]]

    def ask(factor, depth=None):
        if depth is not None:
            db.execute("select set_config('codesift.bm25_depth', %s, false)", (str(depth),))
        rows = db.execute(sql, (indexed["tenant"], TERMS, scope, factor, scope)).fetchall()
        db.execute("reset codesift.bm25_depth")
        return [(r, p, round(s, 9)) for r, p, s in rows]

    every_posting = ask(1, depth=1_000_000)
    assert len(every_posting) == 10
    assert {r for r, _, _ in every_posting} == {indexed["repo"]} != {crowd}
    # shallow reading, where crowd's postings fill what is read first
    assert ask(8, depth=4) == ask(1, depth=4) == every_posting
    assert ask(5) == ask(1) == every_posting
    # the scope's live files are listed repository by repository: a repeated id or a null
    # one lists nothing twice and nothing else
    scope = [indexed["repo"], None, indexed["repo"]]
    assert ask(8, depth=4) == every_posting


def test_the_depth_factor_is_the_asked_one_kept_to_1_8_or_the_scopes_own(
    db, dsn, indexed, make_repo
):
    """Both legs read with codesift._bm25_depth_factor: an asked factor kept to 1..8, and
    without one the scope's own, not 1 (greatest(null, 1) is 1)."""
    root = make_repo(CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    scope = [indexed["repo"]]

    def factor(asked):
        return db.execute(
            "select _bm25_depth_factor(%s, %s, %s::integer)", (indexed["tenant"], scope, asked)
        ).fetchone()[0]

    own = db.execute("select _bm25_scope_factor(%s, %s)", (indexed["tenant"], scope)).fetchone()[0]
    assert own > 1  # crowd outnumbers the scope's files
    assert factor(None) == own
    kept = {-2_147_483_648: 1, 0: 1, 1: 1, 3: 3, 8: 8, 9: 8, 2_147_483_647: 8}
    assert {asked: factor(asked) for asked in kept} == kept


# the question's words beside "retry": every module of both repositories holds some of them;
# and a repository of acme's thirteen times the size of jobs, so that jobs' symbols hold
# fewer postings than those terms have in the tenant
MANY_TERMS = ["retry", "return", "def", "attempt", "delay", "compute", "schedule", "factor"]
LARGE_CROWD = {f"crowd/c{i:03d}.py": f"def r{i}():\n    return retry(retry)\n" for i in range(400)}


def test_a_scope_smaller_than_the_read_is_scored_exhaustively(db, dsn, indexed, make_repo):
    """Where the scope's symbols hold fewer postings than the bounded read of the terms would
    read, each of them is scored from all its postings (_bm25_small_scope lists them): the
    rows of summing every posting of the tenant, exactly; a shallow read stays bounded."""
    root = make_repo(LARGE_CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    tenant, scope = indexed["tenant"], [indexed["repo"]]
    jobs_symbols = db.execute(
        "select count(distinct s.id) from code_symbols s join files f on f.tenant_id ="
        " s.tenant_id and f.blob_sha = s.blob_sha and f.live where f.repository_id = %s",
        (indexed["repo"],),
    ).fetchone()[0]

    def listed(terms, reading):
        return db.execute(
            "select _bm25_small_scope(%s, %s, %s, null, null, null, %s)",
            (tenant, terms, scope, reading),
        ).fetchone()[0]

    def ask(terms, factor, depth=None):
        if depth is not None:
            db.execute("select set_config('codesift.bm25_depth', %s, false)", (str(depth),))
        rows = db.execute(
            "select symbol_id, score from _bm25_symbols(%s, %s, %s, null, null, null, 10, 1.2,"
            " 0.75, null, %s)",
            (tenant, terms, scope, factor),
        ).fetchall()
        db.execute("reset codesift.bm25_depth")
        return [(i, round(s, 9)) for i, s in rows]

    assert len(listed(MANY_TERMS, 16_000)) == jobs_symbols
    assert listed(MANY_TERMS, 1) is None  # a shallow read costs less than the scope
    assert listed(["attempt"], 16_000) is None
    every_posting = ask(MANY_TERMS, 1, depth=1_000_000)
    assert len(every_posting) == 10
    assert ask(MANY_TERMS, 8) == every_posting
    # a path filter and kinds are the scope's too
    core = db.execute(
        "select _bm25_small_scope(%s, %s, %s, 'core/', null, array['function'], 16000)",
        (tenant, MANY_TERMS, scope),
    ).fetchone()[0]
    names = db.execute("select name from code_symbols where id = any(%s)", (core,)).fetchall()
    assert sorted(n for (n,) in names) == [f"backoff_{i}" for i in range(5)]


def test_a_filter_that_leaves_few_symbols_is_scored_whole_once_the_read_deepens(
    db, dsn, indexed, make_repo
):
    """Asked of both repositories, a path filter keeps 5 of 430 symbols: the first read finds
    too few, and before reading 8 times deeper the leg scores what passes the filter whole
    (the rows of summing every posting, exactly)."""
    root = make_repo(LARGE_CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    tenant = indexed["tenant"]
    scope = [r for (r,) in db.execute("select id from repositories order by id").fetchall()]
    sql = (
        "select s.name, round(b.score::numeric, 9) from _bm25_symbols(%s, %s, %s, 'core/', null,"
        " null, 10, 1.2, 0.75, null, 1) b join code_symbols s on s.id = b.symbol_id"
    )
    rows, plans = explained(db, sql, (tenant, MANY_TERMS, scope))
    assert sorted(n for n, _ in rows) == [f"backoff_{i}" for i in range(5)]
    assert any("unnest(scope_ids)" in p["Query Text"] for p in plans)
    db.execute("select set_config('codesift.bm25_depth', '1000000', false)")
    assert db.execute(sql, (tenant, MANY_TERMS, scope)).fetchall() == rows


@pytest.mark.parametrize(
    ("leg", "depth"),
    [
        (
            "select b.symbol_id::text, round(b.score::numeric, 9) from _bm25_symbols(%s, %s, %s,"
            " 'crowd/', null, null, 100, 1.2, 0.75, null, 1) b",
            20,
        ),
        (  # the file leg reads half the setting
            "select b.path, round(b.score::numeric, 9) from _bm25_files(%s, %s, %s, 'crowd/',"
            " null, 100, 1.2, 0.75, null, 1) b",
            40,
        ),
    ],
    ids=["symbols", "files"],
)
def test_a_filter_whose_postings_the_deeper_read_would_read_all_is_summed_alone(
    db, dsn, indexed, make_repo, leg, depth
):
    """A path filter keeps too many symbols (400 of 430 with the term) to score each one's
    postings whole, and the first read (20 postings) finds fewer than the 100 asked: the
    deeper read (160) would read over a quarter of the term's postings and check each
    candidate against the filter (the same for files). The leg sums every posting for what
    passes the filter alone, at once: the rows of summing every posting."""
    root = make_repo(LARGE_CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    scope = [r for (r,) in db.execute("select id from repositories order by id").fetchall()]
    args = (indexed["tenant"], ["retry"], scope)
    db.execute("select set_config('codesift.bm25_depth', %s, false)", (str(depth),))
    rows, plans = explained(db, leg, args)
    assert len(rows) == 100
    texts = [p["Query Text"] for p in plans]
    assert sum("hits as (" in t for t in texts) == 1
    assert sum("summed as (" in t for t in texts) == 1  # the first read, not the deeper one
    db.execute("select set_config('codesift.bm25_depth', '1000000', false)")
    assert db.execute(leg, args).fetchall() == rows
    db.execute("reset codesift.bm25_depth")


def test_a_path_filter_lists_only_its_range_of_paths(db, dsn, indexed, make_repo):
    """Where paths sort bytewise (this cluster's C collation), the small-scope listing under a
    path prefix reads that prefix's range of the repository's paths, not every live file of
    the repository; so does the file leg's listing for its whole read."""
    collation = db.execute(
        "select datcollate from pg_database where datname = current_database()"
    ).fetchone()[0]
    if collation not in ("C", "POSIX"):
        pytest.skip(f"paths sort by {collation}: no range to read")
    root = make_repo(LARGE_CROWD, name="crowd")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="crowd", tenant="acme", show_progress=False, embed=False)
    scope = [r for (r,) in db.execute("select id from repositories order by id").fetchall()]
    listing = "select _bm25_small_scope(%s, %s, %s, 'crowd/c01', null, null, null)"
    # a session whose cached plans are generic (as a large tenant's turn): the function's own
    # setting plans its listing for the prefix
    db.execute("set plan_cache_mode = force_generic_plan")
    rows, plans = explained(db, listing, (indexed["tenant"], MANY_TERMS, scope))
    db.execute("reset plan_cache_mode")
    assert len(rows[0][0]) == 10  # crowd/c010.py .. c019.py
    reads = [n for p in plans for n in nodes(p) if n.get("Relation Name") == "files"]
    assert reads and all("path >=" in n.get("Index Cond", "") for n in reads)
    assert sum(n["Actual Rows"] * n["Actual Loops"] for n in reads) == 10
    # and the file leg's whole read (too few pass a read of 20, the deeper one reaches them
    # all) lists its files so
    db.execute("select set_config('codesift.bm25_depth', '40', false)")
    rows, plans = explained(
        db,
        "select * from _bm25_files(%s, %s, %s, 'crowd/c01', null, 100, 1.2, 0.75, null, 1)",
        (indexed["tenant"], ["retry"], scope),
    )
    db.execute("reset codesift.bm25_depth")
    assert len(rows) == 10
    listing = [p for p in plans if "array_agg(x.blob_sha)" in p["Query Text"]]
    reads = [n for p in listing for n in nodes(p) if n.get("Relation Name") == "files"]
    assert reads and all("path >=" in n.get("Index Cond", "") for n in reads)
    assert sum(n["Actual Rows"] * n["Actual Loops"] for n in reads) == 10
