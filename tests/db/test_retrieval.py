"""pack_context, explain_context and the search legs against a real indexed repository."""

import contextlib
import json

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift_db import dense
from codesift_db.pipeline import query as pipeline_query
from codesift_db.pipeline import recency, request

from tests.conftest import commit, write_files
from tests.explained import pipeline_statement

SESSION_PY = '''"""HTTP sessions."""
from .redirects import resolve_redirects
from .cookies import merge_cookies


class Session:
    """Keeps cookies and settings across requests."""

    def __init__(self):
        self.cookies = {}
        self.max_redirects = 30

    def send(self, request, allow_redirects=True):
        response = self.adapter_send(request)
        merge_cookies(self.cookies, response.cookies)
        if allow_redirects:
            response = resolve_redirects(self, response, request)
        return response

    def adapter_send(self, request):
        return request.transport.perform(request)
'''
REDIRECTS_PY = '''"""Following HTTP redirects."""

REDIRECT_CODES = (301, 302, 303, 307, 308)


def is_redirect(response):
    return response.status_code in REDIRECT_CODES and "location" in response.headers


def resolve_redirects(session, response, request):
    """Follow Location headers until a response is not a redirect."""
    hops = 0
    while is_redirect(response):
        hops += 1
        if hops > session.max_redirects:
            raise TooManyRedirects(hops)
        request.url = response.headers["location"]
        response = session.adapter_send(request)
    return response


class TooManyRedirects(Exception):
    pass
'''
COOKIES_PY = '''"""Cookie jars."""


def merge_cookies(jar, cookies):
    """Copy every cookie of a response into the session's jar."""
    for name, value in cookies.items():
        jar[name] = value
    return jar


def clear_expired_cookies(jar, now):
    for name in [n for n, c in jar.items() if c.expires < now]:
        del jar[name]
'''
BOILERPLATE = """def handler_{n}(event, context):
    payload = event.get("body") or {{}}
    user = payload.get("user")
    if user is None:
        return {{"status": 400, "error": "missing user"}}
    record = {{"user": user, "source": "api", "version": 2}}
    store.save(record)
    audit.log("saved", record)
    return {{"status": 200, "record": record}}
"""
TEST_PY = """from pkg.redirects import resolve_redirects


def test_follows_redirects():
    assert resolve_redirects is not None
"""

FILES = {
    "pkg/__init__.py": "",
    "pkg/session.py": SESSION_PY,
    "pkg/redirects.py": REDIRECTS_PY,
    "pkg/cookies.py": COOKIES_PY,
    "handlers/a.py": BOILERPLATE.format(n=1),
    "handlers/b.py": BOILERPLATE.format(n=2),
    "tests/test_redirects.py": TEST_PY,
}


def _act_as(db, name: str) -> int:
    """Set the session's tenant to the one named; its id."""
    tenant = db.execute("select id from tenants where name = %s", (name,)).fetchone()[0]
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return tenant


def _index_as_acme(db, dsn, make_repo, files: dict, name: str) -> None:
    """A repository of these files indexed (no vectors) for acme, acting as acme."""
    root = make_repo(files, name=name)
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name=name, tenant="acme", embed=False, show_progress=False)
    _act_as(db, "acme")


def _index_requestsish(dsn, make_repo):
    root = make_repo(FILES, name="requestsish")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="requestsish", tenant="acme", show_progress=False)


@pytest.fixture
def indexed(db, dsn, make_repo, snapshots):
    """requestsish indexed for acme (once per session, copied into this test's database)."""
    snapshots.load("requestsish", _index_requestsish, dsn, make_repo)
    tenant = _act_as(db, "acme")
    return {"root": make_repo.folder / "requestsish", "tenant": tenant}


def _pack(db, query, **kw):
    args = ", ".join(f"{k} => %({k})s" for k in kw)
    sql = f"select * from pack_context(%(q)s, repo => 'requestsish'{', ' + args if args else ''})"
    cur = db.cursor(row_factory=psycopg.rows.dict_row)
    return cur.execute(sql, {"q": query, **kw}).fetchall()


def test_pack_context_answers_with_citations_within_budget(db, indexed):
    rows = _pack(db, "where are redirects followed?", token_budget=600)
    assert rows, "nothing packed"
    assert rows[0]["path"] == "pkg/redirects.py"
    assert sum(r["tokens"] for r in rows) <= 600
    head = db.execute("select indexed_commit from repositories").fetchone()[0]
    for r in rows:
        assert r["indexed_commit"] == head
        assert r["text"].startswith(f"# requestsish:{r['path']}:{r['start_line']}-")
        assert r["start_line"] <= r["end_line"]
        assert r["why"]["rrf"] is not None or r["why"]["graph_hop"] is not None
    # the answer itself: resolve_redirects' whole definition, as its symbol or in its file
    start = REDIRECTS_PY.index("def resolve_redirects(")
    definition = REDIRECTS_PY[start : REDIRECTS_PY.index("\n\n\nclass TooManyRedirects")]
    assert any(r["path"] == "pkg/redirects.py" and definition in r["text"] for r in rows)


def test_identifier_query_finds_the_symbol_first(db, indexed):
    rows = db.execute(
        "select path, symbol from hybrid_search('merge_cookies', repo => 'requestsish', k => 5)"
    ).fetchall()
    assert ("pkg/cookies.py", "merge_cookies") in rows[:2]


def test_graph_walk_brings_importers_and_tests(db, indexed):
    rows = (
        db.cursor(row_factory=psycopg.rows.dict_row)
        .execute(
            "select * from explain_context('TooManyRedirects hops max_redirects',"
            " repo => 'requestsish', token_budget => 4000)"
        )
        .fetchall()
    )
    hops = {r["path"]: r["graph_hop"] for r in rows if r["graph_hop"] is not None}
    # both import pkg/redirects.py, the top hit: its importer and its test
    assert {"tests/test_redirects.py", "pkg/session.py"} <= hops.keys()
    assert all(h in (1, 2) for h in hops.values())


def test_copy_pasted_boilerplate_is_pruned(db, indexed):
    rows = db.execute(
        "select path, symbol, decision, pruned_by from explain_context("
        "'handler payload user record store audit', repo => 'requestsish', graph_depth => 0)"
    ).fetchall()
    decisions = {(p, s): (d, by) for p, s, d, by in rows if s and s.startswith("handler_")}
    assert len(decisions) == 2
    assert sorted(d for d, _ in decisions.values()) == ["kept", "pruned:jaccard"]


def test_oversized_first_item_is_truncated_at_a_line(db, indexed):
    rows = _pack(db, "resolve_redirects", token_budget=80)
    assert len(rows) == 1 and rows[0]["truncated"]
    assert rows[0]["tokens"] <= 80
    assert "truncated at line" in rows[0]["text"]


def test_pack_context_text_is_one_prompt_block(db, indexed):
    text = db.execute(
        "select pack_context_text('where are redirects followed?', repo => 'requestsish')"
    ).fetchone()[0]
    assert text.startswith("# requestsish:") and "def resolve_redirects" in text


@contextlib.contextmanager
def _quick_hnsw_inserts(db):
    """The HNSW indexes built with the least ef_construction pgvector accepts (2 x m) while
    a test fills them: inserting thousands of rows at the migration's 256 takes most of such
    a test's time. The migration's setting is put back after, so the reset between tests
    finds the schema as it was."""
    indexes = ("code_symbols_embedding", "blobs_embedding")
    before = {
        name: db.execute(
            "select option_value from pg_options_to_table("
            " (select reloptions from pg_class where relname = %s))"
            " where option_name = 'ef_construction'",
            (name,),
        ).fetchone()[0]
        for name in indexes
    }
    for name in indexes:
        db.execute(f"alter index {name} set (ef_construction = 32)")
    try:
        yield
    finally:
        for name, value in before.items():
            db.execute(f"alter index {name} set (ef_construction = {int(value)})")


