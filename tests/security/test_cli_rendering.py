"""Attacks through what the CLI prints: repository data that looks like rich markup
(`pages/[id].py`, `[/b]`, `:smile:`) and indexed code holding terminal escape
sequences. The CLI runs as a subprocess against the test database; the TTY case
runs it on a pseudo-terminal.
"""

import os
import pty
import subprocess
from pathlib import Path

import pytest

from tests.conftest import commit

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
TENANTS = ("acme", "globex")
QUESTION = "render_identifier_page bold_closer_helper colorful_terminal_banner"
ESCAPES = 'return "\x1b[31mRED\x1b]0;pwned\x07\x1b[2J"'


def _env(dsn):
    return {**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"}


def _cli(dsn, *args):
    return subprocess.run(
        [str(CODESIFT), *args], capture_output=True, text=True, env=_env(dsn), timeout=120
    )


@pytest.fixture
def indexed(dsn, make_repo, snapshots):
    """app indexed by each tenant through the CLI (once per session, copied into this
    test's database)."""
    snapshots.load("cli_rendering", _index_app, dsn, make_repo)
    return make_repo.folder / "app"


def _index_app(dsn, make_repo) -> None:
    root = make_repo(
        {
            "pages/[id].py": "def render_identifier_page(ident):\n    return ident\n",
            "a[/b]c.py": "def bold_closer_helper():\n    return 'x'\n",
            "banner.py": "",
            "README.md": "# Banner \x1b[2J:smile:\n\nSee colorful_terminal_banner.\n",
        },
        name="app",
    )
    (root / "banner.py").write_text(f"def colorful_terminal_banner():\n    {ESCAPES}\n")
    commit(root, "escapes")
    for tenant in TENANTS:
        result = _cli(dsn, "index", str(root), "--tenant", tenant, "--no-embed")
        assert result.returncode == 0, result.stderr


def test_paths_that_look_like_markup_print_exactly(dsn, indexed):
    result = _cli(dsn, "ask", QUESTION, "--tenant", "acme")
    assert result.returncode == 0, result.stderr
    assert "# app:pages/[id].py:1-2 " in result.stdout
    assert "# app:a[/b]c.py:1-2 " in result.stdout
    explain = _cli(dsn, "ask", QUESTION, "--tenant", "acme", "--explain")
    assert explain.returncode == 0, explain.stderr
    assert "pages/[id].py" in explain.stdout and "a[/b]c.py" in explain.stdout
    assert "pages/.py" not in explain.stdout


def test_piped_code_is_exact_and_tables_show_escapes_without_obeying_them(dsn, indexed):
    result = _cli(dsn, "ask", QUESTION, "--tenant", "acme")
    assert ESCAPES in result.stdout  # a program reading the pipe gets the bytes as stored
    explain = _cli(dsn, "ask", "Banner", "--tenant", "acme", "--explain")
    assert explain.returncode == 0, explain.stderr
    assert "\x1b" not in explain.stdout
    assert "Banner \\x1b[2J:smile:" in explain.stdout  # visible, and no emoji markup either


def test_code_printed_to_a_terminal_carries_no_control_characters(dsn, indexed):
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [str(CODESIFT), "ask", QUESTION, "--tenant", "acme"],
        stdout=child,
        stderr=subprocess.PIPE,
        env=_env(dsn),
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    shown = b"".join(chunks).decode()
    assert "colorful_terminal_banner" in shown
    assert not any(ch in shown for ch in "\x1b\x07\x9b")
    assert 'return "[31mRED]0;pwned[2J"' in shown  # the text stays, the controls go
    assert "pages/[id].py" in shown


def test_data_in_messages_is_never_markup(dsn, indexed):
    result = _cli(dsn, "ask", "x", "--tenant", "x[/b]")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr == "error: unknown tenant 'x[/b]' (codesift status lists the tenants)\n"

    result = _cli(dsn, "index", "/nonexistent/[/b][red]:smile:")
    assert result.returncode == 1
    assert result.stderr == "error: /nonexistent/[/b][red]:smile: does not exist\n"

    result = _cli(dsn, "ask", "x", "--tenant", "t\x1b[2J\x07")
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "unknown tenant 't\\x1b[2J\\x07'" in result.stderr

    result = _cli(dsn, "index", str(indexed), "--name", "pages[id]", "--tenant", "acme")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("indexed pages[id] @ ")
    status = _cli(dsn, "status", "--tenant", "acme")
    assert status.returncode == 0, status.stderr
    assert "pages[id]" in status.stdout


def test_repository_names_with_control_characters_are_refused(dsn, indexed):
    result = _cli(dsn, "index", str(indexed), "--name", "r\x1b[31m", "--no-embed")
    assert result.returncode == 1
    assert "\x1b" not in result.stderr
    assert result.stderr.startswith("error: the repository name 'r\\x1b[31m' cannot be stored")
