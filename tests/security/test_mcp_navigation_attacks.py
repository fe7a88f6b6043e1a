"""Attacks on the MCP tools outline, repo_map, find_references, callers and callees: over
HTTP with two tenants' tokens, neither reaches anything of the other's repository of the
same name (not by name, by citation, by path or in a map); hostile paths and names fail
with one clean line that never echoes a control character raw; budgets and row counts
past their bounds are refused, not served cut."""

import asyncio

import psycopg
import pytest
from codesift.mcp_tokens import create_token
from codesift.mcp_tools import MAX_BUDGET

from tests.mcp.harness import http_server, http_session, shop_server, text_of
from tests.mcp.test_mcp_stdio import FILES
from tests.security.two_tenants import index_two_tenants

NOISE = ("plpy.", "validation error", "pydantic", "Error executing tool", "Traceback")
CONTROL = ("\x00", "\x1b", "\x07", "\x85", "\x9b")


@pytest.fixture
def two(dsn, make_repo):
    tenants = index_two_tenants(dsn, make_repo)
    tokens = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        for name in tenants:
            tokens[name] = create_token(conn, name)[1]
    return tenants, tokens


@pytest.fixture(scope="module")
def shop(snapshots, tmp_path_factory):
    """One stdio server for acme in the shop checkout, which these tests call in turn (they
    only read; the server outlives every hostile call)."""
    with shop_server(snapshots, tmp_path_factory, {"shop": ("acme", FILES)}) as server:
        yield server


def _clean(result, limit=1_000) -> str:
    text = text_of(result)
    assert 0 < len(text) < limit, text[:300]
    for noise in NOISE:
        assert noise not in text, text
    assert not any(c in text for c in CONTROL), text
    if result.is_error:
        assert "\n" not in text, text  # one line
    else:
        assert not any(c in n for n in result.structured_content["notices"] for c in CONTROL)
    return text


# --- another tenant, over HTTP --------------------------------------------------------------


def test_another_tenants_code_is_invisible_with_each_token(dsn, two):
    """acme and globex both index 'shared', each with a secret file calling
    follow_redirects. With each token: its own secret is found, mapped, outlined and listed
    among the callers; the other's, named by its definition, its citation or its path, is
    what a name nobody uses is, and never appears in any text or row."""
    _, tokens = two

    def calls(other):
        secret = f"app/secret_{other}.py"
        return [
            ("callers", {"symbol": "follow_redirects", "repo": "shared"}),
            ("find_references", {"name": "follow_redirects"}),
            ("repo_map", {"repo": "shared"}),
            ("repo_map", {"path_prefix": "shared:app/"}),
            ("find_references", {"name": f"{other}_token_vault"}),
            ("callees", {"symbol": f"{other}_token_vault"}),
            ("callers", {"symbol": f"shared:{secret}:4"}),
            ("callees", {"symbol": f"shared:{secret}:4-6"}),
            ("find_references", {"name": "follow_redirects", "path": f"shared:{secret}"}),
            ("outline", {"path": f"shared:{secret}"}),
            ("outline", {"path": secret, "repo": "shared"}),
            ("outline", {"path": "shared:app/secret_nobody.py"}),
        ]

    async def run(url):
        out = {}
        for name, token in tokens.items():
            other = "globex" if name == "acme" else "acme"
            async with http_session(url, token) as s:
                out[name] = [await s.call_tool(t, a) for t, a in calls(other)]
        return out

    with http_server(dsn) as url:
        out = asyncio.run(run(url))
    for name, results in out.items():
        other = "globex" if name == "acme" else "acme"
        (callers, refs, repo_map, folder_map, *foreign, outline_cited, outline_path, nobody) = (
            results
        )
        asked = [a for _, a in calls(other)]
        for result, args in zip(results, asked, strict=True):
            said = text_of(result)
            for value in args.values():  # what was asked may be quoted back, nothing else
                said = said.replace(value, "")
            assert other not in said, (args, said)
            for row in (result.structured_content or {}).get("rows", []):
                assert other not in str(row), (args, row)
        assert {r["caller"] for r in callers.structured_content["rows"]} == {
            "open_session",
            f"{name}_token_vault",
        }
        assert any(
            r["citation"].startswith(f"shared:app/secret_{name}.py:")
            for r in refs.structured_content["rows"]
        )
        for mapped in (repo_map, folder_map):
            assert f"shared:app/secret_{name}.py" in {
                r["citation"] for r in mapped.structured_content["rows"]
            }
        for result in foreign:
            assert result.is_error or result.structured_content["rows"] == [], text_of(result)
        # the other's file is an unknown file, as a name nobody uses is
        for result in (outline_cited, outline_path, nobody):
            assert result.is_error
            assert "no live file" in text_of(result)


