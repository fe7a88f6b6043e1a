"""`codesift setup CLIENT` never overwrites a user's other servers or settings, is
idempotent, refuses files it cannot parse, keeps passwords out of config files, and never
reads or writes through a symlink committed in the checkout (a config file, AGENTS.md, a
client's folder, a temporary file's name): nothing outside the project changes and
nothing from outside is copied in."""

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
        "COLUMNS": "1000",  # an error message naming a long path stays on one line
    }
    return subprocess.run(
        [CODESIFT, "setup", *args, "--project", str(project), "--tenant", "acme"],
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=60,
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


SECRET = "TOP SECRET: an outside file's contents\n"


def _tree(folder: Path) -> dict[str, tuple]:
    """Every entry under folder, links not followed: (kind, contents or link target)."""
    out: dict[str, tuple] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_dir():
            out[rel] = ("dir", None)
        else:
            out[rel] = ("file", path.read_bytes())
    return out


def _outside_and_project(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text(SECRET)
    servers = {"mcpServers": {"private": {"command": "x", "env": {"TOKEN": SECRET}}}}
    (outside / "victim.json").write_text(json.dumps(servers))
    project = tmp_path / "project"
    project.mkdir()
    return outside, project


@pytest.mark.parametrize(
    "client, args, link",
    [
        ("claude-code", ["--agents-md"], "AGENTS.md.codesift-tmp"),
        ("claude-code", [], ".mcp.json.codesift-tmp"),
        ("cursor", [], ".cursor/mcp.json.codesift-tmp"),
        ("continue", [], ".continue/mcpServers/codesift.yaml.codesift-tmp"),
    ],
)
def test_a_symlinked_temporary_file_is_never_written_through(tmp_path, client, args, link):
    outside, project = _outside_and_project(tmp_path)
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(outside / "victim")
    before = _tree(outside)
    result = setup(project, client, *args, check=False)
    assert result.returncode == 0, result.stderr
    assert _tree(outside) == before, "a file outside the project was written"
    assert (project / link).is_symlink(), "the link was moved into the config's place"
    target = project / link.removesuffix(".codesift-tmp")
    assert not target.is_symlink() and "codesift" in target.read_text()
    assert SECRET not in target.read_text()


@pytest.mark.parametrize(
    "client, args, link, to",
    [
        ("claude-code", ["--agents-md"], "AGENTS.md", "victim"),  # copied it into the project
        ("claude-code", [], ".mcp.json", "victim.json"),  # copied its servers in
        ("claude-code", [], ".mcp.json", "missing"),  # a dangling link: created outside
        ("cursor", [], ".cursor/mcp.json", "victim.json"),
        ("cursor", [], ".cursor", "."),  # wrote outside/mcp.json
        ("vscode", [], ".vscode", "."),
        ("continue", [], ".continue", "."),
        ("continue", [], ".continue/mcpServers", "."),
    ],
)
def test_a_symlink_in_the_project_is_refused(tmp_path, client, args, link, to):
    outside, project = _outside_and_project(tmp_path)
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(outside / to)
    outside_before, project_before = _tree(outside), _tree(project)
    result = setup(project, client, *args, check=False)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{project / link} is a symbolic link" in result.stderr, result.stderr
    assert _tree(outside) == outside_before, "something outside the project changed"
    assert _tree(project) == project_before, "the project changed"


def test_a_fifo_or_folder_in_a_config_files_place_is_refused(tmp_path):
    _, project = _outside_and_project(tmp_path)
    os.mkfifo(project / ".mcp.json")  # reading it would block forever
    result = setup(project, "claude-code", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "is not a regular file" in result.stderr, result.stderr
    (project / ".mcp.json").unlink()
    (project / "AGENTS.md").mkdir()
    result = setup(project, "claude-code", "--agents-md", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "is not a regular file" in result.stderr, result.stderr
    assert not (project / ".mcp.json").exists()