def test_dense_leg_uses_the_hnsw_index_under_filters(db, indexed):
    tenant = indexed["tenant"]
    # enough rows that an index matters: 3,000 one-symbol files in a second repository
    db.execute("insert into repositories (tenant_id, name) values (%s, 'bulk')", (tenant,))
    db.execute(
        "insert into blobs (tenant_id, sha, size, content, path_hint)"
        " select %s, lpad(to_hex(g), 40, '0'), 10, 'bulk ' || g, 'bulk/f' || g || '.txt'"
        " from generate_series(1, 3000) g",
        (tenant,),
    )
    db.execute(
        "insert into files (repository_id, tenant_id, path, blob_sha)"
        " select r.id, r.tenant_id, 'bulk/f' || g || '.txt', lpad(to_hex(g), 40, '0')"
        " from repositories r, generate_series(1, 3000) g where r.name = 'bulk'"
    )
    with _quick_hnsw_inserts(db):
        for table, key in (("code_symbols", "id > 0"), ("blobs", "size > 0")):
            db.execute(
                f"update {table} set embedding_model = 'all-MiniLM-L6-v2', embedding = ("
                f" select array_agg(random())::vector(384) from generate_series(1, 384)"
                f" where {key}) where embedding is null"
            )
    # 4% of them are functions: a filter the index scan has to skip through
    db.execute("update code_symbols set kind = 'function' where name ~ '^bulk$' and id % 25 = 0")
    db.execute("analyze")
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    bulk = db.execute("select id from repositories where name = 'bulk'").fetchone()[0]
    functions = db.execute(
        "select count(*) from code_symbols where name = 'bulk' and kind = 'function'"
    ).fetchone()[0]
    assert functions >= 50
    # the statements the legs run, as the legs plan them: unfiltered on the generic plan
    # they cache, filtered with the values (custom plans)
    args = (query, tenant, "all-MiniLM-L6-v2", [bulk], None, None, ["block", "function"])
    symbols_filtered = dense.symbols_query(50, kinds=["block", "function"])
    for name, text, types, mode, index in [
        ("sym", dense.symbols_query(50), dense.SYMBOL_TYPES, "generic", "code_symbols"),
        ("sym_kinds", symbols_filtered, dense.SYMBOL_TYPES, "custom", "code_symbols"),
        ("files", dense.files_query(40), dense.FILE_TYPES, "generic", "blobs"),
    ]:
        db.execute(f"set plan_cache_mode = force_{mode}_plan")
        # a client-side cursor sends the statement as it is, its $n unbound
        cursor = psycopg.ClientCursor(db)
        cursor.execute(f"prepare leg_{name} ({', '.join(types)}) as {text}")
        values = ", ".join(["%s"] * len(types))
        cursor.execute(f"explain execute leg_{name} ({values})", args[: len(types)])
        plan = "\n".join(r[0] for r in cursor.fetchall())
        assert f"Index Scan using {index}_embedding" in plan, (name, plan)
    db.execute("reset plan_cache_mode")
    # a 4% filter: k rows come back when k exist (on an index scan, ef_search 200 alone
    # would yield ~8; the leg's iterative scan keeps going; on a table this small the planner
    # may rightly prefer an exact sort of the few matching rows)
    found = db.execute(
        "select count(*) from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null,"
        " array['function'], 50)",
        (tenant, query, [bulk]),
    ).fetchone()[0]
    assert found == 50


def _crowd(db, tenant, query, rows=4000):
    """A repository 'many' of `tenant` whose `rows` files each hold one symbol nearer the
    question than any of requestsish's: a walk meets them first."""
    db.execute("insert into repositories (tenant_id, name) values (%s, 'many')", (tenant,))
    db.execute(
        "insert into blobs (tenant_id, sha, size, content, path_hint)"
        " select %s, lpad(to_hex(g), 40, '0'), 10, 'crowd ' || g, 'f' || g || '.txt'"
        " from generate_series(1, %s) g",
        (tenant, rows),
    )
    with _quick_hnsw_inserts(db):
        db.execute(
            "insert into code_symbols (tenant_id, blob_sha, name, qualified_name, kind,"
            " start_line, end_line, body, embedding_model, embedding)"
            " select %s, sha, 'crowd', 'crowd', 'function', 1, 1, content, 'all-MiniLM-L6-v2',"
            " (select array_agg(q[i] + (random() - 0.5) * 0.02)::vector(384)"
            "  from generate_series(1, 384) i where sha is not null)"
            " from blobs, (select %s::vector::real[] as q) as v"
            " where tenant_id = %s and content like 'crowd %%'",
            (tenant, query, tenant),
        )
    db.execute(
        "insert into files (repository_id, tenant_id, path, blob_sha)"
        " select r.id, r.tenant_id, b.path_hint, b.sha from repositories r"
        " join blobs b on b.tenant_id = r.tenant_id and b.content like 'crowd %%'"
        " where r.tenant_id = %s and r.name = 'many'",
        (tenant,),
    )


def _assert_the_legs_find_requestsish_nearest(db, tenant, query) -> int:
    """Both dense legs asked in requestsish, under a walk that gives up after 100 tuples (a
    stand-in for pgvector's scan limits on a large table), return its 5 nearest rows; its
    repository id."""
    repo = db.execute(
        "select id from repositories where tenant_id = %s and name = 'requestsish'", (tenant,)
    ).fetchone()[0]
    truth = [
        r[0]
        for r in db.execute(
            "select s.id from code_symbols s join live_files v"
            " on v.tenant_id = s.tenant_id and v.blob_sha = s.blob_sha"
            " where s.tenant_id = %s and v.repository_id = %s and s.embedding is not null"
            " order by s.embedding <=> %s::vector, s.id limit 5",
            (tenant, repo, query),
        )
    ]
    assert len(truth) == 5
    db.execute("set hnsw.max_scan_tuples = 100")
    found = db.execute(
        "select symbol_id from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)",
        (tenant, query, [repo]),
    ).fetchall()
    files = db.execute(
        "select count(*) from _dense_files(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, 5)",
        (tenant, query, [repo]),
    ).fetchone()[0]
    db.execute("reset hnsw.max_scan_tuples")
    assert [r[0] for r in found] == truth
    assert files == 5
    return repo


def test_a_small_tenant_in_a_crowded_index_gets_its_true_nearest_rows(db, indexed):
    """acme's few symbols among 4,000 of another tenant: a walk that gives up after 100
    tuples (a stand-in for pgvector's scan limits on a large table) would find almost none
    of acme's, so the leg sorts acme's rows exactly."""
    acme = indexed["tenant"]
    crowd = db.execute("insert into tenants (name) values ('crowd') returning id").fetchone()[0]
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    _crowd(db, crowd, query)
    db.execute("analyze")
    repo = _assert_the_legs_find_requestsish_nearest(db, acme, query)
    # as the legs run them, on a cached generic plan: the crowd's rows are never read
    db.execute("set plan_cache_mode = force_generic_plan")
    cursor = psycopg.ClientCursor(db)
    args = (query, acme, "all-MiniLM-L6-v2", [repo], None, None, None)
    for name, text, types, table in [
        ("sym", dense.symbols_query(5, exact=True), dense.SYMBOL_TYPES, "code_symbols"),
        ("files", dense.files_query(5, exact=True), dense.FILE_TYPES, "blobs"),
    ]:
        cursor.execute(f"prepare exact_{name} ({', '.join(types)}) as {text}")
        values = ", ".join(["%s"] * len(types))
        cursor.execute(
            f"explain (analyze, costs off) execute exact_{name} ({values})", args[: len(types)]
        )
        plan = "\n".join(r[0] for r in cursor.fetchall())
        assert f"Seq Scan on {table}" not in plan, (name, plan)
        assert f"Index Scan using {table}_embedding" not in plan, (name, plan)
    db.execute("reset plan_cache_mode")
    # acme's exact sort given the crowd's repository (or the crowd's tenant acme's) finds
    # nothing: the scope is read through the tenant's own live files (this connection is a
    # superuser's, so row-level security does not hide them: the statements do)
    crowd_repo = db.execute("select id from repositories where tenant_id = %s", (crowd,))
    crowd_repo = crowd_repo.fetchone()[0]
    for tenant, repos in [(acme, [crowd_repo]), (crowd, [repo])]:
        for leg in (
            "_dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)",
            "_dense_files(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, 5)",
        ):
            got = db.execute(f"select count(*) from {leg}", (tenant, query, repos)).fetchone()
            assert got == (0,), (tenant, leg)


