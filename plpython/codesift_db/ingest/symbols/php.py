"""PHP: functions, methods, classes, interfaces, traits and enums."""

from __future__ import annotations

from .spec import _FUNCTION, _named, _Spec

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
