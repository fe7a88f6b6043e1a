"""The pack is also a map: a candidate file the pack cannot hold whole gets an outline item
(pipeline/outlines.py), counted against the budget, never naming a definition packed
whole, and never showing a name from another tenant's or another ref's file.

acme indexes 'shop' (shop/orders.py: a class whose methods do not all fit, shop/util.py:
small) at HEAD and at 'feature' (orders.py gains feature_only_refund); globex indexes its
own 'shop' whose orders.py has globex_secret_refund. The calls run as the application role
with the tenant set."""

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift_db.pipeline import outlines
from codesift_db.pipeline.features import DEFAULT_OFF
from codesift_db.tokens import estimate_tokens

from tests.conftest import commit, git, write_files
from tests.explained import pipeline_statement

VERBS = ["refund", "charge", "ship", "audit", "invoice"]
NOUNS = ["payment", "parcel", "ledger", "coupon"]
QUESTION = "refund the payment"
# outlines are off by default: this leaves off only the other default-off features
OUTLINES_ON = ",".join(sorted(DEFAULT_OFF - {"outline"}))


def with_outlines(conn):
    conn.execute("select set_config('codesift.retrieval_off', %s, false)", (OUTLINES_ON,))
    return conn


def _method(name: str, lines: int = 14) -> str:
    body = "".join(f"        total += self.rows[{j}] * {j}  # step {j}\n" for j in range(lines))
    return (
        f"    def {name}(self, amount, currency='EUR'):\n"
        f'        """Handle {name.replace("_", " ")}."""\n'
        f"        total = 0\n{body}        return total\n"
    )


def orders_py(extra: tuple[str, ...] = ()) -> str:
    names = [f"{v}_{n}" for v in VERBS for n in NOUNS] + list(extra)
    return '"""Orders."""\n\n\nclass Orders:\n' + "\n".join(_method(n) for n in names)


def _files(extra: tuple[str, ...] = ()) -> dict[str, str]:
    return {
        "shop/__init__.py": "",
        "shop/orders.py": orders_py(extra),
        "shop/util.py": "def refund_rounding(amount):\n    return round(amount, 2)\n",
    }


def _index(conn, root, tenant, **kw):
    index_repository(conn, root, name="shop", tenant=tenant, embed=False, show_progress=False, **kw)


def _index_shops(dsn: str, make_repo) -> dict[str, int]:
    with psycopg.connect(dsn) as conn:
        root = make_repo(_files(), name="acme-shop")
        _index(conn, root, "acme")
        git(root, "checkout", "-q", "-b", "feature")
        write_files(root, {"shop/orders.py": orders_py(("feature_only_refund",))})
        commit(root, "feature")
        _index(conn, root, "acme", ref="feature")
        _index(conn, make_repo(_files(("globex_secret_refund",)), name="globex-shop"), "globex")
        return {
            t: conn.execute("select id from codesift.tenants where name = %s", (t,)).fetchone()[0]
            for t in ("acme", "globex")
        }


@pytest.fixture
def shops(dsn, make_repo, snapshots):
    """{tenant: id}: acme's shop at HEAD and 'feature', globex's own shop (indexed once per
    session, copied into this test's database)."""
    return snapshots.load("pack_outlines", _index_shops, dsn, make_repo)


@pytest.fixture
def acme(shops, app_connect):
    return with_outlines(app_connect(shops["acme"]))


def _pack(conn, query=QUESTION, budget=4000, ref=None, repo="shop"):
    cur = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cur.execute(
        "select * from codesift.pack_context(%s, repo => %s, token_budget => %s,"
        " dense_weight => 0, ref => %s)",
        (query, repo, budget, ref),
    ).fetchall()


def _spans(conn, path, ref=None) -> dict[str, tuple[int, int]]:
    rows = conn.execute(
        "select qualified_name, start_line, end_line"
        " from codesift.file_outline(%s, repo => 'shop', ref => %s)",
        (path, ref),
    ).fetchall()
    return {name: (start, end) for name, start, end in rows}


