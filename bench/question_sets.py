"""What the approximation and latency benches share (bm25_versions_bench.py,
hnsw_recall_bench.py, bm25_agreement_bench.py, question_latency_bench.py,
vector_storage_bench.py): the questions they ask (a short set as it is, a long one cut to
its first words), their command line, and the first column of a query's rows."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def first_words(text: str, n: int) -> str:
    return " ".join(text.split(" ")[:n])


def short_and_long(
    short: Path, long: Path, words: int, long_n: int | None = None
) -> list[tuple[str, str]]:
    """("short", text) for each question of `short`, then ("long", its first `words` words)
    for the first `long_n` (default all) of `long` (query sets in express.json's shape)."""
    out = [("short", q["query"]) for q in json.loads(short.read_text())["queries"]]
    longs = json.loads(long.read_text())["queries"][:long_n]
    return out + [("long", first_words(q["query"], words)) for q in longs]


def questions(short_set: str, long_set: str, words: int, long_n: int) -> tuple[list, list]:
    """The short questions (one set's texts as they are) and the long ones (another's texts
    of `words` words or more, cut to that many; the first long_n), as two lists: unlike
    short_and_long, a long question shorter than `words` is left out."""
    short = [q["query"] for q in json.loads(Path(short_set).read_text())["queries"]]
    long = [
        first_words(q["query"], words)
        for q in json.loads(Path(long_set).read_text())["queries"]
        if len(q["query"].split(" ")) >= words
    ][:long_n]
    return short, long


def parser(doc: str) -> argparse.ArgumentParser:
    """A bench's parser: its docstring's first paragraph as the description, the rest as
    the epilog."""
    return argparse.ArgumentParser(
        description=doc.split("\n\n")[0],
        epilog=doc.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_question_options(ap: argparse.ArgumentParser) -> None:
    """--short, --long and --words: the sets short_and_long reads."""
    ap.add_argument("--short", type=Path, default=ROOT / "bench/queries/express.json")
    ap.add_argument("--long", type=Path, default=ROOT / "bench/queries/swebench-dev.json")
    ap.add_argument("--words", type=int, default=300, help="a long question's words")


def column(conn, sql: str, args) -> list:
    """The first column of the rows of `sql`."""
    return [r[0] for r in conn.execute(sql, args).fetchall()]


def add_repos_option(ap: argparse.ArgumentParser) -> None:
    """--repos: the repositories of each tenant a bench asks (repositories() reads it)."""
    ap.add_argument(
        "--repos",
        help="ask only these repositories of each tenant (comma-separated names; default all, "
        "in turn): a repository that is a small share of its tenant reads apart",
    )


def repositories(conn, tenant_id: int, tenant_name: str, names: str | None) -> list[int]:
    """The ids of the tenant's repositories named in `names` (--repos; all when None), in
    order; none found is an error."""
    wanted = [n.strip() for n in names.split(",") if n.strip()] if names else None
    ids = column(
        conn,
        "select id from codesift.repositories where tenant_id = %(t)s"
        " and (%(names)s::text[] is null or name = any(%(names)s)) order by id",
        {"t": tenant_id, "names": wanted},
    )
    if not ids:
        raise SystemExit(f"tenant {tenant_name!r} has no repository named {wanted}")
    return ids
