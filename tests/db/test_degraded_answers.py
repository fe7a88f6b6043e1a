"""Degraded answers say so (pipeline/degraded.py): texts still waiting for their vector, a
scope with no vector at all, a question the built-in English model cannot read. Each reason
is a NOTICE (what psql, `codesift ask` and the MCP tools show) and, on every row, an entry
of `why.degraded` (pack_context_flat: its `degraded` column), for BI tools that see none."""

import asyncio
import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from codesift.embedder import embed_pending
from codesift.indexer import index_repository

from tests.conftest import commit, write_files
from tests.explained import explained, nodes, pipeline_statement
from tests.mcp.harness import stdio_session, text_of

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
CART_PY = (
    "from shop.pricing import apply_discount\n\n\n"
    "class Cart:\n"
    '    """A shopping cart: items and their quantities."""\n\n'
    "    def __init__(self):\n        self.items = {}\n\n"
    "    def total(self, prices):\n"
    "        subtotal = sum(prices[s] * q for s, q in self.items.items())\n"
    "        return apply_discount(subtotal)\n"
)
PRICING_PY = (
    "def apply_discount(amount):\n"
    '    """Ten percent off orders over 100."""\n'
    "    return amount * 0.9 if amount > 100 else amount\n"
)
FILES = {"shop/cart.py": CART_PY, "shop/pricing.py": PRICING_PY}
ENGLISH = "how is the discount applied to the cart total?"
CHINESE = "购物车总价的折扣是怎么计算的？"
CALLS = [
    "select why from hybrid_search(%s, repo => 'shop')",
    "select why from pack_context(%s, repo => 'shop')",
    "select why from explain_context(%s, repo => 'shop')",
]


def _index(dsn: str, root: Path, embed: bool, name: str = "shop") -> None:
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name=name, tenant="acme", embed=embed, show_progress=False)


def _shipping_twice_unembedded(dsn: str, make_repo) -> None:
    """shop embedded, with a copy of a file at a second path; then one new file at two
    paths, indexed without vectors: one blob and its one function wait."""
    root = make_repo({**FILES, "shop/copy_of_pricing.py": PRICING_PY}, name="shop")
    _index(dsn, root, embed=True)
    shipping = "def shipping_cost(weight):\n    return 5 + weight\n"
    write_files(root, {"shop/a/shipping.py": shipping, "shop/b/shipping.py": shipping})
    commit(root, "shipping twice")
    _index(dsn, root, embed=False)


def _tenant(db) -> int:
    tenant = db.execute("select id from tenants where name = 'acme'").fetchone()[0]
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant),))
    return tenant


def _ask_db(db, sql: str, question: str) -> tuple[list, list[str]]:
    """The rows' first column and the NOTICEs of one call."""
    notices: list[str] = []

    def keep(n):
        notices.append(n.message_primary)

    db.add_notice_handler(keep)
    try:
        rows = [r[0] for r in db.execute(sql, (question,)).fetchall()]
    finally:
        db.remove_notice_handler(keep)
    return rows, notices


def _codes(rows: list) -> list[set[str]]:
    return [{d["code"] for d in why["degraded"]} for why in rows]


def _unembedded(db) -> int:
    return db.execute(
        "select (select count(*) from code_symbols where embedding_model is null)"
        " + (select count(*) from blobs where embedding_model is null)"
    ).fetchone()[0]


def _texts(db) -> int:
    return db.execute(
        "select (select count(*) from code_symbols) + (select count(*) from blobs)"
    ).fetchone()[0]


@pytest.fixture
def embedded(db, dsn, make_repo):
    root = make_repo(FILES, name="shop")
    _index(dsn, root, embed=True)
    _tenant(db)
    return root


