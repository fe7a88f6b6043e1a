"""Training pairs for the learned ranker, mined from an indexed ref's own history (issue 33).

Each commit before the ref's indexed commit (an ancestor of it, committed no later, not a
merge, not the indexed commit itself) is a pair: its message (subject and body, trailers
dropped) is the question, and the definitions it changed are the gold. A definition
changed is a symbol of the file as it was before the commit (the parent's version: what a
question about that code sees, as a bug report sees the code before its fix) whose lines a
hunk of the diff removes or changes, or inside which it adds lines; only code files count
(a test or a document the commit also touched is not what its message asks for), and the
innermost symbols only (a method, not also its class). A commit changing more than
MAX_FILES_PER_COMMIT files is a sweep, and relates nothing: it is kept with no gold.

Mining is incremental (a commit already in codesift.history_pairs for the ref is not read
again) and bounded: the newest `limit` commits (at most MAX_LIMIT) are read, and the ref
keeps the rows of those commits only (its newest, in git's order)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from codesift_db.file_kinds import file_kind
from codesift_db.ingest.symbols import extract_symbols

from . import db, git
from .errors import CodesiftError

DEFAULT_LIMIT = 2_000
MAX_LIMIT = 20_000
MAX_FILES_PER_COMMIT = 20
MAX_FILE_BYTES = 1 << 20  # a larger version of a file is not read for its symbols
MAX_QUESTION_CHARS = 4_000
MAX_GOLD = 50  # definitions kept per commit
_TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|acked-by|cc|change-id):", re.I)
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


@dataclass
class MineSummary:
    commits_read: int = 0  # new commits mined now
    already: int = 0  # commits of the window mined before
    with_gold: int = 0  # of the new ones, those with changed definitions
    kept: int = 0  # rows the ref holds after trimming to the limit


@dataclass(frozen=True)
class Commit:
    sha: str
    when: datetime
    message: str


def question_of(message: str) -> str:
    """The commit message as a question: trailers dropped, blank runs closed, trimmed."""
    lines = [ln.rstrip() for ln in message.strip().splitlines() if not _TRAILER.match(ln.strip())]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return text[:MAX_QUESTION_CHARS]


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise CodesiftError(f"--commits is a number of commits from 1 to {MAX_LIMIT:,}")
    return limit


def commits_before(root: Path, commit: str, limit: int) -> list[Commit]:
    """The newest `limit` commits before `commit`: its ancestors (not itself), committed no
    later than it, no merges; newest first."""
    when = int(git._git(root, "log", "-1", "--format=%ct", commit).decode().strip())
    out = git._git(
        root,
        "log",
        "--no-merges",
        f"--max-count={limit + 1}",
        f"--before={when}",
        "--format=%x1e%H%x1f%ct%x1f%B",
        "--no-show-signature",
        commit,
    )
    found = []
    for record in out.decode("utf-8", errors="replace").split("\x1e")[1:]:
        sha, ct, message = record.split("\x1f", 2)
        if sha != commit and int(ct) <= when:
            found.append(Commit(sha, datetime.fromtimestamp(int(ct), tz=UTC), message))
    return found[:limit]


def old_ranges(diff: bytes) -> dict[str, list[tuple[int, int]]]:
    """Per path changed (the parent's name), the old side's changed lines of each hunk of a
    -U0 diff: (start, end) inclusive, or (line, line - 1) for lines added after `line`."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    path = None
    for line in diff.split(b"\n"):
        if line.startswith(b"--- "):
            name = line[4:]
            path = git.decode_name(name[2:]) if name.startswith(b"a/") else None
        elif line.startswith(b"@@") and path is not None:
            m = _HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                if count == 0:
                    ranges.setdefault(path, []).append((start + 1, start))
                else:
                    ranges.setdefault(path, []).append((start, start + count - 1))
    return ranges


def _touches(symbol: dict, ranges: list[tuple[int, int]]) -> bool:
    s, e = symbol["start_line"], symbol["end_line"]
    for a, b in ranges:
        if b < a:  # lines added between b and a: inside the symbol, not at its edge
            if s <= b and a <= e:
                return True
        elif a <= e and s <= b:
            return True
    return False


def changed_definitions(path: str, text: str, ranges: list[tuple[int, int]]) -> list[dict]:
    """The innermost symbols of the file's old text that the ranges touch."""
    touched = [s for s in extract_symbols(path, text) if _touches(s, ranges)]
    inner = [
        s
        for s in touched
        if not any(
            o is not s
            and s["start_line"] <= o["start_line"]
            and o["end_line"] <= s["end_line"]
            and (o["start_line"], o["end_line"]) != (s["start_line"], s["end_line"])
            for o in touched
        )
    ]
    seen, gold = set(), []
    for s in inner:
        key = (s["qualified_name"], s["start_line"])
        if key not in seen:
            seen.add(key)
            gold.append(
                {
                    "path": path,
                    "symbol": s["qualified_name"],
                    "kind": s["kind"],
                    "start_line": s["start_line"],
                    "end_line": s["end_line"],
                }
            )
    return gold


def _old_texts(root: Path, sha: str, paths: list[str]) -> dict[str, str]:
    """The parent's version of each path (those it has, up to MAX_FILE_BYTES), as text."""
    if not paths:
        return {}
    request = b"".join(b"%s^:%s\n" % (sha.encode(), git.encode_name(p)) for p in paths)
    out = git._git(root, "cat-file", "--batch", input=request)
    texts, pos = {}, 0
    for path in paths:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        data = out[pos : pos + size]
        pos += size + 1
        if size <= MAX_FILE_BYTES and b"\0" not in data[:8000]:
            texts[path] = data.decode("utf-8", errors="replace")
    return texts


def gold_of(root: Path, sha: str) -> list[dict]:
    """The definitions commit `sha` changed (module docstring); [] for a root commit."""
    try:
        diff = git._git(
            root, "diff", "--no-renames", "--no-color", "--no-ext-diff", "-U0", f"{sha}^", sha
        )
    except git.IndexingError:
        return []  # a root commit: no parent to compare with
    ranges = old_ranges(diff)
    if len(ranges) > MAX_FILES_PER_COMMIT:
        return []
    code = sorted(p for p in ranges if file_kind(p) == "code")
    gold: list[dict] = []
    for path, text in _old_texts(root, sha, code).items():
        gold.extend(changed_definitions(path, text, ranges[path]))
    return gold[:MAX_GOLD]


INSERT = """
insert into codesift.history_pairs
    (tenant_id, repository_id, commit_sha, committed_at, question, gold)
select %(tenant)s, %(repo)s, c, w, q, g::jsonb
from unnest(%(shas)s::text[], %(whens)s::timestamptz[], %(questions)s::text[], %(golds)s::text[])
    as x (c, w, q, g)
on conflict (tenant_id, repository_id, commit_sha) do nothing
"""
TRIM = """
delete from codesift.history_pairs
where tenant_id = %(tenant)s and repository_id = %(repo)s and not (commit_sha = any(%(window)s))
"""
BATCH = 200  # commits written per transaction


def mine(
    conn: psycopg.Connection,
    root: Path,
    tenant_id: int,
    repo_id: int,
    commit: str,
    limit: int = DEFAULT_LIMIT,
) -> MineSummary:
    """Mine the pairs of the newest `limit` commits before `commit` that the ref does not
    hold yet, store them, and drop the ref's rows of commits outside that window. The
    session acts as the tenant already."""
    limit = check_limit(limit)
    window = commits_before(root, commit, limit)
    have = {
        r[0]
        for r in conn.execute(
            "select commit_sha from codesift.history_pairs"
            " where tenant_id = %s and repository_id = %s and commit_sha = any(%s)",
            (tenant_id, repo_id, [c.sha for c in window]),
        )
    }
    summary = MineSummary(already=len(have))
    new = [c for c in window if c.sha not in have]
    for start in range(0, len(new), BATCH):
        rows = []
        for c in new[start : start + BATCH]:
            gold = gold_of(root, c.sha)
            summary.with_gold += bool(gold)
            rows.append((c.sha, c.when, question_of(c.message), json.dumps(gold)))
        with db.tenant_transaction(conn):
            conn.execute(
                INSERT,
                {
                    "tenant": tenant_id,
                    "repo": repo_id,
                    "shas": [r[0] for r in rows],
                    "whens": [r[1] for r in rows],
                    "questions": [r[2] for r in rows],
                    "golds": [r[3] for r in rows],
                },
            )
        summary.commits_read += len(rows)
    with db.tenant_transaction(conn):
        conn.execute(
            TRIM, {"tenant": tenant_id, "repo": repo_id, "window": [c.sha for c in window]}
        )
        row = conn.execute(
            "select count(*) from codesift.history_pairs"
            " where tenant_id = %s and repository_id = %s",
            (tenant_id, repo_id),
        ).fetchone()
        summary.kept = row[0] if row else 0
    return summary
