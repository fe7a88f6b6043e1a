"""Uses of a definition, its callers and its callees, read from the references extraction
stored per blob (code_references, ingest/references.py). Called by the stored functions
find_references, callers and callees (sql/idempotent/011-references.sql); every statement
names the session's tenant, and only live files of the ref are read.

    find_references(plpy, name, repo, ref, path, max_rows) -> one row per use
    callers(plpy, symbol, repo, ref, path, max_rows) -> one row per calling symbol
    callees(plpy, symbol, repo, ref, path, max_rows) -> one row per name it calls

The definition is named as find_symbol names it ('send', 'Session.send'; exact, else
ignoring case), or cited ('repo:path:12', 'path:12-40': the innermost definition holding
that line); `path` ('src/app.py', 'repo:src/app.py', a citation) keeps the definitions of
that file. Its uses are the stored references of its unqualified name in the live files of
the ref, each resolved against the definitions (Resolver):

* 'resolved': the use is bound to the definition: through an import statement whose stored
  edge (file_edges, at the statement's line) leads to the definition's file, directly,
  through a package's re-export (`from .impl import f` in __init__.py, `export {f} from`) or
  to a submodule (`import pkg` then `pkg.sub.f`); for Go to the definition's package (its
  folder), for Java to its class file; or without an import, in the definition's own file (a
  bare name where the definition is visible, `self.f` / `this.f` in its class, `Class.f`),
  and for Go and Java in its package; a member through an object of the definition's class
  or a subclass (`self.f` in a subclass, `x = Cls()` then `x.f()`, `x: Cls`, `c *Cls`:
  reference_types.py); a pytest fixture's parameters (reference_fixtures.py).
* 'by_name': only the name matches: a member of an object whose type is not known
  (`obj.send()`), a name a star import may bring, a member of something imported from a
  file that does not define it (inherited, re-exported otherwise).
* Left out: uses bound elsewhere: a name imported from another file or from outside the
  repository (when the repository itself defines the name), and in Python, JavaScript,
  TypeScript, Go and Java a bare name neither imported nor defined in reach (a local
  variable, a builtin).

A name with no definition at the ref gives its uses by name (a library's function), with a
NOTICE. callers groups the calls (references with is_call) by the symbol they are made in;
callees lists the calls made in the definition itself (not in the definitions nested in
it), each resolved the same way against the definitions of its name: 'resolved',
'by_name', or 'external' when nothing at the ref defines it (a library, a builtin; `module`
names the import it comes through).

Work is bounded: at most MAX_USES_READ references and MAX_DEFINITIONS definitions read per
call (a NOTICE says when the cap cut the reading), three hops of re-exports.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

from . import plans, reference_fixtures, reference_types
from .citations import citation, readings, unsafe_path
from .errcodes import NULL_VALUE_NOT_ALLOWED
from .ingest.languages import detect_language
from .ingest.references import EXPRESSION
from .pipeline.params import check_max_rows, check_text, fail
from .pipeline.scope import resolve_scope

MAX_NAME_CHARS = 512
MAX_PATH_CHARS = 4096
MAX_ROWS = 1000  # rows one call returns at most (max_rows)
MAX_USES_READ = 50_000  # references of the name read per call
MAX_DEFINITIONS = 2000  # definitions of a name read per call
MAX_CALLS_READ = 20_000  # calls read inside the definitions callees looks at
MAX_EDGES_READ = 200_000  # import edges read per hop
MAX_IMPORTS_READ = 200_000
MAX_LINE_CHARS = 300  # the text of a use's line
REEXPORT_HOPS = 3
SELF = frozenset({"self", "cls", "this"})
RESOLVED, BY_NAME, EXTERNAL = "resolved", "by_name", "external"
# languages whose bare names are bound only by a definition in reach or an import
STRICT = frozenset({"python", "javascript", "typescript", "tsx", "go", "java"})
PACKAGE_SCOPED = frozenset({"go", "java"})  # a folder is a package: its names need no import
# a citation's line range at the end of a symbol argument: 'repo:path:12', 'path:12-40'
_CITED_LINE = re.compile(r"^(?P<rest>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_LAST_SEGMENT = re.compile(r"(?:\.|::|#)")

DEFINITION_TYPES = ["bigint", "text[]", "bigint[]", "text[]", "integer"]


# --- arguments --------------------------------------------------------------------------


# names and paths as the code writes them: no control characters
_check_text = partial(check_text, null_state=NULL_VALUE_NOT_ALLOWED, controls=True)


def _check_rows(plpy, max_rows) -> None:
    check_max_rows(plpy, max_rows, MAX_ROWS, "pass path to narrow the definition")


def _check_path(plpy, text: str, names: Iterable[str]) -> list:
    usable = readings(text, names)
    for option in usable:
        why = unsafe_path(option.path)
        if why:
            fail(
                plpy,
                f"path '{text[:200]}' {why}",
                hint="pass a path relative to the repository root, e.g. 'src/app.py' or "
                "'repo:src/app.py'",
            )
    return usable


def last_segment(name: str) -> str:
    """The unqualified name a qualified one ends with ('Session.send' -> 'send')."""
    return _LAST_SEGMENT.split(name.strip())[-1].strip() or name.strip()


# --- the definitions --------------------------------------------------------------------


@dataclass
class Target:
    """What a call looks up: the unqualified `name` whose uses are read, and the
    definitions found (merged parts)."""

    name: str  # empty: nothing to look up (a cited file or line that defines nothing)
    definitions: list[dict]


def merge_parts(rows: Iterable[dict]) -> list[dict]:
    """A long definition is stored as parts 1..n tiling its lines: one row per definition."""
    out: list[dict] = []
    for r in rows:
        prev = out[-1] if out else None
        if (
            r["part"] > 1
            and prev is not None
            and (prev["repository_id"], prev["path"], prev["qualified_name"], prev["kind"])
            == (r["repository_id"], r["path"], r["qualified_name"], r["kind"])
            and prev["end_line"] + 1 >= r["start_line"]
        ):
            prev["end_line"] = max(prev["end_line"], r["end_line"])
            continue
        out.append(dict(r))
    return out


def _definitions(plpy, tenant: int, keys: Sequence[str], ids: list[int], paths) -> list[dict]:
    rows = plans.run(
        plpy,
        plans.load("reference_definitions"),
        DEFINITION_TYPES,
        [tenant, sorted(set(keys)), ids, paths, MAX_DEFINITIONS],
    )
    if len(rows) >= MAX_DEFINITIONS:
        plpy.notice(
            f"over {MAX_DEFINITIONS:,} definitions match; the first {MAX_DEFINITIONS:,} are used"
            " (pass path or a qualified name to narrow)"
        )
    return merge_parts(dict(r) for r in rows)


def _target(plpy, tenant: int, repos: list[dict], text: str, path) -> Target:
    ids = [r["id"] for r in repos]
    names = {r["name"] for r in repos}
    paths = None
    if path is not None:
        paths = sorted({o.path for o in _check_path(plpy, path.strip(), names)})
    cited = _CITED_LINE.match(text)
    if cited and ("/" in cited["rest"] or "." in cited["rest"] or ":" in cited["rest"]):
        usable = _check_path(plpy, cited["rest"], names)
        wanted = sorted({o.path for o in usable})
        if paths is not None:
            wanted = [p for p in wanted if p in paths]
        line = int(cited["start"])
        rows = plans.run(
            plpy,
            plans.load("citation_symbols"),
            ["bigint", "bigint[]", "text[]", "integer"],
            [tenant, ids, wanted, line],
        )
        found = merge_parts(dict(r) for r in rows)
        for option in usable:  # the most literal reading that names a file with a definition
            here = [
                d
                for d in found
                if d["path"] == option.path and option.repo in (None, d["repository"])
            ]
            if here:
                # the innermost: the latest start, then the shortest
                best = max(here, key=lambda d: (d["start_line"], -d["end_line"]))
                return Target(best["name"], [best])
        return Target("", [])
    name = text.strip()
    short = last_segment(name)
    found = _definitions(plpy, tenant, [short.lower()], ids, paths)
    exact = [d for d in found if name in (d["name"], d["qualified_name"])]
    if not exact:
        folded = name.casefold()
        exact = [
            d for d in found if folded in (d["name"].casefold(), d["qualified_name"].casefold())
        ]
    if not exact and paths is not None:
        return Target("", [])  # nothing of that name in the file asked for
    return Target(exact[0]["name"] if exact else short, exact)


# --- resolution -------------------------------------------------------------------------


@dataclass
class Use:
    repository_id: int
    repository: str
    path: str
    blob_sha: str
    line: int
    symbol: str | None
    is_call: bool
    qualifier: str | None
    import_line: int | None
    name: str = ""
    language: str | None = None


@dataclass
class Resolver:
    """Resolves uses against definitions with the ref's import edges and the files'
    import statements (read by the caller: edges, imports).

    edges: (repository id, source path) -> [(line, target path, names)]
    imports: blob sha -> [(line, module, names)]
    """

    edges: dict[tuple[int, str], list[tuple]] = field(default_factory=dict)
    imports: dict[str, list[tuple]] = field(default_factory=dict)
    # what resolve asks again for every use of a name with many definitions: a file's
    # re-exports of a name once its edges are read (they never change after), and a
    # definitions list's members in one repository, by file (the list is kept, so that
    # its id is not reused while the entry stands)
    _reexports: dict[tuple[int, str, str], list[str]] = field(default_factory=dict)
    _members: dict[tuple[int, int], tuple] = field(default_factory=dict)

    def targets(self, use: Use, name: str) -> list[str]:
        """The files the import statement binding `use` leads to: its edges at that line,
        those naming `name` when some do (`from pkg import sub, f`: one edge each)."""
        at = [
            e for e in self.edges.get((use.repository_id, use.path), ()) if e[0] == use.import_line
        ]
        named = [e for e in at if name in (e[2] or ())]
        return sorted({e[1] for e in (named or at)})

    def reexported(self, repository_id: int, path: str, name: str) -> list[str]:
        """Where a file's import statements bring `name` from (`from .impl import name`,
        `export {name} from './impl'`, a star)."""
        key = (repository_id, path, name)
        if key in self._reexports:
            return self._reexports[key]
        found = sorted(
            {
                e[1]
                for e in self.edges.get((repository_id, path), ())
                if name in (e[2] or ()) or "*" in (e[2] or ())
            }
        )
        if (repository_id, path) in self.edges:
            self._reexports[key] = found
        return found

    def _in_repository(self, definitions: list[dict], repository_id: int) -> tuple:
        """(the definitions in the repository, the same by path)."""
        key = (id(definitions), repository_id)
        hit = self._members.get(key)
        if hit is None or hit[0] is not definitions:
            here = [d for d in definitions if d["repository_id"] == repository_id]
            by_file: dict[str, list[dict]] = {}
            for d in here:
                by_file.setdefault(d["path"], []).append(d)
            hit = self._members[key] = (definitions, here, by_file)
        return hit[1], hit[2]

    def module(self, use: Use) -> str | None:
        for line, module, _names in self.imports.get(use.blob_sha, ()):
            if line == use.import_line:
                return module
        return None

    def _names_a_class(self, use: Use) -> bool:
        """Whether `use` is a member of a name its import statement imports by name
        (`from m import Cls` then `Cls.f`), not of a module (`import m`, `* as m`, Go)."""
        if use.qualifier is None or use.qualifier == EXPRESSION:
            return False
        return any(
            line == use.import_line and names and "*" not in names
            for line, _module, names in self.imports.get(use.blob_sha, ())
        )

    def star_imported(self, use: Use) -> bool:
        return any(
            "*" in (names or ()) or module.endswith(".*")
            for _line, module, names in self.imports.get(use.blob_sha, ())
        )

    def has_imports(self, use: Use) -> bool:
        return bool(self.imports.get(use.blob_sha))

    def resolve(self, use: Use, definitions: list[dict]) -> tuple[str, dict | None] | None:
        """('resolved', the definition) | ('by_name', None) | None (bound elsewhere)."""
        here, by_file = self._in_repository(definitions, use.repository_id)
        if not definitions:
            return BY_NAME, None
        language = use.language
        if use.import_line is not None:
            targets = self.targets(use, use.name)
            if not targets:  # imported from outside the repository
                return None if here else (BY_NAME, None)
            found = self._reach(use, targets, here, by_file, language)
            if found is not None:
                return RESOLVED, found
            # a member of a class imported from a file that does not define it may be
            # inherited; a module's member is that module's (and a bare name is bound)
            return (BY_NAME, None) if self._names_a_class(use) else None
        same_file = by_file.get(use.path, [])
        if use.qualifier is not None:
            if use.qualifier in SELF:
                for d in same_file:
                    if d["parent"] and _inside(use.symbol, d["parent"]):
                        return RESOLVED, d
                return BY_NAME, None
            head = use.qualifier.rsplit(".", 1)[-1]
            if use.qualifier != EXPRESSION:
                local = same_file + (
                    [d for d in here if _same_folder(d["path"], use.path)]
                    if language in PACKAGE_SCOPED
                    else []
                )
                for d in local:
                    if d["parent"] and d["parent"].rsplit(".", 1)[-1] == head:
                        return RESOLVED, d
            return BY_NAME, None
        for d in same_file:
            if d["parent"] is None or (
                _inside(use.symbol, d["parent"]) and _bare_method(d, use.symbol, language)
            ):
                return RESOLVED, d
        if language in PACKAGE_SCOPED:
            for d in here:
                if _same_folder(d["path"], use.path) and (
                    d["parent"] is None or d["kind"] in ("class", "interface", "type")
                ):
                    return RESOLVED, d
        if same_file:
            return BY_NAME, None
        if language not in STRICT:
            return BY_NAME, None
        if language == "python" or language == "go":
            return (BY_NAME, None) if self.star_imported(use) else None
        if language == "java":
            return (BY_NAME, None) if use.is_call or self.star_imported(use) else None
        # JavaScript, TypeScript: a script without imports sees the globals of the others
        return None if self.has_imports(use) else (BY_NAME, None)

    def _reach(
        self, use: Use, targets: list[str], here: list[dict], by_file: dict, language
    ) -> dict | None:
        """The definition the import's targets lead to: in a target file (or, for Go, its
        package), in a submodule a dotted qualifier names, or behind a package's
        re-exports. `here`: the definitions in the use's repository; by_file: by path."""
        head = (use.qualifier or "").rsplit(".", 1)[-1]

        def pick(defs: list[dict]) -> dict:
            for d in defs:
                if use.qualifier and d["parent"] and d["parent"].rsplit(".", 1)[-1] == head:
                    return d
            for d in defs:
                if d["parent"] is None:
                    return d
            return defs[0]

        if language == "go":
            folders = {posixpath.dirname(t) for t in targets}
            defs = [d for d in here if posixpath.dirname(d["path"]) in folders]
            return pick(defs) if defs else None
        for t in targets:
            if t in by_file:
                return pick(by_file[t])
        if language == "python" and use.qualifier and use.qualifier != EXPRESSION:
            module = self.module(use) or ""
            extra = use.qualifier
            if module and (use.qualifier + ".").startswith(module + "."):
                extra = use.qualifier[len(module) + 1 :]
            else:
                extra = use.qualifier.partition(".")[2]  # from pkg import sub; sub.mod.f
            if extra:
                for t in targets:
                    base = posixpath.dirname(t) if t.endswith("/__init__.py") else t[:-3]
                    rel = posixpath.join(base, extra.replace(".", "/"))
                    for candidate in (rel + ".py", rel + "/__init__.py"):
                        if candidate in by_file:
                            return pick(by_file[candidate])
        if use.qualifier is None or language == "python":
            seen = set(targets)
            frontier = list(targets)
            for _ in range(REEXPORT_HOPS):
                nxt = []
                for t in frontier:
                    for s in self.reexported(use.repository_id, t, use.name):
                        if s in by_file:
                            return pick(by_file[s])
                        if s not in seen:
                            seen.add(s)
                            nxt.append(s)
                frontier = nxt
        return None


