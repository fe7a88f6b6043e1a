"""`codesift outline` and `codesift repo-map`: what file_outline and repo_map return (the
same SQL any client can call), asked as the tenant on the read DSN (CODESIFT_READ_DSN, a
replica, when set).

The outline is one line per symbol: its lines, the signature indented by depth and the first
line of its doc comment. The map is repo_map's blocks in rank order, a blank line between
two. Repository data is printed with its control characters made visible; notices and
errors go to standard error.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from rich.text import Text

from . import db
from .console import err, plain, visible
from .tenants import use_tenant

OUTLINE = (
    "select repository, file_path, depth, kind, name, signature, doc, start_line, end_line"
    " from codesift.file_outline(%s, repo => %s, ref => %s)"
)
MAP = (
    "select rank, path, centrality, tokens, text from codesift.repo_map(repo => %s,"
    " path_prefix => %s, token_budget => %s, ref => %s)"
)


@contextmanager
def as_tenant(tenant: str) -> Iterator[psycopg.Connection]:
    """A connection acting as `tenant` (also references.py's and impact.py's), in one
    transaction; an unknown tenant is the error every command gives (use_tenant), and a
    database error the CLI's to print (cli.main)."""
    # queries may go to a read replica (CODESIFT_READ_DSN); indexing never does
    with db.connect(db.read_dsn(), autocommit=True) as conn, db.acting_as_loader(conn):
        use_tenant(conn, tenant)
        conn.add_notice_handler(
            lambda n: err.print(Text("notice:", style="yellow"), plain(n.message_primary))
        )
        with db.tenant_transaction(conn):
            yield conn


def outline_lines(rows: list[tuple]) -> list[str]:
    """The outline as printed: the file's citation, then per symbol its lines, its
    signature (else kind and name) indented by depth, and its doc line after a dash."""
    if not rows:
        return []
    repository, path = rows[0][0], rows[0][1]
    spans = [f"{r[7]}-{r[8]}" for r in rows]
    width = max(len(s) for s in spans)
    out = [f"{repository}:{path}"]
    for r, span in zip(rows, spans, strict=True):
        depth, kind, name, signature, doc = r[2:7]
        line = f"{span:>{width}}  {'  ' * depth}{signature or f'{kind} {name}'}"
        out.append(line + (f"  — {doc}" if doc else ""))
    return [visible(line) for line in out]


def print_outline(path: str, repo: str | None, ref: str | None, tenant: str) -> None:
    with as_tenant(tenant) as conn:
        rows = conn.execute(OUTLINE, (path, repo, ref)).fetchall()
    if not rows:
        err.print(plain(f"{path}: no symbol is extracted from this file"))
        return
    print("\n".join(outline_lines(rows)))


def print_map(
    repo: str | None, path_prefix: str | None, budget: int, ref: str | None, tenant: str
) -> None:
    with as_tenant(tenant) as conn:
        rows = conn.execute(MAP, (repo, path_prefix, budget, ref)).fetchall()
    print("\n\n".join(visible(r[4]) for r in rows))
