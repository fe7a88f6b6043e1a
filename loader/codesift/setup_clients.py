"""`codesift setup CLIENT`: register `codesift mcp` (stdio) with a coding agent.

Each client's configuration is merged, never replaced: only the `codesift` entry is
written, every other server and setting is kept byte for byte where the format allows
(JSON is re-serialised with the same data; TOML is edited as text, only our table).
A file that does not parse is left alone with an error. Running it twice changes nothing.

Nothing is read or written through a symlink below the project (a checkout may commit
one as `.mcp.json`, `AGENTS.md`, `.cursor/` or a temporary file's name, pointing outside):
each component is opened with O_NOFOLLOW from the folder above it, a link is refused with
an error naming it, and a file is replaced through a temporary file of a random name
created with O_EXCL in the same folder, renamed relative to that folder's descriptor.

    claude-code  .mcp.json                      {"mcpServers": {...}}   (project scope)
    cursor       .cursor/mcp.json               {"mcpServers": {...}}
    vscode       .vscode/mcp.json               {"servers": {...}}
    codex        $CODEX_HOME/config.toml        [mcp_servers.codesift]  (~/.codex)
    continue     .continue/mcpServers/codesift.yaml (a block file of its own)
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
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


@dataclass(frozen=True)
class Target:
    """A configuration file: `parts` below `base`. The base (the project folder, or
    CODEX_HOME) is the user's choice and opened as given; no component of `parts` is ever
    followed if it is a symlink."""

    base: Path
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.base.joinpath(*self.parts)


@dataclass
class Change:
    target: Target
    before: str | None  # None: the file did not exist
    after: str

    @property
    def path(self) -> Path:
        return self.target.path

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


def config_path(client: str, project: Path) -> Target:
    if client == "claude-code":
        return Target(project, (".mcp.json",))
    if client == "cursor":
        return Target(project, (".cursor", "mcp.json"))
    if client == "vscode":
        return Target(project, (".vscode", "mcp.json"))
    if client == "codex":
        home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return Target(Path(home), ("config.toml",))
    if client == "continue":
        return Target(project, (".continue", "mcpServers", f"{SERVER}.yaml"))
    raise CodesiftError(f"unknown client '{client}': one of {', '.join(CLIENTS)}")


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _refused(path: Path, dir_fd: int, name: str, want: str) -> CodesiftError:
    """The error for `name` in dir_fd (shown as `path`), which is not the `want` (a
    "regular file", a "folder") it should be."""
    try:
        link = stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        link = False
    if link:
        return CodesiftError(
            f"{path} is a symbolic link: codesift setup does not read or write through "
            f"links (one committed in a checkout can point outside the project); replace "
            f"it with a {want}, or edit the configuration by hand"
        )
    return CodesiftError(f"{path} is not a {want}; move it away first")


def _open_child(fd: int, name: str, path: Path) -> int:
    """The folder `name` in the folder `fd`, never through a symlink."""
    try:
        return os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(path, fd, name, "folder") from None
        raise


def _open_folder(target: Target, create: bool) -> int | None:
    """A descriptor of the target file's folder, each component below the base opened
    with O_NOFOLLOW from the one above (and made when missing, if `create`); None when
    a folder is missing and not `create`."""
    try:
        fd = os.open(target.base, _DIR)
    except FileNotFoundError:
        if not create:
            return None
        os.makedirs(target.base, exist_ok=True)
        fd = os.open(target.base, _DIR)
    except NotADirectoryError:
        raise CodesiftError(f"{target.base} is not a folder") from None
    path = target.base
    try:
        for part in target.parts[:-1]:
            path = path / part
            try:
                child = _open_child(fd, part, path)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                with contextlib.suppress(FileExistsError):  # made since: checked below
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = _open_child(fd, part, path)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(target: Target) -> str | None:
    """The file's text; None when it (or a folder above it) does not exist. Refuses a
    symlink, a FIFO, a device or a folder in its place."""
    path = target.path
    try:
        fd = _open_folder(target, create=False)
        if fd is None:
            return None
        name = target.parts[-1]
        try:
            handle = os.open(
                name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                dir_fd=fd,
            )
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(path, fd, name, "regular file") from None
            raise
        finally:
            os.close(fd)
        try:
            regular = stat.S_ISREG(os.fstat(handle).st_mode)
        except BaseException:
            os.close(handle)
            raise
        if not regular:  # a folder, a FIFO (opened without blocking), a device
            os.close(handle)
            raise CodesiftError(f"{path} is not a regular file; move it away first")
        with os.fdopen(handle, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CodesiftError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CodesiftError(f"{path} is not UTF-8 text; fix it first") from None


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
    target = config_path(client, project)
    path = target.path
    before = _read(target)
    if client in ("claude-code", "cursor"):
        after = _merge_json(before, "mcpServers", entry, path)
    elif client == "vscode":
        after = _merge_json(before, "servers", dict(entry, type="stdio"), path)
    elif client == "codex":
        after = _merge_codex(before, entry, path)
    else:
        after = _continue_yaml(entry)
    return Change(target, before, after)


def plan_agents_md(project: Path) -> Change:
    target = Target(project, ("AGENTS.md",))
    before = _read(target)
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
    return Change(target, before, after)


def write(change: Change) -> None:
    """Replace the file atomically: a new file of a random name (O_EXCL, O_NOFOLLOW) in the
    same folder, renamed over it relative to the folder's descriptor; an existing file's
    permissions are kept. Never through a symlink."""
    if not change.changed:
        return
    path = change.path
    try:
        fd = _open_folder(change.target, create=True)
        if fd is None:  # only without create
            raise FileNotFoundError(errno.ENOENT, "a folder is missing")
        try:
            _replace(fd, change.target.parts[-1], change.after.encode("utf-8"), path)
        finally:
            os.close(fd)
    except OSError as exc:
        raise CodesiftError(f"cannot write {path}: {exc.strerror or exc}") from None


def _replace(fd: int, name: str, data: bytes, path: Path) -> None:
    try:
        st: os.stat_result | None = os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refused(path, fd, name, "regular file")
    tmp = f".{name}.{secrets.token_hex(8)}.codesift-tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    handle = os.open(tmp, flags, 0o600 if st is not None else 0o666, dir_fd=fd)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
            if st is not None:
                os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))
        # a link put in `name`'s place since the lstat is replaced, never followed
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise
