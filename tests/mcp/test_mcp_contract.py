"""What an agent relies on, through the MCP SDK's own client over stdio: one citation format
that every tool prints and every tool that takes a path takes back, related files named by
the kind of each edge, sync_index keeping the name a checkout is indexed under, and tool
schemas an agent can fill in without guessing (descriptions, enums, bounds, output schemas),
with one-line errors naming the argument to change."""

import asyncio
import re
import subprocess

import psycopg
import pytest
from codesift import version
from codesift.indexer import index_repository

from tests.conftest import write_files
from tests.mcp.harness import CODESIFT, shop_server, stdio_session, text_of
from tests.mcp.test_mcp_stdio import FILES

CITED = re.compile(r"\bshop:[^\s,()]+")
CITATION = re.compile(r"^shop:[^:\s]+(:\d+-\d+)?$")


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


# --- 1: sync_index keeps the repository's name ---------------------------------------------


def test_sync_index_keeps_the_name_the_checkout_is_indexed_under(dsn, make_repo):
    """Indexed as `flask` from a folder named otherwise, the checkout synced by an agent
    (sync_index with no arguments, from the checkout) is still one repository, `flask`:
    searches that name no repository do not see two copies."""
    root = make_repo({"src/app.py": "def route(path):\n    return path\n"}, name="flask-main")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="flask", tenant="acme", embed=False, show_progress=False)
    write_files(root, {"src/views.py": "def render(page):\n    return page\n"})
    synced, repos, found = _run(
        dsn,
        root,
        [
            ("sync_index", {}),
            ("list_repositories", {}),
            ("find_symbol", {"name": "route"}),
        ],
    )
    assert not synced.is_error, text_of(synced)
    assert synced.structured_content["rows"][0]["repository"] == "flask"
    assert {r["repository"] for r in repos.structured_content["rows"]} == {"flask"}
    assert [r["citation"] for r in found.structured_content["rows"]] == ["flask:src/app.py:1-2"]
    with psycopg.connect(dsn) as conn:
        names = conn.execute("select distinct name from codesift.repositories").fetchall()
    assert names == [("flask",)]


# --- 2: one citation format, printed and taken back -----------------------------------------


def test_every_printed_citation_is_a_path_every_tool_takes(shop):
    """Each citation a tool prints, in its text or its rows, has the one format and, given
    back as related_files' path or as a path_prefix, names its file."""
    out = shop.calls(
        [
            ("search_code", {"question": "how is the discount applied to the cart total?"}),
            ("find_symbol", {"name": "Cart.total"}),
            ("related_files", {"path": "shop/cart.py"}),
            ("explain_search", {"question": "discount", "repo": "shop"}),
        ],
    )
    printed: set[str] = set()
    for result in out:
        assert not result.is_error, text_of(result)
        printed.update(CITED.findall(text_of(result)))
        rows = result.structured_content["rows"]
        assert rows and all("citation" in r for r in rows)
        printed.update(r["citation"] for r in rows)
    assert printed and all(CITATION.match(c) for c in printed), printed
    # the pack's first line after the database's notes (a backlog: nothing is embedded here)
    search_text = "\n".join(
        line for line in text_of(out[0]).splitlines() if not line.startswith("note: ")
    ).lstrip("\n")
    assert search_text.startswith("# shop:") and "# shop/" not in search_text

    given = sorted(printed)
    files = sorted({c.split(":")[1] for c in given})
    calls = [("related_files", {"path": p}) for p in files + given]
    calls += [("find_symbol", {"name": "total", "path_prefix": c}) for c in given]
    results = iter(shop.calls(calls))
    related = {}
    for path in files + given:
        result = next(results)
        assert not result.is_error, (path, text_of(result))
        assert result.structured_content["notices"] == [], (path, text_of(result))
        related[path] = result.structured_content["rows"]
    for c in given:  # the citation names the same file as its path
        assert related[c] == related[c.split(":")[1]], c
    for c in given:
        result = next(results)
        assert not result.is_error, (c, text_of(result))
        assert all(r["path"] == c.split(":")[1] for r in result.structured_content["rows"]), c


@pytest.mark.parametrize(
    "form",
    [
        "shop:shop/cart.py",
        "shop:shop/cart.py:13-15",
        "shop/shop/cart.py",  # search_code's headers before: accepted still
        "shop/cart.py",
        "shop/cart.py:13",
    ],
)
def test_every_citation_form_names_the_file(shop, form):
    related, search, symbol = shop.calls(
        [
            ("related_files", {"path": form}),
            ("search_code", {"question": "total", "path_prefix": form}),
            ("find_symbol", {"name": "total", "path_prefix": form}),
        ],
    )
    for result in (related, search, symbol):
        assert not result.is_error, (form, text_of(result))
    assert {r["related_path"] for r in related.structured_content["rows"]} >= {
        "shop/pricing.py",
        "tests/test_cart.py",
    }
    # the search legs look under the prefix only (the graph may add its neighbours after)
    assert search.structured_content["rows"][0]["path"] == "shop/cart.py"
    assert [r["citation"] for r in symbol.structured_content["rows"]] == ["shop:shop/cart.py:13-15"]


def test_an_unknown_path_suggests_files_not_the_call_that_failed(shop):
    (result,) = shop.calls([("related_files", {"path": "shop:shop/carts.py"})])
    text = text_of(result)
    assert not result.is_error and result.structured_content["rows"] == []
    assert "shop:shop/cart.py" in text
    assert "cite" not in text  # never: pass the path as results cite it


# --- 3: related files named by the kind of each edge ---------------------------------------


