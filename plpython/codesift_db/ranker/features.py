"""A candidate's features for the learned ranker: what the pipeline worked out for it by
the end of stage 1 (each leg's rank and score, the fused score and the file consensus,
mentions, recency, the path prior, kind and size), its rank inside its file and its file's
rank, and whether the question names it. The same function reads the stage's items
(pipeline/rerank.py, the last stage before the graph) and hybrid_search's rows (the
loader's training: loader/codesift/learn.py), so a model sees at training time exactly
what it sees when it ranks. (The graph, stand-ins and callees come after the stage: their
items are scored from the ranked ones.)

Every feature belongs to a group (GROUPS) that training can leave out (the ablations)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..file_kinds import file_kind as path_kind
from ..identifiers import split_identifier

# (name, group), in the order of a feature vector
FEATURES: tuple[tuple[str, str], ...] = (
    ("lexical_present", "lexical"),
    ("lexical_inv_rank", "lexical"),
    ("lexical_log_score", "lexical"),
    ("dense_present", "dense"),
    ("dense_inv_rank", "dense"),
    ("dense_similarity", "dense"),
    ("base_log_score", "fusion"),
    ("base_inv_rank", "fusion"),
    ("rrf", "fusion"),
    ("file_rrf", "fusion"),
    ("inv_rank_in_file", "in_file"),
    ("inv_file_rank", "in_file"),
    ("best_in_file", "in_file"),
    ("log_file_candidates", "in_file"),
    ("mention_present", "mention"),
    ("mention_inv_rank", "mention"),
    ("name_in_question", "mention"),
    ("qualified_in_question", "mention"),
    ("name_parts_in_question", "mention"),
    ("path_stem_in_question", "mention"),
    ("recency", "recency"),
    ("log_age_days", "recency"),
    ("is_file", "kind"),
    ("is_function", "kind"),
    ("is_method", "kind"),
    ("is_class", "kind"),
    ("log_lines", "size"),
    ("path_prior", "prior"),
    ("is_test", "prior"),
    ("is_doc", "prior"),
)
NAMES = tuple(n for n, _ in FEATURES)
GROUPS = tuple(dict.fromkeys(g for _, g in FEATURES))
QUESTION_CHARS = 20_000  # of the question, read for the names it holds
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
DOC_KINDS = frozenset(
    {"doc", "docs", "documentation", "translation", "changelog", "example", "template"}
)


class Question:
    """The words of a question, read once per call: whole identifiers (lower case),
    their parts, and dotted names."""

    def __init__(self, text: str):
        text = (text or "")[:QUESTION_CHARS]
        words = _WORD.findall(text)
        self.words = {w.lower() for w in words}
        self.parts = {p for w in words for p in split_identifier(w)}
        self.dotted = {w.lower() for w in _PATH_WORD.findall(text) if "." in w}
        self.lower = text.lower()


def _inv(rank) -> float:
    return 1.0 / rank if rank else 0.0


def _or(value, default: float) -> float:
    return float(value) if value is not None else default


def _log1p(value) -> float:
    return math.log1p(max(0.0, float(value))) if value is not None else 0.0


def _name_features(q: Question, symbol: str | None, path: str) -> tuple[float, float, float, float]:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
    path_hit = float(bool(stem) and len(stem) > 2 and (stem in q.words or path.lower() in q.lower))
    if not symbol:
        return 0.0, 0.0, 0.0, path_hit
    last = symbol.rsplit(".", 1)[-1]
    name_hit = float(len(last) > 2 and last.lower() in q.words)
    qualified_hit = float("." in symbol and symbol.lower() in q.dotted)
    parts = split_identifier(last)
    share = sum(p in q.parts for p in parts) / len(parts) if parts else 0.0
    return name_hit, qualified_hit, share, path_hit


def vectors(question: str, views: Sequence[dict]) -> list[list[float]]:
    """One feature vector (NAMES' order) per view, a dict with explain_context's `why`
    keys and the row's path, symbol, kind, start_line, end_line and score (view() makes
    one from a pipeline item). The in-file and file ranks are over `views` by score."""
    q = Question(question)
    order = sorted(range(len(views)), key=lambda i: -(views[i].get("score") or 0.0))
    base_rank = {i: r for r, i in enumerate(order, 1)}
    in_file: dict[str, int] = {}
    rank_in_file: dict[int, int] = {}
    file_rank: dict[str, int] = {}
    for i in order:
        path = views[i]["path"]
        in_file[path] = in_file.get(path, 0) + 1
        rank_in_file[i] = in_file[path]
        file_rank.setdefault(path, len(file_rank) + 1)
    out = []
    for i, v in enumerate(views):
        path, kind = v["path"], v.get("kind") or ""
        name_hit, qualified_hit, share, path_hit = _name_features(q, v.get("symbol"), path)
        fk = v.get("file_kind") or path_kind(path)
        distance = v.get("dense_distance")
        lines = max(1, (v.get("end_line") or 1) - (v.get("start_line") or 1) + 1)
        out.append(
            [
                float(v.get("lexical_rank") is not None),
                _inv(v.get("lexical_rank")),
                _log1p(v.get("lexical_score")),
                float(v.get("dense_rank") is not None),
                _inv(v.get("dense_rank")),
                1.0 - float(distance) if distance is not None else 0.0,
                math.log(max(float(v.get("score") or 0.0), 1e-9)),
                _inv(base_rank[i]),
                60.0 * float(v.get("rrf") or 0.0),
                60.0 * float(v.get("file_rrf") or 0.0),
                _inv(rank_in_file[i]),
                _inv(file_rank[path]),
                float(rank_in_file[i] == 1),
                _log1p(in_file[path]),
                float(v.get("mention_rank") is not None),
                _inv(v.get("mention_rank")),
                name_hit,
                qualified_hit,
                share,
                path_hit,
                _or(v.get("recency"), 1.0),
                _log1p(v.get("age_days")),
                float(kind == "file"),
                float(kind == "function"),
                float(kind == "method"),
                float(kind in ("class", "struct", "interface", "type", "module")),
                math.log(lines),
                _or(v.get("path_prior"), 1.0),
                float(fk == "test"),
                float(fk in DOC_KINDS),
            ]
        )
    return out


# the pipeline item's keys under the names hybrid_search's `why` gives them
_RENAMED = {"prior": "path_prior"}
_KEYS = (
    "path", "symbol", "kind", "start_line", "end_line", "score", "lexical_rank",
    "lexical_score", "dense_rank", "dense_distance", "rrf", "file_rrf", "recency",
    "age_days", "file_kind", "mention_rank",
)  # fmt: skip


def view(item: dict) -> dict:
    """A pipeline item as vectors() reads it (explain_context's names)."""
    v = {k: item.get(k) for k in _KEYS}
    for key, name in _RENAMED.items():
        v[name] = item.get(key)
    return v
