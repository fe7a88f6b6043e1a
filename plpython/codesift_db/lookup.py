"""Lookups an agent makes instead of grep: a symbol's definition by name, and a file's
neighbourhood in the graph of stored file edges. Called by the stored functions find_symbol
and related_files (sql/idempotent/007-lookups.sql); every statement names the session's
tenant.

    find_symbol(plpy, name, repo, kind, path_prefix, max_results, include_body) -> rows
    related_files(plpy, path, repo, depth, max_results) -> rows

find_symbol is exact: the name or qualified name as written, else the same ignoring case.
When neither matches it returns nothing and raises a NOTICE with the nearest names; it
never presents a fuzzy neighbour as a match.

related_files takes the file as the tools cite it (citations.py: 'repo:path',
'repo:path:10-42', 'repo/path' or a bare path) and returns one row per related file and
kind of edge, named from the file's side (RELATIONS): it imports / is imported by, tests /
is tested by, references / is referenced by, changes with.
"""

from __future__ import annotations

import difflib
import re

from . import plans
from .citations import ASCII_SPACE, citation, nearest_paths, readings, shown, unsafe_path
from .errcodes import INVALID_PARAMETER_VALUE
from .file_kinds import TEST_PATH
from .pipeline.params import check_text
from .pipeline.scope import resolve_scope

MAX_NAME_CHARS = 512
MAX_PATH_CHARS = 4096
MAX_KIND_CHARS = 64
MAX_SYMBOL_RESULTS = 200
MAX_RELATED_RESULTS = 500
MAX_DEPTH = 3
MAX_BODY_CHARS = 200_000  # one definition's body in a row; longer is cut at a line end
NEAREST_POOL = 20_000  # names read to suggest the nearest ones when nothing matches
NEAREST_SHOWN = 8
# the last segment of a qualified name: Class.method, Type::fn, a > b (markdown sections)
_LAST_SEGMENT = re.compile(r"(?:\.|::|#|\s>\s)")


def _fail(plpy, message: str, hint: str) -> None:
    plpy.error(message, hint=hint, sqlstate=INVALID_PARAMETER_VALUE)


def _check_range(plpy, label: str, value, low: int, high: int) -> None:
    if value is None or not low <= value <= high:
        _fail(
            plpy,
            f"{label} must be between {low} and {high} (got {value})",
            hint=f"omit {label} to use its default",
        )


def last_segment(name: str) -> str:
    """The unqualified name a qualified one ends with ('Session.send' -> 'send')."""
    return _LAST_SEGMENT.split(name.strip())[-1].strip() or name.strip()


# --- find_symbol ------------------------------------------------------------------------

SYMBOLS = """
select r.name as repository, f.path, s.name, s.qualified_name, s.kind, s.start_line,
    s.end_line, s.signature, s.doc, s.body, s.part, s.blob_sha, r.indexed_commit, s.name_line
from codesift.code_symbols s
join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live
join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id
where s.tenant_id = $1 and s.name_key = lower($2)
    and f.repository_id = any($3)
    and ($4::text is null or s.kind = $4)
    and ($5::text is null or starts_with(f.path, $5))
order by r.name, f.path, s.start_line, s.part
limit $6
"""

# names in scope, for the NOTICE when nothing matches (bounded: NEAREST_POOL)
NAMES = """
select distinct s.name
from codesift.code_symbols s
join codesift.files f on f.tenant_id = s.tenant_id and f.blob_sha = s.blob_sha and f.live
where s.tenant_id = $1 and f.repository_id = any($2)
    and ($3::text is null or s.kind = $3)
    and ($4::text is null or starts_with(f.path, $4))
limit $5
"""


def _merge_parts(rows: list[dict]) -> list[dict]:
    """A long definition is stored as parts 1..n tiling its lines: one row per definition."""
    out: list[dict] = []
    for r in rows:
        prev = out[-1] if out else None
        if (
            r["part"] > 1
            and prev is not None
            and prev["_last_part"] == r["part"] - 1
            and (prev["repository"], prev["path"], prev["qualified_name"], prev["kind"])
            == (r["repository"], r["path"], r["qualified_name"], r["kind"])
        ):
            prev["end_line"] = r["end_line"]
            prev["body"] = prev["body"] + "\n" + r["body"]
            prev["_last_part"] = r["part"]
            continue
        out.append(dict(r, _last_part=r["part"]))
    return out


def _cap_body(body: str | None) -> str | None:
    if body is None or len(body) <= MAX_BODY_CHARS:
        return body
    cut = body.rfind("\n", 0, MAX_BODY_CHARS)
    return body[: cut if cut > 0 else MAX_BODY_CHARS] + "\n... (cut: body over 200,000 chars)"


