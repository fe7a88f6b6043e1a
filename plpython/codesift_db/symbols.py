"""Symbol extraction: split a source file into functions, classes, methods, routes, sections.

Server-free: PL/Python shims import this module; it only needs the tree-sitter grammar wheels
(each imported lazily, so a missing grammar disables only its language).

    detect_language(path) -> 'python' | 'javascript' | ... | 'markdown' | None
    extract_symbols(path, text, language=None) -> [symbol dict, ...] ordered by start_line

Each symbol is a dict with exactly the keys name, qualified_name, kind, start_line, end_line
(1-based, inclusive), signature, body (the exact lines start..end joined by '\\n'), parent and
part. Decisions worth knowing:

* Ranges include what is glued to a definition: Python decorators, JS/TS decorators, Rust
  `#[...]` attributes, `export`, C++ `template <...>`, and Java/C#/PHP annotations (which the
  grammars already put inside the declaration). Preceding comments are not included.
* `signature` is the text from the range start up to the body opening (so decorators and
  annotations are part of it), whitespace-collapsed, at most 300 characters.
* `parent` is the qualified name of the enclosing scope: a class, an impl/receiver type, a
  C++/TS namespace, a Rust mod, a JS object literal bound to a name; None at top level.
  Java packages and C#/PHP namespaces are not part of qualified names.
* 'function' becomes 'method' when defined directly in a class-like body (class, interface,
  struct, trait, Rust impl) or qualified by a type (Go receiver, C++ `Class::method`).
  Ruby modules are reported as 'class'. Rust traits, enums and all structs are 'type'.
* Routes: JS `app.get('/x', ...)` (name 'GET /x'); Python `@app.route/get/post...`; Java
  `@GetMapping`-style and JAX-RS annotations; C# `[HttpGet]`/`[Route]`. Python/Java/C# routes
  keep the function's name.
* Splitting: a symbol longer than MAX_SYMBOL_LINES or MAX_SYMBOL_CHARS is emitted ONLY as
  parts 1..n (no part 0) that tile its line range exactly. Cuts prefer the shallowest syntax
  boundary (between methods, then between statements), then blank lines, then any line; a
  comment or decorator stays with what follows it. A single line over the limit stays whole;
  if splitting cannot produce two parts the symbol is emitted whole as part 0.
* Declarations without a body (prototypes, abstract/interface methods) are not symbols.
  Syntax errors: tree-sitter recovers; a definition whose header holds a multi-line ERROR
  (it swallowed the code after it) is dropped, while definitions inside it are kept.
* Fallback ('block' kind): unknown languages, a missing grammar, a parsed file that yields
  no symbol at all, files over MAX_PARSE_CHARS and minified files (mostly lines over 10,000
  characters) use top-level brace blocks or indentation blocks (whichever covers more lines),
  else windows of FALLBACK_WINDOW_LINES lines. Block names are best effort.
* Never raises: any failure degrades to the fallback, then to an empty list. Tree walks are
  iterative, so thousands of nesting levels are fine; symbols nested deeper than MAX_NESTING
  are not reported, and one over-limit line range is reported once (minified code).
* Bounded work (extraction runs inside the server, where it cannot be cancelled): every pass
  is linear in the file (parents come from the walk's own path, never from node.parent,
  which costs the node's depth); at most budget.MAX_SYMBOLS symbols (budget.MAX_SECTIONS
  markdown sections) and budget.MAX_SYMBOL_TEXT_CHARS characters of bodies are kept, the
  first in file order, the rest counted; with a budget.Budget the walk and the parse stop at
  its deadline, keeping what was found. What was left out is noted in the budget.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from operator import sub
from typing import Any

from . import budget
from .languages import COMMENT_LINE, COMMENT_MARKER, GRAMMARS, canonical, detect_language

MAX_SYMBOL_LINES = 120
MAX_SYMBOL_CHARS = 6000
FALLBACK_WINDOW_LINES = 60
MAX_SIGNATURE_CHARS = 300
# Bigger files are not parsed (generated code); they get fallback blocks.
MAX_PARSE_CHARS = 4_000_000
# Symbols nested deeper than this are not reported (their bodies would repeat quadratically).
MAX_NESTING = 32
# Below this depth under a symbol, syntax boundaries are no longer worth preferring as cuts.
_CUT_DEPTH_LIMIT = 12
# Names longer than this (in bytes of source) are not names; their text is never read.
_MAX_NAME_BYTES = 4096

# --------------------------------------------------------------------------- languages

# The languages, their extensions and grammars: languages.py.
_PARSERS: dict[str, object] = {}  # language -> Parser, or None once known to be unavailable


def _parser(language: str):
    if language not in _PARSERS:
        try:
            from tree_sitter import Language, Parser

            module_name, func = GRAMMARS[language]
            module = importlib.import_module(module_name)
            _PARSERS[language] = Parser(Language(getattr(module, func)()))
        except Exception:
            _PARSERS[language] = None
    return _PARSERS[language]


# --------------------------------------------------------------------------- entry point


def extract_symbols(
    path: str, text: str, language: str | None = None, limits: budget.Budget | None = None
) -> list[dict]:
    """All symbols of one file (see the module docstring). Never raises.

    `limits` (a budget.Budget) gives the deadline and receives the notes of what was left
    out; without it the caps still apply and nothing is noted."""
    if limits is None:
        limits = budget.unlimited()
    try:
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str) or not text.strip():
            return []
        limits.phase("symbols")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        src = _Source(path or "", text, lines)
        language = _resolve_language(path, text, language)
        out = _Out(limits)
        try:
            if language == "markdown":
                out.reset("sections", budget.MAX_SECTIONS)
                _markdown_symbols(src, out)
            elif language in GRAMMARS and _parser(language) is not None:
                _tree_symbols(src, language, out)
        except (Exception, RecursionError):
            out.reset()
        if not out.items and not limits.expired():
            out.reset()
            _fallback_symbols(src, out)
        symbols = out.items
        symbols.sort(key=lambda s: (s["start_line"], -s["end_line"], s["part"]))
        out.note()
        return symbols
    except (Exception, RecursionError):
        return []


class _Out:
    """The symbols of one file, capped: the first `cap` are kept, the rest counted."""

    def __init__(self, limits: budget.Budget):
        self.limits = limits
        self.reset()

    def reset(self, what: str = "symbols", cap: int = budget.MAX_SYMBOLS) -> None:
        self.items: list[dict] = []
        self.what, self.cap = what, cap
        self.chars = 0  # characters of the kept bodies
        self.full = False
        self.by_text = False  # full because of MAX_SYMBOL_TEXT_CHARS
        self.more = 0  # symbols (or parts) not kept because full
        self.exact = True  # False when counting `more` stopped early (budget.COUNT_SHARE)

    def add(self, symbol: dict) -> None:
        self.items.append(symbol)
        self.chars += len(symbol["body"])
        if len(self.items) >= self.cap:
            self.full = True
        elif self.chars >= budget.MAX_SYMBOL_TEXT_CHARS:
            self.full = self.by_text = True

    def counting_stops(self) -> bool:
        """Whether to stop walking the file just to count what is over the cap."""
        if self.full and self.limits.used(budget.COUNT_SHARE):
            self.exact = False
        return not self.exact

    def note(self) -> None:
        if self.by_text:  # 'symbol text cap 16777216 (12 more symbols)': the cap in chars
            unit = f"more {self.what}"
            cap = budget.MAX_SYMBOL_TEXT_CHARS
            self.limits.over("symbol text", cap, self.more, unit, self.exact)
        else:
            self.limits.over(self.what, self.cap, self.more, exact=self.exact)


def _resolve_language(path: str, text: str, language: str | None) -> str | None:
    if language:
        language = canonical(language)
    else:
        language = detect_language(path)
    # .h is C by default; headers that are plainly C++ parse far better with the C++ grammar.
    if language == "c" and str(path).lower().endswith(".h"):
        if _CPP_HINT.search(text[:200_000]):
            language = "cpp"
    return language


# Plainly C++ (possessive: a line of blanks costs its length, not its square).
_CPP_HINT = re.compile(r"^[^\S\n]*+(class|namespace|template\s*+<)\b|::", re.M)


class _Source:
    """The file as lines plus cumulative character counts, for cheap range sizes. The
    per-line tables are built by C-level map/accumulate (a file may have a million lines)."""

    def __init__(self, path: str, text: str, lines: list[str]):
        self.path = path
        self.text = text
        self.lines = lines
        # characters before each row, newlines excluded: chars() adds one per row
        self._before = list(accumulate(map(len, lines), initial=0))
        self._filled: list[int] | None = None  # non-blank rows before each row
        self._indent: list[int] | None = None

    def chars(self, start: int, end: int) -> int:
        """Characters of 0-based rows start..end inclusive (newlines counted)."""
        return self._before[end + 1] - self._before[start] + end + 1 - start

    def body(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start : end + 1])

    def _filled_rows(self) -> list[int]:
        if self._filled is None:
            self._filled = list(accumulate(map(bool, map(str.strip, self.lines)), initial=0))
        return self._filled

    def blank(self, row: int) -> bool:
        filled = self._filled_rows()
        return filled[row + 1] == filled[row]

    def has_text(self, start: int, end: int) -> bool:
        """Whether rows start..end hold anything but whitespace (body(start, end).strip())."""
        filled = self._filled_rows()
        return filled[end + 1] > filled[start]

    def indent(self, row: int) -> int:
        """Leading whitespace characters of a row (0 past the last row)."""
        if self._indent is None:
            lengths = map(len, self.lines)
            self._indent = list(map(sub, lengths, map(len, map(str.lstrip, self.lines))))
        return self._indent[row] if row < len(self._indent) else 0


# --------------------------------------------------------------------------- symbol output


def _emit(out: _Out, src: _Source, sym: dict, start: int, end: int, cuts) -> None:
    """Append `sym` (rows start..end, 0-based) whole, or as parts when it is over the limits.

    `cuts` maps a row to a preference score for starting a new part there (lower is better),
    or is a callable producing that map lazily. Once `out` is full a symbol is only counted.
    """
    end = min(end, len(src.lines) - 1)
    if start > end:
        return
    if out.full:
        out.more += 1
        return
    if out.limits.expired():
        return
    if _within_limits(src, start, end):
        parts = [(start, end)]
    else:
        parts = _split_rows(src, start, end, cuts() if callable(cuts) else cuts, out.limits)
    merged: list[tuple[int, int]] = []
    for s, e in parts:  # a blank-only part joins its neighbour: no empty bodies, no gaps
        if merged and (not src.has_text(s, e) or not src.has_text(*merged[-1])):
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    numbered = len(merged) > 1
    for i, (s, e) in enumerate(merged, 1):
        if not src.has_text(s, e):
            continue
        if out.full:
            out.more += sum(1 for s2, e2 in merged[i - 1 :] if src.has_text(s2, e2))
            return
        if numbered and out.limits.expired():
            return
        body = src.body(s, e)
        out.add(dict(sym, start_line=s + 1, end_line=e + 1, body=body, part=i if numbered else 0))


def _within_limits(src: _Source, start: int, end: int) -> bool:
    return end - start + 1 <= MAX_SYMBOL_LINES and src.chars(start, end) - 1 <= MAX_SYMBOL_CHARS


def _split_rows(
    src: _Source, start: int, end: int, cuts: dict, limits: budget.Budget
) -> list[tuple[int, int]]:
    """Greedy tiling of rows start..end into parts within the limits.

    From each part start, find the furthest row the limits allow, then cut at the best-scored
    candidate row in reach (ties: the furthest), ignoring candidates that would leave the part
    under a quarter full. Blank-line boundaries are weak candidates; any row is the last resort.
    """
    parts = []
    p = start
    while p <= end:
        if limits.expired():  # give up: the rest as one (unused) part
            parts.append((p, end))
            break
        reach = p
        while (
            reach < end
            and reach + 1 - p + 1 <= MAX_SYMBOL_LINES
            and src.chars(p, reach + 1) - 1 <= MAX_SYMBOL_CHARS
        ):
            reach += 1
        if reach >= end:
            parts.append((p, end))
            break
        best = None
        best_score = None
        floor = p + 1 + (reach - p) // 4
        for c in range(p + 1, reach + 2):
            score = cuts.get(c)
            if score is None and src.blank(c - 1) and not src.blank(c):
                score = 1000
            if score is None or c < floor:
                continue
            if best_score is None or score <= best_score:
                best, best_score = c, score
        nxt = best if best is not None else reach + 1
        parts.append((p, nxt - 1))
        p = nxt
    return parts


def _collapse(text: str, limit: int = MAX_SIGNATURE_CHARS) -> str:
    text = " ".join(text[: limit * 8].split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------- tree-sitter


@dataclass
class _Def:
    """A definition found at a node: what it is and which nodes give its range and body."""

    name: str
    kind: str
    node: Any  # the node whose range (after wrappers/attachments) is the symbol's
    body: Any = None  # the node where the signature stops
    quals: tuple = ()  # extra qualifiers: Go receiver, C++ `Class::`, Ruby `A::B`
    classlike: bool | None = None  # scope of children; None: derived from kind


@dataclass
class _Container:
    """A qualifier-only scope (namespace, impl block, object literal): not a symbol itself."""

    parts: tuple
    classlike: bool


@dataclass
class _Spec:
    handlers: dict[str, Callable]
    wrappers: frozenset = frozenset()  # parents whose range belongs to the definition
    attached: frozenset = frozenset()  # preceding siblings glued to the next definition
    opaque: frozenset = frozenset()  # never hold definitions: not walked (big literals)


def _text(node, ctx) -> str:
    """The source text of a node (sliced from the file: node.text would ask the parse's
    read callback again)."""
    if node is None:
        return ""
    return ctx.src_bytes[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _name_text(node, ctx) -> str:
    """The text of a node that names something; '' when it is too long to be a name (reading
    it for every nesting level would repeat the text quadratically)."""
    if node is None or node.end_byte - node.start_byte > _MAX_NAME_BYTES:
        return ""
    return ctx.src_bytes[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _parent(node, ctx):
    """The parent of `node`, which is the walk's current node or one of its nearest
    ancestors: taken from the walk's path (node.parent costs the node's depth)."""
    path = ctx.path
    for i in range(len(path) - 1, max(len(path) - 8, 0) - 1, -1):
        if path[i] is node:
            return path[i - 1] if i else None
    for i in range(len(path) - 1, max(len(path) - 8, 0) - 1, -1):
        if path[i] == node:
            return path[i - 1] if i else None
    return node.parent


def _count_children(parent, types: tuple, ctx) -> int:
    """Named children of `parent` of one of `types`, counted once per parent."""
    key = (parent.id, types)
    count = ctx.counts.get(key)
    if count is None:
        count = ctx.counts[key] = sum(1 for c in parent.named_children if c.type in types)
    return count


def _field(node, *names):
    for name in names:
        child = node.child_by_field_name(name)
        if child is not None:
            return child
    return None


_NAME_OK = re.compile(r"\S")


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not _NAME_OK.search(name) or len(name) > 200:
        return ""
    return name


def _split_scoped(name: str) -> tuple[tuple, str]:
    """'A::B::c' -> (('A', 'B'), 'c'), template arguments dropped."""
    if len(name) > _MAX_NAME_BYTES:
        return (), ""
    if "<" not in name and ":" not in name and "\\" not in name:  # the common case
        return (), name.strip()
    for _ in range(10):
        stripped = re.sub(r"<[^<>]*>", "", name)
        if stripped == name:
            break
        name = stripped
    parts = [p.strip() for p in name.replace("\\", "::").split("::") if p.strip()]
    if not parts:
        return (), ""
    return tuple(parts[:-1]), parts[-1]


def _named(kind: str, name_fields=("name",), body_fields=("body",)) -> Callable:
    """Handler for the common case: a node with a name field and a body field."""

    def handler(node, ctx):
        name_node = _field(node, *name_fields)
        quals, name = _split_scoped(_name_text(name_node, ctx))
        if not name:
            return None
        return _Def(name, kind, node, _field(node, *body_fields), quals)

    return handler


def _container(node, ctx):
    """A named namespace/module: qualifies what it holds, is not a symbol itself."""
    quals, last = _split_scoped(_name_text(_field(node, "name"), ctx).strip("\"'`"))
    return _Container(quals + (last,), classlike=False) if last else None


_FUNCTION = _named("function")


# --- Python ------------------------------------------------------------------------------

_PY_ROUTE = re.compile(
    r"^@\s*[\w.]+\.(route|get|post|put|delete|patch|head|options|websocket|api_route)\s*\("
)


def _py_function(node, ctx):
    d = _FUNCTION(node, ctx)
    parent = _parent(node, ctx) if d is not None else None
    if parent is not None and parent.type == "decorated_definition":
        for child in parent.named_children:
            if child.type == "decorator" and _PY_ROUTE.match(_text(child, ctx)):
                d.kind = "route"
    return d


# --- JavaScript / TypeScript -------------------------------------------------------------

_JS_FUNCTIONS = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_CLASSES = frozenset({"class", "class_expression"})
_HTTP_VERBS = frozenset({"get", "post", "put", "delete", "patch", "options", "head", "all"})
# The values that make a binding a definition (or a container): _js_value_def's cases.
_JS_VALUES = _JS_FUNCTIONS | _JS_CLASSES | {"object"}


def _js_value_def(name_text: str, value, node, ctx):
    """A binding whose value is a function, class or object literal, or None."""
    if value is None:
        return None
    quals, name = _split_dotted(name_text)
    if value.type in _JS_FUNCTIONS and name:
        kind = "method" if ".prototype." in name_text else "function"
        return _Def(name, kind, node, _field(value, "body"), quals)
    if value.type in _JS_CLASSES and name:
        return _Def(name, "class", node, _field(value, "body"), quals)
    if value.type == "object":
        return _Container(quals + ((name,) if name else ()), classlike=False)
    return None


def _split_dotted(text: str) -> tuple[tuple, str]:
    """'module.exports.x' -> ((), 'x'); 'Foo.prototype.bar' -> (('Foo',), 'bar')."""
    text = text.strip().strip("\"'`")
    parts = [p for p in text.split(".") if p and p not in ("module", "exports", "prototype")]
    parts = [p for p in parts if p != "this"]
    if not parts or any(not re.fullmatch(r"[\w$#\[\]]+", p) for p in parts):
        return (), ""
    return tuple(parts[:-1]), parts[-1]


def _js_declarator(node, ctx):
    name = _field(node, "name")
    if name is None or name.type != "identifier":
        return None
    value = _field(node, "value")
    if value is None or value.type not in _JS_VALUES:
        return None
    parent = _parent(node, ctx)
    target = node
    # `const f = () => {}` alone in its statement: the statement (and `export`) is the range.
    if parent is not None and parent.type in ("lexical_declaration", "variable_declaration"):
        if _count_children(parent, ("variable_declarator",), ctx) == 1:
            target = parent
    return _js_value_def(_name_text(name, ctx), value, target, ctx)


def _js_field(node, ctx):
    value = _field(node, "value")
    if value is None or value.type not in _JS_VALUES:
        return None
    return _js_value_def(_name_text(_field(node, "name", "property"), ctx), value, node, ctx)


def _js_pair(node, ctx):
    key = _field(node, "key")
    if key is None or key.type not in ("property_identifier", "string", "identifier"):
        return None
    value = _field(node, "value")
    if value is None or value.type not in _JS_VALUES:
        return None
    return _js_value_def(_name_text(key, ctx), value, node, ctx)


def _js_assignment(node, ctx):
    left, right = _field(node, "left"), _field(node, "right")
    if left is None or left.type not in ("member_expression", "identifier"):
        return None
    if right is None or right.type not in _JS_VALUES:
        return None
    parent = _parent(node, ctx)
    target = parent if parent is not None and parent.type == "expression_statement" else node
    left_text = _name_text(left, ctx)
    if right.type == "object" and left_text == "module.exports":
        return _Container((), classlike=False)
    return _js_value_def(left_text, right, target, ctx)


def _js_call(node, ctx):
    """Express-style routes: `app.get('/path', handler)` -> 'GET /path'."""
    func, args = _field(node, "function"), _field(node, "arguments")
    if func is None or args is None or func.type != "member_expression":
        return None
    verb = _name_text(_field(func, "property"), ctx)
    if verb not in _HTTP_VERBS:
        return None
    values = [a for a in args.named_children if a.type != "comment"]
    if len(values) < 2 or values[0].type not in ("string", "template_string"):
        return None
    route = _text(values[0], ctx)[1:-1]
    if not route.startswith(("/", "*")) or "\n" in route:
        return None
    parent = _parent(node, ctx)
    target = parent if parent is not None and parent.type == "expression_statement" else node
    handler = values[-1] if values[-1].type in _JS_FUNCTIONS else None
    body = _field(handler, "body") if handler is not None else None
    return _Def(f"{verb.upper()} {route}", "route", target, body, classlike=False)


def _js_in_error(kind: str) -> Callable:
    """Inside an ERROR region tree-sitter demotes declarations to (named) expressions."""
    named = _named(kind)

    def handler(node, ctx):
        parent = _parent(node, ctx)
        if parent is None or parent.type != "ERROR":
            return None
        return named(node, ctx)

    return handler


_JS_HANDLERS = {
    "class": _js_in_error("class"),
    "function_expression": _js_in_error("function"),
    "function": _js_in_error("function"),
    "function_declaration": _FUNCTION,
    "generator_function_declaration": _FUNCTION,
    "class_declaration": _named("class"),
    "abstract_class_declaration": _named("class"),
    "method_definition": _FUNCTION,
    "interface_declaration": _named("interface"),
    "type_alias_declaration": _named("type", body_fields=()),
    "enum_declaration": _named("type"),
    "internal_module": _container,
    "module": _container,
    "variable_declarator": _js_declarator,
    "field_definition": _js_field,
    "public_field_definition": _js_field,
    "pair": _js_pair,
    "assignment_expression": _js_assignment,
    "call_expression": _js_call,
}
_JS_SPEC = _Spec(
    _JS_HANDLERS,
    wrappers=frozenset({"export_statement", "ambient_declaration"}),
    attached=frozenset({"decorator"}),
    opaque=frozenset({"array", "string", "template_string", "regex", "comment"}),
)


# --- Go ----------------------------------------------------------------------------------


def _go_method(node, ctx):
    d = _FUNCTION(node, ctx)
    receiver = _field(node, "receiver")
    if d is None or receiver is None:
        return d
    # (s *Store[T]) -> Store: the first type identifier inside the receiver's type.
    for param in receiver.named_children:
        kind = _field(param, "type")
        while kind is not None and kind.type != "type_identifier":
            kind = _field(kind, "type") or (kind.named_children or [None])[0]
        if kind is not None:
            d.quals = (_text(kind, ctx),)
            d.kind = "method"
        break
    return d


def _go_type_spec(node, ctx):
    name = _name_text(_field(node, "name"), ctx)
    if not name:
        return None
    type_node = _field(node, "type")
    kind = "interface" if type_node is not None and type_node.type == "interface_type" else "type"
    body = None
    if type_node is not None and type_node.type in ("struct_type", "interface_type"):
        body = (
            type_node.named_children[0]
            if type_node.type == "struct_type" and type_node.named_children
            else type_node
        )
    target = node
    parent = _parent(node, ctx)
    if parent is not None and parent.type == "type_declaration":
        if _count_children(parent, ("type_spec", "type_alias"), ctx) == 1:
            target = parent
    return _Def(name, kind, target, body)


_GO_SPEC = _Spec(
    {
        "function_declaration": _FUNCTION,
        "method_declaration": _go_method,
        "type_spec": _go_type_spec,
        "type_alias": _go_type_spec,
    }
)


# --- Java / C# ---------------------------------------------------------------------------

_JAVA_ROUTE = re.compile(
    r"@(Get|Post|Put|Delete|Patch|Request)Mapping\b|@(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\b"
)
_CSHARP_ROUTE = re.compile(r"\[\s*(Http(Get|Post|Put|Delete|Patch|Head|Options)|Route)\b")


def _annotated_method(pattern: re.Pattern) -> Callable:
    """A method that becomes a 'route' when its annotations/attributes say so."""

    def handler(node, ctx):
        d = _FUNCTION(node, ctx)
        if d is not None:
            name_node = _field(node, "name")
            stop = min(name_node.start_byte, node.start_byte + 65536)
            prefix = ctx.src_bytes[node.start_byte : stop]
            if pattern.search(prefix.decode("utf-8", "replace")):
                d.kind = "route"
        return d

    return handler


_JAVA_SPEC = _Spec(
    {
        "class_declaration": _named("class"),
        "interface_declaration": _named("interface"),
        "annotation_type_declaration": _named("interface"),
        "enum_declaration": _named("type"),
        "record_declaration": _named("type"),
        "method_declaration": _annotated_method(_JAVA_ROUTE),
        "constructor_declaration": _FUNCTION,
        "compact_constructor_declaration": _FUNCTION,
    }
)

_CSHARP_SPEC = _Spec(
    {
        "class_declaration": _named("class"),
        "struct_declaration": _named("type"),
        "interface_declaration": _named("interface"),
        "enum_declaration": _named("type"),
        "record_declaration": _named("type"),
        "record_struct_declaration": _named("type"),
        "method_declaration": _annotated_method(_CSHARP_ROUTE),
        "constructor_declaration": _FUNCTION,
        "destructor_declaration": _FUNCTION,
        "local_function_statement": _FUNCTION,
    }
)


# --- Rust --------------------------------------------------------------------------------


def _rust_impl(node, ctx):
    type_node = _field(node, "type")
    while type_node is not None and type_node.type in ("generic_type", "reference_type"):
        type_node = _field(type_node, "type")
    quals, name = _split_scoped(_name_text(type_node, ctx))
    if not name:
        return None
    return _Container((name,), classlike=True)


_RUST_SPEC = _Spec(
    {
        "function_item": _FUNCTION,
        "struct_item": _named("type"),
        "enum_item": _named("type"),
        "union_item": _named("type"),
        "trait_item": _named("type"),
        "type_item": _named("type", body_fields=()),
        "impl_item": _rust_impl,
        "mod_item": _container,
    },
    attached=frozenset({"attribute_item"}),
)


# --- C / C++ -----------------------------------------------------------------------------


def _c_function(node, ctx):
    declarator = _field(node, "declarator")
    for _ in range(64):  # pointer/reference declarators wrap the function declarator
        if declarator is None or declarator.type == "function_declarator":
            break
        declarator = _field(declarator, "declarator") or (declarator.named_children or [None])[0]
    if declarator is None or declarator.type != "function_declarator":
        return None
    quals, name = _split_scoped(" ".join(_name_text(_field(declarator, "declarator"), ctx).split()))
    if not name or not re.match(r"[~\w]", name):
        return None
    d = _Def(name, "function", node, _field(node, "body"), quals)
    if quals and quals[-1] not in ctx.namespaces:
        d.kind = "method"
    return d


def _c_record(kind: str) -> Callable:
    """struct/union/enum/class with a body; `typedef struct {..} Name;` takes the typedef."""

    def handler(node, ctx):
        body = _field(node, "body")
        if body is None:
            return None
        target, name = node, _name_text(_field(node, "name"), ctx)
        parent = _parent(node, ctx)
        if parent is not None and parent.type == "type_definition":
            # `typedef struct tag {..} name_t;`: callers use the typedef name.
            target = parent
            alias = _field(parent, "declarator")
            if alias is not None and alias.type == "type_identifier":
                name = _name_text(alias, ctx)
        quals, name = _split_scoped(name)
        if not name or not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None
        return _Def(name, kind, target, body, quals)

    return handler


_C_HANDLERS = {
    "function_definition": _c_function,
    "struct_specifier": _c_record("type"),
    "union_specifier": _c_record("type"),
    "enum_specifier": _c_record("type"),
}
_C_SPEC = _Spec(_C_HANDLERS)
_CPP_SPEC = _Spec(
    dict(
        _C_HANDLERS,
        class_specifier=_c_record("class"),
        namespace_definition=_container,
    ),
    wrappers=frozenset({"template_declaration"}),
)


# --- Ruby / PHP --------------------------------------------------------------------------


def _ruby_singleton(node, ctx):
    d = _FUNCTION(node, ctx)
    obj = _name_text(_field(node, "object"), ctx)
    if d is not None and obj and obj != "self":
        d.quals = _split_scoped(obj)[0] + (_split_scoped(obj)[1],)
    return d


_RUBY_SPEC = _Spec(
    {
        "method": _FUNCTION,
        "singleton_method": _ruby_singleton,
        "class": _named("class"),
        "module": _named("class"),
    }
)

_PHP_SPEC = _Spec(
    {
        "function_definition": _FUNCTION,
        "method_declaration": _FUNCTION,
        "class_declaration": _named("class"),
        "interface_declaration": _named("interface"),
        "trait_declaration": _named("type"),
        "enum_declaration": _named("type"),
    }
)

_PYTHON_SPEC = _Spec(
    {"function_definition": _py_function, "class_definition": _named("class")},
    wrappers=frozenset({"decorated_definition"}),
    # Python definitions are statements: expressions never hold one.
    opaque=frozenset({"expression_statement", "return_statement", "string", "comment"}),
)

_SPECS = {
    "python": _PYTHON_SPEC,
    "javascript": _JS_SPEC,
    "typescript": _JS_SPEC,
    "tsx": _JS_SPEC,
    "go": _GO_SPEC,
    "java": _JAVA_SPEC,
    "csharp": _CSHARP_SPEC,
    "rust": _RUST_SPEC,
    "c": _C_SPEC,
    "cpp": _CPP_SPEC,
    "ruby": _RUBY_SPEC,
    "php": _PHP_SPEC,
}
_CLASSLIKE = frozenset({"class", "interface", "type"})
# Subtrees that hold no definition worth reporting in any language: not walked.
_COMMON_OPAQUE = frozenset(
    """comment line_comment block_comment string string_literal raw_string_literal
    interpreted_string_literal parameters formal_parameters parameter_list
    method_parameters import_statement import_from_statement future_import_statement
    import_declaration package_declaration use_declaration preproc_include using_directive
    namespace_use_declaration""".split()
)


class _Ctx:
    def __init__(self, src_bytes: bytes, text: str):
        self.src_bytes = src_bytes
        # C++ `ns::f()` is a function, `Class::f()` a method: know the namespaces up front.
        self.namespaces = set(re.findall(r"\bnamespace\s+(\w+)", text))
        self.emitted_huge: set[tuple[int, int]] = set()
        self.counts: dict = {}  # (node id, types) -> named children of those types
        # The walk's position: the nodes from the root to the current one, and for each of
        # them the run of `attached` named siblings right before it (decorators, attributes).
        self.path: list = []
        self.runs: list[list] = []


_READ_CHUNK = 1 << 16


def _parse(parser, src_bytes: bytes, limits: budget.Budget):
    """The tree of `src_bytes`, or None; with a deadline the parse is read in chunks so that
    tree-sitter's progress callback can cancel it at the deadline."""
    if limits.deadline is None:
        return parser.parse(src_bytes)
    view = memoryview(src_bytes)

    def read(offset: int, _point) -> bytes:
        return bytes(view[offset : offset + _READ_CHUNK])

    try:
        return parser.parse(read, progress_callback=limits.progress)
    except Exception:  # cancelled (ValueError): a parser resumes a cancelled parse unless reset
        parser.reset()
        return None


