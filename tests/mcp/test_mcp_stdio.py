"""`codesift mcp` over stdio, spoken to by the MCP SDK's own client: every tool on a real
indexed repository returns cited results; `initialize` is answered before the SDK, the
tools and the database are loaded; a database that is down is reported per call, and picked
up again when it is back, in the same session."""

import asyncio
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import commit, write_files
from tests.mcp.harness import CODESIFT, DatabaseSwitch, stdio_session, text_of

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
    "outline",
    "repo_map",
    "find_references",
    "callers",
    "callees",
    "impact",
    "diff_context",
}


@pytest.fixture
def shop(dsn, make_repo, snapshots):
    """shop indexed for acme (once per session, copied into this test's database)."""
    snapshots.load_repos("mcp_stdio_shop", {"shop": ("acme", FILES)}, dsn, make_repo)
    return make_repo.folder / "shop"


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
    assert "# shop:shop/pricing.py:" in text or "# shop:shop/cart.py:" in text
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

    related = {
        (r["related_path"], r["relation"]): r for r in out["related"].structured_content["rows"]
    }
    assert ("shop/pricing.py", "imports") in related
    assert related["tests/test_cart.py", "imported by"]["is_test"] is True

    explain = out["explain"].structured_content["rows"]
    assert explain and all("decision" in r for r in explain)

    repos = out["repos"].structured_content["rows"]
    assert [(r["repository"], r["stale"]) for r in repos] == [("shop", False)]
    # the stdio server's user indexed the checkout: they see where it is
    assert [Path(r["checkout_path"]).resolve() for r in repos] == [shop.resolve()]

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
    """The tenant is looked up on the first call: the server starts, and each call says
    what to do."""

    async def run():
        async with stdio_session(dsn, "nobody") as s:
            return await s.call_tool("list_repositories", {}), await s.call_tool(
                "search_code", {"question": "discount"}
            )

    for result in asyncio.run(run()):
        assert result.is_error
        # the words every command gives an unknown tenant (tenants.tenant_id)
        assert text_of(result) == "unknown tenant 'nobody' (codesift status lists the tenants)"