def test_a_file_whose_methods_do_not_all_fit_gets_an_outline_of_the_others(acme):
    rows = _pack(acme)
    outline = [r for r in rows if r["kind"] == outlines.OUTLINE]
    assert [r["path"] for r in outline] == ["shop/orders.py"]
    item = outline[0]
    spans = _spans(acme, "shop/orders.py")
    bodies = [
        (r["start_line"], r["end_line"])
        for r in rows
        if r["path"] == "shop/orders.py" and r["kind"] != outlines.OUTLINE
    ]
    assert bodies  # some methods are packed, not all: 20 of about 300 tokens each
    whole = {n for n, (a, b) in spans.items() if any(s <= a and b <= e for s, e in bodies)}
    entries = item["why"]["outlined"]
    listed = [e["name"] for e in entries if e["kind"] != "header"]
    assert listed and not set(listed) & whole  # never a definition packed whole
    # not cut: every definition is either packed whole or named by the outline, with the
    # lines it spans
    assert not item["truncated"] and set(listed) | whole == set(spans)
    assert all((e["start_line"], e["end_line"]) == spans[e["name"]] for e in entries if e["name"])
    lines = item["text"].split("\n")
    assert lines[0].startswith(
        f"# shop:shop/orders.py (outline: {len(listed)} definitions not packed) @ blob "
    )
    # the lines before the first definition (the module's docstring here), then the class
    assert entries[0] == {"name": None, "kind": "header", "start_line": 1, "end_line": 3}
    assert lines[1:3] == ["  header: lines 1-3", "  class Orders:"]
    # each method by its name alone: its signature is longer than an outline line
    assert [line.strip() for line in lines[3:]] == [
        "def " + n.split(".")[-1] for n in listed if n != "Orders"
    ]
    assert "not packed" in item["why"]["outline"] and "find_symbol" in item["why"]["outline"]
    assert item["citation"] == f"shop:shop/orders.py:{item['start_line']}-{item['end_line']}"
    assert item["language"] == "python" and item["symbol"] is None
    # the outline cites the file version its bodies came from
    blobs = {r["blob_sha"] for r in rows if r["path"] == "shop/orders.py"}
    assert len(blobs) == 1
    # a small file packed whole gets none; bodies carry no outline keys
    assert all(
        r["why"]["outline"] is None and r["why"]["outlined"] is None
        for r in rows
        if r["kind"] != outlines.OUTLINE
    )
    text = acme.execute(
        "select codesift.pack_context_text(%s, repo => 'shop', token_budget => 4000)", (QUESTION,)
    ).fetchone()[0]
    assert item["text"] in text


@pytest.mark.parametrize("budget", [60, 300, 900, 1500, 4000, 9000])
def test_the_outline_counts_against_the_budget(acme, budget):
    rows = _pack(acme, budget=budget)
    assert sum(r["tokens"] for r in rows) <= budget
    for r in rows:
        assert r["tokens"] == estimate_tokens(r["text"]), r["kind"]
    for r in rows:
        if r["kind"] == outlines.OUTLINE:
            assert r["tokens"] <= max(1, int(budget * outlines.FILE_SHARE))


def test_a_small_budget_cuts_the_outline_to_the_ranking_s_choice(acme):
    rows = _pack(acme, budget=1500)
    outline = next(r for r in rows if r["kind"] == outlines.OUTLINE)
    assert outline["truncated"] and outline["text"].endswith("\n  ...")
    # the methods sharing the question's words come first: each refund or payment method
    # is packed whole or listed, though not every method is
    listed = {e["name"] for e in outline["why"]["outlined"] if e["name"]}
    bodies = {r["symbol"] for r in rows if r["path"] == "shop/orders.py"}
    matching = {n for n in _spans(acme, "shop/orders.py") if "refund" in n or "payment" in n}
    assert matching <= listed | bodies and len(matching) == 8


def test_without_the_outline_feature_the_pack_has_none(acme):
    """Off by default and when named off; on when the setting leaves it out."""
    for off in ("reset codesift.retrieval_off", "set codesift.retrieval_off = 'outline'"):
        acme.execute(off)
        rows = _pack(acme)
        assert rows and all(r["kind"] != outlines.OUTLINE for r in rows)
        assert sum(r["tokens"] for r in rows) <= 4000
    with_outlines(acme)
    assert any(r["kind"] == outlines.OUTLINE for r in _pack(acme))


def test_flat_and_explain_show_the_outline(acme):
    cur = acme.cursor(row_factory=psycopg.rows.dict_row)
    flat = cur.execute(
        "select kind, outline, outlined from codesift.pack_context_flat(%s, repo => 'shop',"
        " dense_weight => 0)",
        (QUESTION,),
    ).fetchall()
    mapped = [f for f in flat if f["kind"] == outlines.OUTLINE]
    assert len(mapped) == 1 and mapped[0]["outline"]
    assert {e["kind"] for e in mapped[0]["outlined"]} == {"header", "class", "method"}
    assert all(f["outline"] is None for f in flat if f["kind"] != outlines.OUTLINE)
    explained = cur.execute(
        "select kind, decision, packed, tokens, why from codesift.explain_context(%s,"
        " repo => 'shop', dense_weight => 0)",
        (QUESTION,),
    ).fetchall()
    row = next(e for e in explained if e["kind"] == outlines.OUTLINE)
    assert row["decision"] == "kept" and row["packed"] and row["tokens"] > 0
    assert outlines.OUTLINE in row["why"]["stage_ms"]