def _tree_symbols(src: _Source, language: str, out: _Out) -> None:
    if len(src.text) > MAX_PARSE_CHARS or _looks_minified(src):
        return  # generated/minified: the caller falls back to plain blocks
    spec = _SPECS[language]
    src_bytes = src.text.encode("utf-8", "surrogatepass")
    limits = out.limits
    tree = _parse(_parser(language), src_bytes, limits)
    if tree is None or limits.expired():
        return
    ctx = _Ctx(src_bytes, src.text)
    # Iterative walk with a TreeCursor (far cheaper than materialising child lists); scopes
    # holds (depth of the node that opened it, qualifier path, class-like?). The path of
    # nodes gives parents in O(1) (node.parent walks down from the root: O(depth)).
    cursor = tree.walk()
    path, runs = ctx.path, ctx.runs
    path.append(cursor.node)
    runs.append([])
    scopes = [(-1, (), False)]
    handlers, opaque, attached = spec.handlers, spec.opaque | _COMMON_OPAQUE, spec.attached
    depth = 0  # len(path) - 1
    steps = 0
    node = path[0]
    while True:
        steps += 1
        if not steps & budget.CHECK_EVERY and (out.counting_stops() or limits.expired()):
            return
        node_type = node.type
        handler = handlers.get(node_type)
        if handler is not None:
            found = handler(node, ctx)
            _, names, classlike = scopes[-1]
            if isinstance(found, _Container):
                scopes.append((depth, names + found.parts, found.classlike))
            elif isinstance(found, _Def) and _clean_name(found.name) and len(names) < MAX_NESTING:
                scope = _emit_def(out, src, ctx, spec, found, names, classlike)
                if scope is not None:
                    scopes.append((depth,) + scope)
        if node_type not in opaque and cursor.goto_first_child():
            depth += 1
            node = cursor.node
            path.append(node)
            if attached:
                runs.append([])
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
            depth -= 1
            path.pop()
            if attached:
                runs.pop()
        if attached:  # the run of attached named siblings before the next node
            left = path[-1]
            if left.is_named:
                if left.type in attached:
                    runs[-1].append(left)
                elif runs[-1]:
                    runs[-1] = []
        node = path[-1] = cursor.node
        while scopes[-1][0] >= depth:  # left the subtree that opened these scopes
            scopes.pop()


