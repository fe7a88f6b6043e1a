"""The codesift command line. Every command reads CODESIFT_DSN (unset: the embedded database).

Repository data (names, paths, symbols, code, error messages quoting them) is never
rendered as rich markup: it goes out as Text objects. Control characters in data
shown to a person are made visible (\\x1b), and code printed to a terminal loses
them, so that escape sequences in indexed files never reach a terminal; piped
output stays exact (console.py).
"""

import inspect
import sys
from typing import Annotated

import psycopg
import typer
from codesift_db.pipeline.params import MAX_BUDGET
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from rich.text import Text

from . import db
from .console import err, plain, stdout_console
from .errors import CodesiftError, from_database

app = typer.Typer(
    help="codesift: a code-context engine for coding agents that lives inside PostgreSQL.\n\n"
    "Every command connects to CODESIFT_DSN, or to the embedded database (make db) when unset.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# options several commands share
RepoPath = Annotated[str, typer.Argument(help="A git repository (any folder inside a checkout).")]
RepoName = Annotated[
    str | None,
    typer.Option(
        help="Repository name in codesift (default: the name the checkout is already indexed "
        "under, else the folder's name)."
    ),
]
IndexTenant = Annotated[str, typer.Option(help="Tenant that owns the index; created if missing.")]
MaxBytes = Annotated[int, typer.Option(help="Skip files larger than this many bytes.", min=1)]


def _print_version(value: bool) -> None:
    if value:
        from . import version

        print(f"codesift {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print codesift's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
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
    embedder: Annotated[
        str | None,
        typer.Option(
            help="What embeds code and queries: 'builtin' (all-MiniLM-L6-v2 in process, no "
            "network; the default at first install) or 'openai' (any OpenAI-compatible "
            "POST /v1/embeddings server: Ollama, vLLM, text-embeddings-inference, LM Studio). "
            "Recorded in codesift.settings; an API key is read from CODESIFT_EMBEDDING_API_KEY "
            "by the loader, the worker and the database server, never stored.",
        ),
    ] = None,
    embedding_endpoint: Annotated[
        str | None,
        typer.Option(
            help="The endpoint's base URL for --embedder openai, e.g. "
            "http://localhost:11434 (Ollama)."
        ),
    ] = None,
    embedding_model: Annotated[
        str | None,
        typer.Option(help="The model name the endpoint serves, e.g. nomic-embed-text."),
    ] = None,
    citus: Annotated[
        bool,
        typer.Option(
            "--citus",
            help="On a Citus coordinator with its workers added: then shard every tenant "
            "table by tenant_id (co-located) and make the other tables reference tables "
            "(sql/citus/). A database sharded so is detected by later migrations.",
        ),
    ] = False,
) -> None:
    """Install or upgrade codesift's schema and functions. Running it twice applies nothing.

    A different model of the same dimension may be chosen later (its vectors are then
    recomputed); a different dimension needs a fresh database."""
    from .migrate import EmbedderChoice
    from .migrate import migrate as run_migrations

    choice = None
    if embedder is not None or embedding_endpoint is not None or embedding_model is not None:
        choice = EmbedderChoice(
            embedder or "builtin", embedding_endpoint, embedding_model, embedding_dim
        )
    with db.connect() as conn:
        if citus:
            from .citus import require_citus

            require_citus(conn)
            conn.commit()
        result = run_migrations(
            conn, embedding_dim=embedding_dim, embedder=choice, on_busy=_report_busy
        )
        from .citus import distribute, is_distributed

        if citus or (result.applied and is_distributed(conn)):
            result.applied += distribute(conn)
    if choice is not None:
        what = choice.model or "all-MiniLM-L6-v2"
        where = f" at {choice.endpoint}" if choice.endpoint else ""
        err.print(Text("embedder: ") + plain(f"{choice.provider} {what}{where}"))
    if result.applied:
        for name in result.applied:
            err.print(Text("applied ") + plain(name))
        err.print(f"[green]{len(result.applied)} migration(s) applied[/green]")
    else:
        err.print("nothing to apply: the database is up to date")


def _report_busy(attempt: int, pause_s: float, why: str) -> None:
    """What `codesift migrate` says when its tables are in use by other sessions."""
    err.print(
        plain(f"the tables are in use by other sessions ({why}): nothing changed yet; ")
        + plain(f"trying again in {pause_s:g} s (attempt {attempt + 1})")
    )


@app.command()
def index(
    path: RepoPath,
    name: RepoName = None,
    tenant: IndexTenant = "default",
    ref: Annotated[
        list[str] | None,
        typer.Option(
            metavar="REF",
            help="Branch, tag or commit to index as its own ref of the repository (repeatable; "
            "default HEAD). Queries use the repository's first indexed ref unless they name one.",
        ),
    ] = None,
    all_branches: Annotated[
        bool, typer.Option("--all-branches", help="Index every local branch as a ref.")
    ] = False,
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Also index uncommitted changes: modified and untracked, non-ignored files.",
        ),
    ] = False,
    max_bytes: MaxBytes = 1024 * 1024,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Embed the new symbols and files in this process (sharing the queue with "
            "any running `codesift worker`) and return when the tenant's embedding backlog "
            "is empty. Without it, index returns as soon as the tree is committed (lexical "
            "search and the graph answer then) and `codesift worker` embeds.",
        ),
    ] = False,
    no_embed: Annotated[
        bool, typer.Option("--no-embed", hidden=True, help="The default now; kept for scripts.")
    ] = False,
    lock_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds to wait for another loader indexing the same repository "
            "before giving up (0: do not wait).",
            min=0,
        ),
    ] = 30.0,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print what would be indexed, by folder, what would be skipped, by reason "
            "(defaults, .codesiftignore) with the first paths of each, and the embedding "
            "work (texts, vectors to compute, a time at a measured or stated rate); write "
            "nothing.",
        ),
    ] = False,
) -> None:
    """Index a git repository: push new blobs (symbols and imports are extracted in the
    database), record the tree at REF, resolve its edges (imports, tests, co-change); with
    --wait, embed what is new.
    Skips vendored folders, minified bundles, lockfiles, message catalogs, generated files
    and files of one long line by default; a .codesiftignore (gitignore syntax, `!`
    re-includes) adds rules."""
    from . import git
    from .indexer import index_repository

    refs = list(ref or [])
    if all_branches:
        refs += [b for b in git.local_branches(git.repo_root(path)) if b not in refs]
    refs = refs or ["HEAD"]
    if dry_run:
        for one in refs:
            _index_dry_run(path, name, tenant, one, worktree, max_bytes)
        return

    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        for one in refs:
            s = index_repository(
                conn,
                path,
                name=name,
                tenant=tenant,
                ref=one,
                worktree=worktree,
                max_bytes=max_bytes,
                embed=wait and not no_embed,
                lock_timeout=lock_timeout,
            )
            _print_index_summary(s, wait and not no_embed)


