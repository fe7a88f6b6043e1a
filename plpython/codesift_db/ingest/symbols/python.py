"""Python: functions and classes (a decorator is part of the definition's range); a function
decorated `@app.route(...)`, `@router.get(...)` and the like is a 'route'. A definition's
docstring is the string literal that is the first statement of its body (not an f-string
nor bytes), cleaned as inspect.cleandoc does."""

from __future__ import annotations

import re

from .comments import clean_docstring
from .spec import _FUNCTION, _named, _parent, _Spec, _text

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


# A docstring's source read at most (a giant string literal is cut, then cleaned).
MAX_DOCSTRING_BYTES = 16_384
_STRING_OPEN = re.compile(r"[rRuU]?(\"\"\"|'''|\"|')")


def _py_docstring(d, ctx) -> str:
    """The docstring of a function or class: its body's first statement (comments before it
    skipped) when that is a lone string literal, without its quotes, cleaned; else ''."""
    block = d.body
    if block is None or block.type != "block":
        return ""
    first = None
    for i in range(min(block.named_child_count, 8)):
        child = block.named_child(i)
        if child.type != "comment":
            first = child
            break
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return ""
    string = first.named_child(0)
    if string.type != "string":
        return ""
    end = min(string.end_byte, string.start_byte + MAX_DOCSTRING_BYTES)
    raw = ctx.src_bytes[string.start_byte : end].decode("utf-8", "replace")
    opening = _STRING_OPEN.match(raw)  # f-strings and bytes are not docstrings
    if opening is None:
        return ""
    quote = opening.group(1)
    text = raw[opening.end() :]
    if end == string.end_byte and text.endswith(quote):
        text = text[: -len(quote)]
    return clean_docstring(text)


_PYTHON_SPEC = _Spec(
    {"function_definition": _py_function, "class_definition": _named("class")},
    wrappers=frozenset({"decorated_definition"}),
    # Python definitions are statements: expressions never hold one.
    opaque=frozenset({"expression_statement", "return_statement", "string", "comment"}),
    docstring=_py_docstring,
)
