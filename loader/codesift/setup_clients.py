"""`codesift setup CLIENT`: register codesift's MCP server with a coding agent.

Where (the scope, `--scope`): a file meant to be committed is written without anything of
this machine, and one that holds this machine's paths is a per-user file:

    claude-code  local   ~/.claude.json, projects[<checkout>].mcpServers.codesift (default)
                 project .mcp.json                          {"mcpServers": {...}}
    cursor       project .cursor/mcp.json                   {"mcpServers": {...}}
    vscode       project .vscode/mcp.json                   {"servers": {...}}
    codex        project .codex/config.toml                 [mcp_servers.codesift] (default;
                                                            read in a trusted project only)
                 local   $CODEX_HOME/config.toml            [mcp_servers.codesift-<name>-<hash>]
    continue     project .continue/mcpServers/codesift.yaml (a block file of its own)

A local entry runs this venv's codesift with --repo-path <checkout> and the database's DSN
as a literal. A project entry runs `codesift` from PATH, re-indexes the folder the client
opened (`${workspaceFolder}` where the client has it, else the server's cwd) and takes the
DSN from the environment by reference (`${CODESIFT_DSN}`, `${env:CODESIFT_DSN}`, Codex's
`env_vars`, Continue's `${{ secrets.CODESIFT_DSN }}`). Cursor, VS Code and Continue keep
MCP servers per user only in files every project shares, so they have no local scope.

The DSN is never a superuser's (or one that bypasses row-level security): setup asks the
database, and for such a DSN writes (or tells you to export) the same DSN with the role
codesift_loader and no password instead. The stdio server needs that role: its query
tools work as any role of codesift, and sync_index indexes as the loader. With --http the
entry is the server's URL and `Authorization: Bearer` the token's environment variable, in
the client's syntax; the token itself is never read.

Each file is merged, never replaced: only codesift's entry is written, everything else is
kept byte for byte (JSON and TOML are edited as text, then parsed to check that nothing else
changed). `--uninstall` removes exactly that entry, and a file (and folder) left holding
nothing; after a setup it gives the file back byte for byte. A file that does not parse is
left alone with an error. Running it twice changes nothing.

Nothing is read or written through a symlink below the project or the home folder (a
checkout may commit one as `.mcp.json`, `AGENTS.md`, `CLAUDE.md`, `.cursor/` or a
temporary file's name, pointing outside): each component is opened with O_NOFOLLOW from
the folder above it, a link is refused with an error naming it, and a file is replaced
through a temporary file of a random name created with O_EXCL in the same folder, renamed
relative to that folder's descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from . import db
from .errors import CodesiftError, ConnectionFailed
from .tool_guide import WHEN_TO_CALL

SERVER = "codesift"
CLIENTS = ("claude-code", "cursor", "vscode", "codex", "continue")
SCOPES = ("local", "project")
LOCAL_SCOPE = ("claude-code", "codex")  # the clients with a per-user place for one project
AGENTS_BEGIN = "<!-- codesift:begin -->"
AGENTS_END = "<!-- codesift:end -->"
TOKEN_ENV = "CODESIFT_TOKEN"
DSN_ENV = "CODESIFT_DSN"
# Codex waits 10 s for a server by default; codesift's first start (the MCP SDK's import,
# the database's first connection) can take longer on a loaded machine
CODEX_STARTUP_TIMEOUT = 30
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def agents_block() -> str:
    """The AGENTS.md block on when to call which tool: one item per tool of the server, in
    its order (tool_guide)."""
    items = "\n".join(
        textwrap.fill(
            f"- `{name}`: {when}",
            width=90,
            subsequent_indent="  ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        for name, when in WHEN_TO_CALL.items()
    )
    return (
        f"{AGENTS_BEGIN}\n## Code search (codesift MCP server)\n\n"
        "This project is indexed by codesift; its MCP tools answer from the index:\n\n"
        f"{items}\n{AGENTS_END}\n"
    )


# the CLAUDE.md block: Claude Code reads CLAUDE.md, not AGENTS.md, and imports a file named
# on a line of its own
CLAUDE_IMPORT = f"{AGENTS_BEGIN}\n@AGENTS.md\n{AGENTS_END}\n"
_IMPORTS_AGENTS = re.compile(r"^[ \t]*@(\./)?AGENTS\.md[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Target:
    """A configuration file: `parts` below `base`. The base (the project folder, HOME,
    CODEX_HOME) is the user's choice and opened as given; no component of `parts` is ever
    followed if it is a symlink."""

    base: Path
    parts: tuple[str, ...]
    remove_base: bool = False  # a client's own folder (CODEX_HOME): removed once empty

    @property
    def path(self) -> Path:
        return self.base.joinpath(*self.parts)


@dataclass
class Change:
    target: Target
    before: str | None  # None: the file did not exist
    after: str | None  # None: the file is removed (and its folders, if left empty)
    preview: str | None = None  # what --dry-run shows, when not the whole file

    @property
    def path(self) -> Path:
        return self.target.path

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Options:
    client: str
    project: Path  # the checkout's top level
    tenant: str = "default"
    scope: str = "project"
    http: str | None = None  # the server's URL (--http)
    token_env: str = TOKEN_ENV
    allow_password: bool = False
    agents_md: bool = False
    uninstall: bool = False


@dataclass
class Plan:
    changes: list[Change]
    notes: list[str] = field(default_factory=list)


# ---- the project, the scope, the DSN ----


def project_root(folder: str | Path) -> Path:
    """The top level of the checkout `folder` is in; refuses a missing folder and one that
    is not in a git repository."""
    from .git import repo_root

    path = Path(folder).expanduser().absolute()
    return repo_root(path).resolve()


def default_scope(client: str, http: bool) -> str:
    """Claude Code's local scope for a stdio entry (it holds this machine's paths), the
    project's file for the rest (written without them)."""
    return "local" if client == "claude-code" and not http else "project"