def test_a_small_repository_of_a_crowded_tenant_gets_its_true_nearest_rows(db, indexed):
    """requestsish beside 4,000 files of acme's own, nearer the question: the tenant is all
    of the index, but the repository asked is a small share of it, so its rows are sorted
    exactly rather than walked past the crowd."""
    acme = indexed["tenant"]
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    _crowd(db, acme, query)
    # as indexing them would have counted them
    db.execute("update corpus_stats set docs = docs + 4000 where tenant_id = %s", (acme,))
    db.execute("analyze")
    _assert_the_legs_find_requestsish_nearest(db, acme, query)
    # asked in both repositories, the scope is the crowd's: the walk finds it
    both = [r[0] for r in db.execute("select id from repositories where tenant_id = %s", (acme,))]
    found = db.execute(
        "select s.name from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)"
        " as d join code_symbols s on s.id = d.symbol_id",
        (acme, query, both),
    ).fetchall()
    assert [r[0] for r in found] == ["crowd"] * 5
    # a scope with no live file of acme's (a ref still being indexed, another tenant's
    # repository) returns nothing from either leg
    stranger = db.execute("insert into tenants (name) values ('stranger') returning id")
    stranger = stranger.fetchone()[0]
    foreign = db.execute(
        "insert into repositories (tenant_id, name) values (%s, 'theirs') returning id", (stranger,)
    ).fetchone()[0]
    empty = db.execute(
        "insert into repositories (tenant_id, name) values (%s, 'empty') returning id", (acme,)
    ).fetchone()[0]
    db.execute("set hnsw.max_scan_tuples = 100")
    # as many of another tenant's ids as acme has repositories reads as a whole-tenant walk:
    # it finds none of the stranger's rows either
    for repos in ([foreign], [empty], [foreign] * 3):
        for leg in (
            "_dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)",
            "_dense_files(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, 5)",
        ):
            got = db.execute(f"select count(*) from {leg}", (acme, query, repos)).fetchone()
            assert got == (0,), (repos, leg)
    db.execute("reset hnsw.max_scan_tuples")


def _index_scans(db, statement: str, params) -> list[str]:
    """The indexes the plans of `statement` and of every statement it runs scan (auto_explain)."""
    db.execute("load 'auto_explain'")
    for setting, value in [
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_format", "json"),
    ]:
        db.execute("select set_config(%s, %s, false)", (setting, value))
    found: list[str] = []

    def walk(node: dict) -> None:
        if node.get("Index Name"):
            found.append(node["Index Name"])
        for child in node.get("Plans", []):
            walk(child)

    def keep(diag: psycopg.errors.Diagnostic) -> None:
        text = diag.message_primary or ""
        if "plan:" in text:
            walk(json.loads(text.split("plan:", 1)[1])["Plan"])

    db.add_notice_handler(keep)
    db.execute("set client_min_messages = log")
    try:
        db.execute(statement, params).fetchall()
    finally:
        db.execute("reset client_min_messages")
        db.execute("select set_config('auto_explain.log_min_duration', '-1', false)")
    return found


def test_a_tenant_the_legs_walk_is_walked_whatever_the_tenants_around_it(db, indexed):
    """A walk runs on its statement's generic plan, which the planner costs for a tenant of
    the table's average size: among many small tenants it read every live file of a large
    one and sorted its rows (236 ms for the 15 refs of the eval database's pylint tenant,
    against 5 ms walked). Asked in both of acme's repositories (all of it: 4,060 rows, the
    legs walk), with 60 other tenants of a row each around it, the symbol leg walks the
    index."""
    acme = indexed["tenant"]
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    _crowd(db, acme, query)
    db.execute("update corpus_stats set docs = docs + 4000 where tenant_id = %s", (acme,))
    for n in range(60):
        tenant = db.execute(
            "insert into tenants (name) values (%s) returning id", (f"small-{n}",)
        ).fetchone()[0]
        db.execute(
            "insert into blobs (tenant_id, sha, size, content) values (%s, %s, 1, 'x')",
            (tenant, f"{n:040x}"),
        )
        db.execute(
            "insert into code_symbols (tenant_id, blob_sha, name, qualified_name, kind,"
            " start_line, end_line, body, embedding_model, embedding)"
            " values (%s, %s, 'x', 'x', 'function', 1, 1, 'x', 'all-MiniLM-L6-v2', %s)",
            (tenant, f"{n:040x}", query),
        )
    db.execute("analyze")
    both = [r[0] for r in db.execute("select id from repositories where tenant_id = %s", (acme,))]
    leg = "select * from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)"
    assert "code_symbols_embedding" in _index_scans(db, leg, (acme, query, both))
    found = db.execute(
        "select s.name from (" + leg + ") as d join code_symbols s on s.id = d.symbol_id",
        (acme, query, both),
    ).fetchall()
    assert [r[0] for r in found] == ["crowd"] * 5


# how each tier's leg reads and the ef_search it walks at, read one after the other inside
# one dense.leg_settings block (as the pipeline runs both legs)
WALKS_AT = (
    "create or replace function pg_temp.walks_at(tenant bigint, repository_ids bigint[],"
    " tiers text[], tabs text[]) returns text language plpython3u as $$\n"
    "from codesift_db import dense\n"
    "walked = []\n"
    "with dense.leg_settings(plpy):\n"
    "    for tier, tab in zip(tiers, tabs):\n"
    "        read = dense._read_by(plpy, tenant, repository_ids, tier, tab, 40)\n"
    "        ef = plpy.execute(\"select current_setting('hnsw.ef_search') as e\")[0]['e']\n"
    "        walked.append(read + ' ' + ef)\n"
    "return ', '.join(walked)\n$$"
)


def _table_rows(db, table: str, n: float) -> None:
    """The planner's row estimate of a codesift table (what the dense legs read) set to n."""
    db.execute("update pg_class set reltuples = %s where oid = %s::regclass", (n, table))


def test_a_walk_over_a_large_table_searches_wider_for_its_call_only(db, indexed):
    """HNSW finds fewer of the true nearest rows at a fixed ef_search as its graph grows, so
    a walk over a table past dense.REFERENCE_ROWS searches wider in proportion, for the leg
    only. The ef_search a walk runs at is read inside the legs' settings (dense.leg_settings,
    as the leg functions and the pipeline run them), through dense's own choice of read; the
    table's statistics are those of a large deployment's."""
    acme = indexed["tenant"]
    everything = [
        r[0] for r in db.execute("select id from repositories where tenant_id = %s", (acme,))
    ]
    db.execute(WALKS_AT)
    walks_at = "select pg_temp.walks_at(%s, %s, array['symbol'], array['codesift.code_symbols'])"
    db.execute(
        "update corpus_stats set docs = 2 * %s where tenant_id = %s and tier = 'symbol'",
        (dense.REFERENCE_ROWS, acme),
    )

    _table_rows(db, "code_symbols", 2.5 * dense.REFERENCE_ROWS)
    assert db.execute(walks_at, (acme, everything)).fetchone() == ("tenant_walk 500",)
    _table_rows(db, "code_symbols", dense.REFERENCE_ROWS)  # the reference: the function's own
    assert db.execute(walks_at, (acme, everything)).fetchone() == ("tenant_walk 200",)
    # an exact sort (a tenant that is a small share of the table) walks nothing: left alone
    db.execute(
        "update corpus_stats set docs = 50 where tenant_id = %s and tier = 'symbol'", (acme,)
    )
    _table_rows(db, "code_symbols", 10 * dense.REFERENCE_ROWS)
    assert db.execute(walks_at, (acme, everything)).fetchone() == ("tenant 200",)
    # the leg functions themselves: the wider search ends with the call
    db.execute(
        "update corpus_stats set docs = 2 * %s where tenant_id = %s and tier = 'symbol'",
        (dense.REFERENCE_ROWS, acme),
    )
    db.execute("set hnsw.ef_search = 40")
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    found = db.execute(
        "select count(*) from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', %s, null, null, null, 5)",
        (acme, query, everything),
    ).fetchone()
    assert found == (5,)
    assert db.execute("select current_setting('hnsw.ef_search')").fetchone() == ("40",)
    db.execute("reset hnsw.ef_search")
    # a session's codesift.ef_search is the legs' own, widened the same way
    db.execute("set codesift.ef_search = 100")
    _table_rows(db, "code_symbols", dense.REFERENCE_ROWS)
    assert db.execute(walks_at, (acme, everything)).fetchone() == ("tenant_walk 100",)
    _table_rows(db, "code_symbols", 2.5 * dense.REFERENCE_ROWS)
    assert db.execute(walks_at, (acme, everything)).fetchone() == ("tenant_walk 250",)
    db.execute("reset codesift.ef_search")


