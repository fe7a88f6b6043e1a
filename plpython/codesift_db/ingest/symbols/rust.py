"""Rust: functions, structs, enums, unions, traits and type aliases (all 'type'); an impl
block qualifies its methods by its type, a mod by its name; `#[...]` attributes are part of
the range."""

from __future__ import annotations

from .spec import (
    _FUNCTION,
    _Container,
    _container,
    _field,
    _name_text,
    _named,
    _Spec,
    _split_scoped,
)


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
