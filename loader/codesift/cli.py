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
err = Console(stderr=True, soft_wrap=True)


def _stdout() -> Console:
    """Tables on stdout; piped output gets a wide page instead of squeezed columns."""
    return Console() if sys.stdout.isatty() else Console(width=200)


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


@app.command()
def index(
    path: Annotated[str, typer.Argument(help="A git repository (any folder inside a checkout).")],
    name: Annotated[
        str | None, typer.Option(help="Repository name in codesift (default: the folder's name).")
    ] = None,
    tenant: Annotated[
        str, typer.Option(help="Tenant that owns the index; created if missing.")
    ] = "default",
    ref: Annotated[str, typer.Option(help="Branch, tag or commit to index.")] = "HEAD",
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Also index uncommitted changes: modified and untracked, non-ignored files.",
        ),
    ] = False,
    max_bytes: Annotated[
        int, typer.Option(help="Skip files larger than this many bytes.", min=1)
    ] = 1024 * 1024,
    embed: Annotated[
        bool, typer.Option(help="Compute embeddings for new symbols and files.")
    ] = True,
) -> None:
    """Index a git repository: push new blobs (symbols and imports are extracted in the
    database), record the tree at REF, resolve import edges, embed what is new."""
    from .indexer import index_repository

    with db.connect() as conn:
        s = index_repository(
            conn,
            path,
            name=name,
            tenant=tenant,
            ref=ref,
            worktree=worktree,
            max_bytes=max_bytes,
            embed=embed,
        )
    err.print(
        f"[green]indexed[/green] {s.repository} @ {s.commit[:12]}"
        f"{' + worktree' if worktree else ''}:"
        f" {s.files} files, {s.new_blobs} new blobs ({s.reused_blobs} already stored),"
        f" {s.new_symbols} new symbols, {s.removed_paths} paths removed, {s.edges} import edges,"
        f" embedded {s.embedded.symbols} symbols + {s.embedded.blobs} files"
    )
    for reason, count in sorted(s.skipped.items()):
        err.print(f"  skipped {count} file(s): {reason}")


@app.command()
def status(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's repositories.")] = None,
) -> None:
    """Per repository: the indexed commit, whether HEAD moved past it, counts and backlog."""
    from rich.table import Table

    from .status import repository_status

    with db.connect() as conn:
        rows = repository_status(conn, tenant)
    if not rows:
        err.print("no repositories indexed yet: run `codesift index PATH`")
        return
    table = Table(
        "tenant",
        "repository",
        "indexed commit",
        "indexed at",
        "stale",
        "files",
        "symbols",
        "edges",
        "embedding backlog",
    )
    for r in rows:
        stale = {True: "[red]yes[/red]", False: "no", None: "?"}[r.stale]
        commit = (r.indexed_commit or "-")[:12] + (" +wt" if r.worktree else "")
        at = r.indexed_at.strftime("%Y-%m-%d %H:%M") if r.indexed_at else "-"
        table.add_row(
            r.tenant,
            r.name,
            commit,
            at,
            stale,
            str(r.live_files),
            str(r.symbols),
            str(r.edges),
            str(r.embedding_backlog),
        )
    _stdout().print(table)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question about the code, or identifiers.")],
    repo: Annotated[
        str | None, typer.Option(help="Repository name (default: all of the tenant's).")
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant whose repositories to search.")] = "default",
    budget: Annotated[int, typer.Option(help="Token budget of the pack.", min=1)] = 4000,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show every candidate and each stage's decision.")
    ] = False,
) -> None:
    """Ask a question: prints what pack_context returns (the same SQL any client can call)."""
    import psycopg
    from rich.table import Table

    with db.connect() as conn:
        row = conn.execute("select id from codesift.tenants where name = %s", (tenant,)).fetchone()
        if row is None:
            raise CodesiftError(f"unknown tenant '{tenant}': index a repository for it first")
        conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(row[0]),))
        conn.add_notice_handler(
            lambda n: err.print(f"[yellow]notice:[/yellow] {n.message_primary}")
        )
        try:
            if explain:
                rows = conn.execute(
                    "select candidate, path, start_line, end_line, symbol, kind, lexical_rank,"
                    " dense_rank, graph_hop, round(score::numeric, 5), decision, tokens"
                    " from codesift.explain_context(%s, repo => %s, token_budget => %s)",
                    (question, repo, budget),
                ).fetchall()
                table = Table(
                    "#",
                    "path",
                    "lines",
                    "symbol",
                    "kind",
                    "lex",
                    "dense",
                    "hop",
                    "score",
                    "decision",
                    "tokens",
                )
                for r in rows:
                    table.add_row(
                        str(r[0]),
                        r[1],
                        f"{r[2]}-{r[3]}",
                        r[4] or "",
                        r[5],
                        *(str(x) if x is not None else "" for x in r[6:]),
                    )
                _stdout().print(table)
                return
            text = conn.execute(
                "select codesift.pack_context_text(%s, repo => %s, token_budget => %s)",
                (question, repo, budget),
            ).fetchone()[0]
        except psycopg.Error as exc:
            hint = f"\n  hint: {exc.diag.message_hint}" if exc.diag.message_hint else ""
            raise CodesiftError(f"{exc.diag.message_primary}{hint}") from None
    print(text)


def main() -> None:
    try:
        app()
    except CodesiftError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