def test_the_dense_legs_settings_hold_for_each_leg_and_end_with_the_call(db, indexed):
    """The pipeline runs both dense legs in one dense.leg_settings block: the file leg walks
    at the legs' own ef_search even when the symbol leg before it was widened for a larger
    table, and pack_context leaves the session's settings as they were."""
    acme = indexed["tenant"]
    everything = [
        r[0] for r in db.execute("select id from repositories where tenant_id = %s", (acme,))
    ]
    db.execute(WALKS_AT)
    db.execute(
        "update corpus_stats set docs = 2 * %s where tenant_id = %s",
        (dense.REFERENCE_ROWS, acme),
    )
    _table_rows(db, "code_symbols", 3 * dense.REFERENCE_ROWS)
    _table_rows(db, "blobs", dense.REFERENCE_ROWS)
    both = db.execute(
        "select pg_temp.walks_at(%s, %s, array['symbol', 'file'],"
        " array['codesift.code_symbols', 'codesift.blobs'])",
        (acme, everything),
    ).fetchone()
    assert both == ("tenant_walk 600, tenant_walk 200",)
    settings = (
        "select current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan'),"
        " current_setting('plan_cache_mode')"
    )
    db.execute("set hnsw.ef_search = 40")
    db.execute("set hnsw.iterative_scan = off")
    before = db.execute(settings).fetchone()
    assert before == ("40", "off", "auto")
    packed = db.execute(
        "select count(*) from pack_context('follow redirects', token_budget => 2000)"
    ).fetchone()
    assert packed[0] > 0
    assert db.execute(settings).fetchone() == before
    db.execute("reset hnsw.ef_search")
    db.execute("reset hnsw.iterative_scan")


@pytest.mark.parametrize("value", ["abc", "0", "1001", "-5", "1e3", "200; drop table blobs"])
def test_a_bad_ef_search_setting_is_a_clear_error(db, indexed, value):
    """codesift.ef_search outside pgvector's 1..1000 (or not a number) stops both the leg
    functions and the pipeline with 22023 naming the setting, not pgvector's own."""
    acme = indexed["tenant"]
    query = db.execute("select embed_query('follow redirects')").fetchone()[0]
    db.execute("select set_config('codesift.ef_search', %s, false)", (value,))
    calls = [
        (
            "select count(*) from _dense_symbols(%s, %s, 'all-MiniLM-L6-v2', null, null, null,"
            " null, 5)",
            (acme, query),
        ),
        ("select count(*) from pack_context('follow redirects')", ()),
    ]
    try:
        for sql, args in calls:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
                db.execute(sql, args)
            assert "codesift.ef_search is" in raised.value.diag.message_primary
            assert "from 1 to 1000" in raised.value.diag.message_primary
            assert "reset it" in raised.value.diag.message_hint
    finally:
        db.execute("reset codesift.ef_search")
    assert db.execute(calls[1][0]).fetchone()[0] > 0


@pytest.mark.parametrize(
    "query",
    [
        "a & b | !c ( ) : * < > 'quoted' \"double\"",
        "select * from pg_user; drop table codesift.blobs; --",
        "🔥 redirects 🚀 ünïcödé",
        "redirect " * 12_000,
        "!!!",
    ],
)
def test_hostile_queries_never_raise(db, indexed, query):
    rows = _pack(db, query)
    assert isinstance(rows, list)
    assert db.execute("select count(*) from blobs").fetchone()[0] > 0


@pytest.mark.parametrize(
    "sql, params, sqlstate, message",
    [
        ("select * from pack_context('')", {}, "22023", "non-empty"),
        ("select * from pack_context('   ')", {}, "22023", "non-empty"),
        ("select * from pack_context(null)", {}, "22023", "non-empty"),
        ("select * from pack_context('x y', token_budget => 0)", {}, "22023", "token_budget"),
        (
            "select * from pack_context('x y', token_budget => 100000000)",
            {},
            "22023",
            "token_budget",
        ),
        (
            "select * from pack_context('x y', token_budget => null)",
            {},
            "22023",
            "must not be null",
        ),
        ("select * from pack_context('x y', repo => 'nope')", {}, "42704", "unknown repository"),
        (
            "select * from pack_context('x y', query_embedding => '[1,2,3]')",
            {},
            "22000",
            "expects 384",
        ),
        ("select * from pack_context('x y', ranking => 'magic')", {}, "22023", "ranking"),
    ],
)
def test_bad_arguments_are_clear_errors(db, indexed, sql, params, sqlstate, message):
    with pytest.raises(psycopg.Error) as info:
        db.execute(sql, params)
    assert info.value.sqlstate == sqlstate
    assert message in str(info.value)
    assert db.execute("select 1").fetchone()[0] == 1  # the backend survived


def test_tenants_never_see_each_other(db, dsn, make_repo, indexed, app_connect):
    other = make_repo({"secret.py": "def globex_secret_plan():\n    return 42\n"}, name="gx")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, other, name="globex-app", tenant="globex", embed=False, show_progress=False
        )
    acme = app_connect(indexed["tenant"])
    with pytest.raises(psycopg.Error) as info:
        acme.execute("select * from pack_context('globex_secret_plan', repo => 'globex-app')")
    assert info.value.sqlstate == "42704"
    assert "globex-app" not in (info.value.diag.message_hint or "")
    assert "requestsish" in (info.value.diag.message_hint or "")
    rows = acme.execute("select path from pack_context('globex_secret_plan')").fetchall()
    assert all(not p.startswith("secret") for (p,) in rows)
    nobody = app_connect()
    with pytest.raises(psycopg.Error) as info:
        nobody.execute("select * from pack_context('redirects', repo => 'requestsish')")
    assert info.value.sqlstate == "42501"


def test_notices_for_stale_index_and_missing_model(db, indexed):
    notices = []
    db.add_notice_handler(lambda n: notices.append(n.message_primary))
    db.execute("update repositories set head_commit = repeat('f', 40)")
    db.execute("update settings set value = 'some-other-model' where key = 'embedding_model'")
    rows = _pack(db, "resolve_redirects")
    assert rows and rows[0]["path"] == "pkg/redirects.py"  # lexical + graph still answer
    assert any("stale" in n for n in notices)
    assert any("lexical + graph only" in n for n in notices)


def test_only_live_files_at_the_indexed_head_are_returned(db, dsn, indexed):
    root = indexed["root"]
    (root / "pkg" / "cookies.py").unlink()
    write_files(root, {"pkg/jar.py": "def fresh_cookie_jar():\n    return {}\n"})
    commit(root, "replace cookies")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="requestsish", tenant="acme", embed=False, show_progress=False
        )
    paths = {
        p
        for (p,) in db.execute(
            "select path from hybrid_search('merge_cookies cookie jar', repo => 'requestsish')"
        ).fetchall()
    }
    assert "pkg/cookies.py" not in paths and "pkg/jar.py" in paths


