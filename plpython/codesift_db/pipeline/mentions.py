"""The files a long question names (a path, a traceback frame's file, a dotted module name)
as a leg of their own: matched to live paths by file name (sql/mentioned_files.sql), then by
the rest of the path here; a mention that fits more than AMBIGUOUS files is not one."""

import posixpath

from .. import plans

AMBIGUOUS = 3
MAX_FILES = 12
TYPES = ["bigint[]", "text[]", "text[]", "bigint"]


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