def check_options(options: Options) -> None:
    if options.client not in CLIENTS:
        raise CodesiftError(f"unknown client '{options.client}': one of {', '.join(CLIENTS)}")
    if options.scope not in SCOPES:
        raise CodesiftError(f"unknown scope '{options.scope}': local or project")
    if options.scope == "local" and options.client not in LOCAL_SCOPE:
        raise CodesiftError(
            f"{options.client} keeps MCP servers per user only in a file every project shares: "
            "use --scope project (its project file holds nothing of this machine)"
        )
    if options.http is not None:
        check_url(options.http)
        if not _ENV_NAME.fullmatch(options.token_env):
            raise CodesiftError(
                f"--token-env '{options.token_env}' is not an environment variable's name"
            )
        if options.client == "claude-code" and options.scope == "local":
            raise CodesiftError(
                "Claude Code expands ${VAR} only in .mcp.json, so a local-scope entry would "
                "need the token itself: use --scope project (the default with --http)"
            )


def check_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CodesiftError(f"--http wants the server's URL, e.g. https://host/mcp (got '{url}')")
    if parts.username is not None or parts.password is not None or "token" in parts.query.lower():
        raise CodesiftError(
            "--http: the URL holds credentials, which would be written into the config; the "
            "token is sent from an environment variable instead (--token-env)"
        )


@dataclass(frozen=True)
class ServiceDsn:
    """The DSN an agent's server uses: never a superuser's."""

    dsn: str
    role: str
    loader: bool  # may act as codesift_loader (sync_index)
    derived: bool  # the loader's DSN made from a superuser's


def service_dsn(dsn: str) -> ServiceDsn:
    """`dsn` if its role is neither a superuser nor bypasses row-level security, else the
    same DSN as codesift_loader without a password (checked by connecting)."""
    privileged, role, loader = _role_of(dsn)
    if not privileged:
        return ServiceDsn(dsn, role, loader, derived=False)
    derived = with_user(dsn, db.LOADER_ROLE)
    try:
        privileged, role, loader = _role_of(derived)
    except ConnectionFailed as exc:
        raise CodesiftError(
            f"CODESIFT_DSN's role '{role}' is a superuser (or bypasses row-level security), "
            f"which setup never writes into a config; the same DSN as {db.LOADER_ROLE} "
            f"does not connect:\n  {exc}\n  Let {db.LOADER_ROLE} log in (run `codesift "
            f"migrate`; give it a password with `alter role {db.LOADER_ROLE} password "
            f"'...'` and put it in ~/.pgpass), or set CODESIFT_DSN to a {db.LOADER_ROLE} DSN"
        ) from None
    if privileged:
        raise CodesiftError(
            f"role {db.LOADER_ROLE} is a superuser or bypasses row-level security: "
            f"`alter role {db.LOADER_ROLE} nosuperuser nobypassrls`"
        )
    return ServiceDsn(derived, role, loader, derived=True)


