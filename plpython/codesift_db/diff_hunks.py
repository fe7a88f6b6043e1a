"""A unified diff (git diff, diff -u) parsed into what it changes, file by file
(diff_context.py reads it against an indexed ref).

    parse_unified_diff(text) -> [FileDiff(old_path, new_path, hunks, old_changed)]

old_path is None for a file the diff creates, new_path None for one it deletes; git's
'a/' and 'b/' prefixes are removed, a quoted path ("a/sp\\303\\251cial") unquoted, and a
timestamp after a tab dropped. old_changed holds the base's lines the hunks remove, and
old_gaps the pairs of base lines (before, after) between which lines are added: the
definition holding both receives them. A binary file, a mode change or a rename
without hunks changes no line and is left out. The caller checks the paths (citations.py
unsafe_path): this module only reads them.

Bounds: the text is at most MAX_DIFF_CHARS (the caller refuses more), at most MAX_FILES
files and MAX_HUNK_CHARS of one hunk's text are kept (a longer hunk is cut at a line end,
with a marker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_DIFF_CHARS = 5_000_000
MAX_FILES = 2000
MAX_HUNK_CHARS = 20_000
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_OCTAL = re.compile(rb"\\([0-7]{3})")
NULL_PATH = "/dev/null"


@dataclass
class Hunk:
    old_start: int
    new_start: int
    new_end: int
    text: str


@dataclass
class FileDiff:
    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)
    old_changed: set[int] = field(default_factory=set)
    old_gaps: set[tuple[int, int]] = field(default_factory=set)  # (line before, line after)


def _unquote(path: str) -> str:
    """A path as git quotes one holding special characters: "a/caf\\303\\251" (C escapes,
    octal UTF-8 bytes)."""
    if not (len(path) >= 2 and path.startswith('"') and path.endswith('"')):
        return path
    raw = path[1:-1].encode("utf-8", "surrogateescape")
    raw = _OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), raw)
    simple = {b"\\n": b"\n", b"\\t": b"\t", b'\\"': b'"', b"\\\\": b"\\"}
    for escaped, char in simple.items():
        raw = raw.replace(escaped, char)
    return raw.decode("utf-8", "replace")


def _path(spec: str, prefix: str) -> str | None:
    spec = spec.split("\t", 1)[0].rstrip("\r")
    spec = _unquote(spec.strip()) if spec.strip().startswith('"') else spec.strip()
    if spec == NULL_PATH:
        return None
    if spec.startswith(prefix):
        spec = spec[len(prefix) :]
    return spec


def parse_unified_diff(text: str) -> list[FileDiff]:
    """The files of a unified diff and what it changes in each; ValueError when a hunk
    header is malformed or a hunk comes before any file."""
    out: list[FileDiff] = []
    current: FileDiff | None = None
    old_path: str | None = None
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path = _path(line[4:], "a/")
            new_path = _path(lines[i + 1][4:], "b/")
            if old_path is None and new_path is None:
                raise ValueError(f"line {i + 1}: both sides are {NULL_PATH}")
            if len(out) >= MAX_FILES:
                raise ValueError(f"over {MAX_FILES:,} files")
            current = FileDiff(old_path, new_path)
            out.append(current)
            i += 2
            continue
        if line.startswith("@@"):
            m = _HUNK.match(line)
            if m is None:
                raise ValueError(f"line {i + 1}: malformed hunk header")
            if current is None:
                raise ValueError(f"line {i + 1}: a hunk before any ---/+++ file header")
            i = _read_hunk(lines, i, m, current)
            continue
        i += 1
    return [f for f in out if f.hunks]


def _read_hunk(lines: list[str], i: int, m: re.Match, fd: FileDiff) -> int:
    """Read the hunk whose header is lines[i]; the index after it."""
    old_count = int(m.group(2) if m.group(2) is not None else 1)
    new_count = int(m.group(4) if m.group(4) is not None else 1)
    # an empty side's start is the line before the hunk ('-5,0': after line 5)
    old = int(m.group(1)) + (old_count == 0)
    new = int(m.group(3)) + (new_count == 0)
    first_new = int(m.group(3))  # a hunk that only removes lines: the line before
    body = [lines[i]]
    size = len(lines[i])
    cut = False
    i += 1
    while i < len(lines) and (old_count > 0 or new_count > 0):
        line = lines[i]
        tag = line[:1]
        if tag == "-":
            fd.old_changed.add(old)
            old += 1
            old_count -= 1
        elif tag == "+":
            fd.old_gaps.add((old - 1, old))  # added between these base lines
            new += 1
            new_count -= 1
        elif tag in (" ", ""):
            old += 1
            new += 1
            old_count -= 1
            new_count -= 1
        elif tag == "\\":  # "\ No newline at end of file"
            pass
        else:
            break  # the hunk's counts were wrong: stop at what is no hunk line
        if not cut:
            size += len(line) + 1
            if size > MAX_HUNK_CHARS:
                body.append("... (hunk cut)")
                cut = True
            else:
                body.append(line)
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        i += 1
    fd.hunks.append(Hunk(int(m.group(1)), first_new, max(first_new, new - 1), "\n".join(body)))
    return i
