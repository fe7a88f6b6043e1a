"""The codesift command line. Every command reads CODESIFT_DSN (unset: the embedded database)."""

import sys
from typing import Annotated

import typer
from rich.console import Console

from . import db
from .errors import CodesiftError

app = typer.Typer(
    help="codesift: a code-context engine for coding agents that lives inside PostgreSQL.\n\n"
    "Every command connects to CODESIFT_DSN, or to the embedded database (make db) when unset.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)


@app.callback()
def _root() -> None:
    """codesift: a code-context engine for coding agents that lives inside PostgreSQL."""


@app.command()
def migrate(
    embedding_dim: Annotated[
        int | None,
        typer.Option(
            help="Embedding dimension, chosen once when the schema is first installed "
            "(default 384, all-MiniLM-L6-v2's). Refused if it differs from the installed one.",
            min=1,
            max=2000,
        ),
    ] = None,
) -> None:
    """Install or upgrade codesift's schema and functions. Running it twice applies nothing."""
    from .migrate import migrate as run_migrations

    with db.connect() as conn:
        result = run_migrations(conn, embedding_dim=embedding_dim)
    if result.applied:
        for name in result.applied:
            err.print(f"applied {name}")
        err.print(f"[green]{len(result.applied)} migration(s) applied[/green]")
    else:
        err.print("nothing to apply: the database is up to date")


def main() -> None:
    try:
        app()
    except CodesiftError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