def test_no_name_from_another_tenant_or_another_ref(acme, shops, app_connect):
    for budget in (1500, 4000):
        packs = [
            _pack(acme, "refund secret payment", budget),
            _pack(acme, "feature only refund", budget),
        ]
        for rows in packs:
            text = "\n".join(r["text"] for r in rows)
            names = [e["name"] or "" for r in rows for e in r["why"]["outlined"] or []]
            assert "globex" not in text and not any("globex" in n for n in names)
            assert "feature_only" not in text and not any("feature_only" in n for n in names)
    # the other ref's pack does reach its own definition, as body or by name
    rows = _pack(acme, "feature only refund", 1500, ref="feature")
    reached = "\n".join(r["text"] for r in rows)
    assert "feature_only_refund" in reached
    # globex sees its own name and none of acme's ref
    globex = with_outlines(app_connect(shops["globex"]))
    rows = _pack(globex, "refund secret payment", 1500)
    assert "globex_secret_refund" in "\n".join(r["text"] for r in rows)
    assert not any("feature_only" in r["text"] for r in rows)


def test_thousands_of_definitions_stay_within_the_budget(db, dsn, make_repo, app_connect, shops):
    handlers = "".join(f"def handler_{i}(request):\n    return {i}\n\n\n" for i in range(3000))
    root = make_repo({"gen/handlers.py": handlers}, name="gen")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="gen", tenant="acme", embed=False, show_progress=False)
    acme = with_outlines(app_connect(shops["acme"]))
    rows = _pack(acme, "handler request", 4000, repo="gen")
    assert sum(r["tokens"] for r in rows) <= 4000
    outline = next(r for r in rows if r["kind"] == outlines.OUTLINE)
    assert outline["truncated"] and outline["text"].endswith("\n  ...")
    assert outline["tokens"] <= int(4000 * outlines.FILE_SHARE)
    listed = outline["why"]["outlined"]
    # the citation, then one line per entry (the file starts with a definition: no
    # header), then the cut marker
    assert 0 < len(listed) == len(outline["text"].split("\n")) - 2
    # more definitions than one outline reads: the count says so
    header = outline["text"].split("\n")[0]
    assert "+ definitions not packed" in header and "+ of this file" in outline["why"]["outline"]


NEAR_PY = (
    "def refund_payment(order):\n    return order.total\n\n\n"
    "def ship_parcel(order):\n    return order.address\n\n\n"
    "def audit_ledger(order):\n    return order.lines\n"
)


def test_nearness_reads_only_the_tenants_own_vectors(dsn, make_repo, app_connect):
    """The statement that orders an outline's lines by the question's vector: a definition's
    similarity to its own vector is 1, and the same blob indexed by another tenant gives
    that tenant's symbols to nobody else, even when their ids and tenant id are passed."""
    tenants = {}
    with psycopg.connect(dsn) as conn:
        for tenant in ("acme", "globex"):
            root = make_repo({"near.py": NEAR_PY}, name=f"{tenant}-near")
            index_repository(
                conn, root, name="near", tenant=tenant, embed=True, show_progress=False
            )
            tenants[tenant] = conn.execute(
                "select id from codesift.tenants where name = %s", (tenant,)
            ).fetchone()[0]
        theirs = [
            r[0]
            for r in conn.execute(
                "select id from codesift.code_symbols where tenant_id = %s", (tenants["globex"],)
            )
        ]
    acme = app_connect(tenants["acme"])
    rows = acme.execute(
        "select id, name, embedding::text, embedding_model from codesift.code_symbols"
    ).fetchall()
    mine = [r[0] for r in rows]
    ship = next(r for r in rows if r[1] == "ship_parcel")
    statement = pipeline_statement("outline_nearness")

    def near(tenant: int, ids: list[int]) -> dict:
        args = {"p1": tenant, "p2": ids, "p3": ship[2], "p4": ship[3]}
        return dict(acme.execute(statement, args).fetchall())

    similarity = near(tenants["acme"], mine)
    assert len(similarity) == 3 and similarity[ship[0]] == pytest.approx(1.0, abs=1e-6)
    assert max(v for i, v in similarity.items() if i != ship[0]) < 0.99
    # globex holds the same blob: its symbols are not acme's to read
    assert theirs and not set(theirs) & set(mine)
    assert near(tenants["globex"], theirs) == {} == near(tenants["acme"], theirs)