def _bare_method(d: dict, symbol: str | None, language) -> bool:
    """Whether a bare name in `symbol` (inside d's parent) can name d: any nested
    definition; a method in Java (from its class's other methods) and in Python (from the
    class body: `@name.setter`, which the next method's span holds), never in Go or
    JavaScript (a method is reached through its receiver or `this`)."""
    return d["kind"] != "method" or language in ("java", "python")


def _inside(symbol: str | None, parent: str) -> bool:
    return symbol is not None and (symbol == parent or symbol.startswith(parent + "."))


def _same_folder(a: str, b: str) -> bool:
    return posixpath.dirname(a) == posixpath.dirname(b)


def _uses(rows: Iterable[dict], name: str) -> list[Use]:
    out = []
    for r in rows:
        use = Use(**{k: r[k] for k in Use.__dataclass_fields__ if k in r})
        use.name = name
        use.language = detect_language(use.path)
        out.append(use)
    return out


def _fill(plpy, tenant: int, resolver: Resolver, uses: list[Use]) -> None:
    """Read the import edges the uses need (from their files, then REEXPORT_HOPS hops
    from the files those lead to) and the import statements of their blobs."""
    shas = sorted({u.blob_sha for u in uses} - set(resolver.imports))
    if shas:
        rows = plans.run(
            plpy,
            plans.load("reference_imports"),
            ["bigint", "text[]", "integer"],
            [tenant, shas, MAX_IMPORTS_READ],
        )
        for r in rows:
            resolver.imports.setdefault(r["blob_sha"], []).append(
                (r["line"], r["module"], list(r["names"] or []))
            )
    wanted = {(u.repository_id, u.path) for u in uses if u.import_line is not None}
    for _hop in range(REEXPORT_HOPS + 1):
        wanted -= set(resolver.edges)
        if not wanted:
            return
        for key in wanted:
            resolver.edges[key] = []
        rows = plans.run(
            plpy,
            plans.load("reference_edges"),
            ["bigint", "bigint[]", "text[]", "integer"],
            [
                tenant,
                sorted({k[0] for k in wanted}),
                sorted({k[1] for k in wanted}),
                MAX_EDGES_READ,
            ],
        )
        following = set()
        for r in rows:
            key = (r["repository_id"], r["source_path"])
            if key in wanted:
                resolver.edges[key].append((r["line"], r["target_path"], list(r["names"] or [])))
                following.add((r["repository_id"], r["target_path"]))
        wanted = following


