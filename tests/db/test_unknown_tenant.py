"""Every command that acts as an existing tenant answers an unknown one the same way: one
line on standard error naming it and where the tenants are listed, exit code 1, no
traceback (index, watch and tenant create make a missing tenant instead; the stdio MCP
server keeps running and gives the message as each tool call's error)."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from codesift import cli

from tests.mcp.harness import stdio_session, text_of

CODESIFT = Path(sys.executable).with_name("codesift")
MESSAGE = "error: unknown tenant 'nope' (codesift status lists the tenants)\n"


CASES = [
    ["status", "--tenant", "nope"],
    ["ask", "where is it?", "--tenant", "nope"],
    ["ask", "where is it?", "--tenant", "nope", "--explain"],
    ["forget", "repo", "--tenant", "nope", "--yes"],
    ["forget", "--whole-tenant", "--tenant", "nope", "--yes"],
    ["token", "create", "--tenant", "nope"],
    ["token", "list", "--tenant", "nope"],
    ["token", "revoke", "1", "--tenant", "nope"],
    ["outline", "a.py", "--tenant", "nope"],
    ["repo-map", "--tenant", "nope"],
    ["refs", "a", "--tenant", "nope"],
    ["callers", "a", "--tenant", "nope"],
    ["callees", "a", "--tenant", "nope"],
    ["impact", "a", "--tenant", "nope"],
    ["diff-context", "--base", "a", "--head", "b", "--tenant", "nope"],
    ["learn", ".", "--tenant", "nope"],
]
# commands whose --tenant names a tenant to make (or to hand on) rather than one to act as
MAKE_OR_HAND_ON = {
    ("index",): "creates a missing tenant",
    ("watch",): "creates a missing tenant",
    ("hook", "install"): "the hook's index runs create it",
    ("setup",): "writes the agent's configuration; the tenant may be indexed later",
}
# commands that report an unknown tenant per call, with the same words, and keep running
PER_CALL = {
    ("mcp",): "the stdio server starts and answers each tool call with the error "
    "(test_an_unknown_tenant_is_each_mcp_calls_error)",
}


def _tenant_commands(group=None, path=()):
    """Every command (as its path of names) that has a --tenant option."""
    group = group or typer.main.get_command(cli.app)
    for name, command in getattr(group, "commands", {}).items():
        if hasattr(command, "commands"):
            yield from _tenant_commands(command, (*path, name))
        elif any("--tenant" in p.opts for p in command.params):
            yield (*path, name)


def _command_of(args: list[str]) -> tuple[str, ...]:
    """The command a command line runs: its leading command names."""
    group, path = typer.main.get_command(cli.app), ()
    for arg in args:
        if arg not in getattr(group, "commands", {}):
            break
        group, path = group.commands[arg], (*path, arg)
    return path


def test_every_command_taking_a_tenant_is_checked_here():
    tested = {_command_of(c.values[0] if hasattr(c, "values") else c) for c in CASES}
    untested = set(_tenant_commands()) - tested - set(MAKE_OR_HAND_ON) - set(PER_CALL)
    assert untested == set(), "these take --tenant: add them to CASES or MAKE_OR_HAND_ON"


@pytest.mark.parametrize(
    "args",
    CASES,
    ids=lambda args: " ".join(a for a in args if a not in ("nope", "where is it?", "a.py", "a")),
)
def test_an_unknown_tenant_is_one_error_line(dsn, args):
    result = subprocess.run(
        [str(CODESIFT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"},
        timeout=120,
    )
    assert (result.returncode, result.stderr) == (1, MESSAGE), result.stdout
    assert result.stdout == ""


def test_an_unknown_tenant_is_each_mcp_calls_error(dsn):
    """`codesift mcp --tenant nope` (stdio) starts, lists its tools, and answers each call
    of a tool that reads (sync_index makes its tenant, as index does) with the one message,
    less the 'error: ' a command's standard error line starts with; the tenant is looked up
    before the arguments are checked."""

    async def run():
        async with stdio_session(dsn, "nope") as s:
            tools = (await s.list_tools()).tools
            return [await s.call_tool(t.name, {}) for t in tools if t.name != "sync_index"]

    results = asyncio.run(run())
    assert len(results) >= 10
    for result in results:
        assert result.is_error
        assert text_of(result) == MESSAGE.removeprefix("error: ").rstrip("\n")