def _role_of(dsn: str) -> tuple[bool, str, bool]:
    """(superuser or BYPASSRLS, the role, may act as codesift_loader) of the DSN's role."""
    with db.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        try:
            row = conn.execute(
                "select rolsuper or rolbypassrls, current_user::text,"
                " case when exists (select from pg_roles where rolname = %(loader)s)"
                " then pg_has_role(current_user, %(loader)s, 'USAGE') else false end"
                " from pg_roles where rolname = current_user",
                {"loader": db.LOADER_ROLE},
            ).fetchone()
        except psycopg.Error as exc:
            raise CodesiftError(f"cannot check CODESIFT_DSN's role: {exc}") from None
    if row is None:
        raise CodesiftError("cannot check CODESIFT_DSN's role: it is not in pg_roles")
    return bool(row[0]), row[1], bool(row[2])


def with_user(dsn: str, user: str) -> str:
    """The DSN with another role and no password (kept a URL if it was one)."""
    if re.match(r"postgres(ql)?://", dsn):
        parts = urlsplit(dsn)
        hosts = parts.netloc.rpartition("@")[2]
        query = [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k not in ("user", "password")
        ]
        netloc = f"{quote(user, safe='')}@{hosts}"
        encoded = urlencode(query, safe="/:,", quote_via=quote)
        out = urlunsplit((parts.scheme, netloc, parts.path, encoded, parts.fragment))
    else:
        params = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
        out = make_conninfo("", **{**params, "user": user})
    check = conninfo_to_dict(out)
    if check.get("user") != user or check.get("password"):
        raise CodesiftError(f"cannot make a {user} DSN from CODESIFT_DSN: set it to one")
    return out


# ---- the entries ----

_DSN_REF = {
    "claude-code": f"${{{DSN_ENV}}}",
    "cursor": f"${{env:{DSN_ENV}}}",
    "vscode": f"${{env:{DSN_ENV}}}",
    "continue": f"${{{{ secrets.{DSN_ENV} }}}}",
}


def _token_ref(client: str, name: str) -> str:
    return {
        "claude-code": f"${{{name}}}",
        "cursor": f"${{env:{name}}}",
        "vscode": f"${{env:{name}}}",
        "continue": f"${{{{ secrets.{name} }}}}",
    }[client]


def codesift_command() -> Path:
    return Path(sys.executable).parent / "codesift"


def server_entry(options: Options, service: ServiceDsn | None) -> dict[str, Any]:
    """codesift's entry in the client's own terms (see the module's docstring)."""
    client = options.client
    if options.http is not None:
        if client == "codex":
            return {
                "url": options.http,
                "bearer_token_env_var": options.token_env,
                "startup_timeout_sec": CODEX_STARTUP_TIMEOUT,
            }
        auth = {"Authorization": f"Bearer {_token_ref(client, options.token_env)}"}
        if client == "continue":
            return {
                "type": "streamable-http",
                "url": options.http,
                "requestOptions": {"headers": auth},
            }
        entry: dict[str, Any] = {"url": options.http, "headers": auth}
        return {"type": "http", **entry} if client in ("claude-code", "vscode") else entry
    args = ["mcp", "--tenant", options.tenant]
    if options.scope == "local":
        assert service is not None  # a stdio entry is planned with the database's DSN
        if conninfo_to_dict(service.dsn).get("password") and not options.allow_password:
            raise CodesiftError(
                "CODESIFT_DSN holds a password, which would be written into the client's "
                "config file: use a password file (~/.pgpass) or peer authentication, or pass "
                "--allow-password (or --scope project, which references $CODESIFT_DSN)"
            )
        entry = {
            "command": str(codesift_command()),
            "args": [*args, "--repo-path", str(options.project)],
            "env": {DSN_ENV: service.dsn},
        }
    elif client == "codex":  # no variables in Codex's TOML: the server's cwd, env_vars
        entry = {"command": SERVER, "args": args, "env_vars": [DSN_ENV]}
    elif client in ("cursor", "vscode"):
        entry = {
            "command": SERVER,
            "args": [*args, "--repo-path", "${workspaceFolder}"],
            "env": {DSN_ENV: _DSN_REF[client]},
        }
    else:  # Claude Code and Continue start the server in the project
        entry = {"command": SERVER, "args": args, "env": {DSN_ENV: _DSN_REF[client]}}
    if client == "codex":
        entry["startup_timeout_sec"] = CODEX_STARTUP_TIMEOUT
    if client in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    return entry


