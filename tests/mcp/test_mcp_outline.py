"""search_code through the MCP SDK's own client: a file whose definitions the budget cannot
all hold comes with an outline item, in the text and in the rows, and find_symbol reads a
definition the outline names."""

import asyncio

import psycopg
from codesift.indexer import index_repository
from psycopg import sql

from tests.db.test_pack_outlines import OUTLINES_ON, QUESTION, _files
from tests.mcp.harness import stdio_session, text_of


def test_search_code_shows_the_outline_and_find_symbol_reads_a_name_it_lists(dsn, make_repo):
    root = make_repo(_files(), name="shop")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="shop", tenant="acme", embed=False, show_progress=False)
        # outlines are off by default; an operator turns them on for every client like this
        database = conn.execute("select current_database()").fetchone()[0]
        conn.execute(
            sql.SQL("alter database {} set codesift.retrieval_off = {}").format(
                sql.Identifier(database), sql.Literal(OUTLINES_ON)
            )
        )
        conn.commit()

    async def run():
        async with stdio_session(dsn, "acme", cwd=root) as s:
            found = await s.call_tool(
                "search_code", {"question": QUESTION, "repo": "shop", "token_budget": 1500}
            )
            rows = found.structured_content["rows"]
            outline = next(r for r in rows if r["kind"] == "outline")
            text = text_of(found)
            head = next(line for line in text.splitlines() if "(outline: " in line)
            name = next(
                line.strip().removeprefix("def ")
                for line in text[text.index(head) :].splitlines()[1:]
                if line.strip().startswith("def ")
            )
            symbol = await s.call_tool("find_symbol", {"name": f"Orders.{name}", "repo": "shop"})
            return rows, outline, head, name, symbol

    rows, outline, head, name, symbol = asyncio.run(run())
    assert sum(r["tokens"] for r in rows) <= 1500
    assert head.startswith("# shop:shop/orders.py (outline: ") and outline["truncated"]
    assert outline["citation"].startswith("shop:shop/orders.py:")
    assert not symbol.is_error, text_of(symbol)
    assert symbol.structured_content["rows"][0]["symbol"] == f"Orders.{name}"