def _print_index_summary(s, waited: bool) -> None:
    where = f"{s.repository} @ {s.ref} ({s.commit[:12]})"
    if s.references_backfilled:
        err.print(plain(f"  references extracted for {s.references_backfilled} stored blob(s)"))
    if s.unchanged:
        err.print(Text("up to date", style="green"), plain(f"{where}: already indexed"))
        return
    err.print(
        Text("indexed", style="green"),
        plain(
            f"{where}:"
            f" {s.files} files, {s.new_blobs} new blobs ({s.reused_blobs} already stored),"
            f" {s.new_symbols} new symbols, {s.removed_paths} paths removed,"
            f" {s.edges} edges," + _embedded_summary(s.embedded, waited)
        ),
    )
    for reason, count in sorted(s.skipped.items()):
        err.print(plain(f"  skipped {count} file(s): {reason}"))


def _embedded_summary(stats, waited: bool) -> str:
    if not waited:
        return " embedding in the background (codesift worker; or index --wait)"
    return (
        f" embedded {stats.symbols} symbols + {stats.blobs} files"
        f" ({stats.computed} vectors computed, {stats.reused} reused)" + _refused_summary(stats)
    )


def _refused_summary(stats) -> str:
    if not stats.refused:
        return ""
    return f"; {stats.refused} refused by the embedding endpoint (codesift status lists them)"


def _index_dry_run(path, name, tenant, ref, worktree, max_bytes) -> None:
    from .dryrun import plan_index, report
    from .errors import ConnectionFailed

    try:
        conn = db.connect(autocommit=True)
    except ConnectionFailed:
        conn = None
    try:
        if conn is not None:
            with db.acting_as_loader(conn):
                p = plan_index(conn, path, name, tenant, ref, worktree, max_bytes)
        else:
            p = plan_index(None, path, name, tenant, ref, worktree, max_bytes)
    finally:
        if conn is not None:
            conn.close()
    out = stdout_console()
    for line in report(p):
        out.print(plain(line))


@app.command()
def status(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's repositories.")] = None,
) -> None:
    """Per repository: the indexed commit, whether HEAD moved past it, counts and backlog."""
    from rich.table import Table

    from .status import refused_rows, repository_status

    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        rows = repository_status(conn, tenant)
        refused = refused_rows(conn, tenant) if any(r.embedding_refused for r in rows) else []
    if not rows:
        err.print("no repositories indexed yet: run `codesift index PATH`")
        return
    table = Table(
        "tenant",
        "repository",
        "ref",
        "indexed commit",
        "indexed at",
        "stale",
        "files",
        "symbols",
        "edges",
        "embedding backlog",
    )
    for r in rows:
        stale_cells: dict[bool | None, Text | str] = {
            True: Text("yes", style="red"),
            False: "no",
            None: "?",
        }
        stale = stale_cells[r.stale]
        commit = (r.indexed_commit or "-")[:12] + (" +wt" if r.worktree else "")
        at = r.indexed_at.strftime("%Y-%m-%d %H:%M") if r.indexed_at else "-"
        table.add_row(
            plain(r.tenant),
            plain(r.name),
            plain(r.ref + (" (default)" if r.is_default else "")),
            plain(commit),
            at,
            stale,
            str(r.live_files),
            str(r.symbols),
            str(r.edges),
            str(r.embedding_backlog)
            + (f" ({r.embedding_refused} refused)" if r.embedding_refused else ""),
        )
    stdout_console().print(table)
    _print_refused(refused)


