"""`codesift ask`: what pack_context_text returns for a question (with --explain, every
candidate explain_context weighed and each stage's decision), the same SQL any client can
call, asked as the tenant on the read DSN (CODESIFT_READ_DSN, a replica, when set).

The question is an argument or, with `-`, standard input (a whole bug report). The pack
goes to standard output exactly as stored for a program, without control characters for a
terminal; notices and errors go to standard error.
"""

import sys

import psycopg
from rich.table import Table
from rich.text import Text

from . import db
from .console import WHY_NAMED, err, named_mark, plain, stdout_console, strip_controls
from .errors import CodesiftError
from .tenants import use_tenant


def question_from_stdin() -> str:
    """The question piped in, read no further than the longest one pack_context takes."""
    from codesift_db.pipeline.params import MAX_QUERY_CHARS

    try:
        text = sys.stdin.read(MAX_QUERY_CHARS + 1)
    except UnicodeDecodeError:
        raise CodesiftError("standard input is not UTF-8 text") from None
    if len(text) > MAX_QUERY_CHARS:
        raise CodesiftError(
            f"the question on standard input is over {MAX_QUERY_CHARS:,} characters"
        )
    if not text.strip():
        raise CodesiftError("no question on standard input (ask - reads it from there)")
    return text


def run(
    question: str, repo: str | None, tenant: str, ref: str | None, budget: int, explain: bool
) -> None:
    """Ask `question` (`-`: standard input) as `tenant` and print the answer."""
    if question == "-":
        question = question_from_stdin()

    # queries may go to a read replica (CODESIFT_READ_DSN); indexing never does
    with db.connect(db.read_dsn(), autocommit=True) as conn, db.acting_as_loader(conn):
        use_tenant(conn, tenant)  # an unknown one: the error every command gives
        conn.add_notice_handler(
            lambda n: err.print(Text("notice:", style="yellow"), plain(n.message_primary))
        )
        # a database error (a bad argument the engine refuses) is the CLI's to print (main)
        if explain:
            stdout_console().print(_explain_table(_candidates(conn, question, repo, budget, ref)))
            return
        text = _pack_text(conn, question, repo, budget, ref)
    # exact for programs; a terminal never receives the code's control characters
    print(strip_controls(text) if sys.stdout.isatty() else text)


def _pack_text(
    conn: psycopg.Connection, question: str, repo: str | None, budget: int, ref: str | None
) -> str:
    with db.tenant_transaction(conn):
        row = conn.execute(
            "select codesift.pack_context_text(%s, repo => %s, token_budget => %s, ref => %s)",
            (question, repo, budget, ref),
        ).fetchone()
    assert row is not None  # a function call returns one row
    return row[0]


def _candidates(
    conn: psycopg.Connection, question: str, repo: str | None, budget: int, ref: str | None
) -> list[tuple]:
    with db.tenant_transaction(conn):
        return conn.execute(
            "select candidate, path, start_line, end_line, symbol, kind, lexical_rank,"
            f" dense_rank, {WHY_NAMED}, graph_hop, round(score::numeric, 5), decision, tokens"
            " from codesift.explain_context(%s, repo => %s, token_budget => %s, ref => %s)",
            (question, repo, budget, ref),
        ).fetchall()


def _explain_table(rows: list[tuple]) -> Table:
    """One row per candidate; repository data as plain text, never markup. `named`: the
    rank among what the question names, `!` where its traceback failed."""
    table = Table(
        "#",
        "path",
        "lines",
        "symbol",
        "kind",
        "lex",
        "dense",
        "named",
        "hop",
        "score",
        "decision",
        "tokens",
    )
    for r in rows:
        table.add_row(
            str(r[0]),
            plain(r[1]),
            f"{r[2]}-{r[3]}",
            plain(r[4] or ""),
            plain(r[5]),
            *(plain(x) if x is not None else "" for x in r[6:8]),
            named_mark(r[8], r[9]),
            *(plain(x) if x is not None else "" for x in r[10:]),
        )
    return table
