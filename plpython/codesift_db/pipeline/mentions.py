"""What a question names, as a leg of its own (`mention`; a short question's names:
pipeline/question.py short_reading):

* files (a path, a traceback frame's file, a dotted module name), matched to live paths by
  file name (sql/mentioned_files.sql), then by the rest of the path here;
* definitions (a traceback frame's function, an identifier in backticks or code, a dotted
  `Class.method`), matched to live symbols by name (sql/mentioned_symbols.sql), then by the
  qualified name when the mention is dotted;
* the definitions a traceback's frames ran in, innermost first: the function of that name
  in the frame's file, so a common name (`run`, `send`) still names one;
* where a traceback failed (`failing`, a light leg of its own in pipeline/fusion.py): its
  innermost frame's file among the repository's code files, and the definition it ran in.

A mention that fits more than AMBIGUOUS files or definitions is not one (`__init__`, `get`);
of many files of one name, the code ones (not tests, docs or examples) may still be few. A
bare module name (a commit's scope, a name in backticks) fits code files only.
A path matches at '/' boundaries: whole, or (with the `frames` feature) by its last
SUFFIX_PARTS parts, so that an installed package's path (site-packages/_pytest/python.py)
finds its source in a src/ layout (src/_pytest/python.py)."""

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import plans
from ..file_kinds import file_kind

if TYPE_CHECKING:
    from .request import Request

AMBIGUOUS = 3
SUFFIX_PARTS = 2  # a package folder and a file name: enough to name a file
MAX_FILES = 12
TYPES = ["bigint[]", "text[]", "text[]", "bigint", "text[]"]
# a file name's stem as files.stem_key holds it (sql/incremental/030-file-stem-key.sql)
_LAST_EXTENSION = re.compile(r"\.[^./]*$")
_PATH_MARK = re.compile(r"[./]")  # a folder or an extension: more than a bare name
SYMBOL_TYPES = ["bigint[]", "text[]", "bigint"]


def _clean(mention: str) -> str:
    return mention.replace("\\", "/").lstrip("./~").strip("/")


def _is_bare_name(mention: str) -> bool:
    """A module's name alone (`formatting`, a commit's scope): no folder, no extension."""
    return not _PATH_MARK.search(_clean(mention))


def _code_files(rows: list[dict]) -> list[dict]:
    """The rows of code files: not tests, docs, examples or configuration."""
    return [r for r in rows if file_kind(r["path"]) == "code"]


def matches(mention: str, path: str, by_suffix: bool = True) -> bool:
    """A live path fits a mention: equal, one ends with the other at a '/', or (by_suffix)
    both end in the same SUFFIX_PARTS parts; with or without the extension when the mention
    is a module name."""
    m = _clean(mention).lower()
    c = path.lower()
    if "." not in posixpath.basename(m):
        c = posixpath.splitext(c)[0]
        # a bare module name that is also its file's folder (render/render.go) names the
        # folder, a package of many files, not that one
        if "/" not in m and c.endswith(f"{m}/{m}"):
            return False
    if c == m or m.endswith("/" + c) or c.endswith("/" + m):
        return True
    if not by_suffix:
        return False
    tail = m.split("/")[-SUFFIX_PARTS:]
    return len(tail) == SUFFIX_PARTS and c.split("/")[-SUFFIX_PARTS:] == tail


def mentioned_files(
    plpy, tenant: int, repo_ids: list, mentions: list[str], by_suffix: bool = True
) -> list[dict]:
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
    keys = sorted(stems | {_LAST_EXTENSION.sub("", name) for name in names})
    rows = plans.run(
        plpy,
        plans.load("mentioned_files"),
        TYPES,
        [repo_ids, sorted(names), sorted(stems), tenant, keys],
    )
    found: dict[tuple, None] = {}
    for mention in mentions:
        fits = [r for r in rows if matches(mention, r["path"], by_suffix)]
        # a bare module name (`formatting`, a commit's scope) names code; so do many files of
        # one name when their code ones are few
        if len(fits) > AMBIGUOUS or _is_bare_name(mention):
            fits = _code_files(fits)
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


def mentioned_symbols(
    plpy, tenant: int, repo_ids: list, names: list[str], frames: Sequence[tuple[str, str]] = ()
) -> list[dict]:
    """The leg's symbol rows ({symbol_id, repository_id, path}): the definitions the frames
    ran in (a frame's function in a file its path fits), innermost first, then those of the
    names in order."""
    short = {n.rsplit(".", 1)[-1].lower() for n in names if n} | {f.lower() for _, f in frames}
    if not short:
        return []
    rows = plans.run(
        plpy, plans.load("mentioned_symbols"), SYMBOL_TYPES, [repo_ids, sorted(short), tenant]
    )
    by_name: dict[str, list[dict]] = {}
    for r in rows:
        by_name.setdefault(r["name"], []).append(r)
    found: dict[int, dict] = {}

    def take(fits: list[dict], distinct: int) -> None:
        if 0 < distinct <= AMBIGUOUS:
            for r in fits:
                found.setdefault(r["symbol_id"], r)

    for path, func in frames:
        fits = [r for r in by_name.get(func.lower(), []) if matches(path, r["path"])]
        take(fits, len(fits))
    for name in names:  # a definition's qualified name ends with its name
        fits = _definitions(name, by_name.get(name.rsplit(".", 1)[-1].lower(), []))
        take(fits, len({(r["path"], r["qualified_name"]) for r in fits}))
    return [
        {"symbol_id": r["symbol_id"], "repository_id": r["repository_id"], "path": r["path"]}
        for r in list(found.values())[:MAX_FILES]
    ]


def failing_file(files: list[dict], frames: Sequence[tuple[str, str]]) -> list[dict]:
    """The file a traceback failed in: of the mentioned files, the code file (not a test)
    the innermost frame that names one ran in; [] when no frame does."""
    for path, _ in frames:
        fits = [r for r in files if matches(path, r["path"])]
        if fits:
            code = _code_files(fits)
            if len(code) == 1:
                return code
            if code:  # a frame whose path fits several files names none of them
                return []
    return []


def failing_definition(symbols: list[dict], failing: list[dict]) -> list[dict]:
    """The definition the traceback failed in: of the mention leg's symbol rows (the frames'
    definitions come first, innermost first), the first in the failing file."""
    where = {(r["repository_id"], r["path"]) for r in failing}
    return [r for r in symbols if (r["repository_id"], r["path"]) in where][:1]


def mention_legs(plpy, req: "Request") -> dict:
    """The legs of what a question names: `mention` (files) and `mention_sym`
    (definitions: traceback frames' functions, then names), each when there is one."""
    reading, found = req.reading, {}
    if reading.mentions:
        found["mention"] = mentioned_files(
            plpy, req.tenant, req.repo_ids, reading.mentions, by_suffix=req.on("frames")
        )
    frames = reading.frames if req.on("frames") else []
    if frames and req.on("failing") and found.get("mention"):
        found["failing"] = failing_file(found["mention"], frames)
    names = reading.names if req.on("named") else []
    if frames:  # a frame names its function in its file; by the name alone, also others'
        names = [n for n in names if n not in reading.frame_only]
    if names or frames:
        found["mention_sym"] = mentioned_symbols(plpy, req.tenant, req.repo_ids, names, frames)
    if found.get("failing") and found.get("mention_sym"):
        found["failing_sym"] = failing_definition(found["mention_sym"], found["failing"])
    return found