# modules that answering initialize does not need: the SDK and what it brings, the pool,
# the tools and what they bring, the embedders' numerical stack (pydantic is not among them:
# typer parses the command line with it)
HEAVY = {
    "mcp",
    "mcp_types",
    "starlette",
    "sse_starlette",
    "uvicorn",
    "anyio",
    "httpx2",
    "psycopg_pool",
    "numpy",
    "onnxruntime",
    "tokenizers",
}
HEAVY_OWN = {"codesift.mcp_server", "codesift.mcp_tools", "codesift.indexer"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def test_initialize_is_answered_before_the_sdk_and_the_database_load(dsn, shop, tmp_path):
    """A client waits for `initialize` before anything else: it is answered before the MCP
    SDK, the tools, the pool or the database are touched (CODESIFT_MCP_MODULES_LOG: the
    modules loaded as each answer went out); the pool comes with the first tool call."""
    log = tmp_path / "modules.jsonl"
    env = {
        "CODESIFT_DSN": dsn,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "CODESIFT_MCP_MODULES_LOG": str(log),
    }
    proc = subprocess.Popen(
        [CODESIFT, "mcp", "--tenant", "acme"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=shop,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    def answer(ident: int) -> dict:
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") == ident:
                return message

    try:
        ask(INITIALIZE)
        init = answer(1)
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answer(2)
        call = {"name": "list_repositories", "arguments": {}}
        ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        called = answer(3)
        # one answer per request: the SDK's own answer to initialize is not sent too
        ask({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert answer(4)["result"] == {}
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)

    assert init["result"]["serverInfo"]["name"] == "codesift"
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert "search_code" in {t["name"] for t in listed["result"]["tools"]}
    assert called["result"]["structuredContent"]["rows"][0]["repository"] == "shop"
    loaded = {e["id"]: set(e["modules"]) for e in map(json.loads, log.read_text().splitlines())}
    assert sorted(loaded) == [1, 2, 3, 4]

    def heavy(modules: set[str]) -> set[str]:
        return {m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY_OWN}

    assert heavy(loaded[1]) == set()
    # tools/list needs the SDK and the tools, not yet the pool
    assert {"mcp", "codesift.mcp_tools"} <= loaded[2]
    assert "psycopg_pool" not in loaded[2] and "numpy" not in loaded[2]
    assert "psycopg_pool" in loaded[3]


def test_a_first_message_other_than_initialize_is_the_sdks_to_answer(tmp_path):
    """Only a well-formed `initialize` as the first message is answered early; anything
    else (here a ping, then an initialize) is answered by the SDK, once each."""
    env = {"CODESIFT_DSN": "postgresql://nobody@127.0.0.1:1/none", "PATH": os.environ["PATH"]}
    proc = subprocess.Popen(
        [CODESIFT, "mcp", "--tenant", "acme"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers = []
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {**INITIALIZE, "id": 2},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answers.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[1]["result"]["serverInfo"]["name"] == "codesift"
    assert "search_code" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert proc.stdout.read() == ""  # nothing more: initialize was answered once


@pytest.mark.parametrize("requested", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28", "x"])
def test_the_early_initialize_answer_is_the_sdks(requested):
    """What mcp_start answers `initialize` with is what the SDK answers for this server, for
    every protocol version a client may ask for (the SDK's own answer is dropped)."""
    import anyio
    from codesift.mcp_backend import Backend
    from codesift.mcp_server import build_server
    from codesift.mcp_start import Settings, early_answer
    from mcp.server.stdio import stdio_server

    request = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": requested}}
    settings = Settings(dsn="postgresql://nobody@127.0.0.1:1/none", tenant_name="acme")
    server = build_server(settings, Backend(settings))
    lowlevel = server._lowlevel_server

    class Answers(io.StringIO):
        def flush(self) -> None:
            pass

    answers = Answers()

    async def sdk() -> None:
        lines = io.StringIO(json.dumps(request) + "\n")
        async with stdio_server(anyio.wrap_file(lines), anyio.wrap_file(answers)) as (r, w):
            await lowlevel.run(r, w, lowlevel.create_initialization_options())

    anyio.run(sdk)
    assert early_answer(json.dumps(request)) == json.loads(answers.getvalue().splitlines()[0])


TOOL_CALLS = {
    "search_code": {"question": "how is the discount applied?"},
    "find_symbol": {"name": "Cart.total"},
    "related_files": {"path": "shop/cart.py"},
    "outline": {"path": "shop/cart.py"},
    "repo_map": {},
    "find_references": {"name": "apply_discount"},
    "callers": {"symbol": "apply_discount"},
    "callees": {"symbol": "Cart.total"},
    "impact": {"target": "apply_discount"},
    "diff_context": {"repo": "shop", "base_ref": "HEAD", "head_ref": "HEAD"},
    "explain_search": {"question": "discount"},
    "list_repositories": {},
    "sync_index": {"name": "shop"},
}


def test_a_database_down_is_reported_per_call_and_picked_up_when_back(dsn, shop):
    """Started while its database is down, the server answers initialize and tools/list,
    and every tool call with an error saying so; once the database is up the same session's
    next call works, and so again after it went away and came back (no restart)."""
    with DatabaseSwitch(dsn) as database:

        async def run():
            out: dict = {}
            async with stdio_session(database.dsn, "acme", cwd=shop) as s:
                out["tools"] = {t.name for t in (await s.list_tools()).tools}
                out["down"] = {name: await s.call_tool(name, a) for name, a in TOOL_CALLS.items()}
                try:
                    await s.read_resource("codesift://repositories")
                except Exception as exc:  # noqa: BLE001 - a resource's error is the SDK's
                    out["resource"] = str(exc)
                database.up()
                out["up"] = await s.call_tool("find_symbol", {"name": "Cart.total"})
                out["repos"] = await s.call_tool("list_repositories", {})
                database.down()
                out["gone"] = await s.call_tool("find_symbol", {"name": "Cart.total"})
                database.up()
                out["back"] = await s.call_tool("find_symbol", {"name": "Cart.total"})
            return out

        out = asyncio.run(run())

    assert out["tools"] == set(TOOL_CALLS)
    said = f"port {database.port} failed: Connection refused): start it or check CODESIFT_DSN"
    for name, result in out["down"].items():
        assert result.is_error, name
        assert text_of(result).startswith("database unreachable ("), (name, text_of(result))
        assert text_of(result).endswith(said), (name, text_of(result))
    assert "database unreachable (" in out["resource"]
    for key in ("up", "back"):
        assert not out[key].is_error, (key, text_of(out[key]))
        assert out[key].structured_content["rows"][0]["path"] == "shop/cart.py"
    assert [r["repository"] for r in out["repos"].structured_content["rows"]] == ["shop"]
    assert out["gone"].is_error and text_of(out["gone"]).endswith(said), text_of(out["gone"])
