"""`codesift setup CLIENT` writes nothing of this machine into a file meant to be committed
(no venv or checkout path, no DSN: variable references in each client's syntax), never a
superuser DSN anywhere (the loader role's, asked of the database), keeps one project's
entry from repointing another's, references the bearer token of --http by its variable,
removes exactly what it wrote (--uninstall), refuses a folder that is not a checkout, never
overwrites a user's other servers or settings, is idempotent, refuses files it cannot
parse, keeps passwords out of config files, and never reads or writes through a symlink
committed in the checkout (a config file, AGENTS.md, CLAUDE.md, a client's folder, a
temporary file's name): nothing outside the project changes and nothing from outside is
copied in."""

import asyncio
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import psycopg
import pytest
import yaml
from codesift.indexer import index_repository
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.conftest import RepoMaker, git, write_files
from tests.mcp.harness import CODESIFT, ROOT, text_of

UNREACHABLE = "postgresql://nobody@/nowhere?host=/nonexistent&port=1"


def _run(project: Path, home: Path, dsn: str, args, check: bool, env: dict | None):
    full_env = {
        **os.environ,
        "CODESIFT_DSN": dsn,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "COLUMNS": "1000",  # an error message naming a long path stays on one line
    }
    full_env.pop("CLAUDE_CONFIG_DIR", None)
    full_env.update(env or {})
    result = subprocess.run(
        [CODESIFT, "setup", "--project", str(project), "--tenant", "acme", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check and result.returncode != 0:
        pytest.fail(f"codesift setup {' '.join(args)} failed:\n{result.stderr}")
    return result


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(make_repo) -> Path:
    return make_repo({"README.md": "# shop\n", "shop/cart.py": "def total(xs):\n    return 1\n"})


@pytest.fixture
def setup(dsn: str, home: Path):
    """setup(project, *args, check=True, env=None, dsn=None): `codesift setup ARGS` for
    tenant acme with HOME (and CODEX_HOME below it) in the test's folder."""

    def run(project: Path, *args: str, check: bool = True, env=None, dsn: str = dsn):
        return _run(project, home, dsn, args, check, env)

    return run


def _role(dsn: str) -> tuple[str, bool]:
    """The DSN's role, and whether it is a superuser or bypasses row-level security."""
    with psycopg.connect(dsn, connect_timeout=10) as conn:
        row = conn.execute(
            "select current_user::text, rolsuper or rolbypassrls from pg_roles"
            " where rolname = current_user"
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def _claude_local(home: Path, project: Path) -> dict:
    return json.loads((home / ".claude.json").read_text())["projects"][str(project)]["mcpServers"]


OTHERS = {"github": {"command": "npx", "args": ["-y", "@mcp/github"], "env": {"T": "x"}}}


@pytest.mark.parametrize(
    "client, scope, rel, key, dsn_ref",
    [
        ("claude-code", ["--scope", "project"], ".mcp.json", "mcpServers", "${CODESIFT_DSN}"),
        ("cursor", [], ".cursor/mcp.json", "mcpServers", "${env:CODESIFT_DSN}"),
        ("vscode", [], ".vscode/mcp.json", "servers", "${env:CODESIFT_DSN}"),
    ],
)
def test_json_clients_merge_and_are_idempotent(setup, project, client, scope, rel, key, dsn_ref):
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: OTHERS, "inputs": [{"id": "keep-me"}]}, indent=4))
    setup(project, client, *scope)
    data = json.loads(path.read_text())
    assert data[key]["github"] == OTHERS["github"]
    assert data["inputs"] == [{"id": "keep-me"}]
    entry = data[key]["codesift"]
    assert entry["command"] == "codesift"  # from PATH: no venv of this machine
    assert entry["args"][:3] == ["mcp", "--tenant", "acme"]
    assert entry["env"] == {"CODESIFT_DSN": dsn_ref}
    first = path.read_bytes()
    out = setup(project, client, *scope)
    assert path.read_bytes() == first  # twice: nothing changes
    assert "up to date" in out.stderr
    # a changed setting replaces only our entry
    setup(project, client, *scope, "--tenant", "other")
    again = json.loads(path.read_text())
    assert again[key]["github"] == OTHERS["github"]
    assert again[key]["codesift"]["args"][:3] == ["mcp", "--tenant", "other"]


