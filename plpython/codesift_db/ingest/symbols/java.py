"""Java: classes, interfaces, enums, records, methods and constructors; a method with a
Spring `@GetMapping`-style or JAX-RS annotation is a 'route'."""

from __future__ import annotations

import re

from .spec import _FUNCTION, _annotated_method, _named, _Spec

_JAVA_ROUTE = re.compile(
    r"@(Get|Post|Put|Delete|Patch|Request)Mapping\b|@(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)\b"
)

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