def test_only_the_best_oversized_files_are_split(db, dsn, make_repo):
    # 15 files, each far over a quarter of the budget, all about the question
    body = "\n".join(
        f"def fetch_page_{i}(url):\n    return download(url, retries={i})\n" for i in range(60)
    )
    files = {f"crawl/part{n:02d}.py": f"# crawler part {n}\n{body}" for n in range(15)}
    root = make_repo(files, name="crawler")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="crawler", tenant="acme", embed=False, show_progress=False
        )
    _act_as(db, "acme")
    rows = db.execute(
        "select path, decision from explain_context('fetch page download url retries',"
        " repo => 'crawler', token_budget => 1000, graph_depth => 0) where kind = 'file'"
    ).fetchall()
    decisions = sorted(d for _, d in rows)
    assert decisions.count("expanded:symbols") == 12
    assert decisions.count("not_packed:too_big") == len(rows) - 12 > 0


def test_a_bug_report_packs_the_best_large_files_header(db, dsn, make_repo):
    header = '"""Pages of a crawl."""\nimport json\nfrom .net import download, RETRIES\n\n'
    body = "\n".join(
        f"def fetch_page_{i}(url):\n    return download(url, retries={i})\n" for i in range(60)
    )
    _index_as_acme(db, dsn, make_repo, {"crawl/pages.py": header + body}, "pages")
    report = (
        "fetch_page_7 downloads with the wrong retries\n\nWhen a crawl fetches a page,"
        " `fetch_page_7` passes retries=7 to download and the crawl gives up too early. "
    ) * 4
    sql = (
        "select kind, start_line, end_line, text from pack_context(%s, repo => 'pages',"
        " token_budget => 2000, graph_depth => 0)"
    )
    rows = db.execute(sql, (report,)).fetchall()
    headers = [r for r in rows if r[0] == "header"]
    assert len(headers) == 1
    kind, start, end, text = headers[0]
    assert (start, end) == (1, 3)  # the header's lines, its trailing blank line left out
    assert "from .net import download, RETRIES" in text and "def fetch_page" not in text
    # a short question is not a bug report: no header
    short = db.execute(sql, ("fetch page 7 retries",)).fetchall()
    assert short and not [r for r in short if r[0] == "header"]
    # the engine before (codesift.retrieval_off = pack): no header either
    db.execute("select set_config('codesift.retrieval_off', 'pack', false)")
    assert not [r for r in db.execute(sql, (report,)).fetchall() if r[0] == "header"]


def test_a_bug_report_ranks_code_above_tests_and_examples(db, dsn, make_repo):
    code = "def backoff_delay(attempt):\n    return 2 ** attempt\n"
    # the test file repeats the report's words: alone they would rank it first
    test = "".join(
        f"def test_backoff_delay_grows_{i}():\n"
        f"    # backoff delay grows too fast after a retry attempt\n"
        f"    assert backoff_delay({i}) < 60\n\n"
        for i in range(6)
    )
    demo = "from net.retry import backoff_delay\nprint(backoff_delay(3))  # backoff delay demo\n"
    # a message catalog holds the message the report quotes, once per language (indexed
    # only when re-included: codesift index skips catalogs by default)
    catalog = 'msgid "The backoff delay grows too fast after a retry attempt."\nmsgstr ""\n'
    files = {
        ".codesiftignore": "!*.po\n",
        "net/retry.py": code,
        "tests/test_retry.py": test,
        "examples/retry_demo.py": demo,
        "net/locale/de/LC_MESSAGES/net.po": catalog,
        "benchmarks/bench_retry.py": "from net.retry import backoff_delay\n"
        "def time_backoff_delay():  # the backoff delay of a retry attempt\n"
        "    backoff_delay(40)\n",
    }
    _index_as_acme(db, dsn, make_repo, files, "retry")
    report = (
        "The backoff delay grows too fast after a retry attempt. Calling backoff_delay"
        " with a large attempt waits for hours; the test below shows the delay grows. "
    ) * 4
    sql = (
        "select path, (why->>'path_prior')::float from hybrid_search(%s, repo => 'retry', k => 20)"
    )

    def priors(question):
        return dict(db.execute(sql, (question,)).fetchall())

    assert priors(report) == {
        "net/retry.py": 1.0,
        "tests/test_retry.py": recency.BUG_REPORT_PRIOR,
        "examples/retry_demo.py": recency.BUG_REPORT_PRIOR,  # for a bug report, not code
        "net/locale/de/LC_MESSAGES/net.po": recency.BUG_REPORT_PRIOR,
        "benchmarks/bench_retry.py": recency.BUG_REPORT_PRIOR,
    }
    assert db.execute(sql, (report,)).fetchone()[0] == "net/retry.py"
    # an issue's title and body, however short, is a bug report too
    issue = "Backoff delay grows too fast\nCalling backoff_delay(40) waits for hours."
    assert priors(issue)["tests/test_retry.py"] == recency.BUG_REPORT_PRIOR
    # a short question keeps the test prior; so does the engine without the kind prior
    short = priors("backoff delay grows")
    assert short["tests/test_retry.py"] == recency.TEST_PRIOR
    assert short["examples/retry_demo.py"] == recency.DOC_PRIOR
    assert short["net/locale/de/LC_MESSAGES/net.po"] == recency.DOC_PRIOR
    assert short["benchmarks/bench_retry.py"] == recency.TEST_PRIOR
    # a question about tests does not weigh them down
    tested = priors("where is the backoff delay tested")
    assert tested["tests/test_retry.py"] == tested["benchmarks/bench_retry.py"] == 1.0
    assert tested["examples/retry_demo.py"] == recency.DOC_PRIOR
    db.execute("select set_config('codesift.retrieval_off', 'kinds', false)")
    assert priors(report)["tests/test_retry.py"] == recency.TEST_PRIOR
    assert db.execute(sql, (report,)).fetchone()[0] == "tests/test_retry.py"


def test_a_common_name_does_not_crowd_out_a_rare_one(db, dsn, make_repo):
    # 600 methods named run, in files whose paths sort before the rare name's
    runners = "".join(
        f"class Job{k}:\n    def run(self, job):\n        return job\n\n\n" for k in range(4)
    )
    files = {f"jobs/a{i:03d}.py": runners for i in range(150)}
    files["zz/rare.py"] = "def rotate_ledger_keys(vault):\n    return vault\n"
    _index_as_acme(db, dsn, make_repo, files, "jobs")
    report = ("Calling `run` then `rotate_ledger_keys` loses the vault. " * 8).strip()
    rows = db.execute(
        "select path, symbol, why from hybrid_search(%s, repo => 'jobs', k => 50)", (report,)
    ).fetchall()
    named = {(p, s) for p, s, why in rows if why.get("mention_rank")}
    assert named == {("zz/rare.py", "rotate_ledger_keys")}  # `run` fits 600: names none
    # a short question's snake_case and CamelCase words name definitions too, by the same rule
    assert _mentioned(db, "who calls rotate_ledger_keys", "jobs") == {
        ("zz/rare.py", "rotate_ledger_keys")
    }
    assert _mentioned(db, "what does run() return", "jobs") == set()  # run fits 600
    assert _mentioned(db, "where are ledger keys rotated", "jobs") == set()


TRACEBACK = (
    "Rotating the ledger keys crashes after the upgrade\n\n"
    + "The nightly job stops with the traceback below on every host we run it on. " * 4
    + "\n\nTraceback (most recent call last):\n"
    '  File "/srv/app/main.py", line 3, in <module>\n'
    '  File "/usr/lib/python3/site-packages/ledger/keys.py", line 3, in run\n'
    '  File "/usr/lib/python3/site-packages/ledger/keys.py", line 6, in flush_keys\n'
    "AttributeError: 'NoneType' object has no attribute 'rotate'\n"
)
KEYS_PY = """class Rotator:
    def run(self, vault):
        return self.flush_keys(vault)

    def flush_keys(self, vault):
        return vault.rotate()
"""