def codex_name(project: Path) -> str:
    """A local-scope Codex entry's name: codesift-<folder>-<hash of the path>, so that two
    checkouts (of the same name, too) never share one."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", project.name).strip("-")[:40] or "project"
    digest = hashlib.sha256(os.fsencode(str(project))).hexdigest()[:6]
    return f"{SERVER}-{slug}-{digest}"


def claude_local_home() -> Path:
    """Where Claude Code keeps .claude.json: CLAUDE_CONFIG_DIR, else the home folder."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home())


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


# a JSON file's entry: (the target, the keys down to our entry, which of the objects on the
# way (the file, then each key's but the last) may be removed once they hold nothing)
@dataclass(frozen=True)
class JsonPlace:
    target: Target
    keys: tuple[str, ...]
    prunable: tuple[bool, ...]
    whole: bool = True  # --dry-run shows the whole file (else only our entry)


def json_place(options: Options) -> JsonPlace | None:
    project, client = options.project, options.client
    if client == "claude-code" and options.scope == "local":
        # a project's entry in ~/.claude.json that Claude Code made holds more than
        # mcpServers: then its (empty) mcpServers stays as Claude Code keeps it
        return JsonPlace(
            Target(claude_local_home(), (".claude.json",)),
            ("projects", str(project), "mcpServers", SERVER),
            (True, True, True, False),
            whole=False,
        )
    if client == "claude-code":
        return JsonPlace(Target(project, (".mcp.json",)), ("mcpServers", SERVER), (True, True))
    if client == "cursor":
        target = Target(project, (".cursor", "mcp.json"))
        return JsonPlace(target, ("mcpServers", SERVER), (True, True))
    if client == "vscode":
        target = Target(project, (".vscode", "mcp.json"))
        return JsonPlace(target, ("servers", SERVER), (True, True))
    return None


def plan(options: Options, service: ServiceDsn | None) -> Plan:
    """Every change `codesift setup` (or --uninstall) makes, and what to tell the user."""
    check_options(options)
    entry = None if options.uninstall else server_entry(options, service)
    notes: list[str] = []
    place = json_place(options)
    if place is not None:
        changes = [_plan_json(place, entry)]
    elif options.client == "codex":
        if options.scope == "local":
            target = Target(codex_home(), ("config.toml",), remove_base=True)
            name = codex_name(options.project)
        else:
            target, name = Target(options.project, (".codex", "config.toml")), SERVER
        changes = [_plan_codex(target, name, entry)]
    else:
        target = Target(options.project, (".continue", "mcpServers", f"{SERVER}.yaml"))
        before = _read(target)
        after = None if entry is None else _continue_yaml(entry)
        changes = [Change(target, before, after)]
    if options.agents_md:
        changes.append(plan_agents_md(options.project, options.uninstall))
        if options.client == "claude-code":
            changes.append(plan_claude_md(options.project, options.uninstall))
    if not options.uninstall:
        notes += _notes(options, service)
    return Plan(changes, notes)


def _notes(options: Options, service: ServiceDsn | None) -> list[str]:
    notes = []
    if options.http is None and options.scope == "project":
        found = shutil.which(SERVER)
        ours = codesift_command()
        if found is None or Path(found).resolve() != ours.resolve():
            where = f"finds {found}" if found else "finds none"
            notes.append(
                f"note: the project file runs `codesift` from PATH, which {where}: put "
                f"{ours.parent} on PATH, or `ln -s {ours} ~/.local/bin/codesift`"
            )
        if service is not None:
            where = " (or from ~/.continue/.env)" if options.client == "continue" else ""
            shown = service.dsn
            if conninfo_to_dict(shown).get("password"):
                shown = db.redacted(shown)
            role = f"{db.LOADER_ROLE}'s, not a superuser's" if service.derived else "this one"
            notes.append(
                f"the client passes CODESIFT_DSN from its environment{where}: set it ({role}) "
                f"where the client starts: export CODESIFT_DSN='{shown}'"
            )
    if options.http is not None:
        notes.append(
            f"the client sends ${options.token_env} as the bearer token: set it where the "
            "client starts (a token of `codesift token create --tenant T`)"
        )
    if options.client == "codex" and options.scope == "project":
        notes.append(
            "Codex reads .codex/config.toml only in a project it trusts (it asks when it "
            "first starts there); --scope local writes $CODEX_HOME/config.toml instead"
        )
    notes += _earlier_entries(options)
    if service is not None and options.http is None:
        if service.derived and options.scope == "local":
            notes.append(
                f"CODESIFT_DSN is a superuser's: the entry connects as {db.LOADER_ROLE} instead"
            )
        if not service.loader:
            notes.append(
                f"note: role '{service.role}' may not act as {db.LOADER_ROLE}, so the "
                "server's sync_index fails; the other tools answer"
            )
    return notes