def test_related_files_names_each_edge_by_its_kind(shop):
    """tests/test_cart.py imports shop/cart.py and tests it (named so): two edges, each
    named by its kind, never a test edge called an import."""
    (result,) = shop.calls([("related_files", {"path": "shop:shop/cart.py"})])
    rows = result.structured_content["rows"]
    kinds = {(r["related_path"], r["relation"]) for r in rows}
    assert ("tests/test_cart.py", "tested by") in kinds
    assert ("tests/test_cart.py", "imported by") in kinds
    assert ("shop/pricing.py", "imports") in kinds
    lines = text_of(result).splitlines()
    assert any(line.startswith("shop:tests/test_cart.py  tested by") for line in lines), lines
    for r in rows:
        if r["edge_kind"] == "tests":
            assert r["relation"] in ("tests", "tested by")


def test_explain_search_says_what_the_question_names_and_where_its_traceback_failed(shop):
    """A bug report's traceback ran through cart.py into pricing.py: explain_search ranks both
    as named, and marks pricing.py and apply_discount, its innermost frame, with `!`."""
    report = (
        "The cart total is wrong when a discount applies\n\n"
        + "Adding three items and asking for the total fails on every cart we build. " * 4
        + "\n\nTraceback (most recent call last):\n"
        '  File "/app/tests/test_cart.py", line 7, in test_total_applies_discount\n'
        '  File "/venv/site-packages/shop/cart.py", line 12, in total\n'
        '  File "/venv/site-packages/shop/pricing.py", line 6, in apply_discount\n'
        "TypeError: '>' not supported between instances of 'str' and 'int'\n"
    )
    (result,) = shop.calls([("explain_search", {"question": report, "repo": "shop"})])
    rows = result.structured_content["rows"]
    failing = {(r["path"], r["symbol"]) for r in rows if r["failing"]}
    assert failing == {("shop/pricing.py", None), ("shop/pricing.py", "apply_discount")}
    assert all(r["named"] for r in rows if r["failing"])
    assert any(r["named"] and r["path"] == "shop/cart.py" for r in rows)
    lines = text_of(result).splitlines()
    assert "# candidate  citation  symbol  lex dense named hop  score  decision" in lines
    assert any(
        "shop:shop/pricing.py" in line and "apply_discount" in line and "!" in line
        for line in lines
    ), lines


# --- 9: schemas, server info and errors -------------------------------------------------------


def test_tools_list_describes_bounds_and_enumerates_every_parameter(shop):
    tools = {t.name: t for t in shop.run(shop.session.list_tools()).tools}
    for name, tool in tools.items():
        assert tool.title, name
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert len(schema.get("description", "")) > 20, (name, param)
        output = tool.output_schema
        assert output is not None and {"rows", "notices"} <= set(output["properties"]), name

    def enum(schema):
        return next(s["enum"] for s in schema.get("anyOf", [schema]) if "enum" in s)

    search = tools["search_code"].input_schema["properties"]
    assert "python" in enum(search["language"]) and "typescript" in enum(search["language"])
    assert (search["token_budget"]["minimum"], search["token_budget"]["maximum"]) == (1, 25_000)
    kinds = enum(tools["find_symbol"].input_schema["properties"]["kind"])
    assert {"function", "method", "class", "section"} <= set(kinds)
    search_rows = tools["search_code"].output_schema["$defs"]["SearchRow"]
    assert "citation" in search_rows["properties"] and "rank" in search_rows["required"]


def test_initialize_reports_the_version_and_no_prompts(shop):
    init = shop.session.initialize_result
    assert init.server_info.version == version() != ""
    assert init.capabilities.prompts is None
    assert init.capabilities.tools is not None and init.capabilities.resources is not None


def test_codesift_version():
    out = subprocess.run([CODESIFT, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"codesift {version()}"


def test_a_language_in_any_case_or_an_alias_is_the_language(shop):
    results = shop.calls(
        [
            ("search_code", {"question": "discount", "language": lang})
            for lang in ("python", "Python", "PY")
        ]
        + [("find_symbol", {"name": "Cart", "kind": "Class"})],
    )
    paths = [{r["path"] for r in res.structured_content["rows"]} for res in results[:3]]
    assert paths[0] and "README.md" not in paths[0]
    assert paths[1] == paths[0] and paths[2] == paths[0]
    assert [r["symbol"] for r in results[3].structured_content["rows"]] == ["Cart"]


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        (
            "search_code",
            {"question": "x", "token_budget": 99_999},
            "token_budget must be at most 25,000 (got 99999)",
        ),
        ("search_code", {"question": "x", "token_budget": 0}, "token_budget must be at least 1"),
        ("search_code", {"question": ""}, "question must not be empty"),
        ("search_code", {}, "question is required"),
        ("search_code", {"question": "x", "language": "cobol"}, "language must be one of"),
        ("find_symbol", {"name": "x", "kind": "widget"}, "kind must be one of"),
        ("related_files", {"path": "x", "depth": "deep"}, "depth must be a whole number"),
        ("related_files", {"path": "x" * 5000}, "path is 5,000 characters; at most 4,096"),
        ("related_files", {"path": "a\x00b"}, "path holds a NUL character"),
        ("related_files", {"path": "x", "repo": "nope"}, "unknown repository 'nope'"),
        ("related_files", {"path": "../etc/passwd"}, "goes up a folder"),
        ("search_code", {"question": "x", "path_prefix": "/etc"}, "path_prefix '/etc' is absolute"),
    ],
)
def test_a_bad_argument_is_one_clean_line_naming_it(shop, tool, args, message):
    (result,) = shop.calls([(tool, args)])
    text = text_of(result)
    assert result.is_error, text
    assert message in text, text
    assert "\n" not in text
    for noise in ("plpy.", "validation error", "pydantic", "Error executing tool", "Traceback"):
        assert noise not in text, text
