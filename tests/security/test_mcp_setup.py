"""`codesift setup CLIENT` never overwrites a user's other servers or settings, is
idempotent, refuses files it cannot parse, and keeps passwords out of config files."""

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.mcp.harness import CODESIFT

DSN = "postgresql://postgres@/codesift?host=/tmp/sock&port=5432"


def setup(project: Path, *args: str, dsn: str = DSN, check: bool = True):
    env = {
        **os.environ,
        "CODESIFT_DSN": dsn,
        "CODEX_HOME": str(project / "codex-home"),
        "HOME": str(project),
    }
    return subprocess.run(
        [CODESIFT, "setup", *args, "--project", str(project), "--tenant", "acme"],
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )


OTHERS = {"github": {"command": "npx", "args": ["-y", "@mcp/github"], "env": {"T": "x"}}}


@pytest.mark.parametrize(
    "client, rel, key",
    [
        ("claude-code", ".mcp.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("vscode", ".vscode/mcp.json", "servers"),
    ],
)
def test_json_clients_merge_and_are_idempotent(tmp_path, client, rel, key):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: OTHERS, "inputs": [{"id": "keep-me"}]}, indent=4))
    setup(tmp_path, client)
    data = json.loads(path.read_text())
    assert data[key]["github"] == OTHERS["github"]
    assert data["inputs"] == [{"id": "keep-me"}]
    entry = data[key]["codesift"]
    assert Path(entry["command"]).is_absolute() and entry["command"].endswith("/codesift")
    assert entry["args"][:3] == ["mcp", "--tenant", "acme"]
    assert entry["env"] == {"CODESIFT_DSN": DSN}
    first = path.read_bytes()
    out = setup(tmp_path, client)
    assert path.read_bytes() == first  # twice: nothing changes
    assert "up to date" in out.stderr
    # a changed setting replaces only our entry
    setup(tmp_path, client, dsn=DSN.replace("5432", "5433"))
    again = json.loads(path.read_text())
    assert again[key]["github"] == OTHERS["github"]
    assert again[key]["codesift"]["env"]["CODESIFT_DSN"].endswith("5433")


def test_a_file_that_does_not_parse_is_left_alone(tmp_path):
    path = tmp_path / ".mcp.json"
    path.write_text('{"mcpServers": {"github": ')  # truncated by an editor
    result = setup(tmp_path, "claude-code", check=False)
    assert result.returncode != 0
    assert "not valid JSON" in result.stderr
    assert path.read_text() == '{"mcpServers": {"github": '


def test_codex_toml_keeps_everything_else(tmp_path):
    home = tmp_path / "codex-home"
    home.mkdir()
    original = (
        'model = "o4-mini"  # my model\n\n'
        "[mcp_servers.github]\n"
        'command = "npx"\n'
        'args = ["-y", "@mcp/github"]\n\n'
        "[mcp_servers.github.env]\n"
        'TOKEN = "abc"\n\n'
        "[profiles.fast]\n"
        'model = "gpt-5"\n'
    )
    (home / "config.toml").write_text(original)
    setup(tmp_path, "codex")
    text = (home / "config.toml").read_text()
    assert text.startswith(original)  # appended; nothing of the user's touched
    data = tomllib.loads(text)
    assert data["mcp_servers"]["github"]["env"] == {"TOKEN": "abc"}
    assert data["profiles"]["fast"]["model"] == "gpt-5"
    assert data["mcp_servers"]["codesift"]["args"][:3] == ["mcp", "--tenant", "acme"]
    setup(tmp_path, "codex")
    assert (home / "config.toml").read_text() == text
    # changed: our table is replaced in place, the rest stays byte for byte
    setup(tmp_path, "codex", dsn=DSN.replace("5432", "5433"))
    changed = (home / "config.toml").read_text()
    assert changed.startswith(original)
    assert tomllib.loads(changed)["mcp_servers"]["codesift"]["env"]["CODESIFT_DSN"].endswith("5433")
    assert changed.count("[mcp_servers.codesift]") == 1


def test_continue_block_file_and_dry_run(tmp_path):
    out = setup(tmp_path, "continue", "--dry-run")
    assert not (tmp_path / ".continue").exists()  # dry run writes nothing
    assert "mcpServers:" in out.stdout and "codesift" in out.stdout
    other = tmp_path / ".continue" / "mcpServers" / "github.yaml"
    other.parent.mkdir(parents=True)
    other.write_text("name: github\n")
    setup(tmp_path, "continue")
    ours = (tmp_path / ".continue" / "mcpServers" / "codesift.yaml").read_text()
    assert "command:" in ours and '"--tenant", "acme"' in ours
    assert other.read_text() == "name: github\n"


def test_agents_md_is_appended_once(tmp_path):
    (tmp_path / "AGENTS.md").write_text("# Agents\n\nRun make test before committing.\n")
    setup(tmp_path, "claude-code", "--agents-md")
    text = (tmp_path / "AGENTS.md").read_text()
    assert text.startswith("# Agents\n\nRun make test before committing.\n")
    assert "search_code" in text and "find_symbol" in text and "related_files" in text
    setup(tmp_path, "claude-code", "--agents-md")
    assert (tmp_path / "AGENTS.md").read_text() == text


def test_password_in_dsn_is_not_written_without_consent(tmp_path):
    secret = "postgresql://app:hunter2@db.internal/codesift"
    result = setup(tmp_path, "cursor", dsn=secret, check=False)
    assert result.returncode != 0 and "password" in result.stderr
    assert not (tmp_path / ".cursor").exists()
    setup(tmp_path, "cursor", "--allow-password", dsn=secret)
    assert "hunter2" in (tmp_path / ".cursor" / "mcp.json").read_text()


def test_unknown_client(tmp_path):
    result = setup(tmp_path, "emacs", check=False)
    assert result.returncode != 0 and "unknown client" in result.stderr
