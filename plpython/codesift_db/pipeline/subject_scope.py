"""Where a question says it belongs: a commit message or a pull request's title often names
the part of the code it is about in its header, as Conventional Commits do
('fix(runtime-core): ...') and as git's, Go's and many other projects do ('net/http: ...',
'ignore,globset: ...'); question.py reads that header (Reading.scopes). A candidate of a
code file under a folder so named (a folder whose path ends in the scope's segments) has
its path prior multiplied by SCOPE_PRIOR (pipeline/recency.py). A scope that names no folder
of a candidate changes nothing. The header is read with the question (feature `question`)."""

import re

from ..file_kinds import file_kind

# a multiplier in a plateau: 1.3, 1.5, 1.6 and 2.0 each raised the same history sets and
# lowered none (bench/results/quality-subject-scope.txt)
SCOPE_PRIOR = 1.5
MAX_SCOPES = 8  # folders one header may name
FOLDER = re.compile(r"[\w.-]{1,60}(?:/[\w.-]{1,60}){0,7}")  # a folder or a path of folders


def folders(scopes: list[str]) -> tuple[str, ...]:
    """Of what a question's header names (question.Reading.scopes), the folders or paths of
    folders ('net/http'), at most MAX_SCOPES."""
    return tuple(dict.fromkeys(s for s in scopes if _is_folder(s)))[:MAX_SCOPES]


def _is_folder(scope: str) -> bool:
    """A relative path of folder names: no '.' or '..' segment (nothing to climb by)."""
    return bool(FOLDER.fullmatch(scope)) and all(seg.strip(".") for seg in scope.split("/"))


def in_scope(path: str, named: tuple[str, ...]) -> bool:
    """Whether `path` is a code file under a folder whose path ends in one of `named`."""
    if not named or "/" not in path or file_kind(path) != "code":
        return False
    folder = "/" + path.rsplit("/", 1)[0] + "/"
    return any(f"/{scope}/" in folder for scope in named)


def scope_prior(path: str, named: tuple[str, ...]) -> float:
    """SCOPE_PRIOR for a candidate in scope, else 1."""
    return SCOPE_PRIOR if in_scope(path, named) else 1.0
