"""What the analyses of a repository's history share (cochange_reach.py,
similar_commits_reach.py): each question's history pairs (the commits before its ref and
the definitions each changed, as `codesift learn` mines them: loader/codesift/history.py),
whether the pack holds a gold definition, and the report of how many of the missed gold
definitions a way of choosing definitions from history reaches (prints only, never
asserts). A question's own fix is never mined: its ref is the fix's parent, and only that
ref's ancestors are read."""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "loader"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from codesift import history  # noqa: E402

from bench import eval as ev  # noqa: E402
from bench import eval_metrics as m  # noqa: E402
from bench import gold_queries  # noqa: E402

# explain_context's rows as both analyses read them
CANDIDATES = """
select path, symbol, kind, start_line, end_line, packed
from codesift.explain_context(%s, repo => %s, ref => %s, token_budget => %s)
order by candidate
"""
NOT_DEFINITIONS = ("file", "header", "outline")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """gold_queries' arguments (--budget included), --tenant and --commits."""
    gold_queries.add_arguments(ap)
    ap.add_argument("--tenant", help="tenant name pattern, as bench/eval.py takes it")
    ap.add_argument("--commits", type=int, default=history.DEFAULT_LIMIT)


def questions(args: argparse.Namespace) -> Iterator[tuple[ev.Query, list[tuple], list[tuple]]]:
    """Each question of args.queries with its history pairs (History.pairs) and
    explain_context's rows for it (CANDIDATES), as its tenant, at its ref."""
    past = History(args.commits)
    conn, queries = gold_queries.open_queries(args, args.tenant)
    with conn:
        for q in queries:
            gold_queries.act_as(conn, q)
            rows = conn.execute(
                CANDIDATES, (q.text, q.target.name, q.target.commit, args.budget)
            ).fetchall()
            yield q, past.pairs(q), rows


class History:
    """The history pairs of the questions' checkouts, each commit's gold mined once."""

    def __init__(self, commits: int):
        self.commits = commits
        self._gold: dict = {}  # (checkout, sha) -> {(path, qualified name)}

    def pairs(self, q: ev.Query) -> list[tuple[history.Commit, set]]:
        """The newest `commits` commits before the question's ref, each with the
        definitions it changed."""
        root, commit = Path(q.target.path), q.target.commit or "HEAD"
        found = []
        for c in history.commits_before(root, commit, self.commits):
            if (root, c.sha) not in self._gold:
                changed = history.gold_of(root, c.sha)
                self._gold[root, c.sha] = {(g["path"], g["symbol"]) for g in changed}
            found.append((c, self._gold[root, c.sha]))
        return found


def packed(rows: list[tuple], gold: m.GoldSymbol) -> bool:
    """Whether a packed row of explain_context (CANDIDATES) overlaps the gold's lines."""
    return any(
        r[5]
        and r[0] == gold.path
        and gold.start_line is not None
        and gold.end_line is not None
        and r[3] is not None
        and m.overlaps(r[3], r[4], gold.start_line, gold.end_line)
        for r in rows
    )


class Reach:
    """Gold definitions counted by (packed or missed, reached or not), and the definitions
    a way of choosing adds."""

    def __init__(self):
        self.fates: collections.Counter = collections.Counter()
        self.added = 0
        self.questions = 0

    def count(self, rows: list[tuple], golds: list[m.GoldSymbol], reached: set) -> None:
        self.questions += 1
        self.added += len(reached)
        for gold in golds:
            fate = "packed" if packed(rows, gold) else "missed"
            self.fates[fate, (gold.path, gold.name) in reached] += 1

    def print(self, header: str) -> None:
        total = sum(self.fates.values())
        missed = self.fates["missed", True] + self.fates["missed", False]
        print(f"{total} gold symbols of {self.questions} queries; {header}")
        print(f"  missed by the pack:           {missed}")
        print(f"    of them reached:            {self.fates['missed', True]}")
        print(f"  packed, also reached:         {self.fates['packed', True]}")
        print(f"  definitions added per query:  {self.added / max(self.questions, 1):.1f}")
