"""impact and diff_context through the MCP SDK's own client over stdio, on a real repository
indexed at two refs (tests/db/change_repos.py): each answers with citations in the one
format, in its text and its rows, a citation it prints is taken back (an impact row names
the next target), the text stays under the token budget, and bad arguments (another
tenant's ref, absurd depths and budgets, a 10 MB diff, paths leaving the repository) are
one clean line."""

import asyncio
import json
import re

import pytest
from codesift_db.tokens import estimate_tokens

from tests.db.change_repos import index_change_repos
from tests.mcp.harness import shared_stdio_server, stdio_session, text_of

CITATION = re.compile(r"^py:[^:\s]+(:\d+-\d+)?$")


@pytest.fixture
def change(db, dsn, make_repo, snapshots):
    return snapshots.load("change", index_change_repos, dsn, make_repo)


@pytest.fixture(scope="module")
def t1(snapshots, tmp_path_factory):
    """One stdio server for t1 over the change repositories, which the tests that only
    read call in turn."""
    folder = tmp_path_factory.mktemp("change")
    with shared_stdio_server(snapshots, folder, "change", index_change_repos, "t1") as s:
        yield s


def _run(dsn, calls, tenant):
    async def run():
        async with stdio_session(dsn, tenant) as s:
            return [await s.call_tool(tool, args) for tool, args in calls]

    return asyncio.run(run())


def _ok(result):
    assert not result.is_error, text_of(result)
    return result.structured_content["rows"]


def test_impact_and_diff_context_answer_with_citations(t1):
    impact, context, from_diff = t1.calls(
        [
            ("impact", {"target": "send_request", "repo": "py", "ref": "head"}),
            ("diff_context", {"repo": "py", "base_ref": "base", "head_ref": "head"}),
            ("diff_context", {"repo": "py", "diff": t1.indexed["diff"], "token_budget": 500}),
        ],
    )
    rows = _ok(impact)
    assert all(CITATION.match(r["citation"]) for r in rows)
    assert rows[0]["relation"] == "calls" and rows[0]["citation"] == "py:pkg/client.py:6-7"
    lines = text_of(impact).splitlines()
    assert lines[0].startswith("py:pkg/client.py:6-7") and "calls (1 hop)" in lines[0]
    assert any("[test]" in line for line in lines)

    rows = _ok(context)
    assert [r["role"] for r in rows][:3] == ["change", "change", "change"]
    assert {r["symbol"] for r in rows if r["role"] == "caller"} == {"Client.get"}
    text = text_of(context)
    for r in rows:
        assert CITATION.match(r["citation"])
        assert f"# {r['citation']}" in text
    assert "text" not in rows[0]  # the text is the content, not repeated in the rows

    rows = _ok(from_diff)
    assert rows[0]["role"] == "hunk"
    assert estimate_tokens(text_of(from_diff)) <= 500


def test_a_citation_printed_by_impact_is_taken_back(t1):
    (first,) = t1.calls([("impact", {"target": "encode", "ref": "head", "depth": 1})])
    cited = next(r["citation"] for r in _ok(first) if r["symbol"] == "send_request")
    (second,) = t1.calls([("impact", {"target": cited, "ref": "head", "depth": 1})])
    assert "py:pkg/client.py:6-7" in {r["citation"] for r in _ok(second)}


def test_the_tools_are_read_only_with_bounded_parameters(t1):
    tools = {t.name: t for t in t1.run(t1.session.list_tools()).tools}
    for name in ("impact", "diff_context"):
        tool = tools[name]
        assert tool.title and len(tool.description) > 80, name
        assert tool.annotations.read_only_hint is True, name
        props = tool.input_schema["properties"]
        assert (props["token_budget"]["minimum"], props["token_budget"]["maximum"]) == (1, 25_000)
        row = next(iter(tool.output_schema["$defs"].values()))
        assert "citation" in row["properties"], name
    depth = tools["impact"].input_schema["properties"]["depth"]
    assert (depth["minimum"], depth["maximum"]) == (1, 4)
    assert '"maxLength": 5000000' in json.dumps(tools["diff_context"].input_schema)


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("impact", {"target": "encode", "depth": 10**9}, "depth must be at most 4"),
        ("impact", {"target": "encode", "depth": 0}, "depth must be at least 1"),
        ("impact", {"target": "../../etc/passwd"}, "goes up a folder"),
        ("impact", {"target": "encode", "ref": "nope"}, "no indexed ref 'nope'"),
        (
            "diff_context",
            {"repo": "py", "base_ref": "base", "head_ref": "head", "token_budget": -5},
            "token_budget must be at least 1",
        ),
        (
            "diff_context",
            {"repo": "py", "base_ref": "base", "head_ref": "head", "token_budget": 10**9},
            "token_budget must be at most 25,000",
        ),
        ("diff_context", {"repo": "py", "base_ref": "base"}, "head_ref must not be null"),
        (
            "diff_context",
            {"repo": "py", "diff": "--- a//etc/passwd\n+++ b//etc/passwd\n@@ -1 +1 @@\n-a\n+b\n"},
            "is absolute",
        ),
        ("diff_context", {"repo": "py", "diff": "x" * 10_000_001}, "at most 5,000,000"),
    ],
)
def test_a_bad_argument_is_one_clean_line(t1, tool, args, message):
    (result,) = t1.calls([(tool, args)])
    text = text_of(result)
    assert result.is_error, text
    assert message in text, text
    assert "\n" not in text
    for noise in ("plpy.", "validation error", "pydantic", "Error executing tool", "Traceback"):
        assert noise not in text, text


def test_another_tenants_refs_are_not_reachable(dsn, change):
    impact, context = _run(
        dsn,
        [
            ("impact", {"target": "send_request", "repo": "py", "ref": "head"}),
            ("diff_context", {"repo": "py", "base_ref": "base", "head_ref": "head"}),
        ],
        tenant="t2",
    )
    for result in (impact, context):
        assert result.is_error and "no indexed ref 'head'" in text_of(result)
