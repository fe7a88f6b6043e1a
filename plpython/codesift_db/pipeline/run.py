"""The stages in order: hybrid (stage 1: validated, scoped, fused, hydrated, recency-decayed
candidates; all hybrid_search runs) and run (then the graph, the stand-ins, pruning and
packing; what pack_context and explain_context run)."""

from .. import packing
from . import features, question
from .callees import add_callees
from .fill import fill
from .fusion import file_consensus, fuse
from .graph import expand_graph
from .hydrate import file_tokens, hydrate
from .legs import legs
from .mentions import mentioned_files, mentioned_symbols
from .params import Params, validate
from .query import query_vector, terms
from .recency import apply_recency
from .scope import resolve_scope
from .standins import EXPANDED, TOO_BIG, split_big_files


def order(item: dict) -> tuple:
    """Best score first, then by path and line: the order of every row shape."""
    return (-item["score"], item["path"], item["start_line"])


def hybrid(plpy, p: Params) -> tuple[dict, list, list]:
    """Stage 1: validated, scoped, fused, hydrated, recency-decayed candidates."""
    validate(plpy, p)
    tenant, repos = resolve_scope(plpy, p.repo, p.ref)
    repo_ids = [r["id"] for r in repos]
    p.features = feats = features.read(plpy)
    reading = question.read(p.query) if feats.on("question") else question.Reading()
    p.wants_docs = reading.wants_docs
    p.long_question = reading.long
    if reading.long:
        query_terms, weights = question.weighted_terms(p.query, reading)
    else:
        query_terms, weights = terms(p.query), None
    vector, model = None, ""
    if p.dense_weight or p.query_embedding is not None:  # a given embedding is checked
        vector, model = query_vector(plpy, p, reading.digest if reading.long else None)
    if not p.dense_weight:
        vector = None  # a leg of weight 0 adds nothing: the dense legs read no vector
    if not query_terms and vector is None:
        plpy.notice("the query has no searchable terms and no embedding: nothing to return")
        return {}, query_terms, repos
    # likewise no lexical legs at weight 0 (the terms still choose stand-ins)
    lexical_terms = query_terms if p.lexical_weight else []
    found = legs(plpy, p, tenant, repo_ids, lexical_terms, vector, model, weights)
    frames = reading.frames if feats.on("frames") else []
    if reading.mentions:
        found["mention"] = mentioned_files(
            plpy, tenant, repo_ids, reading.mentions, by_suffix=feats.on("frames")
        )
    names = reading.names if feats.on("named") else []
    if frames:  # a frame names its function in its file; by the name alone, also others'
        names = [n for n in names if n not in reading.frame_only]
    if names or frames:
        found["mention_sym"] = mentioned_symbols(plpy, tenant, repo_ids, names, frames)
    items = fuse(found, p.lexical_weight, p.dense_weight, feats.fusion)
    hydrate(plpy, items, tenant, repo_ids, file_tokens(p.token_budget))
    if feats.on("consensus"):
        file_consensus(items, p.lexical_weight, p.dense_weight)
    apply_recency(
        plpy,
        items,
        tenant,
        repo_ids,
        p.recency_lambda,
        kinds=p.kind_prior,
        # a bug report asks which file to change; a short question often names one symbol,
        # whose definition must not fall below the files that call it
        evidence=feats.on("evidence") and reading.long,
        bug_report=p.long_question,
    )
    return items, query_terms, repos


def run(plpy, p: Params) -> list[dict]:
    """Every candidate in score order with each stage's decision (explain_context's rows)."""
    items, query_terms, repos = hybrid(plpy, p)
    if not items:
        return []
    tenant = repos[0]["tenant_id"]  # resolve_scope: one tenant's repositories
    repo_ids = [r["id"] for r in repos]
    by_id = {r["id"]: r for r in repos}
    expand_graph(plpy, items, p, tenant, repo_ids)
    headers = p.long_question and p.features.on("pack")
    split_big_files(plpy, items, tenant, p.token_budget, query_terms, headers)
    if p.features.on("calls"):
        add_callees(plpy, items, tenant, repo_ids, p.token_budget)
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
    packed = fill(candidates, p.token_budget, p.jaccard_threshold, p.features.on("pack"))
    for item in expanded:
        item.update(packing.NOT_PACKED)
    result = sorted(packed + expanded, key=order)
    for rank, item in enumerate(result, 1):
        item["candidate_rank"] = rank
    return result