def _looks_minified(src: _Source) -> bool:
    """True when lines over 10,000 characters hold most of the text (bundles, data blobs)."""
    long_chars = sum(len(line) for line in src.lines if len(line) > 10_000)
    return long_chars * 2 > len(src.text)


def _emit_def(out, src, ctx, spec, d: _Def, path: tuple, classlike: bool):
    """Emit one definition; returns the scope its children live in, or None."""
    kind = d.kind
    if kind in ("function", "method") and d.body is None:
        return None  # a declaration only (interface/abstract/prototype): not a definition
    if out.full:  # over the cap: only counted (its header is not checked)
        out.more += 1
        inner = d.classlike if d.classlike is not None else kind in _CLASSLIKE
        return path + tuple(q for q in d.quals if q) + (_clean_name(d.name),), inner
    if d.body is not None and any(
        c.type == "ERROR" and c.start_byte < d.body.start_byte and c.end_point[0] > c.start_point[0]
        for c in d.node.children
    ):
        return None  # a multi-line error in the header swallowed other code: skip the header
    if kind == "function" and classlike:
        kind = "method"
    start_node, start_row, end_row = _def_range(d.node, spec, ctx)
    if end_row < start_row:
        return None
    name = _clean_name(d.name)
    scope = path + tuple(q for q in d.quals if q)
    inner_classlike = d.classlike if d.classlike is not None else kind in _CLASSLIKE
    if not _within_limits(src, start_row, end_row):
        # Many symbols sharing one over-limit range (minified code) would repeat its body.
        if (start_row, end_row) in ctx.emitted_huge:
            return scope + (name,), inner_classlike
        ctx.emitted_huge.add((start_row, end_row))
    qualified = ".".join(scope + (name,))
    sym = {
        "name": name,
        "qualified_name": qualified,
        "kind": kind,
        "signature": _signature(ctx.src_bytes, start_node, d),
        "parent": ".".join(scope) or None,
    }
    _emit(out, src, sym, start_row, end_row, lambda: _syntax_cuts(src, d.node, start_row))
    return scope + (name,), inner_classlike


