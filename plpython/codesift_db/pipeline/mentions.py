"""What a long question names, as a leg of its own (`mention`):

* files (a path, a traceback frame's file, a dotted module name), matched to live paths by
  file name (sql/mentioned_files.sql), then by the rest of the path here;
* definitions (a traceback frame's function, an identifier in backticks or code, a dotted
  `Class.method`), matched to live symbols by name (sql/mentioned_symbols.sql), then by the
  qualified name when the mention is dotted.

A mention that fits more than AMBIGUOUS files or definitions is not one (`__init__`, `get`)."""

import posixpath

from .. import plans

AMBIGUOUS = 3
MAX_FILES = 12
TYPES = ["bigint[]", "text[]", "text[]", "bigint"]
SYMBOL_TYPES = ["bigint[]", "text[]", "bigint"]


def _clean(mention: str) -> str:
    return mention.replace("\\", "/").lstrip("./~").strip("/")


def matches(mention: str, path: str) -> bool:
    """A live path fits a mention: equal, or one ends with the other at a '/' (with or
    without the extension when the mention is a module name)."""
    m = _clean(mention).lower()
    candidates = [path.lower()]
    if "." not in posixpath.basename(m):
        candidates = [posixpath.splitext(path)[0].lower()]
    return any(c == m or m.endswith("/" + c) or c.endswith("/" + m) for c in candidates)


def mentioned_files(plpy, tenant: int, repo_ids: list, mentions: list[str]) -> list[dict]:
    """The leg's rows, in order of first mention: {repository_id, path}."""
    names: set[str] = set()
    stems: set[str] = set()
    for mention in mentions:
        base = posixpath.basename(_clean(mention))
        if not base:
            continue
        (names if "." in base else stems).add(base.lower())
    if not names and not stems:
        return []
    rows = plans.run(
        plpy, plans.load("mentioned_files"), TYPES, [repo_ids, sorted(names), sorted(stems), tenant]
    )
    found: dict[tuple, None] = {}
    for mention in mentions:
        fits = [r for r in rows if matches(mention, r["path"])]
        if 0 < len(fits) <= AMBIGUOUS:
            for r in fits:
                found.setdefault((r["repository_id"], r["path"]), None)
        if len(found) >= MAX_FILES:
            break
    return [{"repository_id": r, "path": p} for r, p in list(found)[:MAX_FILES]]


def _definitions(name: str, rows: list[dict]) -> list[dict]:
    """The rows a name fits: by name, or by the end of the qualified name when dotted."""
    wanted = name.lower()
    if "." in wanted:
        return [r for r in rows if ("." + r["qualified_name"]).endswith("." + wanted)]
    return [r for r in rows if r["name"] == wanted]


def mentioned_symbols(plpy, tenant: int, repo_ids: list, names: list[str]) -> list[dict]:
    """The leg's symbol rows, in order of the names: {symbol_id, repository_id, path}."""
    short = sorted({n.rsplit(".", 1)[-1].lower() for n in names if n})
    if not short:
        return []
    rows = plans.run(plpy, plans.load("mentioned_symbols"), SYMBOL_TYPES, [repo_ids, short, tenant])
    found: dict[int, dict] = {}
    for name in names:
        fits = _definitions(name, rows)
        if 0 < len({(r["path"], r["qualified_name"]) for r in fits}) <= AMBIGUOUS:
            for r in fits:
                found.setdefault(r["symbol_id"], r)
        if len(found) >= MAX_FILES:
            break
    return [
        {"symbol_id": r["symbol_id"], "repository_id": r["repository_id"], "path": r["path"]}
        for r in list(found.values())[:MAX_FILES]
    ]