def _print_refused(rows) -> None:
    """The rows the embedding endpoint refused, each with its error: the endpoint's words
    (as data: control characters shown, never obeyed)."""
    if not rows:
        return
    out = stdout_console()
    out.print(
        plain(
            "refused by the embedding endpoint (no vector; lexical search and the graph find them):"
        )
    )
    for r in rows:
        what = f"{r.repository}/{r.path}" + (f" {r.symbol}" if r.symbol else "")
        when = f"tried again after {r.retry_at:%Y-%m-%d %H:%M}" if r.retry_at else "not tried again"
        line = f"  {r.tenant}: {what}: refused {r.attempts}x, {when}: {r.error}"
        out.print(plain(line), soft_wrap=True)


# what `codesift mcp --http` and `codesift worker` tell an operator (observability.py)
MetricsPort = Annotated[
    int | None,
    typer.Option(
        help="Serve Prometheus metrics at http://METRICS-HOST:PORT/metrics, a port apart "
        "from any other (default: not served).",
        min=1,
        max=65535,
    ),
]
MetricsHost = Annotated[
    str,
    typer.Option(
        help="The address of --metrics-port: loopback by default; any other needs "
        "CODESIFT_METRICS_TOKEN set, a secret scrapers send as 'Authorization: Bearer <token>' "
        "(with it set, loopback scrapers must send it too).",
    ),
]
ShutdownGrace = Annotated[
    float,
    typer.Option(
        help="On SIGTERM or Ctrl-C: seconds the work in flight is given to finish before it "
        "is abandoned.",
        min=0,
        max=3600,
    ),
]


def _check_metrics(port: int | None, host: str) -> None:
    """Refuse a metrics address that would show the metrics to anyone, before starting."""
    if port is not None:
        from .observability import metrics_token

        metrics_token(host)


@app.command()
def worker(
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Drain every tenant's backlog, then exit (with an error when the embedding "
            "endpoint is still down after a batch's tries).",
        ),
    ] = False,
    poll: Annotated[
        float,
        typer.Option(
            help="Seconds between checks for work that no notification announced "
            "(e.g. rows left by a worker that stopped).",
            min=0.1,
        ),
    ] = 30.0,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = "127.0.0.1",
    shutdown_grace: ShutdownGrace = 30.0,
) -> None:
    """Embed every tenant's backlog in the background: claims batches from the queue in the
    database (any number of workers, on any machines, share it), sleeps until `codesift
    index` announces new work, reconnects when the database restarts and waits while the
    embedding endpoint is down (seconds before the first retry, the most between two, and
    requests per batch: CODESIFT_EMBED_BACKOFF, CODESIFT_EMBED_BACKOFF_MAX,
    CODESIFT_EMBED_TRIES); a text the endpoint refuses is set aside with its error
    (codesift status lists it).
    Stop with Ctrl-C or SIGTERM: a batch in flight is finished (within --shutdown-grace
    seconds; past them, or on a second signal, it is rolled back whole and embedded again
    by the next claim), then the worker exits."""
    import os

    from .worker import Shutdown, Stopped, WorkerOptions, run
    from .worker_metrics import WorkerMetrics

    _check_metrics(metrics_port, metrics_host)
    metrics = WorkerMetrics()
    if metrics_port is not None:
        from .observability import metrics_token, serve_metrics

        serve_metrics(metrics.registry, metrics_host, metrics_port, metrics_token(metrics_host))
        err.print(plain(f"worker metrics on http://{metrics_host}:{metrics_port}/metrics"))
    # a signal handler's line: written at once, not through rich (which takes a lock)
    shutdown = Shutdown(shutdown_grace, say=lambda text: os.write(2, f"{text}\n".encode()))
    shutdown.install()

    def log(line: str) -> None:
        err.print(plain(line))

    options = WorkerOptions(once=once, poll_seconds=poll, log=log, metrics=metrics)
    options.shutdown = shutdown
    try:
        totals = run(options)
    except Stopped:
        err.print("worker stopped after its batch")
        return
    except KeyboardInterrupt:
        err.print("worker stopped")
        return
    s = totals.stats
    err.print(
        Text("done", style="green"),
        plain(
            f"embedded {s.symbols} symbols + {s.blobs} files"
            f" ({s.computed} vectors computed, {s.reused} reused)" + _refused_summary(s)
        ),
    )


@app.command()
def ask(
    question: Annotated[
        str,
        typer.Argument(
            help="A question about the code, or identifiers; - reads it from standard input "
            "(a bug report: `gh issue view 123 | codesift ask - --repo R`)."
        ),
    ],
    repo: Annotated[
        str | None, typer.Option(help="Repository name (default: all of the tenant's).")
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant whose repositories to search.")] = "default",
    ref: Annotated[
        str | None,
        typer.Option(help="Indexed ref to ask at (default: each repository's default ref)."),
    ] = None,
    budget: Annotated[
        int, typer.Option(help="Token budget of the pack.", min=1, max=MAX_BUDGET)
    ] = 4000,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show every candidate and each stage's decision.")
    ] = False,
) -> None:
    """Ask a question: prints what pack_context returns (the same SQL any client can call)."""
    from .ask import run

    run(question, repo, tenant, ref, budget, explain)