def _read_uses(plpy, tenant: int, name: str, ids: list[int], calls: bool) -> list[Use]:
    rows = plans.run(
        plpy,
        plans.load("reference_uses"),
        ["bigint", "text", "bigint[]", "boolean", "integer"],
        [tenant, name, ids, calls, MAX_USES_READ],
    )
    if len(rows) >= MAX_USES_READ:
        plpy.notice(
            f"'{name}' is used over {MAX_USES_READ:,} times at this ref; the first "
            f"{MAX_USES_READ:,} read are resolved (pass repo to narrow)"
        )
    uses = _uses((dict(r) for r in rows), name)
    uses.sort(key=lambda u: (u.repository, u.path, u.line))
    return uses


def _resolve_typed(
    plpy, tenant: int, ids, resolver, definitions, found: list, cache: dict | None = None
) -> None:
    """Resolve in place the by_name members whose object's class is known where they are
    used (reference_types.py), reading the uses of the classes through the same
    resolver. `cache`: what was read for other names with the same resolver (a walk's
    hop), read once."""
    at = [n for n, (_use, (verdict, _d)) in enumerate(found) if verdict == BY_NAME]
    if not at or not any(d.get("parent") for d in definitions):
        return
    cache = {} if cache is None else cache
    read: dict[str, list[Use]] = cache.setdefault("uses", {})
    named: dict[tuple, list[dict]] = cache.setdefault("definitions", {})

    def read_uses(name: str) -> list[Use]:
        if name not in read:
            read[name] = _read_uses(plpy, tenant, name, ids, calls=False)
            _fill(plpy, tenant, resolver, read[name])
        return read[name]

    def read_definitions(name: str, paths: list[str] | None) -> list[dict]:
        key = (name, tuple(paths) if paths is not None else None)
        if key not in named:
            rows = _definitions(plpy, tenant, [name.lower()], ids, paths)
            named[key] = [r for r in rows if r["name"] == name]
        return named[key]

    typed = reference_types.resolve_typed(
        resolver,
        definitions,
        [found[n][0] for n in at],
        read_uses,
        read_definitions,
        partial(_line_texts, plpy, tenant),
        cache.setdefault("families", {}),
    )
    for i, d in typed.items():
        found[at[i]] = (found[at[i]][0], (RESOLVED, d))