def _mention_rows(db, question: str, repo: str) -> list:
    """(path, symbol) of the rows the mention leg ranked."""
    sql = "select path, symbol, why from hybrid_search(%s, repo => %s, k => 50)"
    rows = db.execute(sql, (question, repo)).fetchall()
    return [(p, s) for p, s, why in rows if why.get("mention_rank")]


def _mentioned(db, question: str, repo: str) -> set:
    return {(p, s) for p, s in _mention_rows(db, question, repo) if s}


def _mentioned_files(db, question: str, repo: str) -> set:
    return {p for p, s in _mention_rows(db, question, repo) if not s}


def test_a_traceback_frame_names_the_definition_in_its_file(db, dsn, make_repo):
    # 40 files define a method run: the name alone fits too many to name one, the frame's
    # file (an installed package's path; the repository keeps it under src/) says which ran;
    # flush_keys fits two, and the frame says which of those
    runner = "class Job:\n    def run(self, job):\n        return job\n"
    files = {f"jobs/j{i:02d}.py": runner for i in range(40)}
    files["src/ledger/keys.py"] = KEYS_PY
    files["archive/old_keys.py"] = "def flush_keys(vault):\n    return None\n"
    other = make_repo({"ledger/keys.py": "def run(vault):\n    return vault\n"}, name="theirs")
    with psycopg.connect(dsn) as conn:  # another tenant's file fits the frame's path too
        index_repository(
            conn, other, name="jobs", tenant="globex", embed=False, show_progress=False
        )
    _index_as_acme(db, dsn, make_repo, files, "jobs")
    assert _mentioned(db, TRACEBACK, "jobs") == {
        ("src/ledger/keys.py", "Rotator.run"),
        ("src/ledger/keys.py", "Rotator.flush_keys"),
    }
    # without frames, a frame's function is a name like any other: fitting 40, it names
    # nothing; fitting 2, it names both
    db.execute("select set_config('codesift.retrieval_off', 'frames', false)")
    assert _mentioned(db, TRACEBACK, "jobs") == {
        ("src/ledger/keys.py", "Rotator.flush_keys"),
        ("archive/old_keys.py", "flush_keys"),
    }


def _failing_frames(db, question: str, repo: str) -> set:
    """(path, symbol) of the rows hybrid_search marks as where the traceback failed."""
    sql = "select path, symbol, why from hybrid_search(%s, repo => %s, k => 50)"
    rows = db.execute(sql, (question, repo)).fetchall()
    return {(p, s) for p, s, why in rows if why["failing_frame"]}


def _trace(*frames: str) -> str:
    """A bug report ending in a Python traceback of these frames, outermost first."""
    lines = "".join(f'  File "{f}", line 2, in {f.rsplit("/", 1)[-1][:-3]}_fn\n' for f in frames)
    return (
        "Rotating the ledger keys crashes after the upgrade\n\n"
        + "The nightly job stops with the traceback below on every host. " * 4
        + f"\n\nTraceback (most recent call last):\n{lines}KeyError: 'vault'\n"
    )


def test_the_innermost_frame_in_the_repositorys_code_is_where_a_traceback_failed(
    db, dsn, make_repo
):
    files = {
        "src/ledger/cli.py": "def cli_fn(vault):\n    return vault\n",
        "src/ledger/keys.py": "def keys_fn(vault):\n    return vault['rotate']\n",
        "tests/test_ledger.py": "def test_ledger_fn():\n    assert True\n",
    }
    theirs = make_repo({"ledger/keys.py": "def keys_fn(vault):\n    return vault\n"}, name="t")
    with psycopg.connect(dsn) as conn:  # another tenant's file fits the frame's path too
        index_repository(
            conn, theirs, name="ledger", tenant="globex", embed=False, show_progress=False
        )
    _index_as_acme(db, dsn, make_repo, files, "ledger")
    site = "/usr/lib/python3/site-packages/ledger"
    # the innermost frames are the standard library's: the repository's innermost is keys.py
    stdlib = "/usr/lib/python3.11/json/decoder.py"
    trace = _trace("/srv/tests/test_ledger.py", f"{site}/cli.py", f"{site}/keys.py", stdlib)
    assert _failing_frames(db, trace, "ledger") == {
        ("src/ledger/keys.py", None),
        ("src/ledger/keys.py", "keys_fn"),  # the definition the frame ran in
    }
    # a test the traceback ran through last is not where it failed
    helper = _trace(f"{site}/cli.py", "/srv/tests/test_ledger.py")
    assert _failing_frames(db, helper, "ledger") == {
        ("src/ledger/cli.py", None),
        ("src/ledger/cli.py", "cli_fn"),
    }
    # no traceback, no failing file; and the feature switches off
    assert _failing_frames(db, "where are the ledger keys rotated", "ledger") == set()
    # frames outside the repository name nothing, however they climb
    hostile = _trace("../../../etc/shadow.py", "/etc/passwd.py", "C:\\Windows\\ntdll.py")
    assert _failing_frames(db, hostile, "ledger") == set()
    # a traceback of thousands of frames is read to a bound: it answers, marking one place
    deep = _trace(*[f"{site}/cli.py"] * 2000, f"{site}/keys.py")
    assert len(deep) < 200_000
    marked = {p for p, _ in _failing_frames(db, deep, "ledger")}
    assert len(marked) == 1 and marked <= {"src/ledger/cli.py", "src/ledger/keys.py"}
    db.execute("select set_config('codesift.retrieval_off', 'failing', false)")
    assert _failing_frames(db, trace, "ledger") == set()


NODE_TRACE = (
    "Mounting a router twice crashes the server\n\n"
    + "Every request after the second mount fails with the error below. " * 4
    + "\n\nTypeError: Cannot read properties of undefined (reading 'pop')\n"
    "    at handle (/srv/app/node_modules/acme/lib/router/layer.js:2:22)\n"
    "    at Object.<anonymous> (/srv/app/server.js:12:3)\n"
)


RUST_TRACE = (
    "The parser panics on an empty header\n\n"
    + "Parsing a request whose header line is empty panics instead of returning an error. " * 4
    + "\n\nthread 'main' panicked at src/http/parser.rs:2:5:\nstack backtrace:\n"
    "   0: rust_begin_unwind\n"
    "             at /rustc/90b35a6239c3d8bd/library/std/src/panicking.rs:645:5\n"
    "   4: acme::http::parser::parse::h0123456789abcdef\n"
    "             at ./src/http/parser.rs:2:5\n"
)


@pytest.mark.parametrize(
    "trace, name, common, defining, path",
    [
        (  # the frame's file is an installed package's path; the repository keeps it in lib/
            NODE_TRACE,
            "router",
            "function handle(job) {\n  return job;\n}\nmodule.exports = handle;\n",
            "function handle(stack, req) {\n  return stack.pop()(req);\n}\n"
            "module.exports = handle;\n",
            ("lib/router/layer.js", "handle"),
        ),
        (
            RUST_TRACE,
            "http",
            "pub fn parse(line: &str) -> usize {\n    line.len()\n}\n",
            "pub fn parse(line: &str) -> usize {\n    line.find(':').unwrap()\n}\n",
            ("src/http/parser.rs", "parse"),
        ),
    ],
    ids=["javascript", "rust"],
)
def test_another_languages_stack_frame_names_the_definition_in_its_file(
    db, dsn, make_repo, trace, name, common, defining, path
):
    # 40 files define a function of the frame's name: the frame's file says which one ran
    folder, ext = path[0].split("/")[0], path[0].rsplit(".", 1)[1]
    files = {f"{folder}/jobs/j{i:02d}.{ext}": common for i in range(40)}
    files[path[0]] = defining
    _index_as_acme(db, dsn, make_repo, files, name)
    assert _mentioned(db, trace, name) == {path}
    # without frames the name alone fits 41 definitions: it names none
    db.execute("select set_config('codesift.retrieval_off', 'frames', false)")
    assert _mentioned(db, trace, name) == set()