def _earlier_entries(options: Options) -> list[str]:
    """Entries an earlier codesift setup wrote where this one no longer writes: .mcp.json
    with this machine's paths, Codex's one global [mcp_servers.codesift]."""
    notes = []
    try:
        if options.client == "claude-code" and options.scope == "local":
            text = _read(Target(options.project, (".mcp.json",)))
            entry = _get(json.loads(text), ("mcpServers", SERVER)) if text else None
            if isinstance(entry, dict) and str(entry.get("command", "")).startswith("/"):
                notes.append(
                    f"note: {options.project / '.mcp.json'} still holds the codesift entry of an "
                    "earlier setup, with this machine's paths and DSN (a committed file): "
                    "`codesift setup claude-code --scope project --uninstall` removes it"
                )
        if options.client == "codex":
            text = _read(Target(codex_home(), ("config.toml",)))
            servers = tomllib.loads(text).get("mcp_servers", {}) if text else {}
            if isinstance(servers, dict) and SERVER in servers:
                notes.append(
                    f"note: {codex_home() / 'config.toml'} still holds [mcp_servers.{SERVER}] of "
                    "an earlier setup, which every project sees (and the last one set up "
                    "repointed): remove that table by hand"
                )
    except (CodesiftError, ValueError):  # not ours to fix here
        pass
    return notes


# ---- JSON, edited as text ----

_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class _Member:
    key: str
    key_start: int
    value_start: int
    value_end: int


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str, start: int) -> tuple[list[_Member], int]:
    """The members of the object whose '{' is at `start` (valid JSON), and where its '}' is."""
    members: list[_Member] = []
    i = _skip(text, start + 1)
    if text[i] == "}":
        return members, i
    while True:
        key, after_key = _DECODER.raw_decode(text, i)
        colon = _skip(text, after_key)
        value_start = _skip(text, colon + 1)
        _, value_end = _DECODER.raw_decode(text, value_start)
        members.append(_Member(key, i, value_start, value_end))
        i = _skip(text, value_end)
        if text[i] == "}":
            return members, i
        i = _skip(text, i + 1)  # the comma


def _find(members: list[_Member], key: str) -> _Member | None:
    found = [m for m in members if m.key == key]
    return found[-1] if found else None  # as json.loads: the last of duplicate keys


def _line_indent(text: str, i: int) -> str:
    """The leading blanks of the line that position i is on."""
    head = text[text.rfind("\n", 0, i) + 1 : i]
    return head[: len(head) - len(head.lstrip(" \t"))]


def _indent_unit(text: str) -> str:
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else "  "


def _dump(value: Any, indent: str, unit: str, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _nest(keys: tuple[str, ...], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _json_set(text: str, keys: tuple[str, ...], value: Any) -> str:
    """`text` with the value at `keys` set, every other byte kept."""
    unit = _indent_unit(text)
    start = _skip(text, 0)
    for depth, key in enumerate(keys):
        members, close = _members(text, start)
        member = _find(members, key)
        if member is None:
            return _json_insert(
                text, start, members, close, key, _nest(keys[depth + 1 :], value), unit
            )
        if depth == len(keys) - 1:
            compact = "\n" not in text[start:close]
            indent = _line_indent(text, member.key_start)
            new = _dump(value, indent, unit, compact)
            return text[: member.value_start] + new + text[member.value_end :]
        if text[member.value_start] != "{":
            raise CodesiftError(f"'{key}' is not an object; fix it first")
        start = member.value_start
    raise AssertionError("keys is empty")


def _json_insert(
    text: str, start: int, members: list[_Member], close: int, key: str, value: Any, unit: str
) -> str:
    if members:
        last = members[-1]
        compact = "\n" not in text[start:close]
        if compact:
            member = f"{json.dumps(key)}: {_dump(value, '', unit, True)}"
            return text[: last.value_end] + ", " + member + text[last.value_end :]
        indent = _line_indent(text, members[0].key_start)
        member = f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, indent, unit, False)}"
        return text[: last.value_end] + ",\n" + indent + member + text[last.value_end :]
    outer = _line_indent(text, start)
    indent = outer + unit
    member = f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, indent, unit, False)}"
    return text[: start + 1] + "\n" + indent + member + "\n" + outer + text[close:]