def _add_fixture_uses(plpy, tenant: int, definitions: list[dict], found: list) -> None:
    """A pytest fixture's uses are parameters, which the index leaves out: read them from
    its scope's test modules (reference_fixtures.py)."""
    for d in definitions:
        if not reference_fixtures.is_fixture(plpy, tenant, d):
            continue
        seen = {(u.repository_id, u.path, u.line) for u, _ in found}
        for use in reference_fixtures.fixture_uses(plpy, tenant, d, Use):
            if (use.repository_id, use.path, use.line) not in seen:
                found.append((use, (RESOLVED, d)))


def _scope(plpy, repo, ref, text: str, what: str, path) -> tuple[int, list[dict], Target]:
    tenant, repos = resolve_scope(plpy, repo, ref)
    ids = [r["id"] for r in repos]
    pending = plans.run(
        plpy, plans.load("references_pending"), ["bigint", "bigint[]"], [tenant, ids]
    )
    if pending and pending[0]["pending"]:
        plpy.notice(
            "some files at this ref were indexed before references were extracted and show "
            "no uses yet: the loader fills them with select codesift.backfill_references() "
            "(repeat until it returns 0)"
        )
    target = _target(plpy, tenant, repos, text, path)
    if not target.definitions:
        where = f" in repository '{repo}'" if repo else ""
        if path is not None:
            where += f" in '{path[:200]}'"
        plpy.notice(
            f"no definition of '{text[:200]}'{where} at this ref"
            + (f"; {what} by name only" if target.name else "")
        )
    return tenant, repos, target


