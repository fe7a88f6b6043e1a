"""`codesift learn`: train an indexed ref's learned ranker on its own history (issue 33).

1. Mine the training pairs (history.py): the newest commits before the ref's indexed
   commit, each message a question and the definitions it changed its gold.
2. Ask each question of the newest `questions` pairs with gold, against the indexed ref,
   with the ranker off (hybrid_search: stage 1's candidates with the features the pipeline
   computed, as the stage sees them), and label the candidates that are gold: a definition
   the commit changed (or one enclosing it) by path and qualified name.
3. Fit a pairwise linear model (codesift_db/ranker/train.py) on pairs drawn inside a
   file, and store it for the ref (codesift.ranker_models): from then on pack_context
   orders the candidates of each of that ref's files by it (codesift_db/ranker/order.py).

Leakage: only commits before the indexed commit (by ancestry and committer date) are
mined, so a model never learns from a change the ref does not already hold. The candidates
of a past question are generated against the indexed ref (not the commit's own tree: that
would mean indexing every commit); the ref holds the change the question asked for, which
makes training easier than use, never a look into the ref's future."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psycopg
from codesift_db.pipeline import features as pipeline_features
from codesift_db.ranker import features, order, train
from codesift_db.ranker.model import Model

from . import db, history
from .errors import CodesiftError
from .tenants import use_tenant

DEFAULT_QUESTIONS = 300
MAX_QUESTIONS = 5_000
MAX_CANDIDATES = 200  # of each question's candidates, the best by the base order (rerank.py)
# the engine the model sees: the defaults with the ranker itself off
RANKER_OFF = ",".join(sorted(pipeline_features.DEFAULT_OFF | {"ranker"}))
CANDIDATES = """
select path, start_line, end_line, symbol, kind, score, why
from codesift.hybrid_search(%(q)s, repo => %(repo)s, ref => %(ref)s, k => %(k)s,
    dense_weight => %(dw)s)
order by rank
"""


@dataclass
class Example:
    """One question's candidates (features.vectors' views, in base order) and labels."""

    commit: str
    committed_at: str
    question: str
    views: list[dict]
    labels: list[int]


@dataclass
class LearnSummary:
    mined: history.MineSummary
    questions: int = 0  # asked
    examples: int = 0  # with a gold candidate and another
    candidates: int = 0
    ask_seconds: float = 0.0
    train_seconds: float = 0.0
    model_bytes: int = 0
    stored: bool = False
    skipped: list[str] = field(default_factory=list)  # why questions were not asked


def is_gold(view: dict, gold: Sequence[dict]) -> bool:
    """A candidate is gold when it is a definition the commit changed or one enclosing it.
    A whole file never is: the model orders the candidates inside a file, where a gold
    whole file would always come first and teach nothing of the definitions."""
    for g in gold:
        if view["path"] != g["path"] or view.get("kind") == "file":
            continue
        symbol = view.get("symbol")
        if symbol and (symbol == g["symbol"] or g["symbol"].startswith(symbol + ".")):
            return True
    return False


def candidates(
    conn: psycopg.Connection, question: str, repo: str, ref: str, dense: bool = True
) -> list[dict]:
    """hybrid_search's candidates of the question (ranker off) as features' views; dense
    False: no query embedding (a ref without vectors, whose dense leg finds nothing)."""
    views = []
    params = {"q": question, "repo": repo, "ref": ref, "k": MAX_CANDIDATES, "dw": float(dense)}
    for path, start, end, symbol, kind, score, why in conn.execute(CANDIDATES, params):
        w = why if isinstance(why, dict) else json.loads(why)
        w.pop("degraded", None)
        w.pop("stage_ms", None)
        views.append(
            {
                **w,
                "path": path,
                "start_line": start,
                "end_line": end,
                "symbol": symbol,
                "kind": kind,
                "score": score,
            }
        )
    return views


def examples(
    conn: psycopg.Connection,
    repo: str,
    ref: str,
    pairs: Sequence[tuple],
    log=None,
    dense: bool = True,
) -> list[Example]:
    """Each pair (commit, committed_at, question, gold) asked and labelled; pairs whose
    question finds no gold candidate are dropped. The session acts as the tenant."""
    conn.execute("select set_config('codesift.retrieval_off', %s, false)", (RANKER_OFF,))
    found = []
    try:
        for n, (sha, when, question, gold) in enumerate(pairs, 1):
            try:
                views = candidates(conn, question, repo, ref, dense)
            except psycopg.Error as exc:
                if log:
                    log(f"{sha[:12]}: {exc.diag.message_primary}")
                continue
            labels = [int(is_gold(v, gold)) for v in views]
            if any(labels) and not all(labels):
                found.append(Example(sha, str(when), question, views, labels))
            if log and n % 50 == 0:
                log(f"asked {n}/{len(pairs)}")
    finally:
        conn.execute("select set_config('codesift.retrieval_off', '', false)")
    return found


def groups(exs: Sequence[Example]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The training groups: one per question and file (the model orders the candidates of
    a file: ranker/order.py), each with a gold candidate and another."""
    found = []
    for e in exs:
        x = np.array(features.vectors(e.question, e.views), dtype=float)
        y = np.array(e.labels)
        for members in order.by_file([v["path"] for v in e.views]):
            if 0 < y[members].sum() < len(members):
                found.append((x[members], y[members]))
    return found


