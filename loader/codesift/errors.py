"""Typed user errors: the CLI prints their message and exits 1, never a traceback."""

import re

import psycopg

# what PL/Python puts before the message of an error raised with plpy.error (or of a
# database error raised inside a PL/Python function): not the user's business
PLPY_PREFIX = re.compile(r"^(?:plpy\.\w+|spiexceptions\.\w+): ")

# what to do about a database error that gives no hint of its own, by SQLSTATE
_HINTS = {
    "57014": "a statement ran past the statement_timeout of this role, database or session "
    "(PGOPTIONS), or was cancelled: raise the timeout, or try again",
    "55P03": "another session holds a lock this command needs: try again",
    "40P01": "a deadlock with another session rolled this command back: try again",
    "40001": "a conflict with another session rolled this command back: try again",
    "53300": "the database has no connection slot left: try again later",
}


class CodesiftError(Exception):
    """A problem the user can fix; the message says what and how."""


class ConnectionFailed(CodesiftError):
    pass


class MigrationError(CodesiftError):
    pass


class IndexingError(CodesiftError):
    pass


def database_message(exc: psycopg.Error) -> tuple[str, str | None]:
    """A database error's message (its first line, without PL/Python's prefix) and its hint,
    or what to do about its SQLSTATE when it gives none."""
    diag = exc.diag
    lines = (diag.message_primary or str(exc) or type(exc).__name__).strip().splitlines()
    message = PLPY_PREFIX.sub("", lines[0]) if lines else type(exc).__name__
    return message, diag.message_hint or _HINTS.get(exc.sqlstate or "")


def from_database(exc: psycopg.Error) -> CodesiftError:
    """The user error a database error reads as (the CLI's): its message and hint, never a
    traceback."""
    message, hint = database_message(exc)
    return CodesiftError(f"{message}\n  hint: {hint}" if hint else message)