def _definition_citation(d: dict | None) -> str | None:
    if d is None:
        return None
    return citation(d["repository"], d["path"], d["start_line"], d["end_line"])


def _line_texts(plpy, tenant: int, uses: Sequence[Use]) -> dict[tuple[str, int], str]:
    if not uses:
        return {}
    rows = plans.run(
        plpy,
        plans.load("reference_lines"),
        ["bigint", "text[]", "int[]", "integer"],
        [tenant, [u.blob_sha for u in uses], [u.line for u in uses], MAX_LINE_CHARS],
    )
    return {(r["sha"], r["line"]): r["text"] for r in rows}


# --- find_references --------------------------------------------------------------------


def _check_arguments(plpy, what, value, limit, repo, ref, path, max_rows) -> None:
    """The bounds every lookup checks: `what` (the definition asked for) up to `limit`
    characters, repo, ref, path and max_rows."""
    _check_text(plpy, what, value, limit, required=True)
    _check_text(plpy, "repo", repo, MAX_NAME_CHARS)
    _check_text(plpy, "ref", ref, MAX_NAME_CHARS)
    _check_text(plpy, "path", path, MAX_PATH_CHARS)
    _check_rows(plpy, max_rows)


def _resolved_uses(plpy, tenant, ids, target, calls: bool) -> list[tuple]:
    """(use, (resolution, definition)) of each use (each call, with `calls`) of the
    target's name in repositories `ids` that means one of its definitions."""
    uses = _read_uses(plpy, tenant, target.name, ids, calls=calls)
    resolver = Resolver()
    _fill(plpy, tenant, resolver, uses)
    found = []
    for use in uses:
        verdict = resolver.resolve(use, target.definitions)
        if verdict is not None:
            found.append((use, verdict))
    _resolve_typed(plpy, tenant, ids, resolver, target.definitions, found)
    return found


