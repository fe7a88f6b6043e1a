"""JavaScript and TypeScript (and TSX): declarations, bindings whose value is a function,
class or object literal (`const f = () => {}`, `module.exports.x = ...`,
`Foo.prototype.bar = ...`), object-literal scopes, Express-style routes, and declarations
tree-sitter demotes to expressions inside an ERROR region."""

from __future__ import annotations

import re
from collections.abc import Callable

from .spec import (
    _FUNCTION,
    _Container,
    _container,
    _count_children,
    _Def,
    _field,
    _name_text,
    _named,
    _parent,
    _Spec,
    _text,
)

_JS_FUNCTIONS = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_CLASSES = frozenset({"class", "class_expression"})
_HTTP_VERBS = frozenset({"get", "post", "put", "delete", "patch", "options", "head", "all"})
# The values that make a binding a definition (or a container): _js_value_def's cases.
_JS_VALUES = _JS_FUNCTIONS | _JS_CLASSES | {"object"}


def _js_value_def(name_node, value, node, ctx):
    """A binding of the name at `name_node` whose value is a function, class or object
    literal, or None."""
    if value is None or name_node is None:
        return None
    name_text = _name_text(name_node, ctx)
    quals, name = _split_dotted(name_text)
    row = name_node.start_point[0]
    if value.type in _JS_FUNCTIONS and name:
        kind = "method" if ".prototype." in name_text else "function"
        return _Def(name, kind, node, _field(value, "body"), quals, name_row=row)
    if value.type in _JS_CLASSES and name:
        return _Def(name, "class", node, _field(value, "body"), quals, name_row=row)
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
    return _js_value_def(name, value, target, ctx)


def _js_field(node, ctx):
    value = _field(node, "value")
    if value is None or value.type not in _JS_VALUES:
        return None
    return _js_value_def(_field(node, "name", "property"), value, node, ctx)


def _js_pair(node, ctx):
    key = _field(node, "key")
    if key is None or key.type not in ("property_identifier", "string", "identifier"):
        return None
    value = _field(node, "value")
    if value is None or value.type not in _JS_VALUES:
        return None
    return _js_value_def(key, value, node, ctx)


def _js_assignment(node, ctx):
    left, right = _field(node, "left"), _field(node, "right")
    if left is None or left.type not in ("member_expression", "identifier"):
        return None
    if right is None or right.type not in _JS_VALUES:
        return None
    parent = _parent(node, ctx)
    target = parent if parent is not None and parent.type == "expression_statement" else node
    if right.type == "object" and _name_text(left, ctx) == "module.exports":
        return _Container((), classlike=False)
    return _js_value_def(left, right, target, ctx)


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
