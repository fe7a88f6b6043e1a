"""`codesift --help` as a person reads it: the real command line in a subprocess."""

import os
import re
import subprocess
import sys

import pytest
import typer
from codesift import cli
from typer.testing import CliRunner


def _registered(args: list[str]) -> set[str]:
    group = typer.main.get_command(cli.app)
    for name in args:
        group = group.commands[name]
    return {name for name, command in group.commands.items() if not command.hidden}


def _command_rows(args: list[str], columns: int) -> list[str]:
    """The rows of the Commands panel of `codesift ARGS --help` at a terminal width."""
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    out = subprocess.run(
        [sys.executable, "-m", "codesift", *args, "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "─ Commands ─" in line)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("╰"):
            break
        rows.append(line.strip("│ ").rstrip())
    return rows


@pytest.mark.parametrize("args", [[], ["tenant"], ["token"], ["hook"]])
def test_each_command_is_summed_up_in_one_line_when_the_terminal_is_wide(args):
    # a docstring's own line breaks used to survive into the listing (`index` took four
    # lines however wide the terminal)
    rows = _command_rows(args, 1000)
    assert sorted(row.split()[0] for row in rows) == sorted(_registered(args))


def test_a_narrow_terminal_wraps_each_summary_to_its_width():
    names = _registered([])
    entries: list[list[str]] = []
    for row in _command_rows([], 80):
        if row.split()[0] in names:
            entries.append([row])
        else:
            entries[-1].append(row)
    assert {entry[0].split()[0] for entry in entries} == names
    for entry in entries:
        assert all(len(row) <= 78 for row in entry), entry
        # every line but an entry's last is full: none breaks early where the docstring did
        assert all(len(row) >= 50 for row in entry[:-1]), entry


def _commands(group=None, path=()):
    """(path, click command) of every command and group the CLI shows, the root first."""
    group = group or typer.main.get_command(cli.app)
    yield path, group
    for name, command in getattr(group, "commands", {}).items():
        if not command.hidden:
            yield from _commands(command, (*path, name))


def _option_rows(args: list[str]) -> dict[str, str]:
    """The rows of the Options panel of `codesift ARGS --help`, by their first option."""
    env = {"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"}
    result = CliRunner().invoke(cli.app, [*args, "--help"], env=env)
    assert result.exit_code == 0, result.output
    rows = {}
    for line in result.output.splitlines():
        row = line.strip("│ ").removeprefix("*").strip()  # * marks a required option
        if line.startswith("│") and row.startswith("--"):
            rows[row.split()[0]] = row
    return rows


def test_a_boolean_flag_is_shown_without_a_value():
    # typer's panel gave every flag the type column of an option that takes a value
    # (`--wait  <bool>`), as if it were written `--wait true`
    flags = 0
    for path, command in _commands():
        rows = _option_rows(list(path))
        ctx = command.make_context("codesift", [], resilient_parsing=True)
        for param in command.get_params(ctx):
            if not param.param_type_name == "option" or param.hidden:
                continue
            row = rows[param.opts[0]]
            names = [*param.opts, *param.secondary_opts]
            after = row.split()[len(names)] if len(row.split()) > len(names) else ""
            if param.is_flag:
                flags += 1
                # right after the names comes the help text, no metavar or type
                assert after == (param.help or "").split()[0], (path, row)
                assert not re.search(r"<\w+>|BOOLEAN|\bbool\b", row, re.I), (path, row)
            else:
                assert after.startswith("<") or after.isupper(), (path, row)
    assert flags > 20  # --help of every command, and the commands' own flags
