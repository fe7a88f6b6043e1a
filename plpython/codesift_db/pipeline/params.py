"""The caller's arguments and their validation: a bad one raises with an errcode and a
message that says what to do."""

import math
from dataclasses import dataclass
from typing import NoReturn

from ..errcodes import INVALID_PARAMETER_VALUE, NULL_VALUE_NOT_ALLOWED

MAX_BUDGET = 200_000
# Bounds on what a caller may ask (each also checked by the SQL function that does the work):
# a question is text a person or an agent wrote, a 300-word bug report is ~2,000 characters
MAX_QUERY_CHARS = 200_000
MAX_REF_CHARS = 512  # repositories.ref
MAX_KINDS = 64  # symbol kinds in a filter (codesift._leg_bounds)
MAX_SEARCH_K = 1000  # hybrid_search's k (codesift._leg_bounds' k at most)
SEARCH_KNOBS = ("recency_lambda", "lexical_weight", "dense_weight", "ranking")
PACK_KNOBS = ("token_budget", "graph_depth", "hop_decay", "jaccard_threshold")
FLOAT_KNOBS = ("hop_decay", "jaccard_threshold", "recency_lambda", "lexical_weight", "dense_weight")


@dataclass(frozen=True, kw_only=True)
class Params:
    """The caller's arguments as given (the SQL functions pass them by name). The packing
    knobs are None for hybrid_search, which stops before the graph and the pack."""

    query: str
    repo: str | None
    path_prefix: str | None
    language: str | None
    kinds: list | None
    query_embedding: str | None
    recency_lambda: float
    lexical_weight: float
    dense_weight: float
    ranking: str
    ref: str | None = None  # the repository's default ref when None
    token_budget: int | None = None
    graph_depth: int | None = None
    hop_decay: float | None = None
    jaccard_threshold: float | None = None
    fanout: int = 8
    k1: float = 1.2
    b: float = 0.75


def fail(
    plpy, message: str, hint: str | None = None, sqlstate: str = INVALID_PARAMETER_VALUE
) -> NoReturn:
    """Raise (plpy.error) with an errcode and, when there is one, a hint."""
    # plpy.error prints hint=None as a literal 'HINT:  None': pass it only when there is one
    if hint is None:
        plpy.error(message, sqlstate=sqlstate)
    plpy.error(message, hint=hint, sqlstate=sqlstate)
    raise AssertionError("plpy.error returned")  # it raises: for the type checker


def check_budget(plpy, token_budget, default: int) -> None:
    """A lookup's token_budget: given, and from 1 to MAX_BUDGET; the hints name `default`."""
    hint = f"omit it to use its default ({default})"
    if token_budget is None:
        fail(plpy, "token_budget must not be null", hint=hint, sqlstate=NULL_VALUE_NOT_ALLOWED)
    if not 1 <= token_budget <= MAX_BUDGET:
        fail(
            plpy,
            f"token_budget must be between 1 and {MAX_BUDGET:,} (got {token_budget})",
            hint=hint,
        )


def validate(plpy, p: Params, packs: bool) -> None:
    """Bad arguments raise with an errcode and a message that says what to do; the packing
    knobs are checked when the call packs."""
    if p.query is None or not str(p.query).strip():
        fail(
            plpy,
            "query must be a non-empty question or identifier",
            hint="pass the text to search for, e.g. 'where are redirects followed?'",
        )
    if len(p.query) > MAX_QUERY_CHARS:
        fail(
            plpy,
            f"query is {len(p.query):,} characters; at most {MAX_QUERY_CHARS:,}",
            hint="pass the question, or the part of a long report or log that matters",
        )
    knobs = (PACK_KNOBS if packs else ()) + SEARCH_KNOBS
    for name in knobs:
        if getattr(p, name) is None:
            fail(plpy, f"{name} must not be null", hint="omit it to use its default")
    for name in FLOAT_KNOBS:
        # NaN passes every comparison below and Infinity some; both fail later as JSON
        if name in knobs and not math.isfinite(getattr(p, name)):
            fail(plpy, f"{name} must be a finite number (got {getattr(p, name)})")
    if p.ref is not None and len(p.ref) > MAX_REF_CHARS:
        fail(plpy, f"ref is {len(p.ref):,} characters; at most {MAX_REF_CHARS}")
    if p.kinds is not None and len(p.kinds) > MAX_KINDS:
        fail(plpy, f"kinds has {len(p.kinds)} entries; at most {MAX_KINDS}")
    if packs:
        _validate_packing(plpy, p)
    if p.recency_lambda < 0:
        fail(plpy, "recency_lambda must be >= 0 (0 disables the recency decay)")
    if p.lexical_weight < 0 or p.dense_weight < 0 or p.lexical_weight + p.dense_weight == 0:
        fail(plpy, "lexical_weight and dense_weight must be >= 0 and not both 0")
    if p.ranking not in ("bm25", "ts_rank_cd"):
        fail(plpy, f"ranking must be 'bm25' or 'ts_rank_cd' (got '{p.ranking}')")


def _validate_packing(plpy, p: Params) -> None:
    assert p.token_budget is not None and p.graph_depth is not None  # checked for null
    assert p.hop_decay is not None and p.jaccard_threshold is not None
    if not 1 <= p.token_budget <= MAX_BUDGET:
        fail(plpy, f"token_budget must be between 1 and {MAX_BUDGET:,} (got {p.token_budget})")
    if not 0 <= p.graph_depth <= 5:
        fail(plpy, f"graph_depth must be between 0 and 5 (got {p.graph_depth})")
    if not 0 < p.hop_decay <= 1:
        fail(plpy, f"hop_decay must be in (0, 1] (got {p.hop_decay})")
    if not 0 <= p.jaccard_threshold <= 1:
        fail(plpy, f"jaccard_threshold must be in [0, 1] (got {p.jaccard_threshold})")


def check_max_rows(plpy, max_rows, limit: int, narrow: str) -> None:
    """A lookup's max_rows: not null, 1..limit; `narrow` says how else to cut the answer."""
    if max_rows is None:
        fail(
            plpy,
            "max_rows must not be null",
            hint="omit max_rows to use its default",
            sqlstate=NULL_VALUE_NOT_ALLOWED,
        )
    if not 1 <= max_rows <= limit:
        fail(
            plpy,
            f"max_rows must be between 1 and {limit:,} (got {max_rows})",
            hint=f"omit max_rows to use its default, or {narrow}",
        )


def check_text(
    plpy,
    label: str,
    value,
    limit: int,
    *,
    required: bool = False,
    null_state: str = INVALID_PARAMETER_VALUE,
    controls: bool = False,
) -> None:
    """A text argument of a lookup: null (when required, raising with `null_state`), empty,
    over `limit` characters, or (with `controls`) holding control characters raise."""
    if value is None:
        if required:
            fail(
                plpy,
                f"{label} must not be null",
                hint=f"pass the {label} to look up",
                sqlstate=null_state,
            )
        return
    if required and not value.strip():
        fail(plpy, f"{label} must not be empty", hint=f"pass the {label} to look up")
    if len(value) > limit:
        fail(
            plpy,
            f"{label} is {len(value):,} characters; at most {limit:,}",
            hint=f"pass a shorter {label}",
        )
    if controls and any(ord(c) < 32 for c in value):
        fail(
            plpy,
            f"{label} holds control characters",
            hint=f"pass the {label} as the code writes it",
        )