@pytest.mark.parametrize(
    "client, args, rel, dsn_ref",
    [
        ("claude-code", ["--scope", "project"], ".mcp.json", '"${CODESIFT_DSN}"'),
        ("cursor", [], ".cursor/mcp.json", '"${env:CODESIFT_DSN}"'),
        ("vscode", [], ".vscode/mcp.json", '"${env:CODESIFT_DSN}"'),
        ("codex", [], ".codex/config.toml", 'env_vars = ["CODESIFT_DSN"]'),
        ("continue", [], ".continue/mcpServers/codesift.yaml", '"${{ secrets.CODESIFT_DSN }}"'),
    ],
)
def test_committed_files_hold_nothing_of_this_machine(
    setup, project, home, dsn, tmp_path, client, args, rel, dsn_ref
):
    assert _role(dsn)[1], "the test's premise: CODESIFT_DSN is a superuser's"
    result = setup(project, client, *args)
    text = (project / rel).read_text()
    socket = conninfo_to_dict(dsn).get("host", "")
    for machine in (str(tmp_path), str(ROOT), sys.prefix, CODESIFT, socket):
        assert machine not in text, f"{rel} names {machine}"
    assert "/" not in text, f"{rel} holds a path:\n{text}"
    assert "postgres" not in text and "codesift_loader" not in text, "a DSN was written"
    assert dsn_ref in text, text
    # what to export instead: the loader role's DSN, never the superuser's
    export = re.search(r"export CODESIFT_DSN='([^']+)'", result.stderr)
    assert export, result.stderr
    assert _role(export.group(1)) == ("codesift_loader", False)


def test_claude_code_writes_its_local_scope_with_the_loader_role(setup, project, home, dsn):
    assert _role(dsn)[1], "the test's premise: CODESIFT_DSN is a superuser's"
    setup(project, "claude-code")
    assert not (project / ".mcp.json").exists(), "the committed file was written"
    entry = _claude_local(home, project)["codesift"]
    assert entry["command"] == CODESIFT
    assert entry["args"] == ["mcp", "--tenant", "acme", "--repo-path", str(project)]
    assert _role(entry["env"]["CODESIFT_DSN"]) == ("codesift_loader", False)


def test_the_local_entry_runs_a_server_that_answers_and_re_indexes(setup, project, home, dsn):
    """The loader role is all the stdio server needs: its tools read, and sync_index
    indexes the worktree."""
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, project, name="shop", tenant="acme", embed=False, show_progress=False
        )
    setup(project, "claude-code")
    entry = _claude_local(home, project)["codesift"]
    write_files(project, {"shop/tax.py": "def tax_of(amount):\n    return amount / 5\n"})
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        env={**entry["env"], "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)},
        cwd=str(home),  # --repo-path, not the cwd, says what to re-index
    )

    async def run():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            repos = await s.call_tool("list_repositories", {})
            synced = await s.call_tool("sync_index", {"name": "shop"})
            found = await s.call_tool("find_symbol", {"name": "tax_of"})
            return repos, synced, found

    repos, synced, found = asyncio.run(run())
    assert "shop" in text_of(repos)
    assert not synced.is_error, text_of(synced)
    assert "indexed shop" in text_of(synced)
    assert found.structured_content["rows"][0]["path"] == "shop/tax.py"


