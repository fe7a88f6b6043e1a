"""The learned ranker's stage (issue 33), the last of stage 1 (so hybrid_search ranks by it,
and the graph walk, the stand-ins and the callees start from its order): when the one
repository in scope has a model (codesift.ranker_models, trained on its own history by
`codesift learn`: loader/codesift/learn.py), each file's candidates are ordered by the
model's score of their features (ranker/features.py) and take their file's scores in the
new order (ranker/order.py): no candidate is added or dropped and no file moves. Without a
model, with several repositories in scope (their models' scores do not compare) or with the
feature `ranker` off, nothing changes. A model that cannot be read
leaves the stage off with a degraded notice (`ranker_model`).

For evaluation a session may instead name a model in the setting codesift.ranker_model (its
JSON, as stored): it ranks only that session's answers, for a database that holds no
model (bench/eval.py's `ranker` engine). Whether a repository has a stored model comes
with its scope (sql/repositories.sql), so without one the stage reads nothing."""

from __future__ import annotations

from .. import plans
from ..ranker import features, order
from ..ranker.model import ModelError, parse
from .degraded import note
from .request import Request

TYPES = ["bigint", "bigint[]"]
RANKED = 200  # the best candidates by base score the model orders (learn.py asks as many)
MAX_MODEL_CHARS = 262_144  # the stored column's bound (sql/incremental/025-ranker.sql)


def rerank(plpy, req: Request, items: dict) -> None:
    if not req.on("ranker") or len(req.repos) != 1 or not items:
        return
    raw, whose = req.features.ranker_model, "this session's codesift.ranker_model"
    if not raw and req.repos[0]["has_ranker"]:
        rows = plans.run(plpy, plans.load("ranker_models"), TYPES, [req.tenant, req.repo_ids])
        raw = rows[0]["model"] if rows else None
        whose = f"{req.repos[0]['name']}'s stored model"
    if not raw:
        return
    try:
        if len(raw) > MAX_MODEL_CHARS:
            raise ModelError(f"over {MAX_MODEL_CHARS:,} characters")
        model = parse(raw)
    except ModelError as exc:
        note(
            plpy,
            req.degraded,
            "ranker_model",
            f"the learned ranker's model ({whose}) cannot be used ({exc}): "
            "ranked without it (codesift learn trains it again)",
        )
        return
    by_base = sorted(items.values(), key=lambda i: (-i["score"], i["path"], i["start_line"]))
    ranked = by_base[:RANKED]
    vectors = features.vectors(req.params.query, [features.view(i) for i in ranked])
    scores = model.score(vectors)
    new = order.within_files(
        [(i["repository_id"], i["path"]) for i in ranked], [i["score"] for i in ranked], scores
    )
    for item, score in zip(ranked, new, strict=True):
        item["base_score"] = item["score"]
        item["score"] = score
