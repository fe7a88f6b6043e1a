"""`codesift ask -`: the question (a whole bug report) piped in on standard input, through the
real CLI against the test database, and what it does with input that is too long or empty."""

import os
import subprocess
from pathlib import Path

import pytest

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
REPORT = (
    "Retries are not honoured when the upstream closes the connection\n\n"
    "When `fetch_with_retries` gets a reset from the server it gives up at once instead of "
    "waiting `backoff_seconds` and trying again. The traceback:\n\n"
    '  File "net/client.py", line 4, in fetch_with_retries\n'
    "ConnectionResetError: [Errno 104] Connection reset by peer\n\n"
    "I expected the retry loop to catch it. " * 4
)


def _ask(dsn, *args, stdin=None, text_in=None):
    return subprocess.run(
        [str(CODESIFT), "ask", *args],
        input=text_in,
        stdin=stdin,
        capture_output=True,
        env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"},
        timeout=120,
    )


@pytest.fixture
def indexed(dsn, make_repo):
    root = make_repo(
        {
            "net/client.py": "def fetch_with_retries(url, backoff_seconds=1):\n"
            "    for attempt in range(3):\n"
            "        return open_connection(url)\n",
            "net/pool.py": "def open_connection(url):\n    return url\n",
            "docs/guide.md": "# Guide\n\nHow to install the client.\n",
        },
        name="net",
    )
    index = subprocess.run(
        [str(CODESIFT), "index", str(root), "--tenant", "acme", "--no-embed"],
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn},
        timeout=120,
    )
    assert index.returncode == 0, index.stderr
    return root


def test_a_piped_bug_report_gets_the_pack_the_same_text_as_an_argument_gets(dsn, indexed):
    piped = _ask(dsn, "-", "--tenant", "acme", text_in=REPORT.encode())
    assert piped.returncode == 0, piped.stderr
    assert b"# net:net/client.py:1-3 (fetch_with_retries)" in piped.stdout
    given = _ask(dsn, REPORT, "--tenant", "acme")
    assert given.returncode == 0, given.stderr
    assert piped.stdout == given.stdout


def test_endless_standard_input_is_read_only_up_to_the_longest_question(dsn, indexed):
    # /dev/zero never ends: reading it whole would never return
    with open("/dev/zero", "rb") as endless:
        result = _ask(dsn, "-", "--tenant", "acme", stdin=endless)
    assert result.returncode == 1
    assert result.stderr == b"error: the question on standard input is over 200,000 characters\n"
    assert result.stdout == b""


def test_empty_standard_input_is_refused_with_how_to_ask(dsn, indexed):
    result = _ask(dsn, "-", "--tenant", "acme", text_in=b" \n\t\n")
    assert result.returncode == 1
    assert result.stderr == b"error: no question on standard input (ask - reads it from there)\n"


def test_input_that_is_not_utf8_text_is_refused_cleanly(dsn, indexed):
    piped = _ask(dsn, "-", "--tenant", "acme", text_in=b"why does \xff crash")
    assert piped.returncode == 1
    assert b"Traceback" not in piped.stderr
    assert piped.stderr.endswith(b" is not UTF-8 text\n"), piped.stderr
    # the same bytes as an argument, and in a tenant's name
    for args in ([b"why does \xff crash", b"--tenant", b"acme"], [b"why", b"--tenant", b"\xff"]):
        given = subprocess.run(
            [bytes(CODESIFT), b"ask", *args],
            capture_output=True,
            env={**os.environ, "CODESIFT_DSN": dsn},
            timeout=120,
        )
        assert given.returncode == 1
        assert b"Traceback" not in given.stderr
        assert given.stderr.endswith(b" is not UTF-8 text\n"), given.stderr


def test_an_engine_refusal_reads_as_its_own_words(dsn, indexed):
    """A bad argument the engine refuses (plpy.error inside PL/Python) prints the engine's
    message and hint, without PL/Python's exception name before them."""
    unknown = _ask(dsn, "where?", "--tenant", "acme", "--repo", "nope")
    assert unknown.returncode == 1
    assert unknown.stderr.decode().startswith(
        "error: unknown repository 'nope'\n  hint: indexed repositories: net\n"
    )
    too_big = _ask(dsn, "where?", "--tenant", "acme", "--budget", "200001")
    assert too_big.returncode == 2  # refused by the option, before any database call
    assert b"200000" in too_big.stderr and b"Traceback" not in too_big.stderr


def test_explain_says_what_the_report_names_and_where_its_traceback_failed(dsn, indexed):
    explain = _ask(dsn, "-", "--tenant", "acme", "--explain", text_in=REPORT.encode())
    assert explain.returncode == 0, explain.stderr
    lines = explain.stdout.decode().splitlines()
    assert any("named" in line and "hop" in line for line in lines), lines
    # the frame ran in fetch_with_retries in net/client.py: named first, and failed there
    failed = [line for line in lines if "net/client.py" in line and "1!" in line]
    assert any("fetch_with_retries" in line for line in failed), lines
    assert not any("net/pool.py" in line and "!" in line for line in lines), lines
