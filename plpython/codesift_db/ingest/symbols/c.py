"""C and C++: function definitions (`X::f` is a method unless X is a namespace of the file),
structs, unions, enums and, in C++, classes and namespaces; `typedef struct {..} name_t;`
takes the typedef's name, and a C++ `template <...>` is part of the range."""

from __future__ import annotations

import re
from collections.abc import Callable

from .spec import _container, _Def, _field, _name_text, _parent, _Spec, _split_scoped


def _c_function(node, ctx):
    declarator = _field(node, "declarator")
    for _ in range(64):  # pointer/reference declarators wrap the function declarator
        if declarator is None or declarator.type == "function_declarator":
            break
        declarator = _field(declarator, "declarator") or (declarator.named_children or [None])[0]
    if declarator is None or declarator.type != "function_declarator":
        return None
    name_node = _field(declarator, "declarator")
    quals, name = _split_scoped(" ".join(_name_text(name_node, ctx).split()))
    if not name or not re.match(r"[~\w]", name):
        return None
    d = _Def(name, "function", node, _field(node, "body"), quals)
    d.name_row = name_node.start_point[0]
    if quals and quals[-1] not in ctx.namespaces:
        d.kind = "method"
    return d


def _c_record(kind: str) -> Callable:
    """struct/union/enum/class with a body; `typedef struct {..} Name;` takes the typedef."""

    def handler(node, ctx):
        body = _field(node, "body")
        if body is None:
            return None
        name_node = _field(node, "name")
        target, name = node, _name_text(name_node, ctx)
        row = name_node.start_point[0] if name_node is not None else None
        parent = _parent(node, ctx)
        if parent is not None and parent.type == "type_definition":
            # `typedef struct tag {..} name_t;`: callers use the typedef name.
            target = parent
            alias = _field(parent, "declarator")
            if alias is not None and alias.type == "type_identifier":
                name = _name_text(alias, ctx)
                row = None  # `} name_t;` ends the definition: its first row names it
        quals, name = _split_scoped(name)
        if not name or not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None
        return _Def(name, kind, target, body, quals, name_row=row)

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
