"""C#: classes, structs, interfaces, enums, records, methods, constructors, destructors and
local functions; a method with an `[HttpGet]`-style or `[Route]` attribute is a 'route'."""

from __future__ import annotations

import re

from .spec import _FUNCTION, _annotated_method, _named, _Spec

_CSHARP_ROUTE = re.compile(r"\[\s*(Http(Get|Post|Put|Delete|Patch|Head|Options)|Route)\b")

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
