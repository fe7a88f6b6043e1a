"""Go: functions, methods qualified by their receiver's type, and type specs ('interface'
for an interface type, else 'type'); a `type` declaration holding one spec is the range."""

from __future__ import annotations

from .spec import _FUNCTION, _count_children, _Def, _field, _name_text, _parent, _Spec, _text


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
    name_node = _field(node, "name")
    name = _name_text(name_node, ctx)
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
    return _Def(name, kind, target, body, name_row=name_node.start_point[0])


_GO_SPEC = _Spec(
    {
        "function_declaration": _FUNCTION,
        "method_declaration": _go_method,
        "type_spec": _go_type_spec,
        "type_alias": _go_type_spec,
    }
)