def find_references(plpy, name, repo, ref, path, max_rows) -> list[dict]:
    _check_arguments(plpy, "name", name, MAX_NAME_CHARS, repo, ref, path, max_rows)
    tenant, repos, target = _scope(plpy, repo, ref, name.strip(), "uses", path)
    if not target.name:
        return []
    found = _resolved_uses(plpy, tenant, [r["id"] for r in repos], target, calls=False)
    _add_fixture_uses(plpy, tenant, target.definitions, found)
    found.sort(key=lambda f: (f[1][0] != RESOLVED, f[0].repository, f[0].path, f[0].line))
    if len(found) > max_rows:
        plpy.notice(f"{len(found):,} uses; the first {max_rows:,} are returned (max_rows)")
    found = found[:max_rows]
    texts = _line_texts(plpy, tenant, [u for u, _ in found])
    return [
        {
            "repository": u.repository,
            "path": u.path,
            "line": u.line,
            "symbol": u.symbol,
            "is_call": u.is_call,
            "qualifier": u.qualifier,
            "resolution": verdict,
            "definition": _definition_citation(d),
            "line_text": texts.get((u.blob_sha, u.line)),
            "citation": citation(u.repository, u.path, u.line),
        }
        for u, (verdict, d) in found
    ]


# --- callers ----------------------------------------------------------------------------