def test_a_backlog_is_said_on_every_call_and_row_until_it_is_embedded(db, dsn, make_repo):
    root = make_repo(FILES, name="shop")
    _index(dsn, root, embed=True)
    # a new file indexed without embedding: its texts wait in the queue
    write_files(root, {"shop/shipping.py": "def shipping_cost(weight):\n    return 5 + weight\n"})
    commit(root, "shipping")
    _index(dsn, root, embed=False)
    tenant = _tenant(db)
    waiting, texts = _unembedded(db), _texts(db)
    assert 0 < waiting < texts
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, ENGLISH)
        assert rows, sql
        said = f"{waiting:,} of {texts:,} texts in scope are not embedded yet"
        assert any(said in n for n in notices), (sql, notices)
        assert all(codes == {"embedding_backlog"} for codes in _codes(rows)), (sql, rows[0])
        detail = rows[0]["degraded"][0]["detail"]
        assert said in detail and "dense leg sees only part" in detail
    flat = db.execute(
        "select degraded from pack_context_flat(%s, repo => 'shop')", (ENGLISH,)
    ).fetchall()
    assert flat and all(d.startswith("embedding_backlog: ") for (d,) in flat)

    with psycopg.connect(dsn) as conn:
        embed_pending(conn, tenant, show_progress=False)
    assert _unembedded(db) == 0
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, ENGLISH)
        assert rows, sql
        assert not any("not embedded" in n for n in notices), (sql, notices)
        assert all(why["degraded"] == [] for why in rows), (sql, rows[0])
    flat = db.execute(
        "select degraded from pack_context_flat(%s, repo => 'shop')", (ENGLISH,)
    ).fetchall()
    assert flat and all(d is None for (d,) in flat)


def test_a_text_live_at_several_paths_is_counted_once(db, dsn, make_repo):
    # the same content at two paths is one blob and one set of symbols: the backlog and the
    # texts in scope count it once (embedding_backlog.sql)
    _shipping_twice_unembedded(dsn, make_repo)
    _tenant(db)
    waiting, texts = _unembedded(db), _texts(db)
    assert waiting == 2  # the new blob and its one function
    rows, notices = _ask_db(db, CALLS[0], ENGLISH)
    assert rows
    assert any(f"{waiting:,} of {texts:,} texts in scope" in n for n in notices), notices


def test_a_backlog_elsewhere_larger_than_the_scope_is_not_counted_in_it(db, dsn, make_repo):
    # the tenant's backlog outgrows the scope's live files, so each file in scope probes for
    # its own waiting texts (embedding_backlog.sql): the copy at two paths still counts once
    # and the other repository's backlog not at all
    _shipping_twice_unembedded(dsn, make_repo)
    stock = {
        f"stock/item_{i:02d}.py": f"def count_{i}(x):\n    return x + {i}\n\n"
        f"def weigh_{i}(x):\n    return x * {i}\n"
        for i in range(12)
    }
    _index(dsn, make_repo(stock, name="stock"), embed=False, name="stock")
    _tenant(db)
    live_files, texts = db.execute(
        "select (select count(*) from files f join repositories r on r.id = f.repository_id"
        "        where r.name = 'shop' and f.live),"
        " (select count(*) from blobs b where exists (select from files f"
        "        join repositories r on r.id = f.repository_id"
        "        where r.name = 'shop' and f.live and f.blob_sha = b.sha))"
        " + (select count(*) from code_symbols s where exists (select from files f"
        "        join repositories r on r.id = f.repository_id"
        "        where r.name = 'shop' and f.live and f.blob_sha = s.blob_sha))"
    ).fetchone()
    assert _unembedded(db) == 2 + 12 + 24 and 12 > live_files
    rows, notices = _ask_db(db, CALLS[0], ENGLISH)
    assert rows
    assert any(f"2 of {texts:,} texts in scope" in n for n in notices), notices


def test_a_tenant_without_a_backlog_lists_no_file_to_count_it(db, embedded):
    # every question counts the backlog in its scope; a tenant with none pays two probes of
    # the queue's partial indexes, never a listing of the scope's files
    rows, explains = explained(db, CALLS[1], (ENGLISH,))
    assert rows
    counts = [
        p for p in explains if p["Query Text"].lstrip().startswith("-- The embedding backlog")
    ]
    assert counts
    read = [
        n
        for p in counts
        for n in nodes(p)
        if n.get("Relation Name") == "files" and n.get("Actual Loops", 0) > 0
    ]
    assert read == []


BACKLOG_SQL = pipeline_statement("embedding_backlog")


