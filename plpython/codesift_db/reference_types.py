"""Uses of a method or attribute through an object whose class is known where it is used,
for the uses references.py could match by name only (`app.route`, `self.helper` in a
subclass). Called by find_references and callers after Resolver.resolve; reads only what
the reference index stores (code_references, the lines of the blobs).

    resolve_typed(resolver, definitions, pending, read_uses, read_definitions, line_texts)
        -> {index into pending: the definition it reaches}

For a definition `f` of a class `C` (its parent), the class's family is C and the classes
declared as its subclasses (`class X(C)`, `class X extends C`), REFERENCE_HOPS deep, less
those that define `f` themselves (an override). A use `x.f` of `pending` (a by_name member)
becomes resolved to the definition when:

* `x` is `self`, `cls` or `this` and the use is in a family class; or
* in the definition holding the use (or one enclosing it), on a line at or before it, `x`
  is bound to a family class: assigned from its construction (`x = C(...)`, `x := &C{...}`,
  `x = new C(...)`), annotated or declared with it (`x: C`, `c *C`, `C x`), or bound by a
  `with C(...) as x`.

The class's name on that line must itself resolve to the family class (the same
resolution as any use: an import, its own file, its package), so a namesake class
elsewhere does not count. Anything else (an object returned by a call, a pytest fixture, an
attribute of an attribute) stays by_name.

Bounded: MAX_FAMILY classes, MAX_CLASS_USES uses of each read, MAX_LINES lines read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .ingest.languages import detect_language

MAX_FAMILY = 16
MAX_CLASS_USES = 5000
MAX_LINES = 5000
SUBCLASS_HOPS = 2
SELF = frozenset({"self", "cls", "this"})
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
CLASS_KINDS = frozenset({"class", "struct", "interface", "type", "record", "enum"})


def _binds(language: str | None, x: str, c: str) -> list[re.Pattern]:
    """Patterns of a line that binds the name x to an instance of the class c."""
    x, c = re.escape(x), re.escape(c)
    head = r"(?<![\w.$])"
    if language == "python":
        return [
            re.compile(rf"{head}{x}\s*(?::[^=]*)?=\s*(?:await\s+)?(?:[\w.]+\.)?{c}\s*\("),
            re.compile(rf"{head}{x}\s*:\s*[^=]*?\b{c}\b"),
            re.compile(rf"\bwith\b.*(?<![\w.]){c}\s*\(.*\bas\s+{x}\b"),
            re.compile(rf"\bwith\b.*\.{c}\s*\(.*\bas\s+{x}\b"),
        ]
    if language == "go":
        return [
            re.compile(rf"{head}{x}\s*(?:,\s*\w+\s*)*:?=\s*&?(?:\w+\.)?{c}\s*\{{"),
            re.compile(rf"{head}{x}(?:\s*,\s*\w+)*\s+\*?(?:\w+\.)?{c}\b"),
        ]
    if language in ("javascript", "typescript", "tsx"):
        return [
            re.compile(rf"{head}{x}\s*(?::[^=]*)?=\s*new\s+(?:[\w$]+\.)*{c}\b"),
            re.compile(rf"{head}{x}\s*\??:\s*(?:[\w$]+\.)*{c}\b"),
        ]
    if language == "java":
        return [
            re.compile(rf"\b{c}(?:<[^>]*>)?\s+{x}\b"),
            re.compile(rf"{head}{x}\s*=\s*new\s+(?:\w+\.)*{c}\b"),
        ]
    return []


def _subclass(language: str | None, c: str) -> re.Pattern | None:
    """A line declaring a subclass of c: group 1 is its name."""
    c = re.escape(c)
    if language == "python":
        return re.compile(rf"^\s*class\s+(\w+)\s*\((?:[^)]*[\s,(.])?{c}\s*[,)\[]")
    if language in ("javascript", "typescript", "tsx"):
        return re.compile(rf"\bclass\s+([\w$]+)(?:<[^>]*>)?\s+extends\s+(?:[\w$]+\.)*{c}\b")
    if language == "java":
        return re.compile(
            rf"\b(?:class|interface)\s+(\w+)(?:<[^>]*>)?\s+(?:extends|implements)\s+"
            rf"(?:[\w.<>]+\s*,\s*)*(?:\w+\.)*{c}\b"
        )
    return None


def _inside(symbol: str | None, outer: str | None) -> bool:
    if outer is None:
        return True
    return symbol is not None and (symbol == outer or symbol.startswith(outer + "."))


def resolve_typed(
    resolver,
    definitions: list[dict],
    pending: list,
    read_uses: Callable,
    read_definitions: Callable,
    line_texts: Callable,
    families: dict | None = None,
) -> dict[int, dict]:
    """{index into pending: the definition it reaches}: see the module docstring.
    read_uses(name) -> [Use], read_definitions(name, paths) -> [definition], line_texts(uses) ->
    {(sha, line): text} are references.py's readers; `families`: each class's family found
    with the same readers before (methods of one class share it)."""
    families = {} if families is None else families
    out: dict[int, dict] = {}
    candidates = [
        (i, u)
        for i, u in enumerate(pending)
        if u.qualifier is not None and (u.qualifier in SELF or _IDENT.fullmatch(u.qualifier))
    ]
    if not candidates:
        return out
    # a definition reaches only the uses in its family's files (self) and blobs (typed):
    # each looks up those, not every candidate (a common method name has hundreds of
    # definitions and tens of thousands of uses)
    own_by_path: dict[str, list] = {}
    typed_by_blob: dict[str, list] = {}
    for i, u in candidates:
        if u.qualifier in SELF:
            own_by_path.setdefault(u.path, []).append((i, u))
        else:
            typed_by_blob.setdefault(u.blob_sha, []).append((i, u))
    for d in definitions:
        if not d.get("parent") or len(out) == len(candidates):
            continue
        key = (d["repository_id"], d["path"], d["parent"])
        if key not in families:
            families[key] = _family(d, resolver, read_uses, read_definitions, line_texts)
        family = families[key]
        if not family:
            continue
        for path, q, _ in family:
            for i, u in own_by_path.get(path, ()):
                if i not in out and u.repository_id == d["repository_id"] and _inside(u.symbol, q):
                    out[i] = d
        blobs = {cu.blob_sha for _, _, uses in family for cu in uses}
        typed = sorted(
            (iu for blob in blobs for iu in typed_by_blob.get(blob, ()) if iu[0] not in out),
            key=lambda iu: iu[0],
        )
        if typed:
            for i in _bound_to(typed, family, line_texts):
                out[i] = d
    return out


def _family(d, resolver, read_uses, read_definitions, line_texts) -> list[tuple]:
    """[(path, qualified name, [its resolved uses])] of the definition's class and its
    subclasses that do not override it."""
    parent = d["parent"]
    short = parent.rsplit(".", 1)[-1]
    language = detect_language(d["path"])
    own = [
        c
        for c in read_definitions(short, None if language == "go" else [d["path"]])
        if c["qualified_name"] == parent
        and c["kind"] in CLASS_KINDS
        and c["repository_id"] == d["repository_id"]
        and (
            c["path"] == d["path"]
            or (language == "go" and _folder(c["path"]) == _folder(d["path"]))
        )
    ]
    if not own:
        return []
    family: list[tuple] = []
    frontier = [own[0]]
    seen = {(own[0]["path"], own[0]["qualified_name"])}
    for hop in range(SUBCLASS_HOPS + 1):
        following = []
        for cls in frontier:
            uses = [
                u
                for u in read_uses(cls["name"])[:MAX_CLASS_USES]
                if u.repository_id == cls["repository_id"]
            ]
            mine = []
            for u in uses:
                verdict = resolver.resolve(u, [cls])
                if verdict is not None and verdict[0] == "resolved":
                    mine.append(u)
            family.append((cls["path"], cls["qualified_name"], mine))
            if hop == SUBCLASS_HOPS or len(family) >= MAX_FAMILY:
                continue
            pattern = _subclass(language, cls["name"])
            if pattern is None:
                continue
            texts = line_texts(mine[:MAX_LINES])
            for u in mine:
                m = pattern.search(texts.get((u.blob_sha, u.line)) or "")
                if m is None or u.symbol is None or u.symbol.rsplit(".", 1)[-1] != m[1]:
                    continue
                key = (u.path, u.symbol)
                if key in seen:
                    continue
                seen.add(key)
                following.append(
                    {
                        "name": m[1],
                        "qualified_name": u.symbol,
                        "parent": u.symbol.rpartition(".")[0] or None,
                        "kind": "class",
                        "path": u.path,
                        "repository_id": u.repository_id,
                    }
                )
        if following:  # a subclass that defines the name itself overrides it
            paths = sorted({f["path"] for f in following})
            overriding = {(o["path"], o["parent"]) for o in read_definitions(d["name"], paths)}
            following = [f for f in following if (f["path"], f["qualified_name"]) not in overriding]
        frontier = following[: max(0, MAX_FAMILY - len(family))]
        if not frontier:
            break
    return family


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _bound_to(typed: list, family: list[tuple], line_texts) -> list[int]:
    """The indexes of the typed uses whose object is bound to a family class in reach."""
    by_blob: dict[str, list] = {}
    for _path, qualified, uses in family:
        name = qualified.rsplit(".", 1)[-1]
        for cu in uses:
            by_blob.setdefault(cu.blob_sha, []).append((cu, name))
    reach: list[tuple[int, Any, list]] = []
    lines: list[Any] = []
    for i, u in typed:
        near = [
            (cu, name)
            for cu, name in by_blob.get(u.blob_sha, ())
            if cu.line <= u.line and _inside(u.symbol, cu.symbol)
        ]
        if near:
            reach.append((i, u, near))
            lines.extend(cu for cu, _ in near)
    if not reach:
        return []
    texts = line_texts(lines[:MAX_LINES])
    out = []
    for i, u, near in reach:
        head = u.qualifier
        for cu, name in sorted(near, key=lambda n: -n[0].line):
            text = texts.get((cu.blob_sha, cu.line))
            if text and any(p.search(text) for p in _binds(u.language, head, name)):
                out.append(i)
                break
    return out