def callers(plpy, symbol, repo, ref, path, max_rows) -> list[dict]:
    limit = MAX_NAME_CHARS + MAX_PATH_CHARS
    _check_arguments(plpy, "symbol", symbol, limit, repo, ref, path, max_rows)
    tenant, repos, target = _scope(plpy, repo, ref, symbol.strip(), "callers", path)
    if not target.name:
        return []
    found = _resolved_uses(plpy, tenant, [r["id"] for r in repos], target, calls=True)
    groups: dict[tuple, dict] = {}
    for use, (resolution, d) in found:
        key = (use.repository_id, use.path, use.blob_sha, use.symbol, resolution, id(d))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"use": use, "resolution": resolution, "definition": d}
            group["lines"] = []
        if use.line not in group["lines"]:
            group["lines"].append(use.line)
    spans = _spans(plpy, tenant, [g["use"] for g in groups.values()])
    out = []
    for g in groups.values():
        use = g["use"]
        span = _span_of(spans, use.blob_sha, use.symbol, g["lines"])
        start, end = (span["start_line"], span["end_line"]) if span else (None, None)
        out.append(
            {
                "repository": use.repository,
                "path": use.path,
                "caller": use.symbol,
                "caller_kind": span["kind"] if span else None,
                "start_line": start,
                "end_line": end,
                "lines": sorted(g["lines"]),
                "resolution": g["resolution"],
                "definition": _definition_citation(g["definition"]),
                "citation": citation(use.repository, use.path, start, end)
                if span
                else citation(use.repository, use.path, min(g["lines"])),
            }
        )
    out.sort(key=lambda r: (r["resolution"] != RESOLVED, r["repository"], r["path"], r["lines"]))
    if len(out) > max_rows:
        plpy.notice(f"{len(out):,} callers; the first {max_rows:,} are returned (max_rows)")
    return out[:max_rows]


def _spans(plpy, tenant: int, uses: list[Use]) -> dict[tuple[str, str], list[dict]]:
    named = [u for u in uses if u.symbol is not None]
    if not named:
        return {}
    rows = plans.run(
        plpy,
        plans.load("reference_spans"),
        ["bigint", "text[]", "text[]"],
        [tenant, sorted({u.blob_sha for u in named}), sorted({u.symbol for u in named})],
    )
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        spans = out.setdefault((r["blob_sha"], r["qualified_name"]), [])
        prev = spans[-1] if spans else None
        if prev and r["part"] > 1 and prev["kind"] == r["kind"]:
            if prev["end_line"] + 1 >= r["start_line"]:
                prev["end_line"] = max(prev["end_line"], r["end_line"])
                continue
        spans.append(dict(r))
    return out