def test_codex_entries_of_two_projects_coexist(setup, home, tmp_path):
    # two checkouts of the same name in different folders
    first = RepoMaker(tmp_path / "a")
    second = RepoMaker(tmp_path / "b")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = first({"x.py": "x = 1\n"}, name="shop"), second({"y.py": "y = 1\n"}, name="shop")
    config = home / ".codex" / "config.toml"
    setup(one, "codex", "--scope", "local")
    setup(two, "codex", "--scope", "local")
    servers = tomllib.loads(config.read_text())["mcp_servers"]
    assert len(servers) == 2, servers
    paths = {s["args"][s["args"].index("--repo-path") + 1] for s in servers.values()}
    assert paths == {str(one), str(two)}
    assert all(name.startswith("codesift-shop") for name in servers)
    assert all(s["startup_timeout_sec"] >= 20 for s in servers.values())
    text = config.read_text()
    setup(one, "codex", "--scope", "local")
    assert config.read_text() == text  # again: nothing repointed
    # the project scope: each checkout's own file
    setup(one, "codex")
    setup(two, "codex", "--tenant", "beta")
    a = tomllib.loads((one / ".codex" / "config.toml").read_text())["mcp_servers"]["codesift"]
    b = tomllib.loads((two / ".codex" / "config.toml").read_text())["mcp_servers"]["codesift"]
    assert a["args"] == ["mcp", "--tenant", "acme"] and a["startup_timeout_sec"] >= 20
    assert b["args"] == ["mcp", "--tenant", "beta"]


TOKEN = "csk_live_do_not_write_me_0123456789"
URL = "https://codesift.example.com/mcp"


@pytest.mark.parametrize(
    "client, rel, reference",
    [
        ("claude-code", ".mcp.json", "Bearer ${CODESIFT_TOKEN}"),
        ("cursor", ".cursor/mcp.json", "Bearer ${env:CODESIFT_TOKEN}"),
        ("vscode", ".vscode/mcp.json", "Bearer ${env:CODESIFT_TOKEN}"),
        ("codex", ".codex/config.toml", 'bearer_token_env_var = "CODESIFT_TOKEN"'),
        ("continue", ".continue/mcpServers/codesift.yaml", "Bearer ${{ secrets.CODESIFT_TOKEN }}"),
    ],
)
def test_http_entries_reference_the_token_variable(home, project, client, rel, reference):
    # the token is in the environment, and no database is needed
    result = _run(
        project, home, UNREACHABLE, [client, "--http", URL], True, {"CODESIFT_TOKEN": TOKEN}
    )
    text = (project / rel).read_text()
    assert URL in text and reference in text, text
    assert TOKEN not in text
    assert "command" not in text  # not the stdio entry
    assert TOKEN not in result.stdout + result.stderr
    assert not (home / ".claude.json").exists()
    if client == "continue":
        server = yaml.safe_load(text)["mcpServers"][0]
        assert server["type"] == "streamable-http" and server["url"] == URL