def test_mentioned_files_are_found_by_their_name_or_module(db, dsn, make_repo):
    # files.stem_key (migration 030): the name without its folder and last extension,
    # lowercase, by which the files a long question mentions are looked up
    files = {
        "src/Ledger/Keys.py": "def rotate(vault):\n    return vault\n",
        "web/keys.test.js": "test('rotate', () => {});\n",
        "web/keys.js": "module.exports = {};\n",
        "conf/.keysrc": "rotate = daily\n",
        "dist/keys.tar.gz": "not really\n",
        "docs/Makefile": "all:\n\techo docs\n",
    }
    other = make_repo({"src/ledger/keys.py": "def rotate(vault):\n    return None\n"}, "theirs")
    with psycopg.connect(dsn) as conn:  # another tenant's file of the same name
        index_repository(
            conn, other, name="keys", tenant="globex", embed=False, show_progress=False
        )
    _index_as_acme(db, dsn, make_repo, files, "keys")
    stems = dict(
        db.execute(
            "select path, stem_key from files f join tenants t on t.id = f.tenant_id"
            " where t.name = 'acme' and f.live"
        ).fetchall()
    )
    assert stems == {
        "src/Ledger/Keys.py": "keys",
        "web/keys.test.js": "keys.test",
        "web/keys.js": "keys",
        "conf/.keysrc": "",
        "dist/keys.tar.gz": "keys.tar",
        "docs/Makefile": "makefile",
    }

    def mentioned(question: str, short: bool = False) -> set:
        filler = "" if short else " The rotation fails on every host after the upgrade." * 8
        return _mentioned_files(db, question + filler, "keys")

    # a file name: that name whatever its case; a module: that stem, not a longer one
    assert mentioned("Rotation breaks in `ledger/keys.py` now.") == {"src/Ledger/Keys.py"}
    assert mentioned("Rotation breaks in `web/keys.js` now.") == {"web/keys.js"}
    # a file name with dots before its extension is read whole: the test file, not keys.js
    assert mentioned("Rotation breaks in web/keys.test.js now.") == {"web/keys.test.js"}
    assert mentioned("Rotation breaks when `ledger.keys` is imported.") == {"src/Ledger/Keys.py"}
    # a bare name in backticks is a module's too: every file of that stem, when few
    assert mentioned("Rotation breaks in `keys`.") == {"src/Ledger/Keys.py", "web/keys.js"}
    # ... a module's, which is code: not the documentation's Makefile
    assert mentioned("Rotation breaks in `Makefile`.") == set()
    # a path outside the repository, or a name with pattern characters, is compared as text
    # and names nothing: only the scope's indexed files can be found
    assert mentioned("Rotation reads `../../../etc/passwd` and `/etc/shadow.py` first.") == set()
    assert mentioned("Rotation breaks in `ke.s.py` and `k%s.py` and `k_ys.js`.") == set()
    # a short question (one line) names files as well; never another tenant's of that name
    assert mentioned("rotation in ledger/keys.py", short=True) == {"src/Ledger/Keys.py"}
    assert mentioned("where does ledger.keys rotate", short=True) == {"src/Ledger/Keys.py"}
    assert mentioned("rotation reads ../../../etc/shadow.py", short=True) == set()
    assert mentioned("where are keys rotated", short=True) == set()
    # as many names as a line holds, with pattern and quoting characters: found as text, or not
    hostile = (" `k%s.py` `../../keys.py` `ke_s.Keys` o'keys.py \\keys.js" * 20)[:399]
    assert mentioned(hostile, short=True) <= {"src/Ledger/Keys.py", "web/keys.js"}


def test_a_commit_messages_scope_names_its_module_not_a_package_folder(db, dsn, make_repo):
    # a conventional commit's header, `fix(context): ...`: the scope is looked up as a module;
    # of many files of that name, the code ones (mentions.py)
    files = {
        "context.go": "package gin\n\nfunc (c *Context) Copy() *Context {\n\treturn c\n}\n",
        "render/render.go": "package render\n\ntype Render interface{}\n",
        "render/toml.go": "package render\n\nvar tomlContentType = []string{}\n",
        "binding/form.go": "package binding\n\nfunc mapForm(ptr any) error {\n\treturn nil\n}\n",
        # more files named context than a mention may fit: only one of them is code
        "docs/context.go": "package docs\n",
        "examples/context.go": "package main\n",
        "tests/context.go": "package tests\n",
    }
    other = make_repo({"context.go": "package gin\n\nfunc secret() {}\n"}, name="theirs")
    with psycopg.connect(dsn) as conn:  # another tenant's file of the same name
        index_repository(conn, other, name="gin", tenant="globex", embed=False, show_progress=False)
    _index_as_acme(db, dsn, make_repo, files, "gin")

    def mentioned(question: str) -> set:
        return _mentioned_files(db, question, "gin")

    assert mentioned("fix(context): Copy() copies the errors too") == {"context.go"}
    assert mentioned("feat(binding/form, context)!: parse times") == {
        "binding/form.go",
        "context.go",
    }
    # the folder render/ is a package of many files: its namesake file is not what it names
    assert mentioned("chore(render): do not export the toml content type") == set()
    # not a header, or a scope that is a path: nothing outside the repository, no other tenant
    assert mentioned("we fix(context): nothing") == set()
    assert mentioned("fix(../../../etc/passwd): read it") == set()
    long = "fix(context): Copy() copies the errors too\n\n" + "It used to drop them. " * 30
    assert mentioned(long) == {"context.go"}


def test_a_commit_headers_type_and_issue_numbers_are_not_searched(db, dsn, make_repo):
    files = {
        "scripts/verify-commit.js": (
            "const re = /^(revert: )?(feat|fix|docs|dx|style|refactor|perf|test|chore)"
            "(\\(.+\\))?: .{1,50}/\nif (!re.test(msg)) { fail(msg) } // see #6940\n"
        ),
        "lib/validation.js": "function coerceRoot(value) {\n  return preserve(value)\n}\n",
    }
    _index_as_acme(db, dsn, make_repo, files, "fastish")

    def found(question: str) -> set:
        rows = db.execute(
            "select path from hybrid_search(%s, repo => 'fastish', k => 50)", (question,)
        ).fetchall()
        return {p for (p,) in rows}

    # `fix:` says what kind of change; `fix #6940` and `(#6940)` cite an issue: none is searched
    assert found("fix: preserve the coerced root value (#6940)") == {"lib/validation.js"}
    long = "fix: preserve the coerced root value\n\nThe value was lost.\n\nfix #6940"
    assert found(long) == {"lib/validation.js"}
    # in a question's words, fix is a word like any other
    assert "scripts/verify-commit.js" in found("where do we check that a commit says fix")


def test_language_and_path_filters_hold_in_every_leg(db, dsn, make_repo):
    files = {
        "server/retry.py": "def retry_request(request, attempts):\n    return send(request)\n",
        "server/backoff.py": "def retry_backoff(attempt):\n    return 2 ** attempt\n",
        "client/retry.js": (
            "function retryRequest(request, attempts) {\n  return send(request);\n}\n"
        ),
        "client/backoff.js": "function retryBackoff(attempt) {\n  return 2 ** attempt;\n}\n",
    }
    root = make_repo(files, name="mixed")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="mixed", tenant="acme", show_progress=False)
    _act_as(db, "acme")

    def paths(**filters):
        args = "".join(f", {k} => %({k})s" for k in filters)
        rows = db.execute(
            f"select path, why from hybrid_search('retry request attempts backoff',"
            f" repo => 'mixed', k => 50{args})",
            filters,
        ).fetchall()
        assert any(why["lexical_rank"] for _, why in rows)
        assert any(why["dense_rank"] for _, why in rows)
        return {p for p, _ in rows}

    assert paths() == set(files)
    assert paths(language="python") == {"server/retry.py", "server/backoff.py"}
    assert paths(path_prefix="client/") == {"client/retry.js", "client/backoff.js"}
    assert paths(language="javascript", path_prefix="client/retry") == {"client/retry.js"}


