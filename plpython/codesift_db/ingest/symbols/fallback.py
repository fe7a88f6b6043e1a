"""The fallback for files without symbols from a grammar: top-level brace blocks or
indentation blocks (whichever covers more lines), else windows of FALLBACK_WINDOW_LINES
lines; all of kind 'block', named best effort."""

from __future__ import annotations

import os
import re

from ... import budget
from .core import _collapse, _emit, _Out, _Source

FALLBACK_WINDOW_LINES = 60

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_KEYWORDS = frozenset(
    """abstract async class const def do else enum export extern final fn for fun func function
    if impl import inline interface internal let local module mut new object open override
    package private proc protected pub public sealed static struct sub switch trait type typedef
    union unsafe val var virtual void while""".split()
)
_BRACE_TOKENS = re.compile(r"//|/\*|\*/|\\.|[\"'`{}]")


def _fallback_symbols(src: _Source, out: _Out) -> None:
    limits = out.limits
    braces, depths = _brace_blocks(src, limits)
    indents = _indent_blocks(src, limits)
    if limits.expired():
        return
    table: list[dict] = []  # the cut scores, built once, when a block needs splitting

    def cuts() -> dict[int, float]:
        if not table:
            if blocks is braces:
                table.append({r: 10.0 * d for r, d in enumerate(depths) if d > 0})
            else:
                rows = range(len(src.lines))
                table.append({r: float(src.indent(r)) for r in rows if not src.blank(r)})
        return table[0]

    if braces and _covered(braces) >= _covered(indents):
        blocks = braces
    elif indents:
        blocks = indents
    else:
        _windows(src, out)
        return
    for i, (start, end) in enumerate(blocks):
        if out.full:
            out.more += len(blocks) - i
            return
        if limits.expired():
            return
        name, row = _block_name(src, start, end)
        sym = {
            "name": name,
            "qualified_name": name,
            "kind": "block",
            "signature": _collapse(src.lines[start]),
            "parent": None,
            "name_line": row + 1,
            "docstring": "",
        }
        _emit(out, src, sym, start, end, cuts)
    if not out.items and not limits.expired():
        _windows(src, out)


def _covered(blocks: list[tuple[int, int]]) -> int:
    return sum(e - s + 1 for s, e in blocks)


def _brace_blocks(src: _Source, limits: budget.Budget) -> tuple[list[tuple[int, int]], list[int]]:
    """Top-level {...} blocks (rows) with their header lines, and the brace depth per row."""
    depth, quote, in_comment = 0, None, False
    depths: list[int] = []
    blocks: list[tuple[int, int]] = []
    open_row = None
    last_end = -1
    tokens, append = _BRACE_TOKENS.findall, depths.append
    for row, line in enumerate(src.lines):
        if not row & budget.CHECK_EVERY and limits.expired():
            break
        append(depth)
        if quote in ('"', "'"):
            quote = None  # these strings do not span lines in brace languages
        for tok in tokens(line):
            if in_comment:
                in_comment = tok != "*/"
            elif quote:
                if tok == quote:
                    quote = None
            elif tok == "//":
                break
            elif tok == "/*":
                in_comment = True
            elif tok in "\"'`":
                quote = tok
            elif tok == "{":
                if depth == 0:
                    open_row = row
                depth += 1
            elif tok == "}" and depth > 0:
                depth -= 1
                if depth == 0 and open_row is not None:
                    if blocks and open_row <= last_end:  # several blocks on one line: one
                        blocks[-1] = (blocks[-1][0], row)
                    else:
                        blocks.append((_block_header(src, open_row, last_end), row))
                    last_end = row
    return blocks, depths


def _block_header(src: _Source, open_row: int, last_end: int) -> int:
    """Extend a block upwards over its header (multi-line signature, annotations)."""
    start = open_row
    while start - 1 > last_end and start > open_row - 10:
        above = src.lines[start - 1].strip()
        if not above or above.endswith((";", "}", "{")):
            break
        start -= 1
    return start


def _indent_blocks(src: _Source, limits: budget.Budget) -> list[tuple[int, int]]:
    """Unindented header lines followed by indented lines."""
    blocks = []
    start = None
    last_body = None
    for row, line in enumerate(src.lines):
        if not row & budget.CHECK_EVERY and limits.expired():
            break
        if not line.strip():
            continue
        if line[0] in " \t":
            if start is not None:
                last_body = row
            continue
        if start is not None and last_body is not None:
            blocks.append((start, last_body))
        start, last_body = row, None
    if start is not None and last_body is not None:
        blocks.append((start, last_body))
    return blocks


def _block_name(src: _Source, start: int, end: int) -> tuple[str, int]:
    """Best effort: the identifier before the first '(' or the first non-keyword identifier;
    with the row it was read from."""
    for row in range(start, min(end, start + 10) + 1):
        line = src.lines[row][:500]
        if line.lstrip().startswith(("@", "#", "[", "//", "/*", "*")) and row < end:
            continue  # annotations, attributes and comments do not name a block
        head = line.split("{", 1)[0]
        if "(" in head:
            before = _IDENT.findall(head.split("(", 1)[0])
            if before and before[-1] not in _KEYWORDS:
                return before[-1], row
        words = _IDENT.findall(head)
        for word in words:
            if word not in _KEYWORDS:
                return word, row
        if words:
            return words[0], row
    return os.path.basename(src.path) or "block", start


def _windows(src: _Source, out: _Out, name: str | None = None) -> None:
    """Windows of FALLBACK_WINDOW_LINES lines (blank lines at either end left out), each
    named `name`, else by _block_name."""
    total = len(src.lines)
    for start in range(0, total, FALLBACK_WINDOW_LINES):
        if out.full:
            out.more += len(range(start, total, FALLBACK_WINDOW_LINES))
            return
        if out.limits.expired():
            return
        end = min(total, start + FALLBACK_WINDOW_LINES) - 1
        while start <= end and src.blank(start):
            start += 1
        while end >= start and src.blank(end):
            end -= 1
        if start > end:
            continue
        found, row = (name, start) if name else _block_name(src, start, end)
        sym = {
            "name": found,
            "qualified_name": found,
            "kind": "block",
            "signature": _collapse(src.lines[start]),
            "parent": None,
            "name_line": row + 1,
            "docstring": "",
        }
        _emit(out, src, sym, start, end, {})
