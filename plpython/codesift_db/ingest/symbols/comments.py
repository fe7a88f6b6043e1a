"""leading_comment: the doc comment above a symbol (the comment syntax is one pattern for
every language: languages.COMMENT_LINE)."""

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
