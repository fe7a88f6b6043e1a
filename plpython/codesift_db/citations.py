"""Citations: the one way codesift names a place in the code, printed by every tool and
taken back by every tool that takes a path.

    'repo:path'              a file, e.g. 'flask:src/flask/app.py'
    'repo:path:START-END'    lines of it, e.g. 'flask:src/flask/app.py:10-42'

citation(repo, path, start, end) prints one (the `citation` column of find_symbol,
pack_context and explain_context rows, the headers of packed items, the MCP tools' text).

A path argument may be any of: a citation, with or without its line range; 'repo/path' (the
form pack_context's headers had before, kept for compatibility); or a bare path relative to
the repository root ('src/flask/app.py', './src/flask/app.py', 'src/flask/app.py:10'). Which
leading word is a repository is known only in the database, and a folder may bear its
repository's name (click's click/), so readings(text, names) lists the ways to read the text
given the repository names in scope, most literal first, and the caller takes the first
that names a live file (or, for a prefix, a folder holding one). unsafe_path says why a
reading cannot be a path inside a repository ('..', absolute, control characters), which a
caller refuses before looking anything up.

    citation(repo, path, start=None, end=None) -> str
    readings(text, names) -> [Reading(repo or None, path)]
    unsafe_path(path) -> why, or None
    shown(text) -> the text as an error message quotes it (control characters escaped)
    nearest_paths(wanted, [(repo, path)]) -> citations of live files close to those wanted
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

NEAREST_SHOWN = 5
# a trailing line range: ':10-42' or ':10'
_LINES = re.compile(r"^(?P<rest>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SEPARATORS = re.compile(r"[\\/]")
ASCII_SPACE = " \t\r\n\f\v"


def citation(
    repository: str, path: str, start_line: int | None = None, end_line: int | None = None
) -> str:
    """'repository:path', or 'repository:path:start-end' with lines."""
    if start_line is None:
        return f"{repository}:{path}"
    return f"{repository}:{path}:{start_line}-{end_line if end_line is not None else start_line}"


@dataclass(frozen=True)
class Reading:
    """One way to read a path argument: `path` in the repository named `repo` (any
    repository in scope when None)."""

    repo: str | None
    path: str


def readings(text: str, names: Iterable[str]) -> list[Reading]:
    """The ways to read `text` as a path of the repositories named `names`, most literal
    first: as given; without a ':10-42' or ':10' line range; then 'repo:path' and
    'repo/path' for each repository whose name it starts with (the longest name first: a
    name may hold either separator, 'org/app'); each also without a leading './'."""
    known = sorted(set(names), key=len, reverse=True)
    text = text.strip(ASCII_SPACE)  # not str.strip(): U+0085 and the like are no spaces here
    bases = [text]
    m = _LINES.match(text)
    if m:
        bases.append(m.group("rest"))
    out = [Reading(None, base) for base in bases]
    for base in bases:
        for sep in (":", "/"):
            out += [
                Reading(name, base[len(name) + 1 :])
                for name in known
                if len(base) > len(name) + 1 and base.startswith(name + sep)
            ]
    out += [Reading(r.repo, r.path[2:]) for r in out if r.path.startswith("./") and r.path[2:]]
    seen: set[Reading] = set()
    unique = []
    for r in out:
        if r not in seen:
            seen.add(r)
            unique.append(r)
    return unique


def unsafe_path(path: str) -> str | None:
    """Why `path` cannot be a path relative to a repository's root, or None. (A path with
    control characters names no file, since the loader stores none: it is looked up and
    not found, and messages quote it through shown().)"""
    if path.startswith(("/", "\\", "~/")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return "is absolute"
    if ".." in _SEPARATORS.split(path):
        return "goes up a folder ('..')"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
SHOWN_CHARS = 200


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """A path argument as an error message quotes it: control characters as escapes
    ('\\x1b'), never obeyed by a terminal, and at most `limit` characters."""
    cut = text[:limit] + ("..." if len(text) > limit else "")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", cut)


def nearest_paths(
    wanted: list[str], paths: list[tuple[str, str]], n: int = NEAREST_SHOWN
) -> list[str]:
    """Citations ('repo:path') of live files close to the paths tried: the same file name
    first, then the closest spellings (difflib)."""
    out: list[str] = []

    def add(found: Iterable[tuple[str, str]]) -> None:
        out.extend(c for c in (citation(r, p) for r, p in found) if c not in out)

    for w in wanted:
        base = w.rsplit("/", 1)[-1]
        add((r, p) for r, p in paths if p.rsplit("/", 1)[-1] == base)
    repos: dict[str, list[str]] = {}
    for r, p in paths:
        repos.setdefault(p, []).append(r)
    for w in wanted:
        close = difflib.get_close_matches(w, list(repos), n=n, cutoff=0.6)  # the closest first
        add((r, p) for p in close for r in repos[p])
    return out[:n]
