"""A symbol's doc: leading_comment, the doc comment above a symbol (the comment syntax is one
pattern for every language: languages.COMMENT_LINE); clean_docstring, a docstring's text
as inspect.cleandoc gives it (python.py finds the docstring); symbol_doc, the two as one
stored `doc`: the docstring first (its first line is the summary outlines show), then, after
a blank line, the comment above the definition."""

from __future__ import annotations

from ..languages import COMMENT_LINE, COMMENT_MARKER

# Comment lines that document the definition below them: languages.COMMENT_LINE.
MAX_DOC_LINES = 40


def leading_comment(lines: list[str], start_line: int, seen: dict | None = None) -> str:
    """The contiguous comment block directly above a symbol (its doc comment), without
    the comment markers. `lines` are the file's lines; start_line is 1-based. `seen`, a dict
    kept for one file, remembers which rows are comment lines (each row is matched once)."""

    def is_comment(row: int) -> bool:
        if seen is None:
            return COMMENT_LINE.match(lines[row]) is not None
        found = seen.get(row)
        if found is None:
            found = seen[row] = COMMENT_LINE.match(lines[row]) is not None
        return found

    i = start_line - 2
    if i >= 1 and not lines[i].strip() and is_comment(i - 1):
        i -= 1  # one blank line between a doc block and its definition is common in JS
    block: list[str] = []
    while i >= 0 and len(block) < MAX_DOC_LINES and is_comment(i):
        block.append(lines[i])
        i -= 1
    text = "\n".join(reversed(block))
    return COMMENT_MARKER.sub("", text).strip()


def clean_docstring(text: str) -> str:
    """A docstring's text (without its quotes) as inspect.cleandoc cleans it: the first
    line stripped, the common indentation of the others removed, blank lines at either end
    dropped; at most MAX_DOC_LINES lines, each right-stripped."""
    lines = text.expandtabs().split("\n", MAX_DOC_LINES * 4)[: MAX_DOC_LINES * 4]
    rest = [line for line in lines[1:] if line.strip()]
    margin = min((len(line) - len(line.lstrip()) for line in rest), default=0)
    cleaned = [lines[0].strip()] + [line[margin:].rstrip() for line in lines[1:]]
    while cleaned and not cleaned[-1]:
        cleaned.pop()
    while cleaned and not cleaned[0]:
        cleaned.pop(0)
    return "\n".join(cleaned[:MAX_DOC_LINES]).rstrip()


def symbol_doc(docstring: str | None, comment: str | None) -> str:
    """The stored doc of a symbol: its docstring, then its leading comment after a blank
    line (either alone when the other is empty)."""
    return "\n\n".join(part for part in (docstring, comment) if part)
