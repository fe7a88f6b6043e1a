"""The tools of `codesift mcp`, in one list: TOOLS.

Each tool is an async function whose name is the tool's name, whose docstring is the
description an agent reads, and whose parameters after the first (the ToolContext) are the
tool's input schema (each one described, bounded, and for `language` and `kind` the allowed
values); `Tool.output` is the schema of its structured rows (the MCP outputSchema). A tool
makes one call of a stored function (`Tool.calls`) as the call's tenant and formats the
rows. No retrieval logic lives here.

Every place in the code a tool prints, in its text and its rows, is a citation
(codesift_db/citations.py): 'repo:path' or 'repo:path:START-END'. Every tool that takes a
path takes one back, as printed, with or without its lines, or as 'repo/path' or a bare path.

TOOLS is read by ToolServer (the MCP server's tools, version, capabilities and error
messages), and by the tests that check the README's list of tools and the table in
docs/interfaces.md against it.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol

from codesift_db.citations import citation, readings, shown, unsafe_path
from codesift_db.diff_hunks import MAX_DIFF_CHARS
from codesift_db.ingest.languages import LANGUAGES, SYMBOL_KINDS, canonical
from codesift_db.packing import estimate_tokens
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    ValidationError,
    create_model,
)

from . import db, version
from .console import WHY_NAMED, named_mark, visible
from .errors import PLPY_PREFIX
from .impact import context_text, impact_lines
from .outline import outline_lines
from .references import callee_lines, caller_lines, reference_lines
from .tool_guide import WHEN_TO_CALL

if TYPE_CHECKING:
    from .mcp_settings import Settings

DEFAULT_BUDGET = 4000
# MCP clients refuse or truncate tool results much over ~25,000 tokens (Claude Code's
# default MAX_MCP_OUTPUT_TOKENS): a larger budget is refused, not silently cut
MAX_BUDGET = 25_000
MAX_QUESTION_CHARS = 20_000
MAX_NAME_CHARS = 512
MAX_PATH_CHARS = 4096
MAX_ROWS = 1000  # of find_references, callers and callees (codesift_db.references.MAX_ROWS)
DEFAULT_ROWS = 200
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)
LANGUAGE_NAMES = tuple(lang.name for lang in LANGUAGES)
LANGUAGE_ALIASES = tuple(a for lang in LANGUAGES for a in lang.aliases)


class QueryBackend(Protocol):
    """What the tools call on the server's databases (mcp_server.Backend)."""

    async def query(self, tenant_id: int, sql: str, params: dict) -> tuple[list, list, list]:
        """(column names, rows, notices) of one statement run as `tenant_id`."""
        ...


class ToolContext:
    """What the tools of one server share: its settings, the database, the tenant of the
    call being handled, and the ref that the tools taking a ref search when they name none
    (the repository's default; after sync_index of the worktree (stdio), that worktree's
    ref, so that edits show)."""

    def __init__(self, settings: Settings, backend: QueryBackend, tenant: Callable[[], int]):
        self.settings = settings
        self.backend = backend
        self.tenant = tenant
        self.ref: str | None = None

    def at(self, ref: str | None) -> str | None:
        return ref if ref is not None else self.ref

    async def query(self, sql: str, params: dict) -> tuple[list, list, list]:
        """(column names, rows, notices) of one statement run as the call's tenant."""
        return await self.backend.query(self.tenant(), sql, params)

    async def records(self, sql: str, params: dict) -> tuple[list[dict], list]:
        """(rows as dicts by column name, notices) of one statement, as query runs it."""
        names, rows, notices = await self.query(sql, params)
        return [dict(zip(names, r, strict=True)) for r in rows], notices


def _bounded(text: str, budget: int) -> str:
    """Text cut at a line end to at most `budget` estimated tokens."""
    if estimate_tokens(text) <= budget:
        return text
    lines, used = [], 0
    for line in text.split("\n"):
        cost = estimate_tokens(line + "\n")
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) + "\n... (cut at the token budget)"


def _fitted(
    render: Callable[[list[dict]], str], rows: list[dict], budget: int, what: str
) -> tuple[str, list[dict]]:
    """The text of the leading rows whose rendering fits `budget` estimated tokens, and
    those rows (the structured result is never more than the text shows); a last line
    says how many were cut."""
    if estimate_tokens(render(rows)) <= budget:
        return render(rows), rows
    kept, over = 0, len(rows)  # render(rows[:kept]) fits, render(rows[:over]) does not
    while over - kept > 1:
        mid = (kept + over) // 2
        if estimate_tokens(render(rows[:mid])) <= budget:
            kept = mid
        else:
            over = mid
    cut = (
        f"... ({len(rows) - kept:,} more {what} cut at the token budget: narrow the call, "
        "or raise token_budget)"
    )
    text = render(rows[:kept])
    return (text + "\n" + cut if text else cut), rows[:kept]


def _listed(
    render: Callable[[list[dict]], str],
    found: list[dict],
    budget: int,
    what: str,
    empty: str,
    notices: list[str],
    shown: Callable[[dict], dict] = lambda row: row,
) -> CallToolResult:
    """A listing tool's result: the leading rows that fit `budget` (_fitted), each row as
    `shown` gives it, or the text `empty` when there is no row."""
    if not found:
        return _result(empty, [], notices)
    text, rows = _fitted(render, found, budget, what)
    return _result(text, [shown(row) for row in rows], notices)


def _without_text(row: dict) -> dict:
    """A row as the structured result lists it: its text is the result's text already."""
    return {k: v for k, v in row.items() if k != "text"}


def jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return str(value)


def _result(text: str, rows: list[dict], notices: list[str]) -> CallToolResult:
    # a notice may quote an argument: its control characters shown as escapes ('\\x1b')
    notices = [visible(n) for n in notices]
    if notices:
        text = "\n".join(f"note: {n}" for n in notices) + ("\n\n" + text if text else "")
    structured = {"rows": jsonable(rows), "notices": notices}
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


