"""Import statements of one source file, found with tree-sitter (so imports inside comments
and strings are never reported): Python, JavaScript, TypeScript/TSX, Go, Java, Rust. The
languages, their grammars and their import rules (queries, keyword pre-filters) are in
languages.py; resolving the imports to paths of a repository is import_resolution.py.

    extract_imports(path, text, language, limits=None) -> [{module, names, relation, line}]

Plain Python, no database. Nothing here raises on bad input: syntax errors, NUL bytes, lone
surrogates, huge files and missing grammars all degrade to "what could be found" (possibly
``[]``).

Extraction runs inside the server, where it cannot be cancelled, so its work is bounded: the
bytes parsed (MAX_PARSE_BYTES), the imports kept per file (budget.MAX_IMPORTS, the first in
file order; the rest counted in the budget), and, given a budget.Budget, its deadline (the
loop over matches stops there). The context of a node (its parent, the modules
around a Rust ``mod x;``) comes from one forward pass, never from node.parent, which costs
the node's depth: deeply nested code stays linear.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from .. import budget
from .languages import GRAMMARS, IMPORT_RULES

__all__ = ["LANGUAGES", "MAX_PARSE_BYTES", "extract_imports"]

# Parsing plus querying runs at ~1-2 MB/s with tree-sitter on dense code; cap the bytes
# parsed per file so a generated 50 MB bundle cannot stall a backend. Larger files are cut
# (see _cut_for_parse); real hand-written sources are far below this.
MAX_PARSE_BYTES = 1 << 19

# the languages whose imports are extracted, in the table's order
LANGUAGES = tuple(IMPORT_RULES)

# --------------------------------------------------------------------------------------
# tree-sitter plumbing
# --------------------------------------------------------------------------------------

# A cheap pre-filter: if none of these occur, the file has no imports and is not parsed.
_KEYWORDS: dict[str, re.Pattern[str]] = {
    language: re.compile(rules.keywords) for language, rules in IMPORT_RULES.items()
}

_GO_GROUP = re.compile(r"\s*\(")

_LOADED: dict[str, Any] = {}  # language -> (Parser, Query) or None when unavailable


def _tools(language: str) -> Any:
    if language in _LOADED:
        return _LOADED[language]
    tools = None
    try:
        import importlib

        import tree_sitter as ts

        mod_name, fn_name = GRAMMARS[language]
        grammar = getattr(importlib.import_module(mod_name), fn_name)()
        lang = ts.Language(grammar)
        tools = (ts.Parser(lang), ts.Query(lang, IMPORT_RULES[language].query), ts.QueryCursor)
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
        if not isinstance(text, str) or language not in IMPORT_RULES:
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
        rules = IMPORT_RULES[language]
        if rules.max_start_depth is not None:
            cursor.set_max_start_depth(rules.max_start_depth)
        matches = cursor.matches(tree.root_node)
        handler = _HANDLERS[rules.style]
        ctx = _context(tree, matches, rules.style)
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


def _context(tree: Any, matches: list, style: str) -> dict:
    """What handlers need to know about a node's surroundings, found in one pass:
    'parents': node id -> (parent, grandparent) of JS require()/import() calls;
    'mods': node id -> the names of the inline modules around a Rust ``mod x;``."""
    ctx: dict = {}
    if style == "js":
        calls = [
            caps[key][0] for _, caps in matches for key in ("require", "dynamic") if key in caps
        ]
        if calls:
            ctx["parents"] = _ancestors(tree, calls)
    elif style == "rust":
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


# ImportRules.style -> the handler that reads its captures
_HANDLERS: dict[str, Callable[[dict, list[dict], dict], None]] = {
    "python": _python,
    "js": _js,
    "go": _go,
    "java": _java,
    "rust": _rust,
}
