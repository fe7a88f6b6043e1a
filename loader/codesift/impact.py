"""`codesift impact` and `codesift diff-context`: what impact and diff_context return (the
same SQL any client can call), asked as the tenant on the read DSN (CODESIFT_READ_DSN, a
replica, when set).

impact prints one line per row: its citation, how it is reached (relation, hops, from
where) and [test]. diff-context prints the pack: each item's text (its header line cites
it) after a comment line saying why it is there. A diff is read from a file or standard
input (`--diff-file -`): a regular file of at most MAX_DIFF_CHARS characters of UTF-8; a
folder, a device or a FIFO is refused before it is read. Repository data is printed with its
control characters made visible; notices and errors go to standard error.
"""

import os
import stat
import sys

from codesift_db.diff_hunks import MAX_DIFF_CHARS

from .console import err, plain, visible
from .errors import CodesiftError
from .outline import as_tenant

IMPACT = (
    "select citation, symbol, relation, hops, via, is_test from codesift.impact("
    "%s, repo => %s, ref => %s, depth => %s, max_rows => %s)"
)
DIFF_CONTEXT = (
    "select role, reason, text from codesift.diff_context(repo => %s, base_ref => %s,"
    " head_ref => %s, token_budget => %s, diff => %s, ref => %s)"
)


def impact_lines(rows: list[tuple]) -> list[str]:
    """impact's rows as printed: citation (and symbol), relation, hops, via, [test]."""
    width = max((len(r[0]) for r in rows), default=0)
    out = []
    for where, symbol, relation, hops, via, is_test in rows:
        line = f"{where:<{width}}  {relation} ({hops} hop{'s' if hops > 1 else ''}"
        line += f", via {via})" if hops > 1 else ")"
        if symbol:
            line += f"  {symbol}"
        out.append(line + ("  [test]" if is_test else ""))
    return [visible(line) for line in out]


def context_text(rows: list[tuple]) -> str:
    """diff_context's pack as printed: per item, a line saying why, then its text."""
    return "\n\n".join(f"## {role}: {reason}\n{text}" for role, reason, text in rows)


def read_diff(source: str) -> str:
    """The diff in the file `source` ('-': standard input), refused unless it is a regular
    file (or a pipe on standard input) of at most MAX_DIFF_CHARS characters of UTF-8."""
    if source == "-":
        try:
            text = sys.stdin.read(MAX_DIFF_CHARS + 1)
        except UnicodeDecodeError:
            raise CodesiftError("standard input is not UTF-8 text") from None
        where = "standard input"
    else:
        try:
            mode = os.stat(source).st_mode
        except OSError as exc:
            raise CodesiftError(f"cannot read the diff file: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise CodesiftError(
                f"the diff file {visible(source)!r} is not a regular file (a folder, a device "
                "or a pipe): pass a file, or - for standard input"
            )
        try:
            with open(source, encoding="utf-8") as f:
                text = f.read(MAX_DIFF_CHARS + 1)
        except UnicodeDecodeError:
            raise CodesiftError(f"the diff file {visible(source)!r} is not UTF-8 text") from None
        except OSError as exc:
            raise CodesiftError(f"cannot read the diff file: {exc.strerror}") from None
        where = f"the diff file {visible(source)!r}"
    if len(text) > MAX_DIFF_CHARS:
        raise CodesiftError(
            f"{where} is over {MAX_DIFF_CHARS:,} characters: pass the diff of fewer files "
            "(git diff -- PATH...), or index the branch and pass --base and --head"
        )
    if not text.strip():
        raise CodesiftError(f"{where} is empty: pass the output of git diff")
    return text


def print_impact(target, repo, ref, depth, limit, tenant) -> None:
    with as_tenant(tenant) as conn:
        rows = conn.execute(IMPACT, (target, repo, ref, depth, limit)).fetchall()
    if not rows:
        err.print(plain(f"{target}: nothing depends on it"))
        return
    print("\n".join(impact_lines(rows)))


def print_diff_context(repo, base, head, budget, diff_file, ref, tenant) -> None:
    diff = read_diff(diff_file) if diff_file is not None else None
    with as_tenant(tenant) as conn:
        rows = conn.execute(DIFF_CONTEXT, (repo, base, head, budget, diff, ref)).fetchall()
    if not rows:
        err.print(plain("the change touches no indexed file"))
        return
    print(visible(context_text(rows)))
