"""The docs that list the MCP tools cannot drift from the one list the server registers
(codesift.mcp_tools.TOOLS): the README's list of tools, the table of docs/interfaces.md
that maps the CLI commands, MCP tools and SQL functions to each other, and the AGENTS.md
block of `codesift setup --agents-md` (codesift.tool_guide, kept apart from the MCP SDK)."""

import re
from pathlib import Path

from codesift.mcp_tools import TOOLS
from codesift.setup_clients import agents_block
from codesift.tool_guide import WHEN_TO_CALL

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INTERFACES = ROOT / "docs" / "interfaces.md"
NAME = re.compile(r"`(\w+)`")


def _section(text: str, heading: str) -> list[str]:
    """The lines of a markdown section, from its heading to the next one of its level."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = heading.split()[0]
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].split(" ", 1)[0] == level),
        len(lines),
    )
    return lines[start + 1 : end]


def _readme_tools() -> list[str]:
    """The tools the README lists: the items of the first list under "Use it from an
    agent", each opening with a tool's name."""
    items: list[str] = []
    for line in _section(README.read_text(), "## Use it from an agent"):
        if line.startswith("- "):
            items.append(line)
        elif items and not line.startswith("  "):
            break  # the list ended
    return [m.group(1) for m in (re.match(r"- `(\w+)`", item) for item in items) if m]


def _table(doc: Path) -> list[dict[str, str]]:
    """The rows of a markdown file's first table, by column heading."""
    rows = [line for line in doc.read_text().splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in rows]
    header, body = cells[0], cells[2:]  # cells[1] is the |---| line
    return [dict(zip(header, row, strict=True)) for row in body]


def test_the_readme_lists_the_servers_tools_in_order():
    assert _readme_tools() == [tool.name for tool in TOOLS]


def test_the_agents_block_names_every_tool_in_order_and_when_to_call_it():
    assert list(WHEN_TO_CALL) == [tool.name for tool in TOOLS]
    assert all(len(when) > 30 for when in WHEN_TO_CALL.values())
    items = re.findall(r"^- `(\w+)`: ", agents_block(), re.MULTILINE)
    assert items == [tool.name for tool in TOOLS]


def test_the_interfaces_table_names_every_tool_once():
    named = [name for row in _table(INTERFACES) for name in NAME.findall(row["MCP tool"])]
    assert sorted(named) == sorted(tool.name for tool in TOOLS)


def test_each_tool_is_on_the_row_of_the_sql_function_it_calls():
    rows = {name: row for row in _table(INTERFACES) for name in NAME.findall(row["MCP tool"])}
    wrong = {
        tool.name: rows[tool.name]["SQL function"]
        for tool in TOOLS
        if tool.calls is not None and f"`{tool.calls}`" not in rows[tool.name]["SQL function"]
    }
    assert wrong == {}