def _json_remove(text: str, keys: tuple[str, ...], prunable: tuple[bool, ...]) -> str | None:
    """`text` without the member at `keys` (unchanged when it is not there), and without
    the objects on the way that it leaves empty, from the highest one `prunable` allows;
    None when that is the file's own object."""
    objects = [_skip(text, 0)]  # the '{' of the file's object, then of each key's
    chain: list[tuple[list[_Member], _Member]] = []
    for key in keys:
        members, _ = _members(text, objects[-1])
        member = _find(members, key)
        if member is None:
            return text
        chain.append((members, member))
        if len(chain) < len(keys):
            if text[member.value_start] != "{":
                return text
            objects.append(member.value_start)
    # objects[k] becomes empty when it holds only the member on our way and objects[k + 1]
    # becomes empty (the last holds our entry)
    level = len(keys) - 1  # remove the entry itself, unless an object on the way goes too
    empty = True
    for k in range(len(keys) - 1, -1, -1):
        empty = empty and len(chain[k][0]) == 1
        if not empty:
            break
        if prunable[k]:
            level = k - 1
    if level < 0:
        return None
    members, member = chain[level]
    return _cut(text, objects[level], members, member)


def _cut(text: str, start: int, members: list[_Member], member: _Member) -> str:
    i = members.index(member)
    if len(members) == 1:
        close = _members(text, start)[1]
        return text[: start + 1] + text[close:]
    if i == len(members) - 1:
        return text[: members[i - 1].value_end] + text[member.value_end :]
    return text[: member.key_start] + text[members[i + 1].key_start :]


def _load_json(text: str | None, path: Path) -> dict:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodesiftError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise CodesiftError(f"{path} is not a JSON object; fix it first")
    return data


def _get(data: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _plan_json(place: JsonPlace, entry: dict | None) -> Change:
    path = place.target.path
    before = _read(place.target)
    data = _load_json(before, path)
    keys = place.keys
    for depth in range(1, len(keys)):
        inner = _get(data, keys[:depth])
        if inner is not None and not isinstance(inner, dict):
            raise CodesiftError(f"{path}: '{keys[depth - 1]}' is not an object; fix it first")
    preview = json.dumps(_nest(keys, entry), indent=2, ensure_ascii=False) + "\n"
    if entry is None:
        if before is None or _get(data, keys) is None:
            return Change(place.target, before, before)
        after = _json_remove(before, keys, place.prunable)
        expected = _drop(json.loads(before), keys, place.prunable)
    else:
        if before is not None and _get(data, keys) == entry:
            return Change(place.target, before, before)  # unchanged, byte for byte
        if before is None or not before.strip():
            after = json.dumps(_nest(keys, entry), indent=2, ensure_ascii=False) + "\n"
        else:
            after = _json_set(before, keys, entry)
        expected = json.loads(before) if before and before.strip() else {}
        _put(expected, keys, entry)
    check = None if after is None else json.loads(after)  # never write what does not parse
    if check != expected:
        raise CodesiftError(f"{path}: could not edit the codesift entry safely; edit it by hand")
    return Change(place.target, before, after, None if place.whole else preview)


def _put(data: dict, keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


def _drop(data: dict, keys: tuple[str, ...], prunable: tuple[bool, ...]) -> dict | None:
    """What _json_remove does, on the parsed data (None: the file goes)."""
    path = [data]
    for key in keys[:-1]:
        path.append(path[-1][key])
    level = len(keys) - 1
    for k in range(len(keys) - 1, -1, -1):
        if len(path[k]) != 1:
            break
        if prunable[k]:
            level = k - 1
    if level < 0:
        return None
    del path[level][keys[level]]
    return data


# ---- Codex's TOML, edited as text ----


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(type(value))


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _codex_block(name: str, entry: dict) -> str:
    lines = [f"[mcp_servers.{_toml_key(name)}]"]
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _codex_spans(lines: list[str], name: str) -> list[tuple[int, int]]:
    """The line ranges of our tables ([mcp_servers.NAME] and its subtables), each up to the
    next table that is not ours."""
    ours = re.compile(rf"^mcp_servers\.(\"{re.escape(name)}\"|{re.escape(name)})(\..*)?$")
    spans, start = [], None
    for i, line in enumerate(lines):
        m = _TABLE.match(line)
        if not m:
            continue
        mine = bool(ours.match(m.group(1).replace(" ", "")))
        if mine and start is None:
            start = i
        elif not mine and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(lines)))
    return spans


