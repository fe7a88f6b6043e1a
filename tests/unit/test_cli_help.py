"""`codesift --help` as a person reads it: the real command line in a subprocess."""

import os
import subprocess
import sys

import pytest
import typer
from codesift import cli


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