PAIRS = """
select commit_sha, committed_at, question, gold from codesift.history_pairs
where tenant_id = %s and repository_id = %s and jsonb_array_length(gold) > 0
order by committed_at desc, commit_sha limit %s
"""
STORE = """
insert into codesift.ranker_models (tenant_id, repository_id, model, trained_through, pairs)
values (%s, %s, %s::jsonb, %s, %s)
on conflict (tenant_id, repository_id) do update
set model = excluded.model, trained_at = now(),
    trained_through = excluded.trained_through, pairs = excluded.pairs
"""


def repository_row(
    conn: psycopg.Connection, tenant_id: int, repo: str, ref: str | None
) -> tuple[int, str, str]:
    """(id, ref, indexed_commit) of the repository's ref (its default when None)."""
    row = conn.execute(
        "select id, ref, indexed_commit from codesift.repositories"
        " where tenant_id = %s and name = %s and (ref = %s or (%s::text is null and is_default))",
        (tenant_id, repo, ref, ref),
    ).fetchone()
    if row is None:
        raise CodesiftError(f"no indexed ref {ref or '(default)'} of repository '{repo}'")
    if not row[2] or len(row[2]) != 40:
        raise CodesiftError(f"'{repo}' at {row[1]} is not indexed at a commit yet")
    return row[0], row[1], row[2]


def store(
    conn: psycopg.Connection, tenant_id: int, repo_id: int, model: Model, commit: str, n: int
) -> int:
    """Store the ref's model; its size in bytes."""
    text = json.dumps(model.to_json())
    with db.tenant_transaction(conn):
        conn.execute(STORE, (tenant_id, repo_id, text, commit, n))
    return len(text)


def learn(
    conn: psycopg.Connection,
    path: str | Path,
    repo: str,
    tenant: str,
    ref: str | None = None,
    commits: int = history.DEFAULT_LIMIT,
    questions: int = DEFAULT_QUESTIONS,
    log=None,
) -> LearnSummary:
    """Mine, ask, train and store (the module docstring)."""
    if not 1 <= questions <= MAX_QUESTIONS:
        raise CodesiftError(f"--questions is a number from 1 to {MAX_QUESTIONS:,}")
    history.check_limit(commits)
    from . import git

    root = git.repo_root(path)
    tenant_id = use_tenant(conn, tenant)
    repo_id, ref_name, commit = repository_row(conn, tenant_id, repo, ref)
    try:
        git.resolve_commit(root, commit)
    except git.IndexingError:
        raise CodesiftError(
            f"{root} does not hold commit {commit[:12]}, the one '{repo}' at {ref_name} is "
            "indexed at: pass the repository's checkout"
        ) from None
    summary = LearnSummary(history.mine(conn, root, tenant_id, repo_id, commit, commits))
    pairs = conn.execute(PAIRS, (tenant_id, repo_id, questions)).fetchall()
    # a pair mined before the ref moved back stays out: ancestors of the commit only
    allowed = {c.sha for c in history.commits_before(root, commit, history.MAX_LIMIT)}
    pairs = [p for p in pairs if p[0] in allowed]
    summary.questions = len(pairs)
    started = time.perf_counter()
    exs = examples(conn, repo, ref_name, pairs, log)
    summary.ask_seconds = time.perf_counter() - started
    summary.examples = len(exs)
    summary.candidates = sum(len(e.views) for e in exs)
    started = time.perf_counter()
    model = train.fit(groups(exs))
    summary.train_seconds = time.perf_counter() - started
    if model is None:
        summary.skipped.append(
            "no question found a gold candidate beside another of its file: no model stored"
        )
        return summary
    summary.model_bytes = store(conn, tenant_id, repo_id, model, commit, len(exs))
    summary.stored = True
    return summary