def find_symbol(
    plpy, name, repo, kind, path_prefix, max_results, include_body, ref=None
) -> list[dict]:
    check_text(plpy, "name", name, MAX_NAME_CHARS, required=True)
    check_text(plpy, "repo", repo, MAX_NAME_CHARS)
    check_text(plpy, "ref", ref, MAX_NAME_CHARS)
    check_text(plpy, "kind", kind, MAX_KIND_CHARS)
    check_text(plpy, "path_prefix", path_prefix, MAX_PATH_CHARS)
    _check_range(plpy, "max_results", max_results, 1, MAX_SYMBOL_RESULTS)
    name = name.strip()
    tenant, repos = resolve_scope(plpy, repo, ref)
    repo_ids = [r["id"] for r in repos]
    # every definition whose unqualified name matches ignoring case (the name index), then
    # exact on name or qualified name first, ignoring case only when nothing is exact
    rows = plans.run(
        plpy,
        SYMBOLS,
        ["bigint", "text", "bigint[]", "text", "text", "integer"],
        [tenant, last_segment(name), repo_ids, kind, path_prefix, 20 * MAX_SYMBOL_RESULTS],
    )
    candidates = _merge_parts([dict(r) for r in rows])
    exact = [c for c in candidates if name in (c["name"], c["qualified_name"])]
    match = "exact"
    if not exact:
        folded = name.casefold()
        exact = [
            c
            for c in candidates
            if folded in (c["name"].casefold(), c["qualified_name"].casefold())
        ]
        match = "case-insensitive"
    if not exact:
        pool = [
            r["name"]
            for r in plans.run(
                plpy,
                NAMES,
                ["bigint", "bigint[]", "text", "text", "integer"],
                [tenant, repo_ids, kind, path_prefix, NEAREST_POOL],
            )
        ]
        nearest = nearest_names(name, pool)
        plpy.notice(
            f"no symbol named '{name}'"
            + (f" in repository '{repo}'" if repo else "")
            + (
                f"; nearest names: {', '.join(nearest)}"
                if nearest
                else "; no similar name is indexed"
            )
        )
        return []
    out = []
    for c in exact[:max_results]:
        out.append(
            {
                "repository": c["repository"],
                "path": c["path"],
                "start_line": c["start_line"],
                "end_line": c["end_line"],
                "symbol": c["qualified_name"],
                "symbol_name": c["name"],
                "symbol_kind": c["kind"],
                "signature": c["signature"],
                "doc": c["doc"],
                "body": _cap_body(c["body"]) if include_body else None,
                "blob_sha": c["blob_sha"],
                "indexed_commit": c["indexed_commit"],
                "match": match,
                "citation": citation(c["repository"], c["path"], c["start_line"], c["end_line"]),
                "name_line": c["name_line"],  # part 1's: the whole definition's
            }
        )
    return out


def nearest_names(name: str, pool: list[str], n: int = NEAREST_SHOWN) -> list[str]:
    """The closest names by spelling (difflib), case-insensitive, best first."""
    by_folded: dict[str, str] = {}
    for p in pool:
        by_folded.setdefault(p.casefold(), p)
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=n, cutoff=0.6)
    return [by_folded[c] for c in close]


# --- related_files ----------------------------------------------------------------------

# the live files among the ways to read the path a caller cited
LIVE_PATHS = """
select f.repository_id, r.name, f.path from codesift.files f
join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id
where f.tenant_id = $1 and f.repository_id = any($2) and f.path = any($3) and f.live
order by r.name
"""

# live paths in scope, for the nearest ones to a path that names no live file (bounded)
SCOPE_PATHS = """
select r.name, f.path from codesift.files f
join codesift.repositories r on r.tenant_id = f.tenant_id and r.id = f.repository_id
where f.tenant_id = $1 and f.repository_id = any($2) and f.live
order by r.name, f.path
limit $3
"""

# one hop in both directions from a frontier of paths of one repository
EDGES = """
select e.source_path, e.target_path, e.relation, e.names, e.line
from codesift.file_edges e
where e.tenant_id = $1 and e.repository_id = $2
    and (e.source_path = any($3) or e.target_path = any($3))
order by e.source_path, e.target_path, e.line nulls last
limit $4
"""

EDGES_PER_HOP = 20_000  # edges read per hop (a hub file imported by everything)
PATHS_FOR_NEAREST = 20_000  # live paths read to suggest the nearest ones

# an edge's stored relation -> (what the file at its source does to the one at its target,
# what the file at its target undergoes), the `relation` of related_files' rows
IMPORTS = ("imports", "imported by")
RELATIONS = {
    "import": IMPORTS,
    "require": IMPORTS,
    "dynamic_import": IMPORTS,
    "mod": IMPORTS,
    "use": IMPORTS,
    "tests": ("tests", "tested by"),
    "references": ("references", "referenced by"),
    "co_change": ("changes with", "changes with"),
}
# the order rows of one hop come in
RELATION_ORDER = [
    "imports",
    "imported by",
    "tests",
    "tested by",
    "references",
    "referenced by",
    "changes with",
]


