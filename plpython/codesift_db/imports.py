"""Import-edge extraction and in-repository resolution.

Plain Python, no database: the stored functions are thin shims over this module.

* ``extract_imports(path, text, language)`` lists the import statements of one source file
  (Python, JavaScript, TypeScript/TSX, Go, Java, Rust) using tree-sitter, so imports inside
  comments and strings are never reported.
* ``resolve_import(source_path, module, language, paths, go_module)`` maps one import string to
  the repo-relative path of the file it names *inside the same repository*, or ``None`` for
  anything external (stdlib, packages, crates, the JDK) or unresolvable.
* ``resolve_imports(...)`` is a convenience over both for one file: it resolves every import and
  also handles ``from pkg import submodule`` (Python) and ``use a::b::{c, d}`` (Rust), where
  the best target depends on the imported names.
* ``go_module_path(go_mod_text)`` reads the ``module`` line of a go.mod.

Nothing here raises on bad input: syntax errors, NUL bytes, lone surrogates, huge files and
missing grammars all degrade to "what could be found" (possibly ``[]`` / ``None``).

Extraction runs inside the server, where it cannot be cancelled, so its work is bounded: the
bytes parsed (MAX_PARSE_BYTES), the imports kept per file (budget.MAX_IMPORTS, the first in
file order; the rest counted in the budget), and, given a budget.Budget, its deadline (the
loop over matches stops there). The context of a node (its parent, the modules
around a Rust ``mod x;``) comes from one forward pass, never from node.parent, which costs
the node's depth: deeply nested code stays linear.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from . import budget
from .symbols import GRAMMARS

__all__ = [
    "MAX_PARSE_BYTES",
    "extract_imports",
    "go_module_path",
    "resolve_import",
    "resolve_imports",
]

# Parsing plus querying runs at ~1-2 MB/s with tree-sitter on dense code; cap the bytes
# parsed per file so a generated 50 MB bundle cannot stall a backend. Larger files are cut
# (see _cut_for_parse); real hand-written sources are far below this.
MAX_PARSE_BYTES = 1 << 19

LANGUAGES = ("python", "javascript", "typescript", "tsx", "go", "java", "rust")

# --------------------------------------------------------------------------------------
# tree-sitter plumbing
# --------------------------------------------------------------------------------------

# the same grammar wheels as symbol extraction: language -> (module, language function)
_GRAMMARS = GRAMMARS

_JS_QUERY = """
(import_statement) @import
(export_statement source: (string)) @export
(call_expression function: (identifier) @fn arguments: (arguments . (string) @arg)
  (#eq? @fn "require")) @require
(call_expression function: (import) arguments: (arguments . (string) @arg)) @dynamic
"""

_QUERIES: dict[str, str] = {
    "python": """
(import_statement) @import
(import_from_statement) @from
(call function: [(identifier) @fn (attribute attribute: (identifier) @fn)]
  arguments: (argument_list . (string) @arg)
  (#any-of? @fn "import_module" "__import__")) @dynamic
""",
    "javascript": _JS_QUERY,
    "typescript": _JS_QUERY,
    "tsx": _JS_QUERY,
    "go": "(import_spec) @spec",
    "java": "(import_declaration) @import",
    "rust": """
(mod_item) @mod
(use_declaration) @use
""",
}

# A cheap pre-filter: if none of these occur, the file has no imports and is not parsed.
_KEYWORDS: dict[str, re.Pattern[str]] = {
    "python": re.compile(r"\bimport|__import__"),
    "javascript": re.compile(r"\b(?:import|require|export)\b"),
    "typescript": re.compile(r"\b(?:import|require|export)\b"),
    "tsx": re.compile(r"\b(?:import|require|export)\b"),
    "go": re.compile(r"\bimport\b"),
    "java": re.compile(r"\bimport\b"),
    "rust": re.compile(r"\b(?:mod|use)\b"),
}

_GO_GROUP = re.compile(r"\s*\(")

# Go and Java imports are top-level: do not walk the whole tree looking for them.
_MAX_START_DEPTH = {"go": 3, "java": 1}

_LOADED: dict[str, Any] = {}  # language -> (Parser, Query) or None when unavailable


def _tools(language: str) -> Any:
    if language in _LOADED:
        return _LOADED[language]
    tools = None
    try:
        import importlib

        import tree_sitter as ts

        mod_name, fn_name = _GRAMMARS[language]
        grammar = getattr(importlib.import_module(mod_name), fn_name)()
        lang = ts.Language(grammar)
        tools = (ts.Parser(lang), ts.Query(lang, _QUERIES[language]), ts.QueryCursor)
    except Exception:  # missing grammar, ABI mismatch: no imports rather than an error
        tools = None
    _LOADED[language] = tools
    return tools


def _cut_for_parse(text: str, language: str) -> bytes | None:
    """UTF-8 bytes to parse, or None when the text cannot contain an import.

    Files longer than MAX_PARSE_BYTES are cut just after the line holding the last import
    keyword within the limit (imports cluster at the top; Go and Java require it)."""
    keywords = _KEYWORDS[language]
    if len(text) > MAX_PARSE_BYTES:
        text = text[:MAX_PARSE_BYTES]
        last = None
        for match in keywords.finditer(text):
            last = match
        if last is None:
            return None
        end = last.end()
        if language == "go":  # import ( ... ): keep the whole group
            group = _GO_GROUP.match(text, end)
            if group is not None:
                close = text.find(")", group.end())
                end = close if close >= 0 else len(text)
        end = text.find("\n", end)
        text = text if end < 0 else text[: end + 1]
    elif keywords.search(text) is None:
        return None
    data = text.encode("utf-8", "replace")  # lone surrogates become '?'
    return data[:MAX_PARSE_BYTES]


def _txt(node: Any) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _line(node: Any) -> int:
    return node.start_point[0] + 1


def _nospace(s: str) -> str:
    return "".join(s.split())


# --------------------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------------------


def extract_imports(
    path: str, text: str, language: str, limits: budget.Budget | None = None
) -> list[dict]:
    """List the imports of one file as dicts {module, names, relation, line}.

    ``module`` is the import string as written (``'./utils'``, ``'..models'``, ``'fmt'``,
    ``'com.acme.util.Strings'``, ``'crate::net::http'``), ``names`` the imported names
    (original names, not local aliases; ``[]`` for a bare import; ``'*'`` for a star or
    namespace import), ``relation`` one of import/require/dynamic_import/mod/use, ``line``
    1-based. Unknown languages and unparsable input give ``[]``; never raises.

    At most budget.MAX_IMPORTS are returned (the first by line); ``limits`` (a
    budget.Budget) receives the count of the rest and gives the deadline."""
    if limits is None:
        limits = budget.unlimited()
    out: list[dict] = []
    try:
        if not isinstance(text, str) or language not in _QUERIES:
            return []
        limits.phase("imports")
        data = _cut_for_parse(text, language)
        if data is None:
            return []
        tools = _tools(language)
        if tools is None:
            return []
        parser, query, cursor_cls = tools
        # MAX_PARSE_BYTES bounds the parse (a parse read through a callback could be
        # cancelled, but then every node.text would call it again)
        tree = parser.parse(data)
        if tree is None:
            return []
        cursor = cursor_cls(query)
        if language in _MAX_START_DEPTH:
            cursor.set_max_start_depth(_MAX_START_DEPTH[language])
        matches = cursor.matches(tree.root_node)
        handler = _HANDLERS[language]
        ctx = _context(tree, matches, language)
        for i, (_index, caps) in enumerate(matches):
            if len(out) >= budget.MAX_IMPORTS:  # matches come in file order: count the rest
                more = len(out) - budget.MAX_IMPORTS + len(matches) - i
                limits.over("imports", budget.MAX_IMPORTS, more, "more statements")
                break
            if not i & budget.CHECK_EVERY and limits.expired():
                break
            try:
                handler(caps, out, ctx)
            except Exception:  # one odd node must not lose the others
                continue
    except Exception:
        pass
    out.sort(key=lambda d: d["line"])
    del out[budget.MAX_IMPORTS :]
    return out


def _context(tree: Any, matches: list, language: str) -> dict:
    """What handlers need to know about a node's surroundings, found in one pass:
    'parents': node id -> (parent, grandparent) of JS require()/import() calls;
    'mods': node id -> the names of the inline modules around a Rust ``mod x;``."""
    ctx: dict = {}
    if language in ("javascript", "typescript", "tsx"):
        calls = [
            caps[key][0] for _, caps in matches for key in ("require", "dynamic") if key in caps
        ]
        if calls:
            ctx["parents"] = _ancestors(tree, calls)
    elif language == "rust":
        ctx["mods"] = _rust_mod_chains([caps["mod"][0] for _, caps in matches if "mod" in caps])
    return ctx


def _ancestors(tree: Any, nodes: list) -> dict[int, tuple]:
    """node id -> (parent, grandparent) (None where there is none) for each of `nodes`.

    One cursor moves forward through the tree, visiting the targets in document order: it
    climbs out of what ends before the next target, skips siblings before it and descends
    into the child holding it, so no node is entered twice. Linear in the tree."""
    found: dict[int, tuple] = {}
    cursor = tree.walk()
    stack = [cursor.node]  # the nodes from the root to the cursor
    for target in sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)):
        start, end = target.start_byte, target.end_byte
        while True:  # forward and up until the cursor holds the target
            here = stack[-1]
            if here.start_byte <= start and end <= here.end_byte:
                break
            if here.end_byte <= start and cursor.goto_next_sibling():
                stack[-1] = cursor.node
                continue
            if len(stack) == 1 or not cursor.goto_parent():
                break
            stack.pop()
        while stack[-1] != target:  # down to it
            if not cursor.goto_first_child():
                break
            child = cursor.node
            while child.end_byte <= start and child != target and cursor.goto_next_sibling():
                child = cursor.node
            if not (child.start_byte <= start and end <= child.end_byte):
                cursor.goto_parent()
                break
            stack.append(child)
        if stack[-1] == target:
            parent = stack[-2] if len(stack) > 1 else None
            found[target.id] = (parent, stack[-3] if len(stack) > 2 else None)
    return found


def _rust_mod_chains(mods: list) -> dict[int, list[str]]:
    """For each ``mod x;`` (a mod_item without a body): the names of the inline modules
    around it, outermost first, at most the innermost 63 (node id -> names). One pass over
    the mod items in document order with a stack of the open inline modules."""
    chains: dict[int, list[str]] = {}
    around: list[tuple[int, str | None]] = []  # (end byte, name) of the open inline modules
    for node in sorted(mods, key=lambda n: (n.start_byte, -n.end_byte)):
        while around and around[-1][0] <= node.start_byte:
            around.pop()
        if node.child_by_field_name("body") is not None:
            name = node.child_by_field_name("name")
            around.append((node.end_byte, _txt(name) if name is not None else None))
            continue
        names: list[str] = []
        for _, name in reversed(around):
            if len(names) >= 63:
                break
            if name is not None:
                names.append(name)
        chains[node.id] = names[::-1]
    return chains


def _entry(module: str, names: Iterable[str], relation: str, line: int) -> dict:
    return {
        "module": module,
        "names": list(dict.fromkeys(n for n in names if n)),
        "relation": relation,
        "line": line,
    }


# --- Python ---------------------------------------------------------------------------


def _py_string(node: Any) -> str | None:
    """The value of a plain (non f-) string literal, else None."""
    parts = []
    for child in node.named_children:
        if child.type == "string_content":
            parts.append(_txt(child))
        elif child.type == "string_start":
            if "f" in _txt(child).lower():
                return None
        elif child.type != "string_end":  # interpolation, escapes: give up on odd literals
            return None
    return "".join(parts)


def _py_dotted(node: Any) -> str:
    """Name of a dotted_name / aliased_import (the original name, not the alias)."""
    if node.type == "aliased_import":
        node = node.child_by_field_name("name") or node
    return _nospace(_txt(node))


def _python(caps: dict, out: list[dict], ctx: dict) -> None:
    if "import" in caps:
        node = caps["import"][0]
        for child in node.children_by_field_name("name"):
            module = _py_dotted(child)
            if module:
                out.append(_entry(module, [], "import", _line(node)))
    elif "from" in caps:
        node = caps["from"][0]
        mod_node = node.child_by_field_name("module_name")
        if mod_node is None:
            return
        module = _nospace(_txt(mod_node))
        if not module or module == "__future__":
            return
        names = [_py_dotted(c) for c in node.children_by_field_name("name")]
        if any(c.type == "wildcard_import" for c in node.named_children):
            names.append("*")
        out.append(_entry(module, names, "import", _line(node)))
    elif "dynamic" in caps:
        node = caps["dynamic"][0]
        value = _py_string(caps["arg"][0])
        if value and re.fullmatch(r"\.*[A-Za-z_][\w.]*|\.+", value):
            out.append(_entry(value, [], "dynamic_import", _line(node)))


# --- JavaScript / TypeScript ----------------------------------------------------------


def _js_string(node: Any) -> str | None:
    if node is None or node.type != "string":
        return None
    parts = []
    for child in node.named_children:
        if child.type == "string_fragment":
            parts.append(_txt(child))
        else:  # escape sequences in a module specifier: not worth decoding
            return None
    return "".join(parts)


def _js_pattern_names(pattern: Any) -> list[str]:
    """Names bound from a require()/import() result: ``x`` or ``{a, b: c}`` -> [a, b]."""
    if pattern.type == "identifier":
        return [_txt(pattern)]
    names: list[str] = []
    if pattern.type == "object_pattern":
        for child in pattern.named_children:
            if child.type == "shorthand_property_identifier_pattern":
                names.append(_txt(child))
            elif child.type == "pair_pattern":
                key = child.child_by_field_name("key")
                if key is not None and key.type in ("property_identifier", "identifier"):
                    names.append(_txt(key))
            elif child.type == "object_assignment_pattern":
                left = child.child_by_field_name("left")
                if left is not None:
                    names.append(_txt(left))
    return names


def _js_call_names(call: Any, ctx: dict) -> list[str]:
    known = ctx.get("parents", {}).get(call.id)  # (parent, grandparent), found in one pass
    parent = known[0] if known is not None else call.parent
    if parent is not None and parent.type == "await_expression":
        parent = known[1] if known is not None else parent.parent
    if parent is None:
        return []
    if parent.type == "variable_declarator":
        name = parent.child_by_field_name("name")
        return _js_pattern_names(name) if name is not None else []
    if parent.type == "assignment_expression":
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return [_txt(left)]
        return []
    if parent.type == "member_expression":
        prop = parent.child_by_field_name("property")
        return [_txt(prop)] if prop is not None else []
    return []


def _js_import_clause_names(clause: Any) -> list[str]:
    names: list[str] = []
    for child in clause.named_children:
        if child.type == "identifier":  # default import: its local name
            names.append(_txt(child))
        elif child.type == "namespace_import":
            names.append("*")
        elif child.type == "named_imports":
            for spec in child.named_children:
                if spec.type == "import_specifier":
                    name = spec.child_by_field_name("name")
                    if name is not None:
                        names.append(_txt(name).strip("'\""))
    return names


def _js(caps: dict, out: list[dict], ctx: dict) -> None:
    if "import" in caps:
        node = caps["import"][0]
        module = _js_string(node.child_by_field_name("source"))
        names: list[str] = []
        relation = "import"
        for child in node.named_children:
            if child.type == "import_clause":
                names.extend(_js_import_clause_names(child))
            elif child.type == "import_require_clause":  # TS: import fs = require('fs')
                relation = "require"
                module = _js_string(child.child_by_field_name("source"))
                for sub in child.named_children:
                    if sub.type == "identifier":
                        names.append(_txt(sub))
                        break
        if module is not None:
            out.append(_entry(module, names, relation, _line(node)))
    elif "export" in caps:
        node = caps["export"][0]
        module = _js_string(node.child_by_field_name("source"))
        if module is None:
            return
        names = []
        for child in node.children:
            if child.type == "export_clause":
                for spec in child.named_children:
                    if spec.type == "export_specifier":
                        name = spec.child_by_field_name("name")
                        if name is not None:
                            names.append(_txt(name).strip("'\""))
            elif child.type in ("*", "namespace_export"):
                names.append("*")
        out.append(_entry(module, names, "import", _line(node)))
    elif "require" in caps or "dynamic" in caps:
        relation = "require" if "require" in caps else "dynamic_import"
        call = caps["require" if "require" in caps else "dynamic"][0]
        module = _js_string(caps["arg"][0])
        if module is not None:
            out.append(_entry(module, _js_call_names(call, ctx), relation, _line(call)))


# --- Go -------------------------------------------------------------------------------


def _go(caps: dict, out: list[dict], ctx: dict) -> None:
    node = caps["spec"][0]
    path_node = node.child_by_field_name("path")
    if path_node is None:
        return
    raw = _txt(path_node)
    if len(raw) < 2 or raw[0] not in '"`' or raw[-1] != raw[0]:
        return
    module = raw[1:-1]
    if not module:
        return
    alias = node.child_by_field_name("name")
    names = ["*"] if alias is not None and alias.type == "dot" else []
    out.append(_entry(module, names, "import", _line(node)))


# --- Java -----------------------------------------------------------------------------


def _java(caps: dict, out: list[dict], ctx: dict) -> None:
    node = caps["import"][0]
    target = None
    star = False
    for child in node.named_children:
        if child.type in ("scoped_identifier", "identifier"):
            target = _nospace(_txt(child))
        elif child.type == "asterisk":
            star = True
    if not target:
        return
    if star:
        out.append(_entry(target + ".*", ["*"], "import", _line(node)))
    else:
        out.append(_entry(target, [target.rsplit(".", 1)[-1]], "import", _line(node)))


# --- Rust -----------------------------------------------------------------------------


def _rust_join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + "::" + path


def _rust_split(full: str) -> tuple[str, str | None]:
    """'a::b::C' -> ('a::b', 'C'); a single segment is a bare module: ('serde', None)."""
    if "::" not in full:
        return full, None
    head, _, last = full.rpartition("::")
    return head, last


def _rust_use_tree(node: Any, prefix: str, acc: list[tuple[str, str | None]], depth: int) -> None:
    if depth > 64:
        return
    kind = node.type
    if kind in ("identifier", "scoped_identifier", "crate", "super", "self", "metavariable"):
        full = _rust_join(prefix, _nospace(_txt(node)).lstrip(":"))
        if kind == "self" and prefix:  # use a::b::{self} imports module b itself
            full = prefix
        acc.append(_rust_split(full))
    elif kind == "use_as_clause":
        path = node.child_by_field_name("path")
        if path is not None:
            _rust_use_tree(path, prefix, acc, depth + 1)
    elif kind == "use_wildcard":
        path = ""
        for child in node.named_children:
            path = _nospace(_txt(child)).lstrip(":")
            break
        acc.append((_rust_join(prefix, path), "*"))
    elif kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        sub = _nospace(_txt(path)).lstrip(":") if path is not None else ""
        inner = node.child_by_field_name("list")
        if inner is not None:
            _rust_use_tree(inner, _rust_join(prefix, sub), acc, depth + 1)
    elif kind == "use_list":
        for child in node.named_children:
            _rust_use_tree(child, prefix, acc, depth + 1)


def _rust(caps: dict, out: list[dict], ctx: dict) -> None:
    if "mod" in caps:
        node = caps["mod"][0]
        if node.child_by_field_name("body") is not None:
            return  # inline module: not a file import
        name = node.child_by_field_name("name")
        if name is None:
            return
        around = ctx["mods"].get(node.id, [])  # mod a { mod b; } -> 'a::b'
        out.append(_entry("::".join([*around, _txt(name)]), [], "mod", _line(node)))
        return
    node = caps["use"][0]
    arg = node.child_by_field_name("argument")
    if arg is None:
        return
    acc: list[tuple[str, str | None]] = []
    _rust_use_tree(arg, "", acc, 0)
    grouped: dict[str, list[str]] = {}
    for module, name in acc:
        if not module:
            continue
        bucket = grouped.setdefault(module, [])
        if name is not None:
            bucket.append(name)
    for module, names in grouped.items():
        out.append(_entry(module, names, "use", _line(node)))


_HANDLERS = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "java": _java,
    "rust": _rust,
}


# --------------------------------------------------------------------------------------
# go.mod
# --------------------------------------------------------------------------------------


def go_module_path(go_mod_text: str) -> str | None:
    """The module path declared by a go.mod (``module example.com/m``), or None."""
    try:
        for line in go_mod_text.splitlines():
            line = line.split("//", 1)[0].strip()
            if line.startswith("module") and line[6:7] in (" ", "\t", '"'):
                value = line[6:].strip().strip('"`').strip()
                return value or None
        return None
    except Exception:
        return None


# --------------------------------------------------------------------------------------
# the repository index (built once per `paths` object)
# --------------------------------------------------------------------------------------


class _Index:
    """Lookups over the set of repository paths, built once per paths object."""

    def __init__(self, paths: Iterable[str]):
        self.paths: frozenset[str] | set[str]
        self.paths = paths if isinstance(paths, (set, frozenset)) else frozenset(paths)
        listing: dict[str, list[str]] = {}
        basenames: dict[str, list[str]] = {}
        dirs: set[str] = {""}
        for p in self.paths:
            if not isinstance(p, str):
                continue
            d, _, base = p.rpartition("/")
            listing.setdefault(d, []).append(base)
            basenames.setdefault(base, []).append(p)
            while d and d not in dirs:
                dirs.add(d)
                d = d.rpartition("/")[0]
        for files in listing.values():
            files.sort()
        for found in basenames.values():
            found.sort()
        self.listing = listing
        self.basenames = basenames
        self.dirs = dirs
        self._py_roots: dict[str, list[str]] | None = None
        self._rust_crates: dict[str, str] | None = None
        self._dirs_by_name: dict[str, list[str]] | None = None

    def has(self, path: str) -> bool:
        return path in self.paths

    def files_in(self, directory: str) -> list[str]:
        return self.listing.get(directory, [])

    def dirs_named(self, name: str) -> list[str]:
        """Directories whose last component is `name`, sorted."""
        if self._dirs_by_name is None:
            by_name: dict[str, list[str]] = {}
            for d in self.dirs:
                by_name.setdefault(d.rpartition("/")[2], []).append(d)
            for found in by_name.values():
                found.sort()
            self._dirs_by_name = by_name
        return self._dirs_by_name.get(name, [])

    def py_roots(self, top: str) -> list[str]:
        """Top-level directories D where D/top is a package dir or D/top.py a module."""
        if self._py_roots is None:
            roots: dict[str, set[str]] = {}
            for d in self.dirs:
                parts = d.split("/")
                if len(parts) == 2:
                    roots.setdefault(parts[1], set()).add(parts[0])
            for p in self.paths:
                parts = p.split("/")
                if len(parts) == 2 and parts[1].endswith((".py", ".pyi")):
                    roots.setdefault(parts[1].rsplit(".", 1)[0], set()).add(parts[0])
            self._py_roots = {k: sorted(v) for k, v in roots.items()}
        return self._py_roots.get(top, [])

    def rust_crates(self) -> dict[str, str]:
        """Workspace crate name (with '_') -> its src directory, from */src/lib.rs."""
        if self._rust_crates is None:
            crates: dict[str, str] = {}
            for p in sorted(self.basenames.get("lib.rs", [])):
                parts = p.split("/")
                if len(parts) >= 3 and parts[-2] == "src":
                    crates.setdefault(parts[-3].replace("-", "_"), "/".join(parts[:-1]))
            self._rust_crates = crates
        return self._rust_crates


_INDEX_CACHE: list[tuple[Any, int, _Index]] = []
_INDEX_CACHE_SIZE = 4


def _index(paths: Any) -> _Index:
    """The index for `paths`, cached per object (weakly) while its size is unchanged.

    A mutable set edited in place to the same size keeps its stale index: pass a new object
    (or a frozenset) after changing the file list."""
    if not isinstance(paths, (set, frozenset)):
        return _Index(paths)
    for i, (ref, size, idx) in enumerate(_INDEX_CACHE):
        if ref() is paths and size == len(paths):
            if i:
                _INDEX_CACHE.insert(0, _INDEX_CACHE.pop(i))
            return idx
    idx = _Index(paths)
    try:
        ref = weakref.ref(paths)
    except TypeError:
        return idx
    _INDEX_CACHE.insert(0, (ref, len(paths), idx))
    del _INDEX_CACHE[_INDEX_CACHE_SIZE:]
    return idx


def _norm(path: str) -> str | None:
    """Normalise a joined repo path; None when it escapes the repository root."""
    if not path:
        return ""
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm.startswith("../") or norm == ".." or norm.startswith("/"):
        return None
    return norm


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


# --------------------------------------------------------------------------------------
# resolution
# --------------------------------------------------------------------------------------


def resolve_import(
    source_path: str,
    module: str,
    language: str,
    paths: frozenset[str] | set[str],
    go_module: str | None = None,
    *,
    names: Sequence[str] | None = None,
) -> str | None:
    """Repo-relative path of the file an import names inside the same repository, else None.

    ``names`` (optional, keyword only) are the imported names from extract_imports; with them
    ``from pkg import sub`` resolves to ``pkg/sub.py`` when that submodule exists and
    ``use a::b::c`` tries the item path first. Never raises."""
    try:
        if not isinstance(module, str) or not module or not isinstance(source_path, str):
            return None
        if "\x00" in module or len(module) > 1000:
            return None
        idx = _index(paths)
        if language in ("javascript", "typescript", "tsx"):
            return _resolve_js(source_path, module, language, idx)
        if language == "python":
            return _resolve_python(source_path, module, idx, names)
        if language == "go":
            return _resolve_go(source_path, module, idx, go_module)
        if language == "java":
            return _resolve_java(source_path, module, idx)
        if language == "rust":
            return _resolve_rust(source_path, module, idx, names)
        return None
    except Exception:
        return None


def resolve_imports(
    path: str,
    imports: Sequence[dict],
    language: str,
    paths: frozenset[str] | set[str],
    go_module: str | None = None,
) -> list[dict]:
    """Resolve every import of one file: the resolved ones, each a copy with ``target`` set.

    ``from pkg import a, b`` whose names are submodules gives one entry per submodule file
    (names narrowed to it) plus, for the remaining names, one for the package itself. Self
    edges (an import resolving to its own file) are dropped. Never raises."""
    out: list[dict] = []
    try:
        idx = _index(paths)
        for imp in imports:
            try:
                module = imp["module"]
                names = list(imp.get("names") or [])
                by_target: dict[str, list[str]] = {}
                if language in ("python", "rust") and names:
                    for name in names:
                        target = resolve_import(
                            path, module, language, idx.paths, go_module, names=[name]
                        )
                        if target is not None:
                            by_target.setdefault(target, []).append(name)
                else:
                    target = resolve_import(path, module, language, idx.paths, go_module)
                    if target is not None:
                        by_target[target] = names
                for target, tnames in by_target.items():
                    if target != path:
                        out.append({**imp, "names": tnames, "target": target})
            except Exception:
                continue
    except Exception:
        return out
    return out


# --- JS / TS --------------------------------------------------------------------------

_JS_EXTS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".d.ts", ".json")
_TS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".mjs", ".cjs", ".jsx", ".json")
_TS_FOR_JS = {
    ".js": (".ts", ".tsx", ".d.ts"),
    ".jsx": (".tsx",),
    ".mjs": (".mts", ".d.mts"),
    ".cjs": (".cts", ".d.cts"),
}


def _resolve_js(source: str, spec: str, language: str, idx: _Index) -> str | None:
    spec = spec.split("?", 1)[0].split("#", 1)[0]
    if spec.startswith(("./", "../")) or spec in (".", ".."):
        base = _norm(posixpath.join(posixpath.dirname(source), spec))
        bases = [base] if base is not None else []
    elif spec.startswith("/") and not spec.startswith("//"):
        bases = [_norm(spec.lstrip("/"))]
    elif spec.startswith(("@/", "~/")):  # the usual bundler alias for src/ (never a package)
        bases = [_norm("src/" + spec[2:]), _norm(spec[2:])]
    else:
        return None  # bare package, node: builtin, URL
    ts_first = language in ("typescript", "tsx") or source.endswith((".ts", ".tsx", ".mts"))
    exts = _TS_EXTS if ts_first else _JS_EXTS
    for base in bases:
        if base is None:
            continue
        if base and idx.has(base):
            return base
        stem, ext = posixpath.splitext(base)
        for ts_ext in _TS_FOR_JS.get(ext, ()):  # TS ESM: './x.js' names x.ts
            if idx.has(stem + ts_ext):
                return stem + ts_ext
        if base:
            for ext in exts:
                if idx.has(base + ext):
                    return base + ext
        if base in idx.dirs:
            for ext in exts:
                candidate = _join(base, "index" + ext)
                if idx.has(candidate):
                    return candidate
    return None


# --- Python ---------------------------------------------------------------------------


def _py_module_file(directory: str, dotted: str, idx: _Index) -> str | None:
    rel = _join(directory, dotted.replace(".", "/")) if dotted else directory
    if dotted:
        for candidate in (rel + ".py", rel + ".pyi"):
            if idx.has(candidate):
                return candidate
    for candidate in (_join(rel, "__init__.py"), _join(rel, "__init__.pyi")):
        if idx.has(candidate):
            return candidate
    return None


def _py_resolve_in(
    directory: str, dotted: str, idx: _Index, names: Sequence[str] | None
) -> str | None:
    if names:
        for name in names:
            if name and name != "*" and re.fullmatch(r"\w+", name):
                sub = f"{dotted}.{name}" if dotted else name
                found = _py_module_file(directory, sub, idx)
                if found is not None:
                    return found
    return _py_module_file(directory, dotted, idx)


def _resolve_python(
    source: str, module: str, idx: _Index, names: Sequence[str] | None
) -> str | None:
    if not re.fullmatch(r"\.*(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?", module):
        return None
    dots = len(module) - len(module.lstrip("."))
    dotted = module[dots:]
    if dots:
        package = posixpath.dirname(source)
        for _ in range(dots - 1):
            if not package:
                return None
            package = posixpath.dirname(package)
        return _py_resolve_in(package, dotted, idx, names)
    if not dotted:
        return None
    top = dotted.split(".", 1)[0]
    roots = ["", "src"]
    roots.extend(r for r in idx.py_roots(top) if r not in roots)
    for root in roots:
        if root and root not in idx.dirs:
            continue
        if _join(root, top) not in idx.dirs and not idx.has(_join(root, top) + ".py"):
            if not idx.has(_join(root, top) + ".pyi"):
                continue
        found = _py_resolve_in(root, dotted, idx, names)
        if found is not None:
            return found
    return None


# --- Go -------------------------------------------------------------------------------


def _go_package_file(directory: str, idx: _Index) -> str | None:
    for name in idx.files_in(directory):
        if name.endswith(".go") and not name.endswith("_test.go"):
            return _join(directory, name)
    return None


def _resolve_go(source: str, module: str, idx: _Index, go_module: str | None) -> str | None:
    if module.startswith(("./", "../")):  # GOPATH-era relative import
        base = _norm(posixpath.join(posixpath.dirname(source), module))
        return _go_package_file(base, idx) if base is not None else None
    candidates: list[str] = []
    gm = (go_module or "").strip().rstrip("/")
    if gm and (module == gm or module.startswith(gm + "/")):
        rel = module[len(gm) :].lstrip("/")
        # the go.mod may sit in a subdirectory: prefer the one enclosing the source file
        roots = []
        d = posixpath.dirname(source)
        while True:
            if idx.has(_join(d, "go.mod")):
                roots.append(d)
            if not d:
                break
            d = posixpath.dirname(d)
        if "" not in roots:
            roots.append("")
        for r in roots:
            directory = _norm(_join(r, rel))
            if directory is not None:
                candidates.append(directory)
    candidates.append("vendor/" + module)
    for directory in candidates:
        found = _go_package_file(directory, idx)
        if found is not None:
            return found
    return None


# --- Java -----------------------------------------------------------------------------


def _closest(source: str, found: list[str]) -> str:
    """Among candidate paths prefer the one sharing the longest directory prefix with source."""
    if len(found) == 1:
        return found[0]
    src_parts = source.split("/")

    def shared(p: str) -> int:
        n = 0
        for a, b in zip(src_parts, p.split("/"), strict=False):
            if a != b:
                break
            n += 1
        return n

    return sorted(found, key=lambda p: (-shared(p), p))[0]


def _java_class_file(source: str, segments: list[str], idx: _Index) -> str | None:
    rel = "/".join(segments) + ".java"
    candidates = idx.basenames.get(segments[-1] + ".java", [])
    found = [p for p in candidates if p == rel or p.endswith("/" + rel)]
    return _closest(source, found) if found else None


def _resolve_java(source: str, module: str, idx: _Index) -> str | None:
    segments = [s for s in module.split(".") if s]
    if not segments:
        return None
    if segments[-1] == "*":
        package = segments[:-1]
        if not package:
            return None
        rel = "/".join(package)
        dirs = [d for d in idx.dirs_named(package[-1]) if d == rel or d.endswith("/" + rel)]
        found = []
        for d in dirs:
            for name in idx.files_in(d):
                if name.endswith(".java"):
                    found.append(_join(d, name))
                    break
        if found:
            return _closest(source, found)
        segments = package  # import static a.b.Strings.* : the class itself
    # a.b.C, a.b.C.member (static), a.b.Outer.Inner: drop trailing segments while the new
    # last segment still looks like a class name
    k = len(segments)
    while k >= 1:
        if k < len(segments) and not segments[k - 1][:1].isupper():
            break
        found_file = _java_class_file(source, segments[:k], idx)
        if found_file is not None:
            return found_file
        k -= 1
    return None


# --- Rust -----------------------------------------------------------------------------

_RUST_EXTERNAL = {"std", "core", "alloc", "proc_macro", "test"}
_RUST_ROOT_FILES = ("lib.rs", "main.rs")


def _rust_is_crate_root(source: str) -> bool:
    parts = source.split("/")
    if parts[-1] in _RUST_ROOT_FILES:
        return True
    return len(parts) >= 2 and parts[-2] in ("bin", "examples", "tests", "benches")


def _rust_module_dir(source: str) -> str:
    """Directory holding the child modules of the module defined by `source`."""
    if source.endswith("/mod.rs") or source == "mod.rs" or _rust_is_crate_root(source):
        return posixpath.dirname(source)
    return source[:-3] if source.endswith(".rs") else posixpath.dirname(source)


def _rust_crate_root(source: str, idx: _Index) -> str:
    d = posixpath.dirname(source)
    while True:
        if any(idx.has(_join(d, f)) for f in _RUST_ROOT_FILES):
            return d
        if not d:
            break
        d = posixpath.dirname(d)
    parts = source.split("/")
    if "src" in parts:
        return "/".join(parts[: len(parts) - 1 - parts[::-1].index("src")])
    return posixpath.dirname(source)


def _rust_module_file(directory: str, segments: Sequence[str], idx: _Index) -> str | None:
    rel = _join(directory, "/".join(segments)) if segments else directory
    if segments:
        for candidate in (rel + ".rs", _join(rel, "mod.rs")):
            if idx.has(candidate):
                return candidate
        return None
    for name in _RUST_ROOT_FILES:
        if idx.has(_join(rel, name)):
            return _join(rel, name)
    if rel and idx.has(rel + ".rs"):
        return rel + ".rs"
    if idx.has(_join(rel, "mod.rs")):
        return _join(rel, "mod.rs")
    return None


def _rust_longest(directory: str, segments: list[str], idx: _Index, minimum: int) -> str | None:
    for k in range(len(segments), minimum - 1, -1):
        found = _rust_module_file(directory, segments[:k], idx)
        if found is not None:
            return found
    return None


def _resolve_rust(source: str, module: str, idx: _Index, names: Sequence[str] | None) -> str | None:
    segments = [s for s in module.split("::") if s]
    if not segments or not all(re.fullmatch(r"\w+", s) for s in segments):
        return None
    if names:
        extra = [n for n in names if n and n != "*" and re.fullmatch(r"\w+", n)]
        if extra:
            segments = segments + extra[:1]
    head = segments[0]
    if head in _RUST_EXTERNAL:
        return None
    if head == "crate":
        return _rust_longest(_rust_crate_root(source, idx), segments[1:], idx, 0)
    if head in ("self", "super"):
        directory = _rust_module_dir(source)
        rest = segments
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                if not directory:
                    return None
                directory = posixpath.dirname(directory)
            rest = rest[1:]
        return _rust_longest(directory, rest, idx, 0)
    # `mod foo;` or a 2018-edition path starting at a module in scope
    found = _rust_longest(_rust_module_dir(source), segments, idx, 1)
    if found is not None:
        return found
    crate_src = idx.rust_crates().get(head.replace("-", "_"))
    if crate_src is not None:  # another crate of the same workspace
        return _rust_longest(crate_src, segments[1:], idx, 0)
    return None