# --- the parameters: their descriptions, bounds and allowed values are the input schema ---


def _no_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("holds a NUL character")
    return value


def _folded(value: Any) -> Any:
    """A language or kind as the schema lists it: lower case, a language's alias as its
    name ('Python', 'py' -> 'python'); anything else is left for the enum to refuse."""
    return canonical(value.strip()) if isinstance(value, str) else value


if TYPE_CHECKING:
    LanguageName = str
    KindName = str
else:
    LanguageName = Literal[LANGUAGE_NAMES]
    KindName = Literal[SYMBOL_KINDS]

Text = AfterValidator(_no_nul)
Question = Annotated[
    str,
    Text,
    Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="What to find, in plain words or identifiers ('where are redirects "
        "followed?', 'retry backoff').",
    ),
]
Repo = Annotated[
    str | None,
    Text,
    Field(
        max_length=MAX_NAME_CHARS,
        description="Only this repository (a name list_repositories shows); default: every "
        "repository you can search.",
    ),
]
PathPrefix = Annotated[
    str | None,
    Text,
    Field(
        max_length=MAX_PATH_CHARS,
        description="Only files whose path starts with this: a folder or file relative to "
        "the repository root ('src/flask/'), or as tools cite it ('flask:src/flask/', "
        "'flask:src/flask/app.py:10-42'), which also sets repo.",
    ),
]
Language = Annotated[
    LanguageName | None,
    BeforeValidator(_folded),
    Field(
        description="Only files of this language (any case; aliases "
        + ", ".join(LANGUAGE_ALIASES)
        + " are accepted too).",
    ),
]
Kind = Annotated[
    KindName | None,
    BeforeValidator(_folded),
    Field(description="Only definitions of this kind (any case)."),
]
Ref = Annotated[
    str | None,
    Text,
    Field(
        max_length=MAX_NAME_CHARS,
        description="An indexed ref (branch, tag or commit) of the repository; default: "
        "its default ref (list_repositories shows them).",
    ),
]
Budget = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_BUDGET,
        description=f"Most tokens the answer may take (1..{MAX_BUDGET:,}; MCP clients cut "
        "larger results): narrow the question or the path_prefix rather than raise it.",
    ),
]
SymbolName = Annotated[
    str,
    Text,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The identifier or qualified name, exactly: 'send', 'Session.send'.",
    ),
]
IncludeBody = Annotated[
    bool, Field(description="Return each definition's whole body; false: its signature only.")
]
Cited = Annotated[
    str,
    Text,
    Field(
        min_length=1,
        max_length=MAX_PATH_CHARS,
        description="The file, as tools cite it: 'flask:src/flask/app.py', "
        "'flask:src/flask/app.py:10-42' (the lines are ignored), or a path relative to the "
        "repository root ('src/flask/app.py').",
    ),
]
Depth = Annotated[
    int, Field(ge=1, le=3, description="Hops to follow (1..3): 2 adds the neighbours' own.")
]
Definition = Annotated[
    str,
    Text,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS + MAX_PATH_CHARS,
        description="The definition: its name ('send'), qualified name ('Session.send') or "
        "a citation of a line inside it, as tools print them ('flask:src/flask/app.py:42', "
        "'flask:src/flask/app.py:40-60').",
    ),
]
DefinitionFile = Annotated[
    str | None,
    Text,
    Field(
        max_length=MAX_PATH_CHARS,
        description="Only the definition in this file, when several have the name: a path "
        "relative to the repository root ('src/flask/app.py') or as tools cite it "
        "('flask:src/flask/app.py').",
    ),
]
MaxRows = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_ROWS,
        description=f"Most rows returned (1..{MAX_ROWS:,}); the text is cut at token_budget "
        "too: pass path or a qualified name to narrow rather than raise them.",
    ),
]


# --- the structured rows: each tool's outputSchema -------------------------------------


class SearchRow(BaseModel):
    rank: int = Field(description="1 for the most relevant item")
    repository: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None = Field(description="the definition the lines are, if any")
    kind: str | None = Field(
        description="the definition's kind, 'file', or 'outline': the signatures of a file's "
        "definitions the pack left out (find_symbol reads one)"
    )
    blob_sha: str | None
    ref: str | None
    indexed_commit: str | None
    score: float
    tokens: int = Field(description="the item's share of the token budget")
    truncated: bool = Field(
        description="only the leading lines are included (an outline: not every definition "
        "left out is listed)"
    )
    citation: str = Field(description="'repo:path:start-end', as the text heads the item")


class SymbolRow(BaseModel):
    repository: str
    path: str
    start_line: int
    end_line: int
    symbol: str = Field(description="the qualified name")
    symbol_name: str
    symbol_kind: str
    signature: str | None
    doc: str | None
    blob_sha: str | None
    indexed_commit: str | None
    match: str = Field(description="'exact' or 'case-insensitive'")
    citation: str = Field(description="'repo:path:start-end'")


class RelatedRow(BaseModel):
    repository: str
    related_path: str
    relation: str = Field(
        description="what the file asked about does to this one: imports, imported by, "
        "tests, tested by, references, referenced by, changes with"
    )
    hop: int
    via: str = Field(description="the file of the previous hop it was reached from")
    edge_kind: str = Field(description="the stored edge's relation")
    names: list[str] = Field(description="the names imported")
    line: int | None
    is_test: bool
    citation: str = Field(description="'repo:path' of the related file")


class ExplainRow(BaseModel):
    candidate: int
    repository: str
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str | None
    lexical_rank: int | None
    dense_rank: int | None
    named: int | None = Field(description="rank among the files and definitions the question names")
    failing: bool = Field(description="where a traceback in the question failed")
    graph_hop: int | None
    score: float | None
    decision: str | None = Field(description="packed, pruned (and by what), over budget")
    packed: bool | None
    tokens: int | None
    citation: str = Field(description="'repo:path:start-end'")


