"""`codesift mcp` over stdio, spoken to by the MCP SDK's own client: every tool on a real
indexed repository returns cited results."""

import asyncio
import json

import psycopg
import pytest
from codesift.indexer import index_repository

from tests.conftest import commit, write_files
from tests.mcp.harness import stdio_session, text_of

FILES = {
    "shop/cart.py": (
        "from shop.pricing import apply_discount, TAX_RATE\n\n\n"
        "class Cart:\n"
        '    """A shopping cart: items and their quantities."""\n\n'
        "    def __init__(self):\n        self.items = {}\n\n"
        "    def add_item(self, sku, quantity=1):\n"
        "        self.items[sku] = self.items.get(sku, 0) + quantity\n\n"
        "    def total(self, prices):\n"
        "        subtotal = sum(prices[s] * q for s, q in self.items.items())\n"
        "        return apply_discount(subtotal) * (1 + TAX_RATE)\n"
    ),
    "shop/pricing.py": (
        "TAX_RATE = 0.2\n\n\n"
        "def apply_discount(amount):\n"
        '    """Ten percent off orders over 100."""\n'
        "    return amount * 0.9 if amount > 100 else amount\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\n"
        "def test_total_applies_discount():\n"
        "    cart = Cart()\n    cart.add_item('a', 3)\n"
        "    assert cart.total({'a': 50}) == 162.0\n"
    ),
    "README.md": "# shop\n\nA cart computes totals with discounts and tax.\n",
}

READ_ONLY_TOOLS = {
    "search_code",
    "find_symbol",
    "related_files",
    "explain_search",
    "list_repositories",
}


@pytest.fixture
def shop(dsn, make_repo):
    root = make_repo(FILES, name="shop")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="shop", tenant="acme", embed=False, show_progress=False)
    return root


def test_tools_listed_with_descriptions_and_annotations(dsn, shop):
    async def run():
        async with stdio_session(dsn, "acme", cwd=shop) as s:
            return (await s.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(run())}
    assert set(tools) == READ_ONLY_TOOLS | {"sync_index"}
    for name, tool in tools.items():
        assert len(tool.description) > 80, name  # tells an agent when to use it
        assert tool.annotations.read_only_hint is (name != "sync_index")
    assert "grep" in tools["search_code"].description


def test_every_tool_answers_with_citations(dsn, shop):
    async def run():
        async with stdio_session(dsn, "acme", cwd=shop) as s:
            out = {}
            out["search"] = await s.call_tool(
                "search_code", {"question": "how is the discount applied to the cart total?"}
            )
            out["symbol"] = await s.call_tool("find_symbol", {"name": "Cart.total"})
            out["absent"] = await s.call_tool("find_symbol", {"name": "apply_discont"})
            out["related"] = await s.call_tool("related_files", {"path": "shop/cart.py"})
            out["explain"] = await s.call_tool(
                "explain_search", {"question": "discount", "repo": "shop"}
            )
            out["repos"] = await s.call_tool("list_repositories", {})
            out["resources"] = (await s.list_resources()).resources
            out["resource"] = await s.read_resource("codesift://repositories/shop")
            return out

    out = asyncio.run(run())
    for key in ("search", "symbol", "absent", "related", "explain", "repos"):
        assert not out[key].is_error, (key, text_of(out[key]))

    search = out["search"]
    text = text_of(search)
    assert "# shop/shop/pricing.py:" in text or "# shop/shop/cart.py:" in text
    rows = search.structured_content["rows"]
    assert rows and all({"repository", "path", "start_line", "end_line"} <= set(r) for r in rows)
    assert {"shop/pricing.py", "shop/cart.py"} & {r["path"] for r in rows}
    assert sum(r["tokens"] for r in rows) <= 4000

    symbol = out["symbol"]
    assert text_of(symbol).startswith("# shop:shop/cart.py:13-15 (method Cart.total, exact match)")
    assert symbol.structured_content["rows"][0]["citation"] == "shop:shop/cart.py:13-15"

    absent = out["absent"]
    assert absent.structured_content["rows"] == []
    assert "apply_discount" in text_of(absent) and "no symbol named" in text_of(absent)

    related = {r["related_path"]: r for r in out["related"].structured_content["rows"]}
    assert related["shop/pricing.py"]["relation"] == "imports"
    assert related["tests/test_cart.py"]["relation"] == "imported by"
    assert related["tests/test_cart.py"]["is_test"] is True

    explain = out["explain"].structured_content["rows"]
    assert explain and all("decision" in r for r in explain)

    repos = out["repos"].structured_content["rows"]
    assert [(r["repository"], r["stale"]) for r in repos] == [("shop", False)]

    uris = {str(r.uri) for r in out["resources"]}
    assert "codesift://repositories" in uris
    status = json.loads(out["resource"].contents[0].text)
    assert status["repository"] == "shop" and status["live_files"] == 4


def test_sync_index_picks_up_worktree_edits(dsn, shop):
    write_files(shop, {"shop/shipping.py": "def shipping_cost(weight):\n    return 5 + weight\n"})

    async def run():
        async with stdio_session(dsn, "acme", cwd=shop) as s:
            before = await s.call_tool("find_symbol", {"name": "shipping_cost"})
            synced = await s.call_tool("sync_index", {"name": "shop"})
            after = await s.call_tool("find_symbol", {"name": "shipping_cost"})
            return before, synced, after

    before, synced, after = asyncio.run(run())
    assert before.structured_content["rows"] == []
    assert not synced.is_error, text_of(synced)
    assert "indexed shop" in text_of(synced)
    assert after.structured_content["rows"][0]["path"] == "shop/shipping.py"
    # and committed later, it is the same blob: nothing new to push
    commit(shop, "shipping")


def test_unknown_tenant_is_a_clear_error(dsn, shop):
    async def run():
        async with stdio_session(dsn, "nobody") as s:
            await s.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the server exits; the client sees a closed pipe
        asyncio.run(run())