def _def_range(node, spec: _Spec, ctx):
    """(first node, first row, last row) of a definition, wrappers and attachments included.

    `node` is the walk's current node or a near ancestor: its wrappers and the attached
    siblings before them come from the walk's path (node.parent and prev_named_sibling
    cost the node's depth)."""
    path = ctx.path
    level = next(
        (i for i in range(len(path) - 1, max(len(path) - 8, 0) - 1, -1) if path[i] is node),
        None,
    )
    if level is None:  # not on the path (not expected): ask the tree
        top = node
        while top.parent is not None and top.parent.type in spec.wrappers:
            top = top.parent
        run = []
        prev = top.prev_named_sibling
        while prev is not None and prev.type in spec.attached:
            run.append(prev)
            prev = prev.prev_named_sibling
        run.reverse()
    else:
        while level > 0 and path[level - 1].type in spec.wrappers:
            level -= 1
        top, run = path[level], (ctx.runs[level] if spec.attached else [])
    first, start_row = top, top.start_point[0]
    for prev in reversed(run):
        if prev.end_point[0] < start_row - 1:
            break
        first, start_row = prev, prev.start_point[0]
    end_row, end_col = top.end_point
    if end_col == 0 and end_row > start_row:  # a node that swallowed the final newline
        end_row -= 1
    return first, start_row, end_row