class RepositoryRow(BaseModel):
    repository: str
    ref: str
    is_default: bool
    checkout_path: str | None
    indexed_commit: str | None
    indexed_at: str | None
    head_commit: str | None
    head_seen_at: str | None
    stale: bool | None
    worktree: bool | None
    live_files: int
    symbols: int
    edges: int
    embedding_backlog: int
    embedding_refused: int | None = None


class SyncRow(BaseModel):
    repository: str
    ref: str
    commit: str
    files: int
    new_blobs: int
    skipped: dict[str, int] = Field(description="files left out, by reason")


class OutlineRow(BaseModel):
    repository: str
    path: str
    ordinal: int = Field(description="1 for the file's first symbol, in file order")
    depth: int = Field(description="0 at the top level, 1 for a method of a class, ...")
    kind: str
    name: str
    qualified_name: str
    signature: str | None
    doc: str | None = Field(description="the first line of its doc comment")
    start_line: int
    end_line: int
    name_line: int | None = Field(description="the line of its name (below decorators)")
    citation: str = Field(description="'repo:path:start-end'")


class MapRow(BaseModel):
    rank: int = Field(description="its place in the ranking (a file that did not fit: a gap)")
    repository: str
    path: str
    centrality: float = Field(description="PageRank over the file edges")
    tokens: int = Field(description="the file's share of the token budget")
    citation: str = Field(description="'repo:path', as its block in the text starts")


class ReferenceRow(BaseModel):
    repository: str
    path: str
    line: int
    symbol: str | None = Field(description="the definition the use is in (null: top level)")
    is_call: bool
    qualifier: str | None = Field(description="the object of a member use ('self', 'req')")
    resolution: str = Field(
        description="resolved (bound to the definition through an import, its own file or "
        "package) or by_name (only the name matches)"
    )
    definition: str | None = Field(description="'repo:path:start-end' of what it uses")
    line_text: str | None
    citation: str = Field(description="'repo:path:line-line' of the use")


class CallerRow(BaseModel):
    repository: str
    path: str
    caller: str | None = Field(description="the calling definition (null: top level)")
    caller_kind: str | None
    start_line: int | None
    end_line: int | None
    lines: list[int] = Field(description="the lines of its calls")
    resolution: str = Field(description="resolved or by_name")
    definition: str | None = Field(description="'repo:path:start-end' of what it calls")
    citation: str = Field(description="'repo:path:start-end' of the caller")


class CalleeRow(BaseModel):
    repository: str
    path: str
    symbol: str = Field(description="the calling definition")
    callee: str = Field(description="the name called")
    qualifier: str | None = Field(description="the object it is called on")
    lines: list[int] = Field(description="the lines of the calls")
    resolution: str = Field(
        description="resolved, by_name (candidates definitions have the name) or external "
        "(nothing at the ref defines it)"
    )
    definition: str | None = Field(description="'repo:path:start-end' of what it reaches")
    definition_symbol: str | None
    candidates: int | None
    module: str | None = Field(description="external: the import it comes through")
    citation: str = Field(description="'repo:path:first-last' of the calls")


class ImpactRow(BaseModel):
    rank: int = Field(description="1 for the most affected")
    repository: str
    path: str
    symbol: str | None = Field(description="the definition reached (null: the file)")
    kind: str | None
    start_line: int | None
    end_line: int | None
    relation: str = Field(
        description="the edge that reaches it: calls, calls_by_name, imports, tests, co_change"
    )
    hops: int = Field(description="edges from the target")
    via: str | None = Field(description="the citation of what it is reached from")
    chain: list[str] = Field(description="each step from the target: 'relation citation'")
    is_test: bool
    score: float = Field(description="the relation's weight, decayed per hop")
    citation: str


class DiffContextRow(BaseModel):
    rank: int = Field(description="1 for the first packed item")
    role: str = Field(
        description="change, hunk, caller or test; caller_list or test_list: the callers or "
        "tests of one file whose bodies did not fit, a line each ('START-END name')"
    )
    repository: str
    ref: str = Field(description="the ref its lines are of")
    path: str
    symbol: str | None
    start_line: int
    end_line: int
    reason: str = Field(description="why it is in the pack")
    tokens: int = Field(description="its share of the token budget")
    citation: str = Field(description="'repo:path:start-end', as its block in the text starts")


def _output(name: str, row: type[BaseModel]) -> type[BaseModel]:
    """The structured result of a tool: its rows and the database's notices."""
    return create_model(
        name,
        rows=(list[row], Field(description="One entry per result, in the text's order.")),  # type: ignore[valid-type]
        notices=(
            list[str],
            Field(description="What the database noted (stale index, nearest names)."),
        ),
    )


# --- path arguments ----------------------------------------------------------------------

# the names a path_prefix may start with
REPOSITORY_NAMES = (
    "select distinct name from codesift.repositories where tenant_id = codesift.current_tenant_id()"
)
# the first of the readings of a path_prefix (repository, prefix) that some live file of the
# scope starts with
PREFIX_READING = """
select c.i
from unnest(%(repos)s::text[], %(paths)s::text[]) with ordinality as c (repo, path, i)
where exists (
    select from codesift.repositories as r
    inner join codesift.files as f
        on f.tenant_id = r.tenant_id and f.repository_id = r.id and f.live
    where
        r.tenant_id = codesift.current_tenant_id()
        and r.name = coalesce(c.repo, %(repo)s::text, r.name)
        and (c.repo is null or %(repo)s::text is null or c.repo = %(repo)s::text)
        and case when %(ref)s::text is null then r.is_default else r.ref = %(ref)s::text end
        and starts_with(f.path, c.path)
)
order by c.i
limit 1
"""


def _refuse_unsafe(label: str, text: str, paths: list[str]) -> None:
    for path in paths:
        why = unsafe_path(path)
        if why:
            raise ToolError(
                f"{label} '{shown(text)}' {why}: give a path relative to the repository root, "
                "e.g. 'src/app.py' or 'repo:src/app.py'"
            )