def _load_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CodesiftError(f"{path} is not valid TOML ({exc}); fix it first") from None


def _plan_codex(target: Target, name: str, entry: dict | None) -> Change:
    path = target.path
    before = _read(target)
    text = before or ""
    data = _load_toml(text, path)
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise CodesiftError(f"{path}: 'mcp_servers' is not a table; fix it first")
    if entry is None and name not in servers:
        return Change(target, before, before)
    block = None if entry is None else _codex_block(name, entry)
    if entry is not None and servers.get(name) == entry:
        return Change(target, before, before)
    lines = text.splitlines(keepends=True)
    spans = _codex_spans(lines, name)
    out: list[str] = []
    pos = 0
    for i, (start, end) in enumerate(spans):
        out += lines[pos:start]
        pos = end
        if block is not None and i == 0:  # our table again, in its place
            keep = end
            while keep > start + 1 and not lines[keep - 1].strip():
                keep -= 1  # the blank lines before the next table stay
            out += [block, *lines[keep:end]]
        elif end == len(lines) and out and not out[-1].strip():
            out.pop()  # the blank line setup put before it
    out += lines[pos:]
    if block is not None and not spans:  # appended, after a blank line
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        if out:
            out.append("\n")
        out.append(block)
    merged: str | None = "".join(out)
    if not (merged or "").strip():
        merged = None  # it held only our entry: the file goes
    try:
        check = tomllib.loads(merged or "")  # never write what does not parse
    except tomllib.TOMLDecodeError:
        check = None
    mine = None if check is None else check.get("mcp_servers", {}).get(name)
    if (
        check is None
        or {k: v for k, v in check.get("mcp_servers", {}).items() if k != name}
        != {k: v for k, v in servers.items() if k != name}
        or {k: v for k, v in check.items() if k != "mcp_servers"}
        != {k: v for k, v in data.items() if k != "mcp_servers"}
        or mine != entry
    ):
        raise CodesiftError(f"{path}: could not edit the codesift entry safely; edit it by hand")
    preview = None if len(target.parts) > 1 else block
    return Change(target, before, merged, preview)


# ---- Continue's block file ----


def _yaml(value: Any, indent: str) -> list[str]:
    """A small YAML emitter for our entry: strings quoted as JSON (valid YAML), lists of
    strings in flow style."""
    lines = []
    for key, v in value.items():
        if isinstance(v, dict):
            lines.append(f"{indent}{key}:")
            lines += _yaml(v, indent + "  ")
        elif isinstance(v, list):
            lines.append(f"{indent}{key}: [{', '.join(_toml_string(x) for x in v)}]")
        else:
            lines.append(f"{indent}{key}: {_toml_string(v)}")
    return lines


def _continue_yaml(entry: dict) -> str:
    body = _yaml({"name": SERVER, **entry}, "    ")
    body[0] = "  - " + body[0].lstrip()
    return f"name: {SERVER}\nversion: 0.0.1\nschema: v1\nmcpServers:\n" + "\n".join(body) + "\n"


# ---- AGENTS.md and CLAUDE.md ----


def _put_block(text: str, block: str) -> str:
    if AGENTS_BEGIN in text and AGENTS_END in text:
        start = text.index(AGENTS_BEGIN)
        end = text.index(AGENTS_END, start) + len(AGENTS_END)
        return text[:start] + block.rstrip("\n") + text[end:]
    if not text:
        return block
    return text + ("\n" if text.endswith("\n") else "\n\n") + block


def _drop_block(text: str) -> str:
    """`text` without our block and the blank line _put_block put before it."""
    if AGENTS_BEGIN not in text or AGENTS_END not in text:
        return text
    start = text.index(AGENTS_BEGIN)
    end = text.index(AGENTS_END, start) + len(AGENTS_END)
    if text[end : end + 1] == "\n":
        end += 1
    head, tail = text[:start], text[end:]
    if head.endswith("\n\n") and (not tail or tail.startswith("\n")):
        head = head[:-1]
    return head + tail