def _signature(src_bytes: bytes, start_node, d: _Def) -> str:
    begin = start_node.start_byte
    # only the bytes the signature can use are read (never the whole definition)
    end = min(max(d.node.end_byte, begin), begin + MAX_SIGNATURE_CHARS * 8)
    if d.body is not None and d.body.start_byte > begin:
        stop = d.body.start_byte
        for child in d.node.children:  # Ruby puts comments between header and body
            if child.start_byte >= stop:
                break
            if "comment" in child.type and begin < child.start_byte:
                stop = child.start_byte
                break
        text = src_bytes[begin : min(stop, end)]
    else:
        # No body: the declaration up to the end of its first line.
        newline = src_bytes.find(b"\n", min(d.node.start_byte, end), end)
        text = src_bytes[begin : end if newline < 0 else newline]
    return _collapse(text.decode("utf-8", "replace"))


def _syntax_cuts(src: _Source, node, start_row: int) -> dict[int, float]:
    """Row -> score for a part boundary: the depth of the shallowest node starting that row.

    Only nodes that begin their line count (a cut there falls between two constructs). A row
    right after a comment or decorator scores half a level worse, so both stay together.
    """
    cuts: dict[int, float] = {}
    stack = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if depth >= _CUT_DEPTH_LIMIT:
            continue
        glued_row = -1
        for child in current.named_children:
            row, col = child.start_point
            if row > start_row and col == src.indent(row):
                score = depth + (0.5 if row == glued_row else 0)
                if score < cuts.get(row, 1e9):
                    cuts[row] = score
            if "comment" in child.type or child.type in ("decorator", "attribute_item"):
                glued_row = child.end_point[0] + 1
            if child.end_point[0] > child.start_point[0]:
                stack.append((child, depth + 1))
    return cuts


