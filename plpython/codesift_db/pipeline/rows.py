"""The row shapes: pack_context's packed items, explain_context's candidates and
hybrid_search's stage-1 hits, each with `why` (sql/idempotent/006-context.sql calls these);
pack_context_flat's rows are pack_context's with `why` spread into typed columns (BI tools).
pack_context and explain_context rows end with the blob's `language` and the item's
`citation` ('repository:path:start-end', citations.citation), after every older column."""

import json

from ..citations import citation
from ..errcodes import NULL_VALUE_NOT_ALLOWED
from .params import MAX_SEARCH_K, Params, fail
from .run import hybrid, order, prepare, report_times, run
from .timing import StageTimes


def why(item: dict, degraded: list[dict]) -> dict:
    """Why a candidate was chosen: each leg's rank and score, RRF, recency, prior, graph,
    whether it is where a traceback failed (`failing_frame`: the file or the definition);
    why the whole answer is degraded (`degraded`, the same on every row of a call:
    degraded.py's reasons, [] when none); for an outline item, why it was packed and what
    it lists (`outline`; `outlined`: each entry's name, kind and lines; null on other
    items)."""
    return {
        "lexical_rank": item.get("lexical_rank"),
        "lexical_score": item.get("lexical_score"),
        "dense_rank": item.get("dense_rank"),
        "dense_distance": item.get("dense_distance"),
        "rrf": item.get("rrf"),
        "file_rrf": item.get("file_rrf"),
        "recency": item.get("recency"),
        "age_days": item.get("age_days"),
        "path_prior": item.get("prior"),
        "file_kind": item.get("file_kind"),
        "file_support": item.get("file_support"),
        "mention_rank": item.get("mention_rank"),
        "graph_hop": item.get("graph_hop"),
        "graph_path": item.get("graph_path"),
        "graph_edges": item.get("graph_edges"),
        "stands_in_for_file": item.get("via_file"),
        "called_by": item.get("called_by"),
        "degraded": degraded,
        # an outline item (pipeline/outlines.py): why it was packed, what it lists
        "outline": item.get("outline"),
        "outlined": item.get("outlined"),
        # where a traceback failed (pipeline/mentions.py failing_file, failing_definition)
        "failing_frame": item.get("failing_rank") is not None,
    }


def _where(item: dict) -> dict:
    """The last columns of pack_context and explain_context rows."""
    return {
        "language": item.get("language"),
        "citation": citation(
            item["repository"], item["path"], item["start_line"], item["end_line"]
        ),
    }


def _packed(plpy, p: Params, notes: list[dict]) -> list[tuple[dict, dict]]:
    """(row without `why`, the packed item) for each packed item, in rank order."""
    rows: list[tuple[dict, dict]] = []
    for item in run(plpy, p, notes=notes, packed_only=True):
        if not item.get("packed"):
            continue
        row = {
            "rank": len(rows) + 1,
            "repository": item["repository"],
            "path": item["path"],
            "start_line": item["start_line"],
            "end_line": item["end_line"],
            "symbol": item["symbol"],
            "kind": item["kind"],
            "blob_sha": item["blob_sha"],
            "ref": item["ref"],
            "indexed_commit": item["indexed_commit"],
            "score": item["score"],
            "tokens": item["tokens"],
            "truncated": item["truncated"],
            "text": item["packed_text"],
        }
        rows.append((row, item))
    return rows


def pack_rows(plpy, p: Params) -> list[dict]:
    notes: list[dict] = []
    packed = _packed(plpy, p, notes)
    return [{**row, "why": json.dumps(why(item, notes)), **_where(item)} for row, item in packed]


def degraded_text(notes: list[dict]) -> str | None:
    """pack_context_flat's `degraded`: 'code: detail' each, '; ' between; null when none."""
    return "; ".join(f"{n['code']}: {n['detail']}" for n in notes) or None


def pack_flat_rows(plpy, p: Params) -> list[dict]:
    """pack_context's rows with each key of `why` a column of its own instead (same names;
    `degraded` as text, degraded_text; `outlined` as jsonb)."""
    notes: list[dict] = []
    packed = _packed(plpy, p, notes)
    flat = degraded_text(notes)
    return [
        {
            **row,
            **_where(item),
            **why(item, notes),
            "degraded": flat,
            "outlined": _json(item.get("outlined")),
        }
        for row, item in packed
    ]


def _json(value) -> str | None:
    return None if value is None else json.dumps(value)


def explain_rows(plpy, p: Params) -> list[dict]:
    """Every candidate, `why` carrying the call's milliseconds per stage (`stage_ms`)."""
    times = StageTimes()
    notes: list[dict] = []
    items = run(plpy, p, times, notes)
    return [
        {
            "candidate": item["candidate_rank"],
            "repository": item["repository"],
            "ref": item["ref"],
            "path": item["path"],
            "start_line": item["start_line"],
            "end_line": item["end_line"],
            "symbol": item["symbol"],
            "kind": item["kind"],
            "lexical_rank": item.get("lexical_rank"),
            "dense_rank": item.get("dense_rank"),
            "rrf": item.get("rrf"),
            "recency": item.get("recency"),
            "graph_hop": item.get("graph_hop"),
            "score": item["score"],
            "decision": item.get("decision"),
            "pruned_by": item.get("pruned_by"),
            "packed": item.get("packed", False),
            "tokens": item.get("tokens", 0),
            "why": json.dumps({**why(item, notes), "stage_ms": times.ms}),
            **_where(item),
        }
        for item in items
    ]


def search_rows(plpy, p: Params, k: int) -> list[dict]:
    """Stage 1 alone (hybrid_search): fused, recency-decayed candidates, best first."""
    if k is None:
        fail(
            plpy, "k must not be null", hint="omit it for 20 rows", sqlstate=NULL_VALUE_NOT_ALLOWED
        )
    if not 1 <= k <= MAX_SEARCH_K:
        fail(plpy, f"k must be between 1 and {MAX_SEARCH_K:,} (got {k})")
    req = prepare(plpy, p, packs=False)
    items = hybrid(plpy, req)
    report_times(plpy, req)
    by_id = {r["id"]: r for r in req.repos}
    ordered = sorted(items.values(), key=order)
    ordered = [i for i in ordered if i["score"] > 0][:k]
    return [
        {
            "rank": n,
            "repository": by_id[i["repository_id"]]["name"],
            "path": i["path"],
            "start_line": i["start_line"],
            "end_line": i["end_line"],
            "symbol": i["symbol"],
            "kind": i["kind"],
            "blob_sha": i["blob_sha"],
            "ref": by_id[i["repository_id"]]["ref"],
            "indexed_commit": by_id[i["repository_id"]]["indexed_commit"],
            "score": i["score"],
            "why": json.dumps(why(i, req.degraded)),
        }
        for n, i in enumerate(ordered, 1)
    ]
