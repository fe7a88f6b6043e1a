"""The stages in order: hybrid (stage 1: validated, scoped, fused, hydrated, recency-decayed
candidates; all hybrid_search runs) and run (then the graph, the stand-ins, the callees,
pruning, packing and the outlines; what pack_context and explain_context run). Every stage
after fusion is `stage(plpy, req, items)` (request.py)."""

from collections.abc import Callable
from dataclasses import replace

from .. import packing, plans
from . import features, question
from .callees import add_callees
from .degraded import backlog_detail, note
from .fill import fill
from .fusion import consensus, fuse
from .graph import expand_graph
from .hydrate import hydrate
from .legs import dense_legs, lexical_legs
from .mentions import mention_legs
from .outlines import fill_with_outlines
from .params import Params, validate
from .query import query_vector, settings, terms
from .recency import apply_recency
from .request import Request
from .rerank import rerank
from .scope import resolve_scope
from .standins import EXPANDED, TOO_BIG, split_big_files
from .timing import StageTimes, stage_name

# after fusion, for every call (rerank: the learned ranker, on when the ref has a model)
SEARCH_STAGES = (hydrate, consensus, apply_recency, rerank)
# then, for a call that packs
PACK_STAGES = (expand_graph, split_big_files, add_callees)
LANGUAGE_TYPES = ["bigint", "text[]"]


def order(item: dict) -> tuple:
    """Best score first, then by path and line: the order of every row shape."""
    return (-item["score"], item["path"], item["start_line"])


def prepare(plpy, p: Params, packs: bool, notes: list[dict] | None = None) -> Request:
    """Validate the arguments, resolve the scope, read the question; why the answer is
    degraded goes to `notes` (a new list when not given), the Request's `degraded`."""
    times = StageTimes()
    notes = [] if notes is None else notes
    with times.stage("prepare"):
        validate(plpy, p, packs)
        tenant, repos = resolve_scope(plpy, p.repo, p.ref, notes)
        feats = features.read(plpy)
    with times.stage("question"):
        if feats.on("question"):
            reading = question.read(p.query)
            query_terms, weights = question.weighted_terms(reading)
        else:
            reading = question.Reading()
            query_terms, weights = terms(p.query), None
    return Request(
        p, packs, tenant, tuple(repos), feats, reading, query_terms, weights, times, notes
    )


def report_times(plpy, req: Request) -> None:
    """The NOTICE of each stage's milliseconds, when the session asked for it."""
    if req.features.timing:
        plpy.notice(req.times.line())


def hybrid(plpy, req: Request) -> dict:
    """Stage 1: fused, hydrated, recency-decayed candidates. The question is embedded beside
    the lexical legs and the mentions (query.start_embedding); the dense legs wait for it."""
    p, times = req.params, req.times
    vector, model = None, ""
    wait: Callable[[], str | None] = lambda: None  # noqa: E731
    if p.dense_weight or p.query_embedding is not None:  # a given embedding is checked
        with times.stage("embed"):
            wait, model = dense_query(plpy, req)
    with times.stage("legs"):
        found = lexical_legs(plpy, req)
    with times.stage("mentions"):
        found.update(mention_legs(plpy, req))
    with times.stage("embed"):  # what the lexical legs and mentions did not hide
        vector = wait()
    if not p.dense_weight:
        vector = None  # a leg of weight 0 adds nothing: the dense legs read no vector
    if not req.terms and vector is None:
        plpy.notice("the query has no searchable terms and no embedding: nothing to return")
        return {}
    if vector is not None:
        req.question_vector.update(vector=vector, model=model)
    with times.stage("legs"):
        found.update(dense_legs(plpy, req, vector, model))
    if vector is not None and not found["dense_sym"] and not found["dense_file"]:
        no_vectors(plpy, req, model)
    with times.stage("fusion"):
        items = fuse(found, p.lexical_weight, req.fused_dense_weight, req.features.fusion)
    for stage in SEARCH_STAGES:
        with times.stage(stage_name(stage)):
            stage(plpy, req, items)
    return items


