"""Ruby: methods, singleton methods (`def Obj.m` qualified by Obj), classes and modules
(both 'class')."""

from __future__ import annotations

from .spec import _FUNCTION, _field, _name_text, _named, _Spec, _split_scoped


def _ruby_singleton(node, ctx):
    d = _FUNCTION(node, ctx)
    obj = _name_text(_field(node, "object"), ctx)
    if d is not None and obj and obj != "self":
        d.quals = _split_scoped(obj)[0] + (_split_scoped(obj)[1],)
    return d


_RUBY_SPEC = _Spec(
    {
        "method": _FUNCTION,
        "singleton_method": _ruby_singleton,
        "class": _named("class"),
        "module": _named("class"),
    }
)