async def _prefix(
    ctx: ToolContext, repo: str | None, path_prefix: str | None, ref: str | None
) -> tuple[str | None, str | None]:
    """(repo, path_prefix) of a path_prefix given as tools cite paths: 'repo:src/',
    'repo:src/app.py:10-42' and 'repo/src/' name the repository too; the most literal
    reading that some live file starts with wins."""
    if not path_prefix:
        return repo, path_prefix
    names: list[str] = []
    if ":" in path_prefix or "/" in path_prefix:
        _, rows, _ = await ctx.query(REPOSITORY_NAMES, {})
        names = [r[0] for r in rows]
    options = readings(path_prefix, names)
    _refuse_unsafe("path_prefix", path_prefix, [o.path for o in options])
    if len(options) > 1:
        _, rows, _ = await ctx.query(
            PREFIX_READING,
            {
                "repos": [o.repo for o in options],
                "paths": [o.path for o in options],
                "repo": repo,
                "ref": ref,
            },
        )
        if rows:
            chosen = options[rows[0][0] - 1]
            return repo or chosen.repo, chosen.path
    return repo, options[0].path


# --- the tools ---------------------------------------------------------------------------


async def search_code(
    ctx: ToolContext,
    question: Question,
    repo: Repo = None,
    token_budget: Budget = DEFAULT_BUDGET,
    path_prefix: PathPrefix = None,
    language: Language = None,
    ref: Ref = None,
) -> CallToolResult:
    """Search the indexed code with a question in plain words or identifiers and get the
    relevant code itself, ranked, de-duplicated and packed under a token budget, each
    piece headed by its citation '# repo:path:start-end (symbol)'. Use it instead of
    grep or reading many files when you need to know where or how something is done
    ('where are redirects followed?'). Narrow with repo, path_prefix or language. Where
    the database turns outlines on, a file the budget could not hold whole also comes as
    an outline (kind 'outline'): its other definitions' signatures, for find_symbol."""
    ref = ctx.at(ref)
    repo, path_prefix = await _prefix(ctx, repo, path_prefix, ref)
    _, rows, notices = await ctx.query(
        "select rank, repository, path, start_line, end_line, symbol, kind, blob_sha,"
        " ref, indexed_commit, score, tokens, truncated, text"
        " from codesift.pack_context(%(q)s, repo => %(repo)s, token_budget => %(budget)s,"
        " path_prefix => %(prefix)s, language => %(lang)s, ref => %(ref)s)",
        {
            "q": question,
            "repo": repo,
            "budget": token_budget,
            "prefix": path_prefix,
            "lang": language,
            "ref": ref,
        },
    )
    # the same text pack_context_text returns: the items in rank order
    text = "\n\n".join(r[13] for r in rows) if rows else "no code matched the question"
    keys = (
        "rank repository path start_line end_line symbol kind blob_sha ref indexed_commit"
        " score tokens truncated"
    ).split()
    found = [dict(zip(keys, r[:13], strict=True)) for r in rows]
    for f in found:
        f["citation"] = citation(f["repository"], f["path"], f["start_line"], f["end_line"])
    return _result(text, found, notices)


