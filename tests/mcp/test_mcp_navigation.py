"""outline, repo_map, find_references, callers and callees through the MCP SDK's own client
over stdio, on a real indexed repository: each answers with citations in the one format, in
its text and its rows, and each citation it prints is taken back by the others (a use's
citation names the file to outline, a caller's the definition whose callees to list, an
outline row's the definition whose references to find); the text and the rows are cut
together at the token budget."""

import asyncio
import re

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift_db.tokens import estimate_tokens

from tests.mcp.harness import shop_server, stdio_session, text_of
from tests.mcp.test_mcp_stdio import FILES

CITED = re.compile(r"\bshop:[^\s,()]+")
CITATION = re.compile(r"^shop:[^:\s]+(:\d+-\d+)?$")
NEW_TOOLS = ("outline", "repo_map", "find_references", "callers", "callees")


@pytest.fixture(scope="module")
def shop(snapshots, tmp_path_factory):
    """One stdio server for acme in the shop checkout, which the tests that only read call
    in turn."""
    with shop_server(snapshots, tmp_path_factory, {"shop": ("acme", FILES)}) as server:
        yield server


def _run(dsn, cwd, calls):
    """[(tool, arguments)] called in one session, their results in order."""

    async def run():
        async with stdio_session(dsn, "acme", cwd=cwd) as s:
            return [await s.call_tool(tool, args) for tool, args in calls]

    return asyncio.run(run())


def _ok(result):
    assert not result.is_error, text_of(result)
    return result.structured_content["rows"]


def _cited(result) -> set[str]:
    """Every citation the result prints, in its text and in its rows' `citation` and
    `definition`."""
    found = set(CITED.findall(text_of(result)))
    for row in result.structured_content["rows"]:
        found.update(v for k, v in row.items() if k in ("citation", "definition") and v)
    return found


def test_each_new_tool_answers_with_citations(shop):
    outline, repo_map, refs, callers, callees = shop.calls(
        [
            ("outline", {"path": "shop/cart.py"}),
            ("repo_map", {"repo": "shop"}),
            ("find_references", {"name": "apply_discount"}),
            ("callers", {"symbol": "apply_discount"}),
            ("callees", {"symbol": "Cart.total"}),
        ],
    )
    rows = _ok(outline)
    assert [(r["qualified_name"], r["depth"], r["citation"]) for r in rows] == [
        ("Cart", 0, "shop:shop/cart.py:4-15"),
        ("Cart.__init__", 1, "shop:shop/cart.py:7-8"),
        ("Cart.add_item", 1, "shop:shop/cart.py:10-11"),
        ("Cart.total", 1, "shop:shop/cart.py:13-15"),
    ]
    text = text_of(outline).splitlines()
    assert text[0] == "shop:shop/cart.py"
    assert "class Cart:" in text[1] and "A shopping cart" in text[1]
    assert text[4].strip() == "13-15    def total(self, prices):"

    rows = _ok(repo_map)
    assert {r["citation"] for r in rows} == {
        "shop:shop/pricing.py",
        "shop:shop/cart.py",
        "shop:tests/test_cart.py",
        "shop:README.md",
    }
    assert rows[0]["path"] == "shop/pricing.py"  # what the others import ranks first
    blocks = text_of(repo_map).split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == [r["citation"] for r in rows]
    assert sum(r["tokens"] for r in rows) <= 4000

    rows = _ok(refs)
    assert [(r["citation"], r["symbol"], r["is_call"], r["resolution"]) for r in rows] == [
        ("shop:shop/cart.py:1-1", None, False, "resolved"),
        ("shop:shop/cart.py:15-15", "Cart.total", True, "resolved"),
    ]
    assert {r["definition"] for r in rows} == {"shop:shop/pricing.py:4-6"}
    assert "shop:shop/cart.py:15-15  Cart.total: return apply_discount(subtotal)" in (text_of(refs))

    rows = _ok(callers)
    assert [(r["citation"], r["caller"], r["lines"]) for r in rows] == [
        ("shop:shop/cart.py:13-15", "Cart.total", [15])
    ]
    assert text_of(callers) == "shop:shop/cart.py:13-15  Cart.total calls it at line 15"

    rows = _ok(callees)
    called = {r["callee"]: r for r in rows}
    assert called["apply_discount"]["definition"] == "shop:shop/pricing.py:4-6"
    assert called["apply_discount"]["citation"] == "shop:shop/cart.py:15-15"
    assert "apply_discount  line 15  -> shop:shop/pricing.py:4-6" in text_of(callees)

    for result in (outline, repo_map, refs, callers, callees):
        printed = _cited(result)
        assert printed and all(CITATION.match(c) for c in printed), printed


