"""`codesift setup CLIENT`: register `codesift mcp` (stdio) with a coding agent.

Each client's configuration is merged, never replaced: only the `codesift` entry is
written, every other server and setting is kept byte for byte where the format allows
(JSON is re-serialised with the same data; TOML is edited as text, only our table).
A file that does not parse is left alone with an error. Running it twice changes nothing.

    claude-code  .mcp.json                      {"mcpServers": {...}}   (project scope)
    cursor       .cursor/mcp.json               {"mcpServers": {...}}
    vscode       .vscode/mcp.json               {"servers": {...}}
    codex        $CODEX_HOME/config.toml        [mcp_servers.codesift]  (~/.codex)
    continue     .continue/mcpServers/codesift.yaml (a block file of its own)
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from .errors import CodesiftError

SERVER = "codesift"
CLIENTS = ("claude-code", "cursor", "vscode", "codex", "continue")
AGENTS_BEGIN = "<!-- codesift:begin -->"
AGENTS_END = "<!-- codesift:end -->"
AGENTS_BLOCK = f"""{AGENTS_BEGIN}
## Code search (codesift MCP server)

This project is indexed by codesift; its MCP tools answer from the index:

- `search_code`: a question about the code ("where are retries configured?") returns the
  relevant code with `path:start-end` citations. Use it before grep or opening many files.
- `find_symbol`: the definition of a function, class or method you can name (exact).
- `related_files`: what a file imports and what imports it (tests marked): call it before
  changing a file.
- `explain_search`: why search_code ranked what it did, when it missed something.
- `list_repositories`: the indexed repositories and whether their index is stale.
- `sync_index`: re-index after you edited files, when results look stale.
{AGENTS_END}
"""


@dataclass
class Change:
    path: Path
    before: str | None  # None: the file did not exist
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


def server_entry(dsn: str, tenant: str, project: Path, allow_password: bool) -> dict:
    if conninfo_to_dict(dsn).get("password") and not allow_password:
        raise CodesiftError(
            "CODESIFT_DSN holds a password, which would be written into the client's config "
            "file: use a password file (~/.pgpass) or peer authentication, or pass "
            "--allow-password"
        )
    codesift = Path(sys.executable).parent / "codesift"
    return {
        "command": str(codesift),
        "args": ["mcp", "--tenant", tenant, "--repo-path", str(project)],
        "env": {"CODESIFT_DSN": dsn},
    }


def config_path(client: str, project: Path) -> Path:
    if client == "claude-code":
        return project / ".mcp.json"
    if client == "cursor":
        return project / ".cursor" / "mcp.json"
    if client == "vscode":
        return project / ".vscode" / "mcp.json"
    if client == "codex":
        home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return Path(home) / "config.toml"
    if client == "continue":
        return project / ".continue" / "mcpServers" / f"{SERVER}.yaml"
    raise CodesiftError(f"unknown client '{client}': one of {', '.join(CLIENTS)}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _merge_json(before: str | None, key: str, entry: dict, path: Path) -> str:
    data: dict = {}
    if before is not None and before.strip():
        try:
            data = json.loads(before)
        except json.JSONDecodeError as exc:
            raise CodesiftError(f"{path} is not valid JSON ({exc}); fix it first") from None
        if not isinstance(data, dict):
            raise CodesiftError(f"{path} is not a JSON object; fix it first")
    servers = data.setdefault(key, {})
    if not isinstance(servers, dict):
        raise CodesiftError(f"{path}: '{key}' is not an object; fix it first")
    if servers.get(SERVER) == entry and before is not None:
        return before  # unchanged, byte for byte
    servers[SERVER] = entry
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _codex_block(entry: dict) -> str:
    args = ", ".join(_toml_string(a) for a in entry["args"])
    env = ", ".join(f"{k} = {_toml_string(v)}" for k, v in entry["env"].items())
    return (
        f"[mcp_servers.{SERVER}]\n"
        f"command = {_toml_string(entry['command'])}\n"
        f"args = [{args}]\n"
        f"env = {{ {env} }}\n"
    )


_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _merge_codex(before: str | None, entry: dict, path: Path) -> str:
    text = before or ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CodesiftError(f"{path} is not valid TOML ({exc}); fix it first") from None
    if data.get("mcp_servers", {}).get(SERVER) == entry:
        return text
    block = _codex_block(entry)
    lines = text.splitlines(keepends=True)
    ours = re.compile(rf"^mcp_servers\.(\"{SERVER}\"|{SERVER})(\..*)?$")
    out, skipping, replaced = [], False, False
    for line in lines:
        m = _TABLE.match(line)
        if m:
            skipping = bool(ours.match(m.group(1).replace(" ", "")))
            if skipping and not replaced:
                out.append(block)
                replaced = True
        if not skipping:
            out.append(line)
    if not replaced:
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        if out and out[-1].strip():
            out.append("\n")
        out.append(block)
    merged = "".join(out)
    check = tomllib.loads(merged)  # never write what does not parse
    others = {k: v for k, v in data.get("mcp_servers", {}).items() if k != SERVER}
    kept = {k: v for k, v in check.get("mcp_servers", {}).items() if k != SERVER}
    if kept != others or check["mcp_servers"][SERVER] != entry:
        raise CodesiftError(f"{path}: could not merge the codesift entry safely; add it by hand")
    return merged


def _continue_yaml(entry: dict) -> str:
    q = _toml_string  # JSON strings are valid YAML double-quoted scalars
    args = ", ".join(q(a) for a in entry["args"])
    env = "".join(f"      {k}: {q(v)}\n" for k, v in entry["env"].items())
    return (
        f"name: {SERVER}\nversion: 0.0.1\nschema: v1\nmcpServers:\n"
        f"  - name: {SERVER}\n    command: {q(entry['command'])}\n    args: [{args}]\n"
        f"    env:\n{env}"
    )


def plan(client: str, project: Path, entry: dict) -> Change:
    path = config_path(client, project)
    before = _read(path)
    if client in ("claude-code", "cursor"):
        after = _merge_json(before, "mcpServers", entry, path)
    elif client == "vscode":
        after = _merge_json(before, "servers", dict(entry, type="stdio"), path)
    elif client == "codex":
        after = _merge_codex(before, entry, path)
    else:
        after = _continue_yaml(entry)
    return Change(path, before, after)


def plan_agents_md(project: Path) -> Change:
    path = project / "AGENTS.md"
    before = _read(path)
    text = before or ""
    if AGENTS_BEGIN in text and AGENTS_END in text:
        start = text.index(AGENTS_BEGIN)
        end = text.index(AGENTS_END, start) + len(AGENTS_END)
        after = text[:start] + AGENTS_BLOCK.rstrip("\n") + text[end:]
    else:
        if not text or text.endswith("\n\n"):
            sep = ""
        else:
            sep = "\n" if text.endswith("\n") else "\n\n"
        after = text + sep + AGENTS_BLOCK
    return Change(path, before, after)


def write(change: Change) -> None:
    if not change.changed:
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = change.path.with_name(change.path.name + ".codesift-tmp")
    tmp.write_text(change.after, encoding="utf-8")
    if change.path.exists():
        os.chmod(tmp, change.path.stat().st_mode & 0o7777)
    os.replace(tmp, change.path)