def _live_files_counted(explains: list[dict]) -> bool:
    """Whether the backlog statement listed the scope's live files to compare its backlog
    with (the `sizes` CTE's count over `live` ran)."""
    (statement,) = [p for p in explains if p["Query Text"].lstrip().startswith("-- The embedding")]
    (sizes,) = [n for n in nodes(statement) if n.get("Subplan Name") == "CTE sizes"]
    scans = [n for n in nodes(sizes) if n.get("CTE Name") == "live"]
    return any(n.get("Actual Loops", 0) > 0 for n in scans)


@pytest.mark.parametrize(("bound", "counted"), [(3, False), (1000, True)])
def test_a_backlog_at_the_counts_bound_walks_the_scope_without_counting_it_first(
    db, dsn, make_repo, bound, counted
):
    # six texts wait on each table (nothing embedded): a backlog at the bound is walked
    # from the scope's files whatever their number, so they are not counted first
    more = {f"shop/m{i}.py": f"def m{i}(x):\n    return x + {i}\n" for i in range(4)}
    root = make_repo({**FILES, **more}, name="shop")
    _index(dsn, root, embed=False)
    tenant = _tenant(db)
    repo = db.execute("select id from repositories where name = 'shop'").fetchone()[0]
    args = {"p1": tenant, "p2": [repo], "p3": 2, "p4": bound}  # the waiting rows' bound: 2
    rows, explains = explained(db, BACKLOG_SQL, args)
    assert [r[:2] for r in rows] == [(2, 2)]  # each count stops at its bound, 2
    assert _live_files_counted(explains) is counted


def test_content_shared_by_repositories_of_a_scope_is_counted_once(db, dsn, make_repo):
    # one blob at three paths of shop and at a path of stock: each count of the backlog
    # statement is that of the distinct contents in scope, for either repository alone and
    # both in either order, from either side (shop's files outnumber the tenant's unembedded
    # blobs, so those are probed for a path in scope; stock's do not, so they are walked)
    notes = {f"notes/n{i}.txt": f"note number {i}\n" for i in range(8)}
    copies = {"shop/again/pricing.py": PRICING_PY, "shop/third/pricing.py": PRICING_PY}
    shop = make_repo({**FILES, **copies, **notes}, name="shop")
    stock = make_repo(
        {"stock/pricing.py": PRICING_PY, "stock/level.py": "def level(x):\n    return x\n"},
        name="stock",
    )
    _index(dsn, shop, embed=False)
    _index(dsn, stock, embed=False, name="stock")
    tenant = _tenant(db)
    ids = dict(db.execute("select name, id from repositories").fetchall())
    for repos in (
        [ids["shop"]],
        [ids["stock"]],
        [ids["shop"], ids["stock"]],
        [ids["stock"], ids["shop"]],
    ):
        distinct = db.execute(
            "with s as (select distinct f.blob_sha from files f where f.live"
            "           and f.repository_id = any(%(r)s))"
            " select (select count(*) from code_symbols c join s using (blob_sha)),"
            " (select count(*) from s)",
            {"r": repos},
        ).fetchone()
        for bound in (3, 1000):  # the backlog at the bound, or under it and compared
            args = {"p1": tenant, "p2": repos, "p3": 1000, "p4": bound}
            (row,) = db.execute(BACKLOG_SQL, args).fetchall()
            assert row[:2] == distinct, (repos, bound, row)
            if bound == 1000:
                assert row[2:] == distinct, (repos, row)


def test_nothing_embedded_is_a_lexical_only_answer(db, dsn, make_repo):
    _index(dsn, make_repo(FILES, name="shop"), embed=False)
    _tenant(db)
    rows, notices = _ask_db(db, CALLS[0], "apply_discount")
    assert rows
    assert any("no text in scope has a vector" in n for n in notices), notices
    assert all(codes == {"lexical_only", "embedding_backlog"} for codes in _codes(rows))


def test_nothing_embedded_means_the_question_is_not_embedded(db, dsn, make_repo):
    # the question_script reason comes only from embedding the question with the built-in
    # model: without a vector in scope, the question is not embedded at all
    _index(dsn, make_repo(FILES, name="shop"), embed=False)
    _tenant(db)
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, CHINESE + " apply_discount")
        assert rows, sql
        assert not any("reads English" in n for n in notices), (sql, notices)
        assert all(codes == {"lexical_only", "embedding_backlog"} for codes in _codes(rows))