def test_stand_ins_are_each_large_files_best_non_candidates(db, dsn, make_repo):
    # the statement split_big_files runs for the symbols a large file's candidates cannot
    # supply: not candidates, at least two query terms, best two by how many they hold
    source = (
        "def rotate_signing_key(vault):\n    return vault.rotate('signing', 'key')\n\n\n"
        "def unrelated(x):\n    return x\n\n\n"
        "def signing_key_for(vault):\n    return vault.get('signing')\n\n\n"
        "def vault_key(vault):\n    return vault.key\n\n\n"
        "def vault_key_size(vault):\n    return len(vault.key)\n\n\n"
        "def signing_only(x):\n    return x\n"
    )
    root = make_repo({"vault/keys.py": source}, name="vault")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="vault", tenant="acme", show_progress=False)
    tenant = _act_as(db, "acme")
    repo = db.execute("select id from repositories where name = 'vault'").fetchone()[0]
    ids = dict(db.execute("select name, id from code_symbols where kind = 'function'").fetchall())
    terms = db.execute("select _query_terms('rotate signing key vault')").fetchone()[0]
    query = pipeline_statement("stand_in_symbols")
    rows = db.execute(
        query.replace("%(p6)s", "%(p6)s::tsquery"),
        {
            "p1": [repo],
            "p2": ["vault/keys.py"],
            "p3": terms,
            "p4": 1000,
            "p5": [ids["rotate_signing_key"]],  # already a candidate: not asked for again
            "p6": pipeline_query.two_terms_query(terms),
            "p7": 2,
            "p8": tenant,
        },
    ).fetchall()
    # signing_key_for holds signing, key, vault; vault_key and vault_key_size two each (a
    # tie: the first in the file); unrelated and signing_only fewer than two
    assert [r[3] for r in rows] == ["signing_key_for", "vault_key"]
    assert [r[-1] for r in rows] == [3, 2]


def test_a_leg_of_weight_zero_does_not_run(db, indexed):
    sql = (
        "select lexical_rank, dense_rank from explain_context('follow redirects',"
        " repo => 'requestsish', lexical_weight => %s, dense_weight => %s)"
    )
    both = db.execute(sql, (1, 1)).fetchall()
    assert any(d for _, d in both) and any(lx for lx, _ in both)  # the fixture has vectors
    lexical = db.execute(sql, (1, 0)).fetchall()
    assert lexical and not any(d for _, d in lexical)
    dense = db.execute(sql, (0, 1)).fetchall()
    assert dense and not any(lx for lx, _ in dense)
    # an embedding passed with a dense weight of 0 is still checked
    with pytest.raises(psycopg.errors.DataException, match="dimensions"):
        db.execute(
            "select * from pack_context('follow redirects', repo => 'requestsish',"
            " query_embedding => '[1,2,3]', dense_weight => 0)"
        )


def test_a_long_questions_dense_legs_count_half_in_the_fusion(db, indexed):
    """A long question's vector is of a digest of the report: its dense legs keep
    REPORT_DENSE_SHARE of their weight in the fusion (feature report_dense), a one-line
    question's all of it, whatever dense_weight the caller gives. Read from why: a candidate
    only the dense leg ranked has rrf = weight / (60 + its rank) besides its file's share."""
    report = (
        "Redirects are not followed\n"
        "The session returns the 302 response itself instead of following its Location."
    )

    def dense_shares(question: str, dense_weight: float = 1.0) -> list[float]:
        rows = db.execute(
            "select why from explain_context(%s, repo => 'requestsish', dense_weight => %s)",
            (question, dense_weight),
        ).fetchall()
        alone = [
            w
            for (w,) in rows
            if w["dense_rank"] is not None
            and w["lexical_rank"] is None
            and w["mention_rank"] is None
            and not w["failing_frame"]
        ]
        assert alone, "the fixture has candidates only the dense leg ranks"
        return [round((w["rrf"] - w["file_rrf"]) * (60 + w["dense_rank"]), 9) for w in alone]

    share = request.REPORT_DENSE_SHARE
    assert 0 < share < 1
    assert set(dense_shares(report)) == {share}
    assert set(dense_shares(report, dense_weight=2.0)) == {2 * share}
    assert set(dense_shares("where are redirects followed")) == {1.0}
    db.execute("set codesift.retrieval_off = 'evidence,outline,report_dense'")
    try:
        assert set(dense_shares(report)) == {1.0}
    finally:
        db.execute("reset codesift.retrieval_off")


def test_a_large_files_functions_stand_in_before_its_classes(db, dsn, make_repo):
    source = (
        "class RetryPolicy:\n"
        '    """Retry with backoff: the delay grows with each attempt up to a limit."""\n\n'
        "    def backoff_delay(self, attempt):\n        return min(2 ** attempt, self.limit)\n\n"
        "    def retry_limit(self):\n        return self.limit\n\n\n"
        "def retry_backoff(attempt, limit):\n    return min(2 ** attempt, limit)\n\n\n"
        + "".join(f"def unrelated_{i}(x):\n    return x + {i}\n\n\n" for i in range(40))
    )
    _index_as_acme(db, dsn, make_repo, {"net/retry.py": source}, "retries")
    sql = (
        "select symbol, kind, why from explain_context('retry backoff delay limit',"
        " repo => 'retries', token_budget => 1000, graph_depth => 0)"
    )

    chosen = {s: k for s, k, why in db.execute(sql).fetchall() if why["stands_in_for_file"]}
    assert len(chosen) == 2 and "class" not in chosen.values()
    assert "retry_backoff" in chosen


def _first_file(db, question: str, repo: str) -> tuple[str, float]:
    """The best-ranked file of hybrid_search, and its path prior."""
    sql = "select path, why from hybrid_search(%s, repo => %s, k => 20)"
    rows = db.execute(sql, (question, repo)).fetchall()
    return rows[0][0], rows[0][1]["path_prior"]


def test_the_folder_a_commit_header_names_weighs_its_code_more(db, dsn, make_repo):
    render = "export function renderList(items, separator) {{\n  return items.join({sep})\n}}\n"
    files = {
        # alpha's words fit the message best: it ranks first on words alone
        "packages/alpha/src/list.ts": render.format(sep="separator") * 3,
        "packages/beta/src/list.ts": render.format(sep="','"),
        "packages/beta/__tests__/list.spec.ts": render.format(sep="separator") * 3,
    }
    # another tenant's repository of the same name has a better fit under beta/
    theirs = make_repo({"packages/beta/src/theirs.ts": render.format(sep="separator") * 5})
    with psycopg.connect(dsn) as conn:
        index_repository(conn, theirs, name="ui", tenant="globex", embed=False, show_progress=False)
    _index_as_acme(db, dsn, make_repo, files, "ui")
    message = "fix(beta): renderList drops the separator"
    found = db.execute("select path from hybrid_search(%s, repo => 'ui', k => 50)", (message,))
    assert "packages/beta/src/theirs.ts" not in {path for (path,) in found.fetchall()}
    assert _first_file(db, message, "ui") == ("packages/beta/src/list.ts", 1.5)
    # without a header, or with the stage off, the words decide
    assert _first_file(db, "renderList drops the separator", "ui")[0] == (
        "packages/alpha/src/list.ts"
    )
    db.execute("select set_config('codesift.retrieval_off', 'scope', false)")
    assert _first_file(db, message, "ui") == ("packages/alpha/src/list.ts", 1.0)
    db.execute("reset codesift.retrieval_off")
    # a header naming a folder no file is under, or climbing out, changes nothing
    for header in ("fix(gamma)", "fix(../beta)", "fix(" + "zeta," * 500 + ")"):
        assert _first_file(db, f"{header}: renderList drops the separator", "ui")[0] == (
            "packages/alpha/src/list.ts"
        ), header