async def find_symbol(
    ctx: ToolContext,
    name: SymbolName,
    repo: Repo = None,
    kind: Kind = None,
    path_prefix: PathPrefix = None,
    include_body: IncludeBody = True,
    max_results: Annotated[
        int, Field(ge=1, le=50, description="Most definitions returned (1..50).")
    ] = 10,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """Jump to a definition: the exact function, class, method or section named `name`
    (or a qualified name like 'Session.send'), with its file, lines, signature, doc
    comment and body. Exact only: when nothing is named so, it returns no match and the
    nearest names, never a guess. Use it instead of grepping for 'def name' or
    'class Name' when you know the identifier."""
    ref = ctx.at(ref)
    repo, path_prefix = await _prefix(ctx, repo, path_prefix, ref)
    found, notices = await ctx.records(
        "select * from codesift.find_symbol(%(name)s, repo => %(repo)s, kind => %(kind)s,"
        " path_prefix => %(prefix)s, max_results => %(n)s, include_body => %(body)s,"
        " ref => %(ref)s)",
        {
            "ref": ref,
            "name": name,
            "repo": repo,
            "kind": kind,
            "prefix": path_prefix,
            "n": max_results,
            "body": include_body,
        },
    )
    parts = []
    for f in found:
        head = f"# {f['citation']} ({f['symbol_kind']} {f['symbol']}, {f['match']} match)"
        block = [head]
        if f["doc"]:
            block.append(f["doc"])
        block.append(f["body"] if include_body and f["body"] else f["signature"] or "")
        parts.append("\n".join(block))
    text = _bounded("\n\n".join(parts), token_budget) if parts else "no exact match"
    return _result(text, [{k: v for k, v in f.items() if k != "body"} for f in found], notices)


async def related_files(
    ctx: ToolContext,
    path: Cited,
    repo: Repo = None,
    depth: Depth = 1,
    max_results: Annotated[
        int, Field(ge=1, le=200, description="Most related files listed (1..200).")
    ] = 50,
    ref: Ref = None,
) -> CallToolResult:
    """The neighbourhood of a file in the code graph, each neighbour named by its edge:
    what it imports and what imports it (with the imported names), the tests that test it
    or that it tests, the files it references or that reference it, and the files that
    change with it in git history, up to `depth` hops, tests marked. Use it before
    changing a file to see its callers and the tests that cover it, instead of grepping
    imports. `path` is a file as any tool cites it ('repo:path', 'repo:path:10-42') or a
    path relative to the repository root."""
    found, notices = await ctx.records(
        "select * from codesift.related_files(%(path)s, repo => %(repo)s,"
        " depth => %(depth)s, max_results => %(n)s, ref => %(ref)s)",
        {"path": path, "repo": repo, "depth": depth, "n": max_results, "ref": ctx.at(ref)},
    )
    lines = []
    for f in found:
        f["citation"] = citation(f["repository"], f["related_path"])
        lines.append(
            f"{f['citation']}  {f['relation']}"
            + (
                f" (hop {f['hop']}, via {citation(f['repository'], f['via'])})"
                if f["hop"] > 1
                else ""
            )
            + (f"  names: {', '.join(f['names'])}" if f["names"] else "")
            + ("  [test]" if f["is_test"] else "")
        )
    text = "\n".join(lines) if lines else "no related files"
    return _result(_bounded(text, DEFAULT_BUDGET), found, notices)


async def outline(
    ctx: ToolContext,
    path: Cited,
    repo: Repo = None,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """The outline of one file: every definition in it (classes, functions, methods,
    sections), in file order and nested, each with its lines, signature and the first line
    of its doc comment. Use it instead of reading a whole file to see what it defines and
    where, then read only the lines you need. `path` is a file as any tool cites it
    ('repo:path', 'repo:path:10-42': the whole file's outline) or a path relative to the
    repository root."""
    found, notices = await ctx.records(
        "select repository, file_path as path, ordinal, depth, kind, name, qualified_name,"
        " signature, doc, start_line, end_line, name_line, citation"
        " from codesift.file_outline(%(path)s, repo => %(repo)s, ref => %(ref)s)",
        {"path": path, "repo": repo, "ref": ctx.at(ref)},
    )

    def render(part: list[dict]) -> str:
        return "\n".join(
            outline_lines(
                [
                    (f["repository"], f["path"], f["depth"], f["kind"], f["name"])
                    + (f["signature"], f["doc"], f["start_line"], f["end_line"])
                    for f in part
                ]
            )
        )

    empty = "no symbol is extracted from this file"
    return _listed(render, found, token_budget, "symbols", empty, notices)


async def repo_map(
    ctx: ToolContext,
    repo: Repo = None,
    path_prefix: PathPrefix = None,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """A map of a repository or folder: its most central files first (ranked by PageRank
    over imports, references, tests and co-changes), each headed by its citation
    'repo:path' with the outline of its definitions, packed under a token budget. Call it
    first in an unfamiliar repository to see where things live, instead of listing
    folders and opening files; narrow with repo or path_prefix."""
    ref = ctx.at(ref)
    repo, path_prefix = await _prefix(ctx, repo, path_prefix, ref)
    found, notices = await ctx.records(
        "select rank, repository, path, centrality, tokens, text from codesift.repo_map("
        "repo => %(repo)s, path_prefix => %(prefix)s, token_budget => %(budget)s,"
        " ref => %(ref)s)",
        {"repo": repo, "prefix": path_prefix, "budget": token_budget, "ref": ref},
    )
    for f in found:
        f["citation"] = citation(f["repository"], f["path"])

    def render(part: list[dict]) -> str:
        return "\n\n".join(visible(f["text"]) for f in part)

    text, shown_rows = _fitted(render, found, token_budget, "files")
    return _result(text or "no file to map", [_without_text(f) for f in shown_rows], notices)


async def _definition_file(ctx: ToolContext, path: str | None) -> None:
    """Refuse a `path` every reading of which leaves the repository, quoting it safely."""
    if path:
        _, rows, _ = await ctx.query(REPOSITORY_NAMES, {})
        _refuse_unsafe("path", path, [o.path for o in readings(path, [r[0] for r in rows])])


async def find_references(
    ctx: ToolContext,
    name: Annotated[
        str,
        Text,
        Field(
            min_length=1,
            max_length=MAX_NAME_CHARS,
            description="The definition: its name ('send'), qualified name ('Session.send') "
            "or a citation of a line inside it, as tools print them "
            "('flask:src/flask/app.py:42').",
        ),
    ],
    repo: Repo = None,
    path: DefinitionFile = None,
    max_rows: MaxRows = DEFAULT_ROWS,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """Every use of a definition: one line per use with its citation 'repo:path:line-line',
    the definition it is in and the line's text; resolved through imports to this very
    definition, or marked [by name] when only the name matches. Use it instead of grepping
    for a name before you rename or change a function, class or constant."""
    ref = ctx.at(ref)
    await _definition_file(ctx, path)
    found, notices = await ctx.records(
        "select repository, path, line, symbol, is_call, qualifier, resolution, definition,"
        " line_text, citation from codesift.find_references(%(name)s, repo => %(repo)s,"
        " ref => %(ref)s, path => %(path)s, max_rows => %(n)s)",
        {"name": name, "repo": repo, "ref": ref, "path": path, "n": max_rows},
    )

    def render(part: list[dict]) -> str:
        return "\n".join(
            reference_lines(
                [(f["citation"], f["symbol"], f["resolution"], f["line_text"]) for f in part]
            )
        )

    return _listed(render, found, token_budget, "uses", "no use found", notices)


async def callers(
    ctx: ToolContext,
    symbol: Definition,
    repo: Repo = None,
    path: DefinitionFile = None,
    max_rows: MaxRows = DEFAULT_ROWS,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """The definitions that call a function or method: one line per caller with its
    citation 'repo:path:start-end', its name and the lines of its calls, resolved through
    imports or marked [by name]. Use it before changing a signature or behaviour, to see
    what depends on it."""
    ref = ctx.at(ref)
    await _definition_file(ctx, path)
    found, notices = await ctx.records(
        "select repository, path, caller, caller_kind, start_line, end_line, lines,"
        " resolution, definition, citation from codesift.callers(%(symbol)s,"
        " repo => %(repo)s, ref => %(ref)s, path => %(path)s, max_rows => %(n)s)",
        {"symbol": symbol, "repo": repo, "ref": ref, "path": path, "n": max_rows},
    )

    def render(part: list[dict]) -> str:
        return "\n".join(
            caller_lines([(f["citation"], f["caller"], f["lines"], f["resolution"]) for f in part])
        )

    return _listed(render, found, token_budget, "callers", "no caller found", notices)


async def callees(
    ctx: ToolContext,
    symbol: Definition,
    repo: Repo = None,
    path: DefinitionFile = None,
    max_rows: MaxRows = DEFAULT_ROWS,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """What a function or method calls: each name it calls, with the lines of the calls
    and where that name is defined (its citation 'repo:path:start-end'), or that only the
    name matches [by name], or that nothing at the ref defines it (a library, and the
    import it comes through). Use it to follow a definition down without opening each
    file it calls into."""
    ref = ctx.at(ref)
    await _definition_file(ctx, path)
    found, notices = await ctx.records(
        "select repository, path, symbol, callee, qualifier, lines, resolution, definition,"
        " definition_symbol, candidates, module from codesift.callees(%(symbol)s,"
        " repo => %(repo)s, ref => %(ref)s, path => %(path)s, max_rows => %(n)s)",
        {"symbol": symbol, "repo": repo, "ref": ref, "path": path, "n": max_rows},
    )
    for f in found:
        lines = f["lines"] or [None]
        f["citation"] = citation(f["repository"], f["path"], min(lines), max(lines))

    def render(part: list[dict]) -> str:
        return "\n".join(
            callee_lines(
                [
                    (f["repository"], f["path"], f["symbol"], f["callee"], f["qualifier"])
                    + (f["lines"], f["resolution"], f["definition"], f["candidates"])
                    + (f["module"],)
                    for f in part
                ]
            )
        )

    return _listed(render, found, token_budget, "calls", "no call found", notices)


async def impact(
    ctx: ToolContext,
    target: Annotated[
        str,
        Text,
        Field(
            min_length=1,
            max_length=MAX_NAME_CHARS + MAX_PATH_CHARS,
            description="What may break: a definition ('send', 'Session.send', or a citation "
            "of a line inside it, 'flask:src/flask/app.py:42') or a file "
            "('flask:src/flask/app.py', 'src/flask/app.py').",
        ),
    ],
    repo: Repo = None,
    depth: Annotated[
        int,
        Field(ge=1, le=4, description="Hops to follow (1..4): 2 adds the callers' callers."),
    ] = 2,
    max_rows: MaxRows = DEFAULT_ROWS,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """What depends on a definition or a file, the most affected first: the definitions
    that call it and theirs, the files that import it, the files that change with it in
    git history, and the tests that reach it; one line per row with its citation, how it
    is reached (relation, hops, via what) and [test]. Use it before changing a definition
    or a file, to know what to re-check and which tests to run."""
    found, notices = await ctx.records(
        "select rank, repository, path, symbol, kind, start_line, end_line, relation, hops,"
        " via, chain, is_test, score, citation from codesift.impact(%(target)s,"
        " repo => %(repo)s, ref => %(ref)s, depth => %(depth)s, max_rows => %(n)s)",
        {"target": target, "repo": repo, "ref": ctx.at(ref), "depth": depth, "n": max_rows},
    )

    def render(part: list[dict]) -> str:
        return "\n".join(
            impact_lines(
                [
                    (f["citation"], f["symbol"], f["relation"], f["hops"], f["via"])
                    + (f["is_test"],)
                    for f in part
                ]
            )
        )

    return _listed(render, found, token_budget, "rows", "nothing depends on it", notices)


async def diff_context(
    ctx: ToolContext,
    repo: Repo = None,
    base_ref: Annotated[
        str | None,
        Text,
        Field(
            max_length=MAX_NAME_CHARS,
            description="The indexed ref before the change (with head_ref).",
        ),
    ] = None,
    head_ref: Annotated[
        str | None,
        Text,
        Field(
            max_length=MAX_NAME_CHARS,
            description="The indexed ref after the change (with base_ref).",
        ),
    ] = None,
    diff: Annotated[
        str | None,
        Text,
        Field(
            max_length=MAX_DIFF_CHARS,
            description="Instead of head_ref: a unified diff (the output of git diff) of a "
            "change no indexed ref holds, read against ref.",
        ),
    ] = None,
    token_budget: Budget = DEFAULT_BUDGET,
    ref: Ref = None,
) -> CallToolResult:
    """The context a review or a fix of a change needs, packed under a token budget: the
    changed definitions (and a diff's hunks), the changed lines outside them, their direct
    callers and the tests that reach them, each headed by its citation 'repo:path:start-end'
    and why it is there. The change is base_ref..head_ref (two indexed refs) or `diff`, a
    unified diff applied to `ref`. Use it to review a change or to find what a failing
    change broke, instead of reading the diff and grepping for callers."""
    found, notices = await ctx.records(
        "select rank, role, repository, ref, path, symbol, start_line, end_line, reason,"
        " tokens, citation, text from codesift.diff_context(repo => %(repo)s,"
        " base_ref => %(base)s, head_ref => %(head)s, token_budget => %(budget)s,"
        " diff => %(diff)s, ref => %(ref)s)",
        {
            "repo": repo,
            "base": base_ref,
            "head": head_ref,
            "budget": token_budget,
            "diff": diff,
            "ref": ref,
        },
    )

    def render(part: list[dict]) -> str:
        return visible(context_text([(f["role"], f["reason"], f["text"]) for f in part]))

    empty = "the change touches no indexed file"
    return _listed(render, found, token_budget, "items", empty, notices, _without_text)


async def explain_search(
    ctx: ToolContext,
    question: Question,
    repo: Repo = None,
    token_budget: Budget = DEFAULT_BUDGET,
    path_prefix: PathPrefix = None,
    language: Language = None,
    max_candidates: Annotated[
        int, Field(ge=1, le=200, description="Most candidates listed, best first (1..200).")
    ] = 40,
    ref: Ref = None,
) -> CallToolResult:
    """Why search_code chose what it chose: every candidate with its lexical and dense
    ranks, its rank among what the question names (`named`; `!` marks where a traceback in
    the question failed), graph hop, score and decision (packed, pruned as a near-duplicate,
    over budget). Use it when search_code missed something you expected, to see whether it
    was not found or found and dropped."""
    ref = ctx.at(ref)
    repo, path_prefix = await _prefix(ctx, repo, path_prefix, ref)
    found, notices = await ctx.records(
        "select candidate, repository, path, start_line, end_line, symbol, kind,"
        f" lexical_rank, dense_rank, {WHY_NAMED}, graph_hop,"
        " round(score::numeric, 5)::float8 as score, decision, packed, tokens"
        " from codesift.explain_context(%(q)s, repo => %(repo)s,"
        " token_budget => %(budget)s, path_prefix => %(prefix)s, language => %(lang)s,"
        " ref => %(ref)s) order by candidate limit %(n)s",
        {
            "ref": ref,
            "q": question,
            "repo": repo,
            "budget": token_budget,
            "prefix": path_prefix,
            "lang": language,
            "n": max_candidates,
        },
    )
    lines = ["# candidate  citation  symbol  lex dense named hop  score  decision"]
    for f in found:
        f["citation"] = citation(f["repository"], f["path"], f["start_line"], f["end_line"])
        named = named_mark(f["named"], f["failing"]) or "-"
        lines.append(
            f"{f['candidate']:>3}  {f['citation']}  {f['symbol'] or '-'}"
            f"  {f['lexical_rank'] or '-'} {f['dense_rank'] or '-'} {named}"
            f" {f['graph_hop'] if f['graph_hop'] is not None else '-'}"
            f"  {f['score']}  {f['decision']}"
        )
    return _result(_bounded("\n".join(lines), DEFAULT_BUDGET), found, notices)


async def repository_status(ctx: ToolContext, repo: str | None) -> tuple[list[dict], list[str]]:
    """The rows of codesift.repository_status (list_repositories and the resources)."""
    found, notices = await ctx.records(
        "select * from codesift.repository_status(%(repo)s)", {"repo": repo}
    )
    if ctx.settings.http:
        # checkout_path is the checkout's absolute path on the machine that indexed it: the
        # stdio server's own user may see it, not every holder of a token
        for row in found:
            row["checkout_path"] = None
    return found, notices


async def list_repositories(ctx: ToolContext) -> CallToolResult:
    """The repositories you can search, one line per indexed ref (branch, tag or commit;
    the default one is what tools use when they name no ref), each with its indexed
    commit, whether the index is stale (the checkout moved past it), file, symbol and
    edge counts and the embedding backlog. Call it first to learn the repository names
    other tools take."""
    found, notices = await repository_status(ctx, None)
    lines = [
        f"{f['repository']} @ {f['ref']}{' (default)' if f['is_default'] else ''}:"
        f" {(f['indexed_commit'] or '-')[:12]}"
        f"{' (stale: head ' + f['head_commit'][:12] + ')' if f['stale'] else ''}"
        f", {f['live_files']} files, {f['symbols']} symbols, {f['edges']} edges,"
        f" embedding backlog {f['embedding_backlog']}"
        for f in found
    ]
    text = "\n".join(lines) if lines else "no repository is indexed yet"
    return _result(text, found, notices)


async def sync_index(
    ctx: ToolContext,
    path: Annotated[
        str | None,
        Text,
        Field(
            max_length=MAX_PATH_CHARS,
            description="The checkout to index (default: the one the server was set up "
            "for, else its working folder).",
        ),
    ] = None,
    name: Annotated[
        str | None,
        Text,
        Field(
            max_length=MAX_NAME_CHARS,
            description="The repository name to index it under (default: the name the "
            "checkout is already indexed under, else the folder's name).",
        ),
    ] = None,
    worktree: Annotated[
        bool,
        Field(
            description="Index uncommitted changes too, as the ref 'HEAD:worktree', which "
            "the other tools then search; false: the commit only."
        ),
    ] = True,
) -> CallToolResult:
    """Re-index the local checkout incrementally (only new or changed files; with
    worktree, uncommitted changes too, as the ref 'HEAD:worktree', which the other
    tools then search unless they name a ref), so that search results reflect
    edits you just made. It keeps the repository's name (the checkout's existing index).
    Call it after changing files when searches look stale."""
    import anyio

    settings = ctx.settings
    target = path or settings.repo_path or os.getcwd()
    if name is None and path is None:
        name = settings.repo_name
    summary = await anyio.to_thread.run_sync(_sync_index, settings, target, name, worktree)
    ctx.ref = summary["ref"] if worktree else None
    text = summary.pop("text")
    return _result(text, [summary], [])


def _sync_index(settings: Settings, path: str, name: str | None, worktree: bool) -> dict:
    from .errors import CodesiftError
    from .indexer import index_repository

    try:
        with db.connect(settings.dsn, autocommit=True) as conn, db.acting_as_loader(conn):
            s = index_repository(
                conn,
                path,
                name=name,
                tenant=settings.tenant_name or "default",
                worktree=worktree,
                show_progress=False,
            )
    except CodesiftError as exc:
        raise ToolError(str(exc)) from None
    text = (
        f"indexed {s.repository} @ {s.ref} ({s.commit[:12]}): "
        f"{s.files} files, {s.new_blobs} new blobs, {s.new_symbols} new symbols, "
        f"{s.removed_paths} paths removed, {s.edges} edges, embedded "
        f"{s.embedded.symbols} symbols + {s.embedded.blobs} files"
    )
    return {
        "text": text,
        "repository": s.repository,
        "ref": s.ref,
        "commit": s.commit,
        "files": s.files,
        "new_blobs": s.new_blobs,
        "skipped": dict(s.skipped),
    }


@dataclass(frozen=True)
class Tool:
    """One MCP tool: `fn` is the tool (its name, description and parameters), `title` its
    name for people, `output` the model of its structured result, `calls` the stored
    function it calls (None: it runs the loader's indexing instead); `agents` is when to
    call it, as the AGENTS.md block `codesift setup --agents-md` says (tool_guide)."""

    fn: Callable[..., Awaitable[CallToolResult]]
    title: str
    output: type[BaseModel]
    calls: str | None
    writes: bool = False  # annotated read-only unless it writes to the index
    stdio_only: bool = False  # writing to the index from a shared HTTP server is not an
    # agent's job

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def agents(self) -> str:
        return WHEN_TO_CALL[self.name]

    @property
    def annotations(self) -> ToolAnnotations:
        return WRITES if self.writes else READ_ONLY

    @property
    def description(self) -> str:
        """The docstring as one clean paragraph (no source indentation)."""
        return " ".join(inspect.cleandoc(self.fn.__doc__ or "").split())

    def bind(self, ctx: ToolContext) -> Callable[..., Awaitable[CallToolResult]]:
        """The tool as the SDK registers it: `fn` with `ctx` given, its name, docstring and
        signature less `ctx` (the input schema the SDK derives), returning a
        CallToolResult whose structured content is `output` (the output schema)."""
        fn = self.fn

        @functools.wraps(fn)
        async def tool(**arguments: Any) -> CallToolResult:
            return await fn(ctx, **arguments)

        signature = inspect.signature(fn, eval_str=True)
        parameters = list(signature.parameters.values())[1:]
        tool.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=parameters, return_annotation=Annotated[CallToolResult, self.output]
        )
        return tool


TOOLS: tuple[Tool, ...] = (
    Tool(
        search_code,
        title="Search code",
        output=_output("SearchCodeResult", SearchRow),
        calls="pack_context",
    ),
    Tool(
        find_symbol,
        title="Find a definition",
        output=_output("FindSymbolResult", SymbolRow),
        calls="find_symbol",
    ),
    Tool(
        related_files,
        title="Related files",
        output=_output("RelatedFilesResult", RelatedRow),
        calls="related_files",
    ),
    Tool(
        outline,
        title="Outline a file",
        output=_output("OutlineResult", OutlineRow),
        calls="file_outline",
    ),
    Tool(
        repo_map,
        title="Map a repository",
        output=_output("RepoMapResult", MapRow),
        calls="repo_map",
    ),
    Tool(
        find_references,
        title="Find references",
        output=_output("FindReferencesResult", ReferenceRow),
        calls="find_references",
    ),
    Tool(
        callers,
        title="Callers",
        output=_output("CallersResult", CallerRow),
        calls="callers",
    ),
    Tool(
        callees,
        title="Callees",
        output=_output("CalleesResult", CalleeRow),
        calls="callees",
    ),
    Tool(
        impact,
        title="Impact",
        output=_output("ImpactResult", ImpactRow),
        calls="impact",
    ),
    Tool(
        diff_context,
        title="Diff context",
        output=_output("DiffContextResult", DiffContextRow),
        calls="diff_context",
    ),
    Tool(
        explain_search,
        title="Explain a search",
        output=_output("ExplainSearchResult", ExplainRow),
        calls="explain_context",
    ),
    Tool(
        list_repositories,
        title="List repositories",
        output=_output("ListRepositoriesResult", RepositoryRow),
        calls="repository_status",
    ),
    Tool(
        sync_index,
        title="Re-index the checkout",
        output=_output("SyncIndexResult", SyncRow),
        calls=None,
        writes=True,
        stdio_only=True,
    ),
)


# --- the server ------------------------------------------------------------------------

_SDK_PREFIX = re.compile(r"^Error executing tool \w+: ")
SHOWN_CHARS = 60  # of a refused argument's value, in an error message


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _problem(error: Any) -> str:
    """One refused argument (a pydantic error) as a sentence naming the parameter."""
    name = ".".join(str(part) for part in error["loc"]) or "the arguments"
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return f"{name} is required"
    if kind in ("string_too_short", "too_short"):
        return f"{name} must not be empty"
    if kind in ("string_too_long", "too_long"):
        return f"{name} is {len(value):,} characters; at most {ctx['max_length']:,}"
    if kind == "greater_than_equal":
        return f"{name} must be at least {ctx['ge']:,} (got {_shown(value)})"
    if kind == "less_than_equal":
        return f"{name} must be at most {ctx['le']:,} (got {_shown(value)})"
    if kind == "literal_error":
        return f"{name} must be one of {ctx['expected']} (got {_shown(value)})"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{name} must be a whole number (got {_shown(value)})"
    if kind in ("bool_parsing", "bool_type"):
        return f"{name} must be true or false (got {_shown(value)})"
    if kind == "string_type":
        return f"{name} must be a string (got {_shown(value)})"
    if kind == "value_error":
        return f"{name} {str(ctx.get('error', error['msg']))}"
    return f"{name}: {error['msg']}"


def error_text(exc: Exception) -> str:
    """A failed call's message for the agent, on one line: the arguments it must change
    (not pydantic's report), or what the tool or the database said, without the SDK's
    and PL/Python's prefixes, control characters shown as escapes ('\\x1b')."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        text = "; ".join(_problem(e) for e in cause.errors(include_url=False))
    elif isinstance(cause, ToolError):
        text = str(cause)
    else:
        text = _SDK_PREFIX.sub("", str(exc))
    return " ".join(visible(PLPY_PREFIX.sub("", text)).split())


class ToolServer(MCPServer[Any]):
    """The SDK's MCPServer serving TOOLS: it reports codesift's version, advertises only
    what it serves (tools and resources, no prompts), and answers a failed call with
    error_text."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(version=version(), **kwargs)
        for method in ("prompts/list", "prompts/get"):
            self._lowlevel_server._request_handlers.pop(method, None)

    def add_tools(self, ctx: ToolContext, http: bool) -> None:
        """Register TOOLS, less those that only a stdio server offers when `http`."""
        for tool in TOOLS:
            if tool.stdio_only and http:
                continue
            self.add_tool(
                tool.bind(ctx),
                name=tool.name,
                title=tool.title,
                description=tool.description,
                annotations=tool.annotations,
            )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            self.tool_failed(exc)
            return CallToolResult(
                content=[TextContent(type="text", text=error_text(exc))], is_error=True
            )

    def tool_failed(self, exc: ToolError) -> None:
        """A call failed with `exc`, answered as an error (a subclass counts it)."""