def dense_query(plpy, req: Request) -> tuple[Callable[[], str | None], str]:
    """The vector the dense legs search with, as a function that waits for it, and its
    model. The backlog is read first: when no text in scope has a vector yet, the dense legs
    could find nothing, so the question is not embedded (a given embedding is still checked)
    and the answer is lexical only."""
    p = req.params
    db_settings = settings(plpy)
    active = db_settings.get("embedding_model", "")
    backlog, none_embedded = (
        backlog_detail(plpy, req.tenant, req.repo_ids, active) if p.dense_weight else (None, False)
    )
    wait: Callable[[], str | None] = lambda: None  # noqa: E731
    model = active
    if not (none_embedded and p.query_embedding is None):
        digest = req.reading.digest if req.long_question else None
        wait, model = query_vector(plpy, p, digest, req.degraded, db_settings)
    if none_embedded:
        if backlog:
            note(plpy, req.degraded, "embedding_backlog", backlog)
        no_vectors(plpy, req, model)
        return (lambda: None), model
    if not backlog:
        return wait, model

    def noted() -> str | None:
        """The vector, and once there is one, the note of what the dense leg cannot see."""
        vector = wait()
        if vector is not None:
            note(plpy, req.degraded, "embedding_backlog", backlog)
        return vector

    return noted, model


def no_vectors(plpy, req: Request, model: str) -> None:
    """No text in scope has a vector from the active model (a new repository, a switched
    model): the answer is lexical + graph only."""
    note(
        plpy,
        req.degraded,
        "lexical_only",
        f"no text in scope has a vector from {model} yet (codesift worker embeds them): "
        "lexical + graph only",
    )


def run(
    plpy,
    p: Params,
    times: StageTimes | None = None,
    notes: list[dict] | None = None,
    packed_only: bool = False,
) -> list[dict]:
    """Every candidate in score order with each stage's decision (explain_context's rows);
    `times`, when given, gets each stage's milliseconds, and `notes` why the answer is
    degraded (degraded.py). `packed_only`: the caller reads only the packed items (their
    language is looked up, not the others')."""
    req = prepare(plpy, p, packs=True, notes=notes)
    if times is not None:
        times.ms.update(req.times.ms)
        req = replace(req, times=times)
    result = _run(plpy, req, packed_only)
    report_times(plpy, req)
    return result


def _run(plpy, req: Request, packed_only: bool = False) -> list[dict]:
    p, times = req.params, req.times
    items = hybrid(plpy, req)
    if not items:
        return []
    for stage in PACK_STAGES:
        with times.stage(stage_name(stage)):
            stage(plpy, req, items)
    by_id = {r["id"]: r for r in req.repos}
    ordered = sorted(items.values(), key=order)
    for item in ordered:
        repo = by_id[item["repository_id"]]
        item["id"] = ":".join(str(x) for x in item["key"])
        item["repository"] = repo["name"]
        item["indexed_commit"] = repo["indexed_commit"]
        item["ref"] = repo["ref"]
    candidates = [i for i in ordered if i.get("decision") not in (EXPANDED, TOO_BIG)]
    expanded = [i for i in ordered if i.get("decision") in (EXPANDED, TOO_BIG)]
    # the pack feature: overlap judged by an item's own lines, the best files covered first
    assert p.jaccard_threshold is not None  # validated when the call packs
    threshold = p.jaccard_threshold
    token_sets: dict = {}  # each candidate's, for every fill below
    costs: dict = {}

    def bodies(budget: int) -> list[dict]:
        with times.stage("fill"):
            return fill(candidates, budget, threshold, req.on("pack"), token_sets, costs)

    # the outline feature: a candidate file the pack cannot hold whole gets an outline too
    if req.on("outline"):
        packed = fill_with_outlines(plpy, req, ordered, bodies)
    else:
        packed = bodies(req.budget)
    for item in expanded:
        item.update(packing.NOT_PACKED)
    result = sorted(packed + expanded, key=order)
    for rank, item in enumerate(result, 1):
        item["candidate_rank"] = rank
    with times.stage("languages"):
        add_languages(
            plpy, req.tenant, [i for i in result if i.get("packed")] if packed_only else result
        )
    return result


def add_languages(plpy, tenant: int, items: list[dict]) -> None:
    """Each item's `language`: its blob's (sql/blob_languages.sql), None when unknown."""
    shas = sorted({i["blob_sha"] for i in items if i.get("blob_sha")})
    found = (
        {
            r["sha"]: r["language"]
            for r in plans.run(plpy, plans.load("blob_languages"), LANGUAGE_TYPES, [tenant, shas])
        }
        if shas
        else {}
    )
    for item in items:
        item["language"] = found.get(item.get("blob_sha"))
