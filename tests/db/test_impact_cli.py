"""`codesift impact` and `codesift diff-context` through the real CLI against the test
database: what they print, and `--diff-file` refusing what is no diff file (a folder, a
device, a FIFO, a file over the bound, text that is not UTF-8) before sending anything."""

import os
import subprocess
from pathlib import Path

import pytest
from codesift_db.diff_hunks import MAX_DIFF_CHARS

from tests.db.change_repos import index_change_repos

CODESIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"


@pytest.fixture
def change(db, dsn, make_repo, snapshots):
    return snapshots.load("change", index_change_repos, dsn, make_repo)


def _cli(dsn, *args, text_in=None):
    return subprocess.run(
        [str(CODESIFT), *args],
        input=text_in,
        capture_output=True,
        text=True,
        env={**os.environ, "CODESIFT_DSN": dsn, "COLUMNS": "200"},
        timeout=120,
    )


def test_impact_prints_each_row_with_how_it_is_reached(dsn, change):
    out = _cli(dsn, "impact", "send_request", "--repo", "py", "--ref", "head", "--tenant", "t1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("py:pkg/client.py:6-7") and "calls (1 hop)" in lines[0]
    assert any("via py:pkg/client.py:6-7" in line and "[test]" in line for line in lines)
    bad = _cli(dsn, "impact", "send_request", "--depth", "1000000000", "--tenant", "t1")
    assert bad.returncode == 2 and "--depth" in bad.stderr and "Traceback" not in bad.stderr


def test_diff_context_from_refs_and_from_standard_input(dsn, change):
    refs = _cli(
        dsn, "diff-context", "--repo", "py", "--base", "base", "--head", "head", "--tenant", "t1"
    )
    assert refs.returncode == 0, refs.stderr
    assert "## change: modified\n# py:pkg/transport.py:4-5 (encode)" in refs.stdout
    piped = _cli(
        dsn,
        "diff-context",
        "--repo",
        "py",
        "--diff-file",
        "-",
        "--tenant",
        "t1",
        text_in=change["diff"],
    )
    assert piped.returncode == 0, piped.stderr
    assert "+    assert body" in piped.stdout and "## caller:" in piped.stdout


def test_diff_file_refuses_what_is_no_diff_file(dsn, change, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.diff"
    huge.write_text("+" * (MAX_DIFF_CHARS + 1))
    binary = tmp_path / "binary.diff"
    binary.write_bytes(b"--- a/x\n+++ b/x\n\xff\xfe\n")
    cases = [
        (str(tmp_path), "not a regular file"),
        ("/dev/zero", "not a regular file"),
        (str(fifo), "not a regular file"),  # would block a reader: never opened
        (str(huge), f"over {MAX_DIFF_CHARS:,} characters"),
        (str(binary), "not UTF-8"),
        (str(tmp_path / "missing.diff"), "cannot read the diff file"),
    ]
    for path, message in cases:
        out = _cli(dsn, "diff-context", "--repo", "py", "--diff-file", path, "--tenant", "t1")
        assert out.returncode != 0, path
        assert message in out.stderr, (path, out.stderr)
        assert "Traceback" not in out.stderr
    both = _cli(
        dsn,
        "diff-context",
        "--repo",
        "py",
        "--head",
        "head",
        "--diff-file",
        "-",
        "--tenant",
        "t1",
        text_in=change["diff"],
    )
    assert both.returncode != 0 and "not both" in both.stderr
