"""Python: functions and classes (a decorator is part of the definition's range); a function
decorated `@app.route(...)`, `@router.get(...)` and the like is a 'route'."""

from __future__ import annotations

import re

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


_PYTHON_SPEC = _Spec(
    {"function_definition": _py_function, "class_definition": _named("class")},
    wrappers=frozenset({"decorated_definition"}),
    # Python definitions are statements: expressions never hold one.
    opaque=frozenset({"expression_statement", "return_statement", "string", "comment"}),
)
