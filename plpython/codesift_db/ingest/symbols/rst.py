"""reStructuredText: one 'section' per title, as docutils reads titles.

A title is a line of text underlined, and optionally overlined, by an adornment: one
punctuation character repeated ('=====', '-----', '~~~~~'). Levels are not fixed: each
style (the character, and whether it is overlined) is one level deeper than the styles
seen before it, in file order. An underlined title starts in the first column (an indented
one is in a block quote or a literal block: no title), directly after a blank line, the
file's start or another title, and is not a bullet-list item ('- item' above '------' is a
list, then a transition); an underline shorter than its title counts only from 4
characters on. A line of adornment with blank lines around it is a transition, no title.
The sections nest and are cut like markdown's (markdown._sections)."""

from __future__ import annotations

import re

from .core import _Out, _Source
from .markdown import _sections, matched_rows

# An adornment line: one 7-bit punctuation character repeated, trailing blanks allowed.
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1*+[ \t]*+$", re.M)
# What a title's line is never: a bullet item ('- item' then '------': a list, then a
# transition), explicit markup ('.. note::', '.. _label:'), a doctest, a line block, a
# field (':Author: me'; a role, ':mod:`x`', may start a title).
_NOT_A_TITLE = re.compile(
    r"(?:[-+*\u2022\u2023\u2043](?:[ \t]|$)|\.\.(?:[ \t]|$)|>>>|\|(?:[ \t]|$)"
    r"|:[^:\s`][^:`]*:(?:[ \t]|$))"
)


def _adornment(line: str) -> str | None:
    """The character of an adornment line, else None."""
    m = _ADORNMENT.match(line)
    return m.group(1) if m else None


def _title_text(line: str) -> str | None:
    """The title a line can be (stripped), or None when it is blank or no title."""
    title = line.strip()
    if not title or _adornment(line) or _NOT_A_TITLE.match(title):
        return None
    return title


def _rst_symbols(src: _Source, out: _Out) -> None:
    lines, text = src.lines, src.text
    headings: list[tuple[int, int, str, int]] = []  # (first row, level, title, title row)
    styles: dict[tuple[str, bool], int] = {}  # (character, overlined) -> level
    done = -1  # the last row of the last title found

    def after_break(r: int) -> bool:  # row r is blank, before the file, or ends a title
        return r < 0 or r == done or not lines[r].strip()

    for row, m in matched_rows(_ADORNMENT, text, lines, out.limits):
        if row <= done:
            continue
        char = m.group(1)
        found = None  # (first row, title, title row, last row, overlined)
        # an overline: the title below it, then the same adornment below that
        if row + 2 < len(lines) and after_break(row - 1) and _adornment(lines[row + 2]) == char:
            title = _title_text(lines[row + 1])
            if title is not None:
                found = (row, title, row + 1, row + 2, True)
        # an underline: a title in the first column above it, a paragraph of one line
        if found is None and row >= 1 and row - 1 > done:
            above = lines[row - 1]
            title = _title_text(above)
            width = len(lines[row].rstrip())
            if (
                title is not None
                and above[:1] not in (" ", "\t")
                and after_break(row - 2)
                and (width >= len(title) or width >= 4)
            ):
                found = (row - 1, title, row - 1, row, False)
        if found is None:
            continue
        first, title, title_row, done, overlined = found
        level = styles.setdefault((char, overlined), len(styles) + 1)
        headings.append((first, level, title, title_row))
    _sections(src, out, headings)