@app.command()
def learn(
    path: RepoPath,
    repo: Annotated[
        str | None,
        typer.Option(help="Repository name in codesift (default: the folder's name)."),
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant that owns the index.")] = "default",
    ref: Annotated[
        str | None, typer.Option(help="Indexed ref to train for (default: the default ref).")
    ] = None,
    commits: Annotated[
        int, typer.Option(help="Mine at most this many commits before the indexed one.")
    ] = 2_000,
    questions: Annotated[
        int, typer.Option(help="Train on the newest this many commits that changed code.")
    ] = 300,
) -> None:
    """Train the ref's learned ranker on its own history: each commit before the indexed
    one is a question (its message) and its gold (the definitions it changed); the model
    is stored in the database and orders pack_context's candidates for that ref."""
    from . import git
    from .learn import learn as run_learn

    name = repo or git.repo_root(path).name
    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        s = run_learn(conn, path, name, tenant, ref, commits, questions, log=err.print)
    m = s.mined
    err.print(
        f"mined {m.commits_read} new commits ({m.with_gold} changed definitions; "
        f"{m.already} mined before; the ref keeps {m.kept}); asked {s.questions} questions "
        f"in {s.ask_seconds:.1f}s, {s.examples} found gold; trained in {s.train_seconds:.2f}s"
    )
    for why in s.skipped:
        err.print(why)
    if s.stored:
        err.print(f"stored the model ({s.model_bytes:,} bytes)")


@app.command()
def outline(
    path: Annotated[
        str,
        typer.Argument(
            help="A file: its path in the repository, or as search results cite it "
            "(repo:path, repo:path:10-20)."
        ),
    ],
    repo: Annotated[
        str | None,
        typer.Option(help="Repository name (needed when several repositories have the path)."),
    ] = None,
    ref: Annotated[
        str | None, typer.Option(help="Indexed ref (default: the repository's default ref).")
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant whose repositories to read.")] = "default",
) -> None:
    """The outline of a file: each symbol's lines, signature (nested by depth) and doc line,
    from file_outline."""
    from .outline import print_outline

    print_outline(path, repo, ref, tenant)


@app.command("repo-map")
def repo_map(
    repo: Annotated[
        str | None, typer.Option(help="Repository name (default: all of the tenant's).")
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option(help="Only files under this folder (e.g. src/).")
    ] = None,
    budget: Annotated[
        int, typer.Option(help="Token budget of the map.", min=1, max=MAX_BUDGET)
    ] = 2000,
    ref: Annotated[
        str | None,
        typer.Option(help="Indexed ref (default: each repository's default ref)."),
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant whose repositories to map.")] = "default",
) -> None:
    """A map of a repository or folder: its most central files (PageRank over imports,
    tests and co-changes), each with its outline, packed under a token budget, from
    repo_map."""
    from .outline import print_map

    print_map(repo, path_prefix, budget, ref, tenant)


# options of refs, callers and callees
Definition = Annotated[
    str,
    typer.Argument(
        help="A definition: its name (send), qualified name (Session.send) or a citation "
        "(repo:path:12, a line inside it)."
    ),
]
DefinitionRepo = Annotated[
    str | None, typer.Option(help="Repository name (default: all of the tenant's).")
]
DefinitionRef = Annotated[
    str | None, typer.Option(help="Indexed ref (default: each repository's default ref).")
]
DefinitionPath = Annotated[
    str | None, typer.Option(help="Only the definition in this file (path or repo:path).")
]
Rows = Annotated[int, typer.Option(help="Rows to print at most.", min=1, max=1000)]
ReadTenant = Annotated[str, typer.Option(help="Tenant whose repositories to read.")]


@app.command()
def refs(
    name: Definition,
    repo: DefinitionRepo = None,
    ref: DefinitionRef = None,
    path: DefinitionPath = None,
    limit: Rows = 200,
    tenant: ReadTenant = "default",
) -> None:
    """Every use of a definition (find_references): its file, line and enclosing symbol,
    resolved through imports or matched by name only."""
    from .references import print_refs

    print_refs(name, repo, ref, path, limit, tenant)


@app.command()
def callers(
    symbol: Definition,
    repo: DefinitionRepo = None,
    ref: DefinitionRef = None,
    path: DefinitionPath = None,
    limit: Rows = 200,
    tenant: ReadTenant = "default",
) -> None:
    """The symbols that call a definition, with the lines of their calls, from callers."""
    from .references import print_callers

    print_callers(symbol, repo, ref, path, limit, tenant)


@app.command()
def callees(
    symbol: Definition,
    repo: DefinitionRepo = None,
    ref: DefinitionRef = None,
    path: DefinitionPath = None,
    limit: Rows = 200,
    tenant: ReadTenant = "default",
) -> None:
    """What a definition calls, each name with the definition it resolves to, from callees."""
    from .references import print_callees

    print_callees(symbol, repo, ref, path, limit, tenant)


@app.command()
def impact(
    target: Annotated[
        str,
        typer.Argument(
            help="What may break: a definition (send, Session.send, or a citation of a line "
            "inside it, repo:path:12) or a file (src/app.py, repo:src/app.py)."
        ),
    ],
    repo: DefinitionRepo = None,
    ref: DefinitionRef = None,
    depth: Annotated[
        int, typer.Option(help="Hops to follow (1..4): 2 adds the callers' callers.", min=1, max=4)
    ] = 2,
    limit: Rows = 200,
    tenant: ReadTenant = "default",
) -> None:
    """What depends on a definition or a file, the most affected first: its callers (and
    theirs), the files that import it, the files that change with it, and the tests that
    reach it, each with how it is reached, from impact."""
    from .impact import print_impact

    print_impact(target, repo, ref, depth, limit, tenant)


@app.command("diff-context")
def diff_context(
    repo: Annotated[
        str | None,
        typer.Option(help="Repository name (needed when several repositories have the refs)."),
    ] = None,
    base: Annotated[
        str | None, typer.Option(help="The indexed ref before the change (with --head).")
    ] = None,
    head: Annotated[
        str | None, typer.Option(help="The indexed ref after the change (with --base).")
    ] = None,
    diff_file: Annotated[
        str | None,
        typer.Option(
            "--diff-file",
            help="A unified diff (git diff > FILE; - for standard input) of a change no ref "
            "holds, read against --ref; instead of --base and --head.",
        ),
    ] = None,
    ref: Annotated[
        str | None,
        typer.Option(help="The indexed ref the --diff-file applies to (default: the default ref)."),
    ] = None,
    budget: Annotated[
        int, typer.Option(help="Token budget of the pack.", min=1, max=MAX_BUDGET)
    ] = 4000,
    tenant: ReadTenant = "default",
) -> None:
    """The context a review of a change needs, packed under a token budget with citations:
    the changed definitions, the changed lines outside them, their direct callers and the
    tests that reach them, from diff_context. The change is --base..--head (two indexed
    refs) or --diff-file (git diff HEAD~1 | codesift diff-context --diff-file - --repo R)."""
    from .impact import print_diff_context

    if diff_file is None and (base is None or head is None):
        raise CodesiftError("pass --base and --head (two indexed refs), or --diff-file FILE")
    if diff_file is not None and head is not None:
        raise CodesiftError("pass either --head or --diff-file, not both")
    print_diff_context(repo, base, head, budget, diff_file, ref, tenant)


tenant_app = typer.Typer(
    help="Tenants and their per-tenant login roles (for psql sessions and BI tools).",
    no_args_is_help=True,
)
app.add_typer(tenant_app, name="tenant")


@tenant_app.command("create")
def tenant_create(
    name: Annotated[str, typer.Argument(help="The tenant's name.")],
    login_role: Annotated[
        str | None,
        typer.Option(
            help="A login role that sees this tenant only, whatever it sets, and writes "
            "nothing: created with a generated password (printed once) when missing, "
            "granted when it exists. Needs the DSN you migrate with.",
        ),
    ] = None,
    connection_limit: Annotated[
        int | None,
        typer.Option(
            help="How many connections the login role may hold at once (default 5, or the "
            "limit it has). All per-tenant roles' limits together must leave 10 for "
            "codesift_app and codesift_loader, unless the server reserves connections for "
            "them (PostgreSQL 16+ reserved_connections).",
        ),
    ] = None,
) -> None:
    """Create a tenant (if missing) and, with --login-role, a role confined to it."""
    from .tenants import create_tenant, grant_login_role

    if connection_limit is not None and login_role is None:
        raise CodesiftError("--connection-limit is the limit of --login-role: name the role")

    with db.connect(autocommit=True) as conn:
        with db.acting_as_loader(conn):
            _, created = create_tenant(conn, name)
        err.print(plain(f"tenant '{name}' {'created' if created else 'already exists'}"))
        if login_role is None:
            return
        granted = grant_login_role(conn, name, login_role, connection_limit)
    params = {**conninfo_to_dict(db.current_dsn()), "user": granted.role}
    params.pop("password", None)
    dsn = make_conninfo("", **params)
    err.print(
        plain(
            f"role '{granted.role}' {'created' if granted.created else 'granted'}: "
            f"it sees tenant '{name}' only, with at most {granted.connection_limit} "
            "connections at once"
        )
    )
    if granted.password:
        err.print("its password (shown once, store it now):")
        print(granted.password)
    err.print(plain(f"connect with: {dsn}"), highlight=False)


@app.command()
def forget(
    repo: Annotated[
        str | None, typer.Argument(help="The repository to remove (omit with --whole-tenant).")
    ] = None,
    tenant: Annotated[str, typer.Option(help="The tenant that owns it.")] = "default",
    ref: Annotated[
        str | None,
        typer.Option(help="Remove only this indexed ref of the repository (its tree and edges)."),
    ] = None,
    whole_tenant: Annotated[
        bool,
        typer.Option("--whole-tenant", help="Remove the tenant and everything it owns."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove a repository, or one of its refs (its tree, edges, and the blobs, symbols,
    vectors and statistics no other ref of the tenant uses), or with --whole-tenant a whole
    tenant."""
    from .tenants import forget_repository, forget_tenant

    if (repo is None) == (not whole_tenant):
        raise CodesiftError("name a repository to forget, or pass --whole-tenant (not both)")
    if ref is not None and whole_tenant:
        raise CodesiftError("--ref names a ref of a repository: not with --whole-tenant")
    what = f"tenant '{tenant}' and everything it owns" if whole_tenant else f"repository '{repo}'"
    if ref is not None:
        what = f"ref '{ref}' of {what}"
    if not yes:
        if not sys.stdin.isatty():
            raise CodesiftError(
                f"refusing to remove {what} without --yes (stdin is not a terminal)"
            )
        if not typer.confirm(f"remove {what}?"):
            raise CodesiftError("nothing removed")
    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        if whole_tenant:
            forget_tenant(conn, tenant)
            err.print(plain(f"removed {what}"))
        else:
            assert repo is not None  # checked above: a repository or --whole-tenant
            blobs = forget_repository(conn, tenant, repo, ref)
            err.print(plain(f"removed {what} and {blobs} blob(s) nothing else used"))


@app.command()
def mcp(
    tenant: Annotated[
        str,
        typer.Option(
            envvar="CODESIFT_TENANT", help="stdio: the tenant whose repositories the tools see."
        ),
    ] = "default",
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Serve Streamable HTTP at /mcp instead of stdio: every request needs a bearer "
            "token (codesift token create) and acts as that token's tenant.",
        ),
    ] = False,
    host: Annotated[
        str, typer.Option(help="--http: the address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="--http: the port.", min=1, max=65535)] = 8765,
    pool_size: Annotated[
        int, typer.Option(help="--http: most database connections.", min=1, max=200)
    ] = 10,
    read_timeout: Annotated[
        float,
        typer.Option(
            help="--http: seconds a client has to send a whole request (head and body); "
            "then its connection is closed.",
            min=0.1,
            max=3600,
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(
            help="--http: most client connections at once (fewer if the open-files limit "
            "leaves less room); past it the one idle longest is closed.",
            min=1,
        ),
    ] = 1000,
    max_sessions: Annotated[
        int,
        typer.Option(
            help="--http: most MCP sessions at once; past it the largest tenant's least "
            "recently used session ends.",
            min=1,
        ),
    ] = 10_000,
    sessions_per_tenant: Annotated[
        int,
        typer.Option(
            help="--http: most sessions of one tenant; past it its least recently used ends.",
            min=1,
        ),
    ] = 1000,
    sessions_per_token: Annotated[
        int,
        typer.Option(
            help="--http: most sessions of one token; past it its least recently used ends.",
            min=1,
        ),
    ] = 100,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = "127.0.0.1",
    log_queries: Annotated[
        bool,
        typer.Option(
            "--log-queries",
            help="--http: the request log (JSON lines on stderr) also holds each tool call's "
            "arguments, a question's text among them; off by default, as they may be "
            "confidential.",
        ),
    ] = False,
    shutdown_grace: ShutdownGrace = 30.0,
    repo_path: Annotated[
        str | None,
        typer.Option(help="stdio: the checkout sync_index re-indexes (default: the cwd)."),
    ] = None,
    repo_name: Annotated[
        str | None,
        typer.Option(
            help="stdio: the repository name sync_index indexes --repo-path under (default: "
            "the name the checkout is already indexed under, else its folder's name).",
        ),
    ] = None,
    dsn: Annotated[
        str | None,
        typer.Option(help="The database (default: CODESIFT_DSN, else the embedded one)."),
    ] = None,
    read_dsn: Annotated[
        str | None,
        typer.Option(
            envvar="CODESIFT_READ_DSN",
            help="A read replica (hot standby) for the query tools; token checks and "
            "sync_index still use --dsn, the primary (default: --dsn for everything).",
        ),
    ] = None,
    oidc_issuer: Annotated[
        str | None,
        typer.Option(
            envvar="CODESIFT_OIDC_ISSUER",
            help="--http: also accept JWTs signed by this OpenID Connect issuer (an https URL; "
            "its keys are found through /.well-known/openid-configuration).",
        ),
    ] = None,
    oidc_audience: Annotated[
        str | None,
        typer.Option(
            envvar="CODESIFT_OIDC_AUDIENCE",
            help="--http, with --oidc-issuer: the audience (aud) the JWTs must be issued for.",
        ),
    ] = None,
    oidc_tenant_claim: Annotated[
        str,
        typer.Option(
            envvar="CODESIFT_OIDC_TENANT_CLAIM",
            help="--http, with --oidc-issuer: the JWT claim that names the tenant.",
        ),
    ] = "codesift_tenant",
) -> None:
    """Serve codesift to coding agents over MCP (stdio by default, or Streamable HTTP)."""
    if metrics_port is not None and not http:
        raise CodesiftError("--metrics-port is for --http (and for codesift worker)")
    _check_metrics(metrics_port, metrics_host)
    if oidc_issuer or oidc_audience:
        from .oidc import check_issuer

        if not http or not oidc_issuer or not oidc_audience:
            raise CodesiftError("--oidc-issuer and --oidc-audience go together, with --http")
        try:
            check_issuer(oidc_issuer)
        except ValueError as exc:
            raise CodesiftError(f"--oidc-issuer: {exc}") from None
        if not oidc_tenant_claim.strip():
            raise CodesiftError("--oidc-tenant-claim must not be empty")
    # mcp_start, not mcp_server: a stdio client's initialize is answered before the SDK loads
    from .mcp_start import Settings, serve

    dsn = dsn or db.current_dsn()
    settings = Settings(
        dsn=dsn,
        read_dsn=read_dsn or None,
        http=http,
        host=host,
        port=port,
        pool_min=min(2, pool_size),
        pool_max=pool_size,
        read_timeout=read_timeout,
        max_connections=max_connections,
        max_sessions=max_sessions,
        sessions_per_tenant=sessions_per_tenant,
        sessions_per_token=sessions_per_token,
        metrics_host=metrics_host,
        metrics_port=metrics_port,
        log_queries=log_queries,
        shutdown_grace=shutdown_grace,
        repo_path=repo_path,
        repo_name=repo_name,
        tenant_name=tenant,
        oidc_issuer=oidc_issuer or None,
        oidc_audience=oidc_audience or None,
        oidc_tenant_claim=oidc_tenant_claim,
    )
    if not http:
        # the tenant is looked up on the first tool call: the server starts, and says per
        # call what is wrong, while the database is down
        settings.pool_min = settings.pool_max = 1
    else:
        err.print(plain(f"codesift MCP server on http://{host}:{port}/mcp (bearer tokens)"))
    serve(settings)


token_app = typer.Typer(
    help="Bearer tokens of `codesift mcp --http`, one tenant each.", no_args_is_help=True
)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    tenant: Annotated[str, typer.Option(help="The tenant the token acts as.")],
    label: Annotated[str, typer.Option(help="A note to recognise it by.")] = "",
) -> None:
    """Create a token: only its hash is stored; the token is printed once, on stdout."""
    from .mcp_tokens import create_token

    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        token_id, token = create_token(conn, tenant, label)
    err.print(plain(f"token {token_id} for tenant '{tenant}' (shown once, store it now):"))
    print(token)


@token_app.command("list")
def token_list(tenant: Annotated[str, typer.Option(help="The tenant.")]) -> None:
    """The tenant's tokens: id, label, created, last used, revoked (never the token)."""
    from .mcp_tokens import list_tokens

    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        rows = list_tokens(conn, tenant)
    for r in rows:
        state = f"revoked {r.revoked_at:%Y-%m-%d %H:%M}" if r.revoked_at else "live"
        used = f"{r.last_used_at:%Y-%m-%d %H:%M}" if r.last_used_at else "never"
        stdout_console().print(
            plain(
                f"{r.id}\t{r.label}\tcreated {r.created_at:%Y-%m-%d %H:%M}"
                f"\tlast used {used}\t{state}"
            )
        )


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[int, typer.Argument(help="The token's id (codesift token list).")],
    tenant: Annotated[str, typer.Option(help="The tenant.")],
) -> None:
    """Revoke a token: the next request that carries it gets 401."""
    from .mcp_tokens import revoke_token

    with db.connect(autocommit=True) as conn, db.acting_as_loader(conn):
        if not revoke_token(conn, tenant, token_id):
            raise CodesiftError(f"no live token {token_id} for tenant '{tenant}'")
    err.print(plain(f"token {token_id} revoked"))


@app.command()
def setup(
    client: Annotated[str, typer.Argument(help="claude-code, cursor, vscode, codex or continue.")],
    tenant: Annotated[str, typer.Option(help="The tenant the agent's tools see.")] = "default",
    project: Annotated[
        str, typer.Option(help="The checkout (default: the one the current folder is in).")
    ] = ".",
    scope: Annotated[
        str | None,
        typer.Option(
            help="local: a per-user file holding this venv, this checkout and the loader's "
            "DSN (Claude Code's ~/.claude.json, its default with stdio; Codex's "
            "~/.codex/config.toml). project: the project's file, holding nothing of this "
            "machine (the default for the rest)."
        ),
    ] = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="URL",
            help="Register a `codesift mcp --http` server at URL instead of stdio; the "
            "bearer token comes from an environment variable (--token-env).",
        ),
    ] = None,
    token_env: Annotated[
        str, typer.Option(help="--http: the environment variable holding the bearer token.")
    ] = "CODESIFT_TOKEN",
    uninstall: Annotated[
        bool,
        typer.Option("--uninstall", help="Remove what setup wrote (with the same options)."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the configuration; write nothing.")
    ] = False,
    agents_md: Annotated[
        bool,
        typer.Option(
            "--agents-md",
            help="Also add a block to AGENTS.md on when to use each tool (and, for "
            "claude-code, an @AGENTS.md import to CLAUDE.md).",
        ),
    ] = False,
    allow_password: Annotated[
        bool,
        typer.Option(
            "--allow-password",
            help="--scope local: write CODESIFT_DSN into the config even if it has a password.",
        ),
    ] = False,
) -> None:
    """Register codesift's MCP server with a coding agent: merges its entry into the
    client's config, keeping every other server; idempotent. Never a superuser's DSN (the
    loader role's instead); nothing of this machine in a file meant to be committed."""
    from . import setup_clients as sc

    root = sc.project_root(project)
    options = sc.Options(
        client=client,
        project=root,
        tenant=tenant,
        scope=scope or sc.default_scope(client, http is not None),
        http=http,
        token_env=token_env,
        allow_password=allow_password,
        agents_md=agents_md,
        uninstall=uninstall,
    )
    sc.check_options(options)
    stdio = not uninstall and http is None
    service = sc.service_dsn(db.current_dsn()) if stdio else None
    planned = sc.plan(options, service)
    for change in planned.changes:
        path = change.path
        if not change.changed:
            status = f"{path}: nothing to remove" if uninstall else f"up to date: {path}"
            err.print(plain(status))
            continue
        if change.after is None:
            done, would = f"removed {path}", f"would remove {path}"
        elif uninstall:
            done, would = f"removed codesift from {path}", f"would remove codesift from {path}"
        else:
            done, would = f"wrote {path}", f"would write {path}:"
        if dry_run:
            err.print(plain(would))
            shown = change.preview if change.preview is not None else change.after
            if not uninstall and shown is not None:
                print(shown, end="" if shown.endswith("\n") else "\n")
            continue
        sc.write(change)
        err.print(plain(done))
    for note in planned.notes:
        err.print(plain(note))


# ---- re-index on save and on commit (loader/codesift/watch.py, hooks.py) ----


@app.command()
def watch(
    path: RepoPath,
    name: RepoName = None,
    tenant: IndexTenant = "default",
    max_bytes: MaxBytes = 1024 * 1024,
    embed: Annotated[
        bool, typer.Option(help="Embed the changed symbols and files after each update.")
    ] = True,
    debounce: Annotated[
        int,
        typer.Option(
            help="Milliseconds without a new change before a batch of edits is indexed.",
            min=10,
            max=60000,
        ),
    ] = 200,
) -> None:
    """Keep the index following the working tree: index HEAD plus uncommitted changes, then
    re-index each batch of saved files incrementally (only changed files are hashed, only
    new blobs pushed, the tree updated in one transaction). Commits and checkouts re-run
    the incremental index; a lost database is retried. Ctrl-C stops it."""
    from .watch import WatchOptions
    from .watch import watch as run_watch

    options = WatchOptions(
        name=name, tenant=tenant, max_bytes=max_bytes, embed=embed, debounce_ms=debounce
    )
    err.print(plain(f"watching {path} (Ctrl-C to stop)"))
    run_watch(path, options, lambda line: err.print(plain(line), highlight=False))


hook_app = typer.Typer(
    help="Git hooks that re-index in the background after commit, checkout and merge.",
    no_args_is_help=True,
)
app.add_typer(hook_app, name="hook")


@hook_app.command("install")
def hook_install(
    path: Annotated[str, typer.Argument(help="A git repository (default: the current one).")] = ".",
    name: Annotated[
        str | None, typer.Option(help="Repository name in codesift (default: the folder's name).")
    ] = None,
    tenant: Annotated[str, typer.Option(help="Tenant that owns the index.")] = "default",
    worktree: Annotated[
        bool,
        typer.Option("--worktree", help="Also index uncommitted changes at each run."),
    ] = False,
    embed: Annotated[
        bool, typer.Option(help="Embed what is new after each background index.")
    ] = True,
    allow_password: Annotated[
        bool,
        typer.Option(
            "--allow-password",
            help="Write CODESIFT_DSN into the git directory even if it has a password.",
        ),
    ] = False,
) -> None:
    """Install post-commit, post-checkout and post-merge hooks that run an incremental index
    in the background (never blocking or failing git; log in .git/codesift-hook.log).
    Existing hooks are kept and run first; installing again only refreshes ours."""
    from .hooks import install

    for line in install(path, tenant, name, worktree, embed, allow_password):
        err.print(plain(line), highlight=False)


@hook_app.command("uninstall")
def hook_uninstall(
    path: Annotated[str, typer.Argument(help="A git repository (default: the current one).")] = ".",
) -> None:
    """Remove codesift's hooks (and its lock, log and settings); your own hooks are put back."""
    from .hooks import uninstall

    for line in uninstall(path):
        err.print(plain(line), highlight=False)


@hook_app.command("run", hidden=True)
def hook_run(
    hook: Annotated[str, typer.Argument(help="The git hook that started it.")],
    args: Annotated[list[str] | None, typer.Argument(help="The hook's arguments.")] = None,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Stay attached; print instead of logging.")
    ] = False,
    root: Annotated[
        str | None, typer.Option(help="The work tree (default: the current folder).")
    ] = None,
) -> None:
    """What the hooks run: one incremental index (serialised by a lock in the git directory)."""
    from .hooks import run

    raise typer.Exit(run(hook, args or [], detach=not foreground, root=root))


def _one_line_summaries(*apps: typer.Typer) -> None:
    """Each command's summary in the --help listing: its docstring's first paragraph as one
    line. Typer keeps a docstring's line breaks there, and the listing wraps them again, so
    a summary came out ragged at any terminal width."""
    for each in apps:
        for info in each.registered_commands:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            if info.short_help is None and doc:
                info.short_help = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


_one_line_summaries(app, tenant_app, token_app, hook_app)


def _flags_without_a_value() -> None:
    """A boolean flag's row in --help shows no type: typer 0.29's panel put `<bool>` in the
    column of the value an option takes (`--wait  <bool>`), as if one wrote `--wait true`.
    Its plain help (rich not installed) already leaves flags without one."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_a_value()


def main() -> None:
    from codesift_db.embed.embedders import EmbedderUnavailable

    try:
        try:
            app()
        except psycopg.Error as exc:  # one no command expected (a timeout, a lost connection)
            raise from_database(exc) from None
    except (CodesiftError, EmbedderUnavailable) as exc:
        err.print(Text("error:", style="red"), plain(exc), highlight=False)
        sys.exit(1)
    except UnicodeEncodeError as exc:
        if "surrogates" not in exc.reason:
            raise
        # bytes the locale could not decode (an argument, standard input) reached the
        # database, which stores UTF-8 text only
        shown = exc.object[max(exc.start - 30, 0) : exc.end + 30]
        shown = shown.encode("utf-8", "backslashreplace").decode()
        err.print(Text("error:", style="red"), plain(f"'{shown}' is not UTF-8 text"))
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