def _plan_block(target: Target, block: str, uninstall: bool) -> Change:
    before = _read(target)
    text = before or ""
    if uninstall:
        after: str | None = _drop_block(text)
        if before is None or not (after or "").strip():
            after = None
        if after == text:
            after = before
    else:
        after = _put_block(text, block)
    return Change(target, before, after)


def plan_agents_md(project: Path, uninstall: bool = False) -> Change:
    return _plan_block(Target(project, ("AGENTS.md",)), agents_block(), uninstall)


def plan_claude_md(project: Path, uninstall: bool = False) -> Change:
    """An `@AGENTS.md` import in CLAUDE.md, unless CLAUDE.md already imports AGENTS.md (or
    is a link to it, the usual way to share one file)."""
    target = Target(project, ("CLAUDE.md",))
    if _links_to_agents_md(target):
        return Change(target, "", "")
    before = _read(target)
    text = before or ""
    if not uninstall and AGENTS_BEGIN not in text and _IMPORTS_AGENTS.search(text):
        return Change(target, before, before)
    return _plan_block(target, CLAUDE_IMPORT, uninstall)


def _links_to_agents_md(target: Target) -> bool:
    try:
        fd = os.open(target.base, _DIR)
    except OSError:
        return False
    try:
        return os.readlink(target.parts[-1], dir_fd=fd) in ("AGENTS.md", "./AGENTS.md")
    except OSError:
        return False
    finally:
        os.close(fd)


# ---- reading and writing, never through a symlink ----

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


def _open_folders(target: Target, create: bool) -> list[int] | None:
    """Descriptors of the base and of each folder below it down to the target file's, each
    component opened with O_NOFOLLOW from the one above (and made when missing, if
    `create`); None when a folder is missing and not `create`. The caller closes them."""
    try:
        fd = os.open(target.base, _DIR)
    except FileNotFoundError:
        if not create:
            return None
        os.makedirs(target.base, exist_ok=True)
        fd = os.open(target.base, _DIR)
    except NotADirectoryError:
        raise CodesiftError(f"{target.base} is not a folder") from None
    fds = [fd]
    path = target.base
    try:
        for part in target.parts[:-1]:
            path = path / part
            try:
                child = _open_child(fds[-1], part, path)
            except FileNotFoundError:
                if not create:
                    _close(fds)
                    return None
                with contextlib.suppress(FileExistsError):  # made since: checked below
                    os.mkdir(part, 0o777, dir_fd=fds[-1])
                child = _open_child(fds[-1], part, path)
            fds.append(child)
    except BaseException:
        _close(fds)
        raise
    return fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _read(target: Target) -> str | None:
    """The file's text; None when it (or a folder above it) does not exist. Refuses a
    symlink, a FIFO, a device or a folder in its place."""
    path = target.path
    try:
        fds = _open_folders(target, create=False)
        if fds is None:
            return None
        name = target.parts[-1]
        try:
            handle = os.open(
                name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                dir_fd=fds[-1],
            )
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refused(path, fds[-1], name, "regular file") from None
            raise
        finally:
            _close(fds)
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


def write(change: Change) -> None:
    """Replace the file atomically: a new file of a random name (O_EXCL, O_NOFOLLOW) in the
    same folder, renamed over it relative to the folder's descriptor; an existing file's
    permissions are kept. A change to None removes the file, then each folder below the
    base that it leaves empty. Never through a symlink."""
    if not change.changed:
        return
    path = change.path
    try:
        fds = _open_folders(change.target, create=change.after is not None)
        if fds is None:  # only without create: nothing to remove
            return
        try:
            name = change.target.parts[-1]
            if change.after is None:
                _remove(fds, change.target, path)
            else:
                _replace(fds[-1], name, change.after.encode("utf-8"), path)
        finally:
            _close(fds)
    except OSError as exc:
        raise CodesiftError(f"cannot write {path}: {exc.strerror or exc}") from None


def _remove(fds: list[int], target: Target, path: Path) -> None:
    name = target.parts[-1]
    try:
        st = os.lstat(name, dir_fd=fds[-1])
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise _refused(path, fds[-1], name, "regular file")
    os.unlink(name, dir_fd=fds[-1])
    for i in range(len(fds) - 1, 0, -1):  # the folders below the base, deepest first
        try:
            os.rmdir(target.parts[i - 1], dir_fd=fds[i - 1])
        except OSError:
            break  # not empty (or not ours to remove)
    else:
        if target.remove_base:
            with contextlib.suppress(OSError):
                os.rmdir(target.base)


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