def _span_of(spans, sha: str, symbol: str | None, lines: list[int]) -> dict | None:
    """The stored symbol named `symbol` holding the lines (the innermost when several)."""
    if symbol is None:
        return None
    holding = [
        s for s in spans.get((sha, symbol), ()) if s["start_line"] <= min(lines) <= s["end_line"]
    ]
    if not holding:
        return None
    return max(holding, key=lambda s: (s["start_line"], -s["end_line"]))


# --- callees ----------------------------------------------------------------------------


def callees(plpy, symbol, repo, ref, path, max_rows) -> list[dict]:
    limit = MAX_NAME_CHARS + MAX_PATH_CHARS
    _check_arguments(plpy, "symbol", symbol, limit, repo, ref, path, max_rows)
    tenant, repos, target = _scope(plpy, repo, ref, symbol.strip(), "callees", path)
    if not target.definitions:
        return []
    ids = [r["id"] for r in repos]
    callers_by_key = {(d["blob_sha"], d["qualified_name"]): d for d in target.definitions}
    rows = plans.run(
        plpy,
        plans.load("symbol_calls"),
        ["bigint", "text[]", "text[]", "integer"],
        [
            tenant,
            sorted({k[0] for k in callers_by_key}),
            sorted({k[1] for k in callers_by_key}),
            MAX_CALLS_READ,
        ],
    )
    calls: list[tuple[dict, Use]] = []
    for r in rows:
        caller = callers_by_key.get((r["blob_sha"], r["symbol"]))
        if caller is None or not caller["start_line"] <= r["line"] <= caller["end_line"]:
            continue  # another definition of the same name in the blob
        use = Use(
            caller["repository_id"],
            caller["repository"],
            caller["path"],
            r["blob_sha"],
            r["line"],
            r["symbol"],
            True,
            r["qualifier"],
            r["import_line"],
            r["name"],
            detect_language(caller["path"]),
        )
        calls.append((caller, use))
    names = sorted({u.name for _, u in calls})
    definitions: dict[str, list[dict]] = {}
    if names:
        for found in _definitions(plpy, tenant, [n.lower() for n in names], ids, None):
            definitions.setdefault(found["name"], []).append(found)
    resolver = Resolver()
    _fill(plpy, tenant, resolver, [u for _, u in calls])
    groups: dict[tuple, dict] = {}
    for caller, use in calls:
        candidates = definitions.get(use.name, [])
        verdict = resolver.resolve(use, candidates) if candidates else None
        resolution, d = verdict if verdict is not None else (EXTERNAL, None)
        if resolution == BY_NAME and len(candidates) == 1:
            d = candidates[0]  # by name, but the only definition of that name
        key = (id(caller), use.name, use.qualifier, resolution, id(d))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {
                "caller": caller,
                "use": use,
                "resolution": resolution,
                "definition": d,
                "candidates": len(candidates),
                "lines": [],
            }
        if use.line not in group["lines"]:
            group["lines"].append(use.line)
    out = []
    for g in groups.values():
        caller, use, d = g["caller"], g["use"], g["definition"]
        out.append(
            {
                "repository": caller["repository"],
                "path": caller["path"],
                "symbol": caller["qualified_name"],
                "callee": use.name,
                "qualifier": use.qualifier,
                "lines": sorted(g["lines"]),
                "resolution": g["resolution"],
                "definition": _definition_citation(d),
                "definition_symbol": d["qualified_name"] if d else None,
                "candidates": g["candidates"],
                "module": resolver.module(use) if use.import_line is not None else None,
            }
        )
    order = {RESOLVED: 0, BY_NAME: 1, EXTERNAL: 2}
    out.sort(
        key=lambda r: (
            r["repository"],
            r["path"],
            r["symbol"],
            r["lines"][0],
            order[r["resolution"]],
        )
    )
    if len(out) > max_rows:
        plpy.notice(f"{len(out):,} callees; the first {max_rows:,} are returned (max_rows)")
    return out[:max_rows]