def relation_names(stored: str) -> tuple[str, str]:
    """(from the source's side, from the target's side) of an edge's stored relation; an
    unknown one (a newer loader's kind) is named as stored."""
    return RELATIONS.get(stored, (stored, f"{stored} (reverse)"))


def related_files(plpy, path, repo, depth, max_results, ref=None) -> list[dict]:
    check_text(plpy, "path", path, MAX_PATH_CHARS, required=True)
    check_text(plpy, "repo", repo, MAX_NAME_CHARS)
    check_text(plpy, "ref", ref, MAX_NAME_CHARS)
    _check_range(plpy, "depth", depth, 1, MAX_DEPTH)
    _check_range(plpy, "max_results", max_results, 1, MAX_RELATED_RESULTS)
    tenant, repos = resolve_scope(plpy, repo, ref)
    text = path.strip(ASCII_SPACE)
    usable = readings(text, {r["name"] for r in repos})
    for option in usable:  # 'repo:/etc/passwd' is as absolute as '/etc/passwd'
        why = unsafe_path(option.path)
        if why:
            _fail(
                plpy,
                f"path '{shown(text)}' {why}",
                hint="pass a path relative to the repository root, e.g. 'src/app.py' or "
                "'repo:src/app.py'",
            )
    ids = [r["id"] for r in repos]
    found = plans.run(
        plpy,
        LIVE_PATHS,
        ["bigint", "bigint[]", "text[]"],
        [tenant, ids, sorted({o.path for o in usable})],
    )
    for option in usable:
        hits = [f for f in found if f["path"] == option.path and option.repo in (None, f["name"])]
        if hits:
            out: list[dict] = []
            for hit in hits:
                out.extend(
                    _walk(plpy, tenant, hit["repository_id"], hit["name"], hit["path"], depth)
                )
            out.sort(
                key=lambda r: (
                    r["hop"],
                    r["repository"],
                    RELATION_ORDER.index(r["relation"])
                    if r["relation"] in RELATION_ORDER
                    else len(RELATION_ORDER),
                    r["related_path"],
                    r["relation"],
                )
            )
            return out[:max_results]
    _unknown_path(plpy, tenant, text, repo, ids, usable)
    return []


def _unknown_path(plpy, tenant: int, text: str, repo, ids: list[int], usable: list) -> None:
    """The NOTICE for a path that names no live file: the live files with a similar path
    (never the advice to pass what was just passed)."""
    pool = [
        (r["name"], r["path"])
        for r in plans.run(
            plpy, SCOPE_PATHS, ["bigint", "bigint[]", "integer"], [tenant, ids, PATHS_FOR_NEAREST]
        )
    ]
    near = nearest_paths(list(dict.fromkeys(o.path for o in usable)), pool)
    where = f" in repository '{repo}'" if repo else ""
    if near:
        advice = "live files with a similar path: " + ", ".join(near)
    elif not pool:
        advice = "no file is indexed" + (where or " yet")
    else:
        advice = (
            "no live file has a similar path: it may be ignored (.gitignore, "
            ".codesiftignore), binary, over the size limit, or newer than the indexed commit "
            "(re-index it); find_symbol finds a file by a name it defines"
        )
    plpy.notice(f"no live file '{shown(text)}'{where}; {advice}")


def _walk(plpy, tenant: int, repo_id: int, repo_name: str, start: str, depth: int) -> list:
    seen = {start}
    frontier = [start]
    out: list[dict] = []
    for hop in range(1, depth + 1):
        if not frontier:
            break
        edges = plans.run(
            plpy,
            EDGES,
            ["bigint", "bigint", "text[]", "integer"],
            [tenant, repo_id, frontier, EDGES_PER_HOP],
        )
        current = set(frontier)
        reached: dict[tuple[str, str], dict] = {}  # (path, relation) -> row
        for e in edges:
            forward, backward = relation_names(e["relation"])
            for here, there, relation in (
                (e["source_path"], e["target_path"], forward),
                (e["target_path"], e["source_path"], backward),
            ):
                if here not in current or there in seen:
                    continue
                row = reached.get((there, relation))
                if row is None:
                    row = reached[(there, relation)] = {
                        "repository": repo_name,
                        "related_path": there,
                        "relation": relation,
                        "hop": hop,
                        "via": here,
                        "edge_kind": e["relation"],
                        "names": [],
                        "line": e["line"],
                        "is_test": bool(TEST_PATH.search(there)),
                    }
                for n in e["names"] or []:
                    if n not in row["names"]:
                        row["names"].append(n)
        seen.update(there for there, _ in reached)
        out.extend(reached.values())
        frontier = sorted({there for there, _ in reached})
    return out
