"""What a language's tree rules are made of, shared by the language modules and the walk.

A language is a _Spec: handlers by node type, each returning a _Def (a definition: its name,
kind and the nodes that give its range and body), a _Container (a scope that only qualifies
what it holds), or None; plus the node types that wrap a definition, are glued to it, or are
never walked. Handlers read nodes through the helpers here and the walk's state through _Ctx.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Names longer than this (in bytes of source) are not names; their text is never read.
_MAX_NAME_BYTES = 4096


@dataclass
class _Def:
    """A definition found at a node: what it is and which nodes give its range and body."""

    name: str
    kind: str
    node: Any  # the node whose range (after wrappers/attachments) is the symbol's
    body: Any = None  # the node where the signature stops
    quals: tuple = ()  # extra qualifiers: Go receiver, C++ `Class::`, Ruby `A::B`
    classlike: bool | None = None  # scope of children; None: derived from kind
    name_row: int | None = None  # 0-based row of the name; None: the first row of `node`


@dataclass
class _Container:
    """A qualifier-only scope (namespace, impl block, object literal): not a symbol itself."""

    parts: tuple
    classlike: bool


@dataclass
class _Spec:
    """A language's tree rules: a handler per node type that can hold a definition."""

    handlers: dict[str, Callable]
    wrappers: frozenset = frozenset()  # parents whose range belongs to the definition
    attached: frozenset = frozenset()  # preceding siblings glued to the next definition
    opaque: frozenset = frozenset()  # never hold definitions: not walked (big literals)
    # (a _Def, _Ctx) -> the definition's docstring ('' when none): Python's
    docstring: Callable | None = None


class _Ctx:
    """One file's walk, as the handlers see it: the source bytes, the C++ namespaces, and
    the path of nodes from the root to the current one."""

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
        body = _field(node, *body_fields)
        return _Def(name, kind, node, body, quals, name_row=name_node.start_point[0])

    return handler


def _container(node, ctx):
    """A named namespace/module: qualifies what it holds, is not a symbol itself."""
    quals, last = _split_scoped(_name_text(_field(node, "name"), ctx).strip("\"'`"))
    return _Container(quals + (last,), classlike=False) if last else None


_FUNCTION = _named("function")


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
