"""Markdown: one 'section' per heading, up to the next heading of its level or above,
qualified by the headings around it ('Guide > Install'); a long section is cut at the
headings inside it. Headings are ATX ('## Install') and setext (a line underlined with '='
or '-'); headings inside fenced code and YAML front matter are not headings, and the line
above an underline is a heading only when it is a paragraph of one line: never a list item,
a quote, a table row or HTML (a bullet above '---' is a list, then a rule). The section
tree (_sections) is shared with reStructuredText (rst.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ... import budget
from .core import _collapse, _emit, _Out, _Source

# An ATX heading's opening: 1-6 '#' then a blank or the end of the line.
_HEADING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
# The lines that can open or close a fence, be an ATX heading or a setext underline (group
# 2), found by one C-level scan.
_MARKDOWN_LINE = re.compile(r"^ {0,3}(?:(`{3,}|~{3,})|#{1,6}(?=[ \t]|$)|(=++|-++)[ \t]*+$)", re.M)
# What the line above an underline must not be: a list item, a quote, a table row, HTML,
# a fence, an ATX heading, another underline.
_NOT_A_TITLE = re.compile(
    r" {0,3}(?:[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|[>|<]|`{3}|~{3}|#{1,6}(?:[ \t]|$)"
    r"|=+[ \t]*$|-+[ \t]*$)"
)
_FRONT_MATTER_LINES = 200  # a YAML front matter closes within this many lines


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


def _front_matter_end(lines: list[str]) -> int:
    """The last row of YAML front matter ('---' on the first line, closed by '---' or
    '...'), or -1."""
    if not lines or lines[0].rstrip() != "---":
        return -1
    for row in range(1, min(len(lines), _FRONT_MATTER_LINES)):
        if lines[row].rstrip() in ("---", "..."):
            return row
    return -1


def _setext_title(lines: list[str], row: int, after_heading: bool) -> str | None:
    """The title underlined by row `row`, or None: the line above, a paragraph of one line
    (a blank line, the file's start or a heading before it; `after_heading`: the row two
    above is the end of a heading)."""
    if row < 1:
        return None
    above = lines[row - 1]
    title = above.strip()
    if not title or above.startswith(("    ", "\t")) or _NOT_A_TITLE.match(above):
        return None
    if row >= 2 and lines[row - 2].strip() and not after_heading:
        return None  # a paragraph of several lines: '---' below it is read as a rule
    return title


def matched_rows(
    pattern: re.Pattern, text: str, lines: list[str], limits: budget.Budget
) -> Iterator[tuple[int, re.Match]]:
    """(row, match) of each match of the line pattern in text, row its line's index in
    lines, in order; the scan ends at the last line or when the time limit is up."""
    row, at = 0, 0  # the row of offset `at`
    for i, m in enumerate(pattern.finditer(text)):
        if not i & budget.CHECK_EVERY and limits.expired():
            return
        row += text.count("\n", at, m.start())
        at = m.start()
        if row >= len(lines):
            return
        yield row, m


def _markdown_symbols(src: _Source, out: _Out) -> None:
    headings: list[tuple[int, int, str, int]] = []  # (first row, level, title, title row)
    fence = None
    text, lines = src.text, src.lines
    skip = _front_matter_end(lines)
    heading_ends: set[int] = set()  # rows that end a heading (its line or underline)
    for row, m in matched_rows(_MARKDOWN_LINE, text, lines, out.limits):
        if row <= skip:
            continue
        line = lines[row]
        marker = m.group(1)  # a fence, or None for a heading's opening or an underline
        if fence is not None:
            if marker and marker[0] == fence[0] and len(marker) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = None
            continue
        if marker:
            fence = marker
            continue
        underline = m.group(2)
        if underline is not None:
            title = _setext_title(lines, row, row - 2 in heading_ends)
            if title is not None and row - 1 > skip:
                headings.append((row - 1, 1 if underline[0] == "=" else 2, title, row - 1))
                heading_ends.add(row)
            continue
        heading = _heading(line)
        if heading is not None:
            headings.append((row, heading[0], heading[1], row))
            heading_ends.add(row)
    _sections(src, out, headings)


def _sections(src: _Source, out: _Out, headings: list[tuple[int, int, str, int]]) -> None:
    """One 'section' per heading (first row, level, title, the row of its title), in file
    order: up to the next heading of its level or above, qualified by the headings around
    it; its signature is its title's line."""
    limits = out.limits
    # A section ends before the next heading of its level or above: a stack of the open
    # sections finds every end in one pass.
    count = len(headings)
    closer = [count] * count  # index of the heading that ends each section
    open_sections: list[int] = []
    for i, (_, level, _, _) in enumerate(headings):
        while open_sections and headings[open_sections[-1]][1] >= level:
            closer[open_sections.pop()] = i
        open_sections.append(i)

    def cuts_of(i: int) -> dict[int, float]:  # the headings inside section i
        return {r: float(lvl) for r, lvl, _, _ in headings[i + 1 : closer[i]]}

    last = len(src.lines) - 1
    trail: list[tuple[int, str]] = []  # enclosing (level, title)
    for i, (row, level, title, title_row) in enumerate(headings):
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
            "signature": _collapse(src.lines[title_row]),
            "parent": parent,
            "name_line": title_row + 1,
            "docstring": "",
        }
        _emit(out, src, sym, row, end, lambda i=i: cuts_of(i))