# --- hostile paths and names ---------------------------------------------------------------

REFUSED_PATHS = [
    "../../etc/passwd",
    "/etc/passwd",
    "shop:../../etc/passwd",
    "shop:/etc/passwd",
    "C:\\Windows\\system.ini",
    "shop/cart.py\x00.txt",
    "a/" * 5_120,  # 10 KB
]


def _path_calls(value):
    return [
        ("outline", {"path": value}),
        ("repo_map", {"path_prefix": value}),
        ("find_references", {"name": "Cart", "path": value}),
        ("callers", {"symbol": "apply_discount", "path": value}),
        ("callees", {"symbol": "total", "path": value}),
    ]


@pytest.mark.parametrize("value", REFUSED_PATHS, ids=lambda v: repr(v[:24]))
def test_hostile_paths_fail_with_one_clean_line(shop, value):
    for (tool, _), result in zip(_path_calls(value), shop.calls(_path_calls(value)), strict=True):
        assert result.is_error, (tool, text_of(result)[:200])
        _clean(result)


@pytest.mark.parametrize(
    "value", ["shop/\x1b[31mcart.py", "shop:shop/cart.py\x1b]0;owned\x07", "shop:shop/\x85\x9b"]
)
def test_control_characters_are_never_echoed_raw(shop, value):
    """A path with control characters names no file (the loader stores none): nothing is
    found, and a message quoting it shows them as escapes."""
    for (tool, _), result in zip(_path_calls(value), shop.calls(_path_calls(value)), strict=True):
        text = _clean(result)
        if not result.is_error:
            assert result.structured_content["rows"] == [], (tool, text)


HOSTILE_NAMES = [
    "%",
    "_",
    "*",
    ".*",
    "Cart' or '1'='1",
    "Cart; drop table codesift.blobs",
    "Cart\x1b[2J",
    "shop:shop/cart.py:99999999999999999999",
    "shop:shop/cart.py:-1",
    "shop:../../etc/passwd:1",
    "\u202etotal",
    "n" * 4_000,
]


@pytest.mark.parametrize("value", HOSTILE_NAMES, ids=lambda v: repr(v[:24]))
def test_hostile_names_find_nothing_or_fail_cleanly(shop, value):
    calls = [
        ("find_references", {"name": value}),
        ("callers", {"symbol": value}),
        ("callees", {"symbol": value}),
    ]
    for (tool, _), result in zip(calls, shop.calls(calls), strict=True):
        text = _clean(result, limit=6_000)
        if not result.is_error:
            assert result.structured_content["rows"] == [], (tool, text)


# --- sizes ----------------------------------------------------------------------------------


def test_huge_budgets_and_row_counts_are_refused_over_http(dsn, two):
    _, tokens = two
    big = MAX_BUDGET + 1
    refused = [
        ("outline", {"path": "app/session.py", "token_budget": big}),
        ("repo_map", {"token_budget": big}),
        ("repo_map", {"token_budget": 200_000}),  # what the SQL function would take
        ("repo_map", {"token_budget": 0}),
        ("repo_map", {"token_budget": 10**12}),
        ("find_references", {"name": "follow_redirects", "token_budget": big}),
        ("find_references", {"name": "follow_redirects", "max_rows": 1001}),
        ("find_references", {"name": "follow_redirects", "max_rows": 10**9}),
        ("callers", {"symbol": "follow_redirects", "max_rows": 0}),
        ("callers", {"symbol": "follow_redirects", "max_rows": -1}),
        ("callees", {"symbol": "open_session", "max_rows": 10**6}),
        ("callees", {"symbol": "open_session", "token_budget": -5}),
        ("find_references", {"name": "n" * 100_000}),
        ("callers", {"symbol": "s" * 100_000}),
        ("outline", {"path": "a/" * 300_000}),
        ("repo_map", {"path_prefix": "a/" * 300_000}),
    ]

    async def run(url):
        async with http_session(url, tokens["acme"]) as s:
            out = [await s.call_tool(name, args) for name, args in refused]
            ok = [
                await s.call_tool("repo_map", {"token_budget": MAX_BUDGET}),
                await s.call_tool(
                    "find_references",
                    {"name": "follow_redirects", "max_rows": 1000, "token_budget": MAX_BUDGET},
                ),
            ]
            return out, ok

    with http_server(dsn) as url:
        out, ok = asyncio.run(run(url))
    for (name, args), r in zip(refused, out, strict=True):
        assert r.is_error, (name, {k: str(v)[:40] for k, v in args.items()})
        text = _clean(r)  # the refusal does not echo a huge input back
        assert "must be" in text or "characters; at most" in text, text
    for r in ok:
        assert not r.is_error, text_of(r)
        assert r.structured_content["rows"]
