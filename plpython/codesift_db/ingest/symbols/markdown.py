"""Markdown: one 'section' per ATX heading, up to the next heading of its level or above,
qualified by the headings around it ('Guide > Install'); headings inside fenced code are not
headings, and a long section is cut at the headings inside it."""

from __future__ import annotations

import re

from ... import budget
from .core import _collapse, _emit, _Out, _Source

# An ATX heading's opening: 1-6 '#' then a blank or the end of the line.
_HEADING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
# The lines that can open or close a fence or be a heading, found by one C-level scan.
_MARKDOWN_LINE = re.compile(r"^ {0,3}(?:(`{3,}|~{3,})|#{1,6}(?=[ \t]|$))", re.M)


def _heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line with a title, else None.

    The title is the text after the opening, without a closing run of '#' that follows a
    blank, stripped. (What the regex `^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`
    captures, without its backtracking, quadratic in a run of blanks.)"""
    m = _HEADING.match(line)
    if m is None:
        return None
    text = line[m.end() :].strip(" \t")
    if text.endswith("#"):
        before = text.rstrip("#")
        if before[-1:] in (" ", "\t"):
            text = before.rstrip(" \t")
    title = text.strip()
    return (len(m.group(1)), title) if title else None


def _markdown_symbols(src: _Source, out: _Out) -> None:
    headings = []  # (row, level, title)
    fence = None
    limits = out.limits
    text, lines = src.text, src.lines
    row, at = 0, 0  # the row of offset `at`
    for i, m in enumerate(_MARKDOWN_LINE.finditer(text)):
        if not i & budget.CHECK_EVERY and limits.expired():
            break
        row += text.count("\n", at, m.start())
        at = m.start()
        if row >= len(lines):
            break
        line = lines[row]
        marker = m.group(1)  # a fence, or None for a heading's opening
        if fence is not None:
            if marker and marker[0] == fence[0] and len(marker) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = None
            continue
        if marker:
            fence = marker
            continue
        heading = _heading(line)
        if heading is not None:
            headings.append((row, *heading))

    # A section ends before the next heading of its level or above: a stack of the open
    # sections finds every end in one pass.
    count = len(headings)
    closer = [count] * count  # index of the heading that ends each section
    open_sections: list[int] = []
    for i, (_, level, _) in enumerate(headings):
        while open_sections and headings[open_sections[-1]][1] >= level:
            closer[open_sections.pop()] = i
        open_sections.append(i)

    def cuts_of(i: int) -> dict[int, float]:  # the headings inside section i
        return {r: float(lvl) for r, lvl, _ in headings[i + 1 : closer[i]]}

    last = len(src.lines) - 1
    trail: list[tuple[int, str]] = []  # enclosing (level, title)
    for i, (row, level, title) in enumerate(headings):
        if out.full:
            out.more += count - i
            return
        if limits.expired():
            return
        end = headings[closer[i]][0] - 1 if closer[i] < count else last
        while trail and trail[-1][0] >= level:
            trail.pop()
        parent = " > ".join(t for _, t in trail) or None
        trail.append((level, title))
        sym = {
            "name": title,
            "qualified_name": " > ".join(t for _, t in trail),
            "kind": "section",
            "signature": _collapse(src.lines[row]),
            "parent": parent,
        }
        _emit(out, src, sym, row, end, lambda i=i: cuts_of(i))
