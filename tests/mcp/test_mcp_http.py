"""`codesift mcp --http`: Streamable HTTP on loopback with bearer tokens. Two tenants with
the same repository name each see only their own code, also under many interleaved
concurrent requests on one connection pool; neither learns where a checkout lies on the
machine that indexed it."""

import asyncio
import json

import psycopg
import pytest
from codesift.indexer import index_repository
from codesift.mcp_tokens import create_token

from tests.conftest import commit, git, write_files
from tests.mcp.harness import http_server, http_session, text_of
from tests.security.two_tenants import index_two_tenants


@pytest.fixture
def two(dsn, make_repo):
    tenants = index_two_tenants(dsn, make_repo)
    tokens = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        for name in tenants:
            tokens[name] = create_token(conn, name, label=f"{name} test")[1]
    return tenants, tokens


def foreign(tenant: str) -> str:
    return "globex" if tenant == "acme" else "acme"


def test_each_token_sees_only_its_tenant(dsn, two):
    _, tokens = two

    async def run(url):
        out = {}
        for name, token in tokens.items():
            async with http_session(url, token) as s:
                tools = {t.name for t in (await s.list_tools()).tools}
                search = await s.call_tool(
                    "search_code", {"question": "token vault marker zebra", "repo": "shared"}
                )
                mine = await s.call_tool("find_symbol", {"name": f"{name}_token_vault"})
                theirs = await s.call_tool("find_symbol", {"name": f"{foreign(name)}_token_vault"})
                related = await s.call_tool(
                    "related_files", {"path": "app/redirects.py", "repo": "shared"}
                )
                repos = await s.call_tool("list_repositories", {})
                out[name] = (tools, search, mine, theirs, related, repos)
        return out

    with http_server(dsn) as url:
        out = asyncio.run(run(url))
    for name, (tools, search, mine, theirs, related, repos) in out.items():
        other = foreign(name)
        assert "sync_index" not in tools
        paths = {r["path"] for r in search.structured_content["rows"]}
        assert f"app/secret_{name}.py" in paths
        assert not any(other in p for p in paths)
        assert other not in text_of(search)
        assert mine.structured_content["rows"][0]["path"] == f"app/secret_{name}.py"
        assert theirs.structured_content["rows"] == []
        nearest = text_of(theirs).split("nearest names:")[-1]
        assert other not in nearest  # not even among the nearest names
        related_paths = {r["related_path"] for r in related.structured_content["rows"]}
        assert f"app/secret_{name}.py" in related_paths
        assert not any(other in p for p in related_paths)
        assert [r["repository"] for r in repos.structured_content["rows"]] == ["shared"]


def test_interleaved_concurrent_requests_never_cross(dsn, two):
    """Two tenants, 60 concurrent calls each, on a pool of 3 connections: every answer
    holds its own tenant's files and none of the other's."""
    _, tokens = two
    calls = 60

    async def one(session, name, i):
        if i % 3 == 0:
            r = await session.call_tool("search_code", {"question": "token vault zebra marker"})
            return name, [row["path"] for row in r.structured_content["rows"]], text_of(r)
        if i % 3 == 1:
            r = await session.call_tool("find_symbol", {"name": f"{name}_token_vault"})
            return name, [row["path"] for row in r.structured_content["rows"]], text_of(r)
        r = await session.call_tool("related_files", {"path": "app/redirects.py"})
        return name, [row["related_path"] for row in r.structured_content["rows"]], text_of(r)

    async def run(url):
        async with http_session(url, tokens["acme"]) as a, http_session(url, tokens["globex"]) as g:
            sessions = {"acme": a, "globex": g}
            jobs = [one(sessions[n], n, i) for i in range(calls) for n in ("acme", "globex")]
            return await asyncio.gather(*jobs)

    with http_server(dsn, pool_size=3) as url:
        results = asyncio.run(run(url))
    assert len(results) == 2 * calls
    foreign_paths = [(name, p) for name, paths, _ in results for p in paths if foreign(name) in p]
    assert foreign_paths == []
    foreign_text = [name for name, _, text in results if f"{foreign(name)}zebra" in text]
    assert foreign_text == []
    # every answer had its own tenant's secret file (the answers are real, not empty)
    own = [name for name, paths, _ in results if f"app/secret_{name}.py" in paths]
    assert len(own) == 2 * calls


def test_another_tenants_ref_is_unknown_and_hostile_refs_fail_cleanly(dsn, two):
    tenants, tokens = two
    globex = tenants["globex"]
    git(globex.root, "checkout", "-q", "-b", "globex-only")
    write_files(globex.root, {"app/branch_only.py": "def branch_only_marker():\n    return 1\n"})
    commit(globex.root, "a branch only globex has")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        index_repository(
            conn,
            globex.root,
            name="shared",
            tenant="globex",
            ref="globex-only",
            embed=False,
            show_progress=False,
        )
    asks = {
        "foreign": "globex-only",
        "long": "r" * 100_000,
        "quote": "HEAD' or '1'='1",
        "nul": "HEAD\x00",
    }

    async def run(url):
        out = {}
        async with http_session(url, tokens["acme"]) as s:
            for key, ref in asks.items():
                out[key] = await s.call_tool(
                    "search_code", {"question": "branch_only_marker", "repo": "shared", "ref": ref}
                )
        async with http_session(url, tokens["globex"]) as s:
            out["own"] = await s.call_tool(
                "search_code",
                {"question": "branch_only_marker", "repo": "shared", "ref": "globex-only"},
            )
        return out

    with http_server(dsn) as url:
        out = asyncio.run(run(url))
    for key in asks:
        assert out[key].is_error, key
        said = text_of(out[key])
        assert "branch_only" not in said and "globex" not in said.replace("globex-only", ""), key
        assert len(said) < 2_000, key
    # acme hears of its own refs only
    said = text_of(out["foreign"])
    assert "has no indexed ref" in said and "indexed refs: HEAD" in said
    assert "globex-only" not in said.split("indexed refs:")[1]
    own = out["own"]
    assert not own.is_error, text_of(own)
    assert {r["ref"] for r in own.structured_content["rows"]} == {"globex-only"}
    assert "app/branch_only.py" in {r["path"] for r in own.structured_content["rows"]}


def test_list_repositories_over_http_shows_no_checkout_path(dsn, two):
    """A repository's checkout_path is the absolute path of the checkout on the machine that
    indexed it: a token holder learns it from neither the tool nor the resources (the stdio
    server's user does: test_mcp_stdio)."""
    _, tokens = two
    with psycopg.connect(dsn) as conn:
        paths = [r[0] for r in conn.execute("select checkout_path from codesift.repositories")]
    assert paths and all(o.startswith("/") for o in paths)  # what must not be sent

    async def run(url):
        async with http_session(url, tokens["acme"]) as s:
            tool = await s.call_tool("list_repositories", {})
            every = await s.read_resource("codesift://repositories")
            one = await s.read_resource("codesift://repositories/shared")
            return tool, every.contents[0].text, one.contents[0].text

    with http_server(dsn) as url:
        tool, every, one = asyncio.run(run(url))
    assert not tool.is_error, text_of(tool)
    rows = tool.structured_content["rows"]
    assert [(r["repository"], r["checkout_path"]) for r in rows] == [("shared", None)]
    assert [r["checkout_path"] for r in json.loads(every)] == [None]
    assert json.loads(one)["checkout_path"] is None
    said = text_of(tool) + json.dumps(tool.structured_content) + every + one
    for path in paths:
        assert path not in said
    # no absolute path at all: no JSON string value starts with '/'
    assert '"/' not in json.dumps(tool.structured_content) + every + one