def test_http_refuses_credentials_in_the_url_and_a_scope_without_expansion(home, project):
    result = _run(
        project, home, UNREACHABLE, ["cursor", "--http", "https://u:pw@h/mcp"], False, None
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "credentials" in result.stderr
    result = _run(
        project, home, UNREACHABLE, ["claude-code", "--http", URL, "--scope", "local"], False, None
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert not (project / ".cursor").exists() and not (home / ".claude.json").exists()


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


CLAUDE_JSON = (
    json.dumps(
        {
            "numStartups": 3,
            "projects": {
                "/elsewhere": {"allowedTools": [], "mcpServers": {}},
            },
            "mcpServers": {"github": {"command": "npx"}},
        },
        indent=2,
    )
    + "\n"
)
CLAUDE_JSON_OWN_PROJECT = json.dumps(
    {"projects": {"{project}": {"allowedTools": ["Bash"], "mcpServers": {}}}}, indent=2
)
CODEX_TOML = '# mine\nmodel = "o4-mini"\n\n[mcp_servers.github]\ncommand = "npx"\n'
USER_JSON = json.dumps({"mcpServers": OTHERS, "inputs": [{"id": "k"}]}, indent=4)
VSCODE_JSON = '{"servers": {"a": {"command": "x"}}, "inputs": []}'  # one line


@pytest.mark.parametrize(
    "client, args, existing",
    [
        ("claude-code", [], {}),  # creates ~/.claude.json
        ("claude-code", [], {"~/.claude.json": CLAUDE_JSON}),
        ("claude-code", [], {"~/.claude.json": CLAUDE_JSON_OWN_PROJECT}),
        ("claude-code", ["--scope", "project"], {".mcp.json": USER_JSON}),
        ("claude-code", ["--scope", "project"], {}),
        ("claude-code", ["--agents-md"], {"AGENTS.md": "# Agents\n\nRun tests.\n"}),
        ("claude-code", ["--agents-md"], {"CLAUDE.md": "# Claude\n"}),
        ("cursor", [], {}),
        ("cursor", [], {".cursor/mcp.json": USER_JSON}),
        ("vscode", [], {".vscode/mcp.json": VSCODE_JSON}),
        (
            "vscode",
            ["--http", URL],
            {".vscode/mcp.json": USER_JSON.replace("mcpServers", "servers")},
        ),
        ("codex", [], {}),
        ("codex", ["--scope", "local"], {"~/.codex/config.toml": CODEX_TOML}),
        ("codex", ["--scope", "local"], {}),
        ("continue", [], {".continue/mcpServers/github.yaml": "name: github\n"}),
    ],
)
def test_uninstall_restores_the_files_byte_for_byte(setup, project, home, client, args, existing):
    for rel, text in existing.items():
        path = home / rel[2:] if rel.startswith("~/") else project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{project}", str(project)))
    before = _tree(project), _tree(home)
    setup(project, client, *args)
    assert (_tree(project), _tree(home)) != before, "setup wrote nothing"
    out = setup(project, client, *args, "--uninstall")
    assert "removed" in out.stderr or "wrote" in out.stderr
    assert (_tree(project), _tree(home)) == before
    again = setup(project, client, *args, "--uninstall")  # nothing left to remove
    assert (_tree(project), _tree(home)) == before
    assert "nothing to remove" in again.stderr


def test_uninstall_keeps_what_the_user_added_since(setup, project, home):
    setup(project, "cursor")
    path = project / ".cursor" / "mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["mine"] = {"command": "x"}
    path.write_text(json.dumps(data, indent=2))
    setup(project, "cursor", "--uninstall")
    assert json.loads(path.read_text()) == {"mcpServers": {"mine": {"command": "x"}}}


def test_an_earlier_setups_committed_entry_is_pointed_out(setup, project):
    earlier = {
        "mcpServers": {
            "codesift": {
                "command": "/opt/codesift/.venv/bin/codesift",
                "args": ["mcp", "--tenant", "acme", "--repo-path", str(project)],
                "env": {"CODESIFT_DSN": "postgresql://postgres@/codesift"},
            }
        }
    }
    (project / ".mcp.json").write_text(json.dumps(earlier, indent=2) + "\n")
    result = setup(project, "claude-code")
    assert "--scope project --uninstall" in result.stderr, result.stderr
    setup(project, "claude-code", "--scope", "project", "--uninstall")
    assert not (project / ".mcp.json").exists()


def test_a_missing_or_non_git_folder_is_refused(setup, tmp_path, home):
    missing = tmp_path / "missing"
    result = setup(missing, "cursor", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "does not exist" in result.stderr
    assert not missing.exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    for client in ("cursor", "claude-code", "codex"):
        result = setup(plain, client, check=False)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert "not a git repository" in result.stderr, result.stderr
    assert _tree(plain) == {} and _tree(home) == {}


def test_a_subfolder_of_a_checkout_sets_up_its_top_level(setup, project):
    setup(project / "shop", "cursor")
    assert (project / ".cursor" / "mcp.json").exists()
    assert not (project / "shop" / ".cursor").exists()


def test_agents_md_reaches_claude_code(setup, project):
    (project / "AGENTS.md").write_text("# Agents\n\nRun make test.\n")
    (project / "CLAUDE.md").write_text("# Claude\n\nBe brief.\n")
    setup(project, "claude-code", "--agents-md")
    agents = (project / "AGENTS.md").read_text()
    claude = (project / "CLAUDE.md").read_text()
    assert "search_code" in agents
    assert claude.startswith("# Claude\n\nBe brief.\n")
    assert "@AGENTS.md" in claude.splitlines(), claude  # Claude Code imports it
    setup(project, "claude-code", "--agents-md")
    assert (project / "CLAUDE.md").read_text() == claude


def test_agents_md_with_claude_md_already_importing_it(setup, project):
    (project / "CLAUDE.md").write_text("@AGENTS.md\n")
    setup(project, "claude-code", "--agents-md")
    assert (project / "CLAUDE.md").read_text() == "@AGENTS.md\n"
    linked = project / "CLAUDE.md"
    linked.unlink()
    linked.symlink_to("AGENTS.md")  # the usual way to share one file: it reaches the block
    result = setup(project, "claude-code", "--agents-md")
    assert linked.is_symlink() and "search_code" in linked.read_text(), result.stderr


def test_a_file_that_does_not_parse_is_left_alone(setup, project, home):
    path = project / ".mcp.json"
    path.write_text('{"mcpServers": {"github": ')  # truncated by an editor
    result = setup(project, "claude-code", "--scope", "project", check=False)
    assert result.returncode == 1
    assert "not valid JSON" in result.stderr
    assert path.read_text() == '{"mcpServers": {"github": '
    (home / ".claude.json").write_text("{,}")
    result = setup(project, "claude-code", check=False)
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    assert (home / ".claude.json").read_text() == "{,}"


def test_codex_toml_keeps_everything_else(setup, project, home):
    codex = home / ".codex"
    codex.mkdir()
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
    (codex / "config.toml").write_text(original)
    setup(project, "codex", "--scope", "local")
    text = (codex / "config.toml").read_text()
    assert text.startswith(original)  # appended; nothing of the user's touched
    data = tomllib.loads(text)
    assert data["mcp_servers"]["github"]["env"] == {"TOKEN": "abc"}
    assert data["profiles"]["fast"]["model"] == "gpt-5"
    (name,) = [n for n in data["mcp_servers"] if n.startswith("codesift")]
    assert data["mcp_servers"][name]["args"][:3] == ["mcp", "--tenant", "acme"]
    setup(project, "codex", "--scope", "local")
    assert (codex / "config.toml").read_text() == text
    # changed: our table is replaced in place, the rest stays byte for byte
    setup(project, "codex", "--scope", "local", "--tenant", "other")
    changed = (codex / "config.toml").read_text()
    assert changed.startswith(original)
    assert tomllib.loads(changed)["mcp_servers"][name]["args"][:3] == ["mcp", "--tenant", "other"]
    assert changed.count(f"[mcp_servers.{name}]") == 1


def test_continue_block_file_and_dry_run(setup, project):
    out = setup(project, "continue", "--dry-run")
    assert not (project / ".continue").exists()  # dry run writes nothing
    assert "mcpServers:" in out.stdout and "codesift" in out.stdout
    other = project / ".continue" / "mcpServers" / "github.yaml"
    other.parent.mkdir(parents=True)
    other.write_text("name: github\n")
    setup(project, "continue")
    ours = yaml.safe_load((project / ".continue" / "mcpServers" / "codesift.yaml").read_text())
    assert ours["mcpServers"][0]["args"] == ["mcp", "--tenant", "acme"]
    assert ours["mcpServers"][0]["env"] == {"CODESIFT_DSN": "${{ secrets.CODESIFT_DSN }}"}
    assert other.read_text() == "name: github\n"


def test_agents_md_is_appended_once(setup, project):
    (project / "AGENTS.md").write_text("# Agents\n\nRun make test before committing.\n")
    setup(project, "codex", "--agents-md")
    text = (project / "AGENTS.md").read_text()
    assert text.startswith("# Agents\n\nRun make test before committing.\n")
    assert "search_code" in text and "find_symbol" in text and "related_files" in text
    setup(project, "codex", "--agents-md")
    assert (project / "AGENTS.md").read_text() == text
    assert not (project / "CLAUDE.md").exists()  # only for Claude Code


@pytest.fixture
def password_role(db, dsn):
    """A login role with a password that may act as the loader (dropped afterwards)."""
    role = f"setup_pw_{os.getpid()}"
    db.execute(f"create role {role} login password 'hunter2' in role codesift_loader")
    try:
        params = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
        yield make_conninfo(**{**params, "user": role, "password": "hunter2"})
    finally:
        db.execute(f"drop role {role}")


def test_password_in_dsn_is_not_written_without_consent(setup, project, home, password_role):
    result = setup(project, "claude-code", check=False, dsn=password_role)
    assert result.returncode == 1 and "password" in result.stderr
    assert not (home / ".claude.json").exists()
    setup(project, "claude-code", "--allow-password", dsn=password_role)
    assert "hunter2" in (home / ".claude.json").read_text()
    # a project file never holds it, consent or not
    setup(project, "cursor", dsn=password_role)
    assert "hunter2" not in (project / ".cursor" / "mcp.json").read_text()


def test_unknown_client_and_scope(setup, project):
    result = setup(project, "emacs", check=False)
    assert result.returncode == 1 and "unknown client" in result.stderr
    result = setup(project, "cursor", "--scope", "local", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert not (project / ".cursor").exists()


SECRET = "TOP SECRET: an outside file's contents\n"


def _outside_and_project(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text(SECRET)
    servers = {"mcpServers": {"private": {"command": "x", "env": {"TOKEN": SECRET}}}}
    (outside / "victim.json").write_text(json.dumps(servers))
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    return outside, project


@pytest.mark.parametrize(
    "client, args, link",
    [
        ("claude-code", ["--agents-md"], "AGENTS.md.codesift-tmp"),
        ("claude-code", ["--agents-md"], "CLAUDE.md.codesift-tmp"),
        ("claude-code", ["--scope", "project"], ".mcp.json.codesift-tmp"),
        ("cursor", [], ".cursor/mcp.json.codesift-tmp"),
        ("codex", [], ".codex/config.toml.codesift-tmp"),
        ("continue", [], ".continue/mcpServers/codesift.yaml.codesift-tmp"),
    ],
)
def test_a_symlinked_temporary_file_is_never_written_through(setup, tmp_path, client, args, link):
    outside, project = _outside_and_project(tmp_path)
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(outside / "victim")
    before = _tree(outside)
    result = setup(project, client, *args, check=False)
    assert result.returncode == 0, result.stderr
    assert _tree(outside) == before, "a file outside the project was written"
    assert (project / link).is_symlink(), "the link was moved into the config's place"
    target = project / link.removesuffix(".codesift-tmp")
    assert not target.is_symlink() and "codesift" in target.read_text().lower()
    assert SECRET not in target.read_text()


@pytest.mark.parametrize(
    "client, args, link, to",
    [
        ("claude-code", ["--agents-md"], "AGENTS.md", "victim"),  # copied it into the project
        ("claude-code", ["--agents-md"], "CLAUDE.md", "victim"),
        ("claude-code", ["--scope", "project"], ".mcp.json", "victim.json"),  # its servers in
        ("claude-code", ["--scope", "project"], ".mcp.json", "missing"),  # dangling: outside
        ("cursor", [], ".cursor/mcp.json", "victim.json"),
        ("cursor", [], ".cursor", "."),  # wrote outside/mcp.json
        ("vscode", [], ".vscode", "."),
        ("codex", [], ".codex", "."),
        ("continue", [], ".continue", "."),
        ("continue", [], ".continue/mcpServers", "."),
    ],
)
def test_a_symlink_in_the_project_is_refused(setup, tmp_path, client, args, link, to):
    outside, project = _outside_and_project(tmp_path)
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(outside / to)
    outside_before, project_before = _tree(outside), _tree(project)
    for extra in ([], ["--uninstall"]):
        result = setup(project, client, *args, *extra, check=False)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert f"{project / link} is a symbolic link" in result.stderr, result.stderr
        assert _tree(outside) == outside_before, "something outside the project changed"
        assert _tree(project) == project_before, "the project changed"


def test_a_fifo_or_folder_in_a_config_files_place_is_refused(setup, tmp_path):
    _, project = _outside_and_project(tmp_path)
    os.mkfifo(project / ".mcp.json")  # reading it would block forever
    result = setup(project, "claude-code", "--scope", "project", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "is not a regular file" in result.stderr, result.stderr
    (project / ".mcp.json").unlink()
    (project / "AGENTS.md").mkdir()
    result = setup(project, "claude-code", "--scope", "project", "--agents-md", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "is not a regular file" in result.stderr, result.stderr
    assert not (project / ".mcp.json").exists()