def test_citations_round_trip_between_the_tools(shop):
    """What one tool cites, another takes back: a use's citation as outline's path names
    its file; a caller's citation as callees' symbol names that caller; an outline row's
    citation as find_references' name and callers' symbol names that definition; a file of
    the map as outline's path and as repo_map's path_prefix; find_symbol's citation as
    find_references' name."""
    refs, symbol, pricing = shop.calls(
        [
            ("find_references", {"name": "apply_discount"}),
            ("find_symbol", {"name": "Cart"}),
            ("outline", {"path": "shop:shop/pricing.py"}),
        ],
    )
    use = _ok(refs)[1]["citation"]  # shop:shop/cart.py:15-15
    cart = _ok(symbol)[0]["citation"]  # shop:shop/cart.py:4-15
    definition = _ok(pricing)[0]["citation"]  # shop:shop/pricing.py:4-6
    outlined, callers_of_def, refs_of_def, refs_of_cart, file_map, folder_map = shop.calls(
        [
            ("outline", {"path": use}),
            ("callers", {"symbol": definition}),
            ("find_references", {"name": definition}),
            ("find_references", {"name": cart}),
            ("outline", {"path": "shop:tests/test_cart.py"}),
            ("repo_map", {"path_prefix": "shop:tests/"}),
        ],
    )
    assert {r["path"] for r in _ok(outlined)} == {"shop/cart.py"}
    assert [r["citation"] for r in _ok(refs_of_def)] == [r["citation"] for r in _ok(refs)]
    caller = _ok(callers_of_def)[0]["citation"]
    assert caller == "shop:shop/cart.py:13-15"
    assert [r["definition"] for r in _ok(refs_of_cart)] == [cart, cart]
    assert [r["qualified_name"] for r in _ok(file_map)] == ["test_total_applies_discount"]
    assert [r["citation"] for r in _ok(folder_map)] == ["shop:tests/test_cart.py"]

    (callees_of_caller, by_line) = shop.calls(
        [
            ("callees", {"symbol": caller}),
            ("callees", {"symbol": "shop:shop/cart.py:15"}),  # a line inside it
        ],
    )
    names = {r["callee"] for r in _ok(callees_of_caller)}
    assert "apply_discount" in names
    assert _ok(by_line) == _ok(callees_of_caller)


def test_text_and_rows_are_cut_together_at_the_token_budget(dsn, make_repo):
    """Many uses under a small budget: the text stays within it, the rows are those the
    text shows, and its last line says how many were cut."""
    calls = "".join(f"    helper({i})\n" for i in range(300))
    root = make_repo(
        {
            "pkg/util.py": "def helper(n):\n    return n\n",
            "pkg/main.py": f"from pkg.util import helper\n\n\ndef run():\n{calls}",
        },
        name="many",
    )
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="many", tenant="acme", embed=False, show_progress=False)
    small, full, rows_capped = _run(
        dsn,
        root,
        [
            ("find_references", {"name": "helper", "token_budget": 300, "max_rows": 1000}),
            ("find_references", {"name": "helper", "token_budget": 25_000, "max_rows": 1000}),
            ("find_references", {"name": "helper", "max_rows": 5, "token_budget": 25_000}),
        ],
    )
    assert len(_ok(full)) == 301  # the import and the 300 calls
    rows = _ok(small)
    lines = text_of(small).splitlines()
    assert small.structured_content["notices"] == []
    assert 0 < len(rows) < 301
    assert [line.split()[0] for line in lines[:-1]] == [r["citation"] for r in rows]
    assert lines[-1].startswith(f"... ({301 - len(rows)} more uses cut at the token budget")
    assert estimate_tokens("\n".join(lines[:-1])) <= 300
    assert len(_ok(rows_capped)) == 5


def test_the_new_tools_are_read_only_with_bounded_parameters(shop):
    tools = {t.name: t for t in shop.run(shop.session.list_tools()).tools}
    for name in NEW_TOOLS:
        tool = tools[name]
        assert tool.title and len(tool.description) > 80, name
        assert tool.annotations.read_only_hint is True, name
        props = tool.input_schema["properties"]
        assert (props["token_budget"]["minimum"], props["token_budget"]["maximum"]) == (1, 25_000)
        row = next(iter(tool.output_schema["$defs"].values()))
        assert "citation" in row["properties"], name
    for name in ("find_references", "callers", "callees"):
        rows = tools[name].input_schema["properties"]["max_rows"]
        assert (rows["minimum"], rows["maximum"]) == (1, 1000), name


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("outline", {"path": "shop/carts.py"}, "no live file 'shop/carts.py'"),
        ("outline", {}, "path is required"),
        ("repo_map", {"token_budget": 25_001}, "token_budget must be at most 25,000"),
        ("find_references", {"name": ""}, "name must not be empty"),
        ("callers", {"symbol": "Cart.total", "max_rows": 1001}, "max_rows must be at most 1,000"),
        ("callees", {"symbol": "Cart.total", "ref": "nope"}, "no indexed ref 'nope'"),
        ("outline", {"path": "shop/cart.py", "repo": "nope"}, "unknown repository 'nope'"),
    ],
)
def test_a_bad_argument_is_one_clean_line(shop, tool, args, message):
    (result,) = shop.calls([(tool, args)])
    text = text_of(result)
    assert result.is_error, text
    assert message in text, text
    assert "\n" not in text
    for noise in ("plpy.", "validation error", "pydantic", "Error executing tool", "Traceback"):
        assert noise not in text, text