# more texts waiting than the backlog's count reads (degraded.BACKLOG_CAP, 1,000)
MANY_FUNCTIONS = {
    "shop/generated.py": "".join(
        f"def rate_{i:04d}(x):\n    return x + {i}\n\n" for i in range(1100)
    )
}


def test_a_backlog_too_large_to_count_without_any_vector_is_lexical_only(db, dsn, make_repo):
    # the backlog is not compared with the texts in scope: the tenant holds no vector of the
    # model, so the question is not embedded and the dense legs are not walked
    _index(dsn, make_repo({**FILES, **MANY_FUNCTIONS}, name="shop"), embed=False)
    _tenant(db)
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, CHINESE + " apply_discount")
        assert rows, sql
        assert not any("reads English" in n for n in notices), (sql, notices)
        said = "texts in scope are not embedded yet"
        assert any("at least 1,00" in n and said in n for n in notices), notices
        assert all(codes == {"lexical_only", "embedding_backlog"} for codes in _codes(rows))


def test_another_tenants_vectors_do_not_count_as_this_ones(db, dsn, make_repo):
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn,
            make_repo(FILES, name="other"),
            name="shop",
            tenant="other",
            embed=True,
            show_progress=False,
        )
    _index(dsn, make_repo({**FILES, **MANY_FUNCTIONS}, name="shop"), embed=False)
    _tenant(db)
    rows, notices = _ask_db(db, CALLS[0], CHINESE + " apply_discount")
    assert rows
    assert not any("reads English" in n for n in notices), notices
    assert all(codes == {"lexical_only", "embedding_backlog"} for codes in _codes(rows))


def test_a_large_backlog_beside_vectors_still_searches_them(db, dsn, make_repo):
    root = make_repo(FILES, name="shop")
    _index(dsn, root, embed=True)
    write_files(root, MANY_FUNCTIONS)
    commit(root, "generated rates")
    _index(dsn, root, embed=False)
    _tenant(db)
    rows = db.execute(
        "select path, why from hybrid_search(%s, repo => 'shop')", (ENGLISH,)
    ).fetchall()
    assert any(why["dense_rank"] is not None for _, why in rows), rows
    assert all({d["code"] for d in why["degraded"]} == {"embedding_backlog"} for _, why in rows)


def test_a_chinese_question_is_told_the_builtin_model_reads_english(db, embedded):
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, CHINESE)
        assert rows, sql  # the dense leg still answers, with whatever it matches
        assert any("reads English" in n and "CJK" in n for n in notices), (sql, notices)
        assert all(codes == {"question_script"} for codes in _codes(rows)), (sql, rows[0])


def test_an_english_question_is_not_degraded(db, embedded):
    for sql in CALLS:
        rows, notices = _ask_db(db, sql, ENGLISH)
        assert rows, sql
        assert not any("reads English" in n for n in notices), (sql, notices)
        assert all(why["degraded"] == [] for why in rows), (sql, rows[0])


def test_an_endpoint_model_is_not_said_to_read_english_only(db, embedded):
    # the caller's own vector (an endpoint model may be multilingual): no script notice
    vector = db.execute("select embed_query(%s)::text", (CHINESE,)).fetchone()[0]
    sql = f"select why from hybrid_search(%s, repo => 'shop', query_embedding => '{vector}')"
    rows, notices = _ask_db(db, sql, CHINESE)
    assert rows and all(why["degraded"] == [] for why in rows)
    assert not any("reads English" in n for n in notices), notices


def test_codesift_ask_prints_the_backlog(dsn, make_repo):
    _index(dsn, make_repo(FILES, name="shop"), embed=False)
    done = subprocess.run(
        [str(CODESIFT), "ask", ENGLISH, "--tenant", "acme"],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "300"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "not embedded yet" in done.stderr.replace("\n", " "), done.stderr


def test_mcp_search_code_carries_the_backlog_note(dsn, make_repo):
    root = make_repo(FILES, name="shop")
    _index(dsn, root, embed=False)

    async def run():
        async with stdio_session(dsn, "acme", cwd=root) as s:
            return await s.call_tool("search_code", {"question": ENGLISH})

    answer = asyncio.run(run())
    assert not answer.is_error, text_of(answer)
    text = text_of(answer)
    assert "note: " in text and "not embedded yet" in text, text