# --------------------------------------------------------------------------- markdown

# An ATX heading's opening: 1-6 '#' then a blank or the end of the line.
_HEADING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# The lines that can open or close a fence or be a heading, found by one C-level scan.
_MARKDOWN_LINE = re.compile(r"^ {0,3}(?:(`{3,}|~{3,})|#{1,6}(?=[ \t]|$))", re.M)


def _heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line with a title, else None.

    The title is the text after the opening, without a closing run of '#' that follows a
    blank, stripped. (What the regex `^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`
    captures, without its backtracking, quadratic in a run of blanks.)"""
    m = _HEADING.match(line)
    if m is None:
        return None
    text = line[m.end() :].strip(" \t")
    if text.endswith("#"):
        before = text.rstrip("#")
        if before[-1:] in (" ", "\t"):
            text = before.rstrip(" \t")
    title = text.strip()
    return (len(m.group(1)), title) if title else None


def _markdown_symbols(src: _Source, out: _Out) -> None:
    headings = []  # (row, level, title)
    fence = None
    limits = out.limits
    text, lines = src.text, src.lines
    row, at = 0, 0  # the row of offset `at`
    for i, m in enumerate(_MARKDOWN_LINE.finditer(text)):
        if not i & budget.CHECK_EVERY and limits.expired():
            break
        row += text.count("\n", at, m.start())
        at = m.start()
        if row >= len(lines):
            break
        line = lines[row]
        marker = m.group(1)  # a fence, or None for a heading's opening
        if fence is not None:
            if marker and marker[0] == fence[0] and len(marker) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = None
            continue
        if marker:
            fence = marker
            continue
        heading = _heading(line)
        if heading is not None:
            headings.append((row, *heading))

    # A section ends before the next heading of its level or above: a stack of the open
    # sections finds every end in one pass.
    count = len(headings)
    closer = [count] * count  # index of the heading that ends each section
    open_sections: list[int] = []
    for i, (_, level, _) in enumerate(headings):
        while open_sections and headings[open_sections[-1]][1] >= level:
            closer[open_sections.pop()] = i
        open_sections.append(i)

    def cuts_of(i: int) -> dict[int, float]:  # the headings inside section i
        return {r: float(lvl) for r, lvl, _ in headings[i + 1 : closer[i]]}

    last = len(src.lines) - 1
    trail: list[tuple[int, str]] = []  # enclosing (level, title)
    for i, (row, level, title) in enumerate(headings):
        if out.full:
            out.more += count - i
            return
        if limits.expired():
            return
        end = headings[closer[i]][0] - 1 if closer[i] < count else last
        while trail and trail[-1][0] >= level:
            trail.pop()
        parent = " > ".join(t for _, t in trail) or None
        trail.append((level, title))
        sym = {
            "name": title,
            "qualified_name": " > ".join(t for _, t in trail),
            "kind": "section",
            "signature": _collapse(src.lines[row]),
            "parent": parent,
        }
        _emit(out, src, sym, row, end, lambda i=i: cuts_of(i))


# --------------------------------------------------------------------------- fallback

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_KEYWORDS = frozenset(
    """abstract async class const def do else enum export extern final fn for fun func function
    if impl import inline interface internal let local module mut new object open override
    package private proc protected pub public sealed static struct sub switch trait type typedef
    union unsafe val var virtual void while""".split()
)
_BRACE_TOKENS = re.compile(r"//|/\*|\*/|\\.|[\"'`{}]")


def _fallback_symbols(src: _Source, out: _Out) -> None:
    limits = out.limits
    braces, depths = _brace_blocks(src, limits)
    indents = _indent_blocks(src, limits)
    if limits.expired():
        return
    table: list[dict] = []  # the cut scores, built once, when a block needs splitting

    def cuts() -> dict[int, float]:
        if not table:
            if blocks is braces:
                table.append({r: 10.0 * d for r, d in enumerate(depths) if d > 0})
            else:
                rows = range(len(src.lines))
                table.append({r: float(src.indent(r)) for r in rows if not src.blank(r)})
        return table[0]

    if braces and _covered(braces) >= _covered(indents):
        blocks = braces
    elif indents:
        blocks = indents
    else:
        _windows(src, out)
        return
    for i, (start, end) in enumerate(blocks):
        if out.full:
            out.more += len(blocks) - i
            return
        if limits.expired():
            return
        name = _block_name(src, start, end)
        sym = {
            "name": name,
            "qualified_name": name,
            "kind": "block",
            "signature": _collapse(src.lines[start]),
            "parent": None,
        }
        _emit(out, src, sym, start, end, cuts)
    if not out.items and not limits.expired():
        _windows(src, out)


def _covered(blocks: list[tuple[int, int]]) -> int:
    return sum(e - s + 1 for s, e in blocks)


def _brace_blocks(src: _Source, limits: budget.Budget) -> tuple[list[tuple[int, int]], list[int]]:
    """Top-level {...} blocks (rows) with their header lines, and the brace depth per row."""
    depth, quote, in_comment = 0, None, False
    depths: list[int] = []
    blocks: list[tuple[int, int]] = []
    open_row = None
    last_end = -1
    tokens, append = _BRACE_TOKENS.findall, depths.append
    for row, line in enumerate(src.lines):
        if not row & budget.CHECK_EVERY and limits.expired():
            break
        append(depth)
        if quote in ('"', "'"):
            quote = None  # these strings do not span lines in brace languages
        for tok in tokens(line):
            if in_comment:
                in_comment = tok != "*/"
            elif quote:
                if tok == quote:
                    quote = None
            elif tok == "//":
                break
            elif tok == "/*":
                in_comment = True
            elif tok in "\"'`":
                quote = tok
            elif tok == "{":
                if depth == 0:
                    open_row = row
                depth += 1
            elif tok == "}" and depth > 0:
                depth -= 1
                if depth == 0 and open_row is not None:
                    if blocks and open_row <= last_end:  # several blocks on one line: one
                        blocks[-1] = (blocks[-1][0], row)
                    else:
                        blocks.append((_block_header(src, open_row, last_end), row))
                    last_end = row
    return blocks, depths


def _block_header(src: _Source, open_row: int, last_end: int) -> int:
    """Extend a block upwards over its header (multi-line signature, annotations)."""
    start = open_row
    while start - 1 > last_end and start > open_row - 10:
        above = src.lines[start - 1].strip()
        if not above or above.endswith((";", "}", "{")):
            break
        start -= 1
    return start


def _indent_blocks(src: _Source, limits: budget.Budget) -> list[tuple[int, int]]:
    """Unindented header lines followed by indented lines."""
    blocks = []
    start = None
    last_body = None
    for row, line in enumerate(src.lines):
        if not row & budget.CHECK_EVERY and limits.expired():
            break
        if not line.strip():
            continue
        if line[0] in " \t":
            if start is not None:
                last_body = row
            continue
        if start is not None and last_body is not None:
            blocks.append((start, last_body))
        start, last_body = row, None
    if start is not None and last_body is not None:
        blocks.append((start, last_body))
    return blocks


def _block_name(src: _Source, start: int, end: int) -> str:
    """Best effort: the identifier before the first '(' or the first non-keyword identifier."""
    for row in range(start, min(end, start + 10) + 1):
        line = src.lines[row][:500]
        if line.lstrip().startswith(("@", "#", "[", "//", "/*", "*")) and row < end:
            continue  # annotations, attributes and comments do not name a block
        head = line.split("{", 1)[0]
        if "(" in head:
            before = _IDENT.findall(head.split("(", 1)[0])
            if before and before[-1] not in _KEYWORDS:
                return before[-1]
        words = _IDENT.findall(head)
        for word in words:
            if word not in _KEYWORDS:
                return word
        if words:
            return words[0]
    return os.path.basename(src.path) or "block"


def _windows(src: _Source, out: _Out) -> None:
    total = len(src.lines)
    for start in range(0, total, FALLBACK_WINDOW_LINES):
        if out.full:
            out.more += len(range(start, total, FALLBACK_WINDOW_LINES))
            return
        if out.limits.expired():
            return
        end = min(total, start + FALLBACK_WINDOW_LINES) - 1
        while start <= end and src.blank(start):
            start += 1
        while end >= start and src.blank(end):
            end -= 1
        if start > end:
            continue
        name = _block_name(src, start, end)
        sym = {
            "name": name,
            "qualified_name": name,
            "kind": "block",
            "signature": _collapse(src.lines[start]),
            "parent": None,
        }
        _emit(out, src, sym, start, end, {})


# Comment lines that document the definition below them: languages.COMMENT_LINE.
MAX_DOC_LINES = 40


def leading_comment(lines: list[str], start_line: int, seen: dict | None = None) -> str:
    """The contiguous comment block directly above a symbol (its doc comment), without
    the comment markers. `lines` are the file's lines; start_line is 1-based. `seen`, a dict
    kept for one file, remembers which rows are comment lines (each row is matched once)."""

    def is_comment(row: int) -> bool:
        if seen is None:
            return COMMENT_LINE.match(lines[row]) is not None
        found = seen.get(row)
        if found is None:
            found = seen[row] = COMMENT_LINE.match(lines[row]) is not None
        return found

    i = start_line - 2
    if i >= 1 and not lines[i].strip() and is_comment(i - 1):
        i -= 1  # one blank line between a doc block and its definition is common in JS
    block: list[str] = []
    while i >= 0 and len(block) < MAX_DOC_LINES and is_comment(i):
        block.append(lines[i])
        i -= 1
    text = "\n".join(reversed(block))
    return COMMENT_MARKER.sub("", text).strip()
