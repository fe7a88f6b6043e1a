"""The graph stage: codesift._graph_walk (sql/idempotent/005-graph.sql) from the top hits'
files, both directions, over resolved import edges and the edge kinds switched on
(features.py): tests, references (derived_edges.py) and co_change (the loader's). A file
reached scores its seed's score times hop_decay per hop, times the weights of the edges that
led there and their kinds' EDGE_WEIGHTS, times its path prior; the best GRAPH_NODES new ones
become candidates."""

from typing import TYPE_CHECKING

from .. import plans
from .hydrate import hydrate, unranked
from .recency import path_prior

if TYPE_CHECKING:
    from .request import Request

GRAPH_SEEDS = 3  # top hits whose import neighbourhood is walked
GRAPH_NODES = 24  # files the walk may add, best (seed score x hop decay) first
# a file reached only through the graph (no search leg found it) is context, not an answer:
# it ranks below the hits its hop decay would otherwise tie it with
NEIGHBOUR_WEIGHT = 0.7
GRAPH_WALK = (
    "select repository_id, path, hop, factor, via, edges, strength"
    " from codesift._graph_walk($1, $2, $3, $4, $5, $6, $7)",
    ["bigint", "bigint[]", "text[]", "int", "float8", "int", "text[]"],
)
IMPORT_RELATIONS = ("import", "require", "dynamic_import", "mod", "use")
# the edge kinds beyond imports, each a feature of its own name (features.py)
EDGE_KINDS = ("tests", "references", "co_change")
# what an edge of each kind passes on of its seed's score, on top of hop_decay
EDGE_WEIGHTS = {"tests": 1.0, "references": 1.0, "co_change": 1.0}


def relations(features) -> list[str]:
    """The relations the walk follows: imports, and the edge kinds switched on."""
    return [*IMPORT_RELATIONS, *(k for k in EDGE_KINDS if features.on(k))]


def edge_weight(edges: list[str]) -> float:
    out = 1.0
    for kind in edges:
        out *= EDGE_WEIGHTS.get(kind, 1.0)
    return out


def seeds(items: dict) -> tuple[list[str], dict[str, float]]:
    """The paths of the GRAPH_SEEDS best candidates (distinct paths), each with its score."""
    ranked = sorted(items.values(), key=lambda i: -i["score"])
    paths: list[str] = []
    seed_score: dict[str, float] = {}
    for item in ranked:
        if item["path"] not in seed_score:
            seed_score[item["path"]] = item["score"]
            paths.append(item["path"])
        if len(paths) == GRAPH_SEEDS:
            break
    return paths, seed_score


def neighbour(key: tuple, score: float, graph: dict) -> dict:
    """A candidate only the walk found: no leg's rank, below the hits (NEIGHBOUR_WEIGHT)."""
    return unranked(key, score * NEIGHBOUR_WEIGHT, **graph)


def expand_graph(plpy, req: "Request", items: dict) -> None:
    p = req.params
    if p.graph_depth == 0 or not items:
        return
    paths, seed_score = seeds(items)
    rows = plans.run(
        plpy,
        *GRAPH_WALK,
        [
            req.tenant,
            req.repo_ids,
            paths,
            p.graph_depth,
            p.hop_decay,
            p.fanout,
            relations(req.features),
        ],
    )
    reached = []
    for r in rows:
        via, edges = list(r["via"]), list(r["edges"])
        score = (
            seed_score.get(via[0], 0.0)
            * r["factor"]
            * r["strength"]
            * edge_weight(edges)
            * path_prior(r["path"], req.kind_prior, req.long_question, req.test_prior)
        )
        reached.append((score, r["repository_id"], r["path"], r["hop"], via, edges))
    reached.sort(key=lambda x: (-x[0], x[3], x[2]))
    new_keys: list[tuple] = []
    for score, repository_id, path, hop, via, edges in reached:
        key = ("f", repository_id, path)
        graph = {"graph_hop": hop, "graph_path": via, "graph_edges": edges}
        if key in items:
            items[key].update(graph)
            items[key]["score"] = max(items[key]["score"], score)
            continue
        if len(new_keys) == GRAPH_NODES:
            continue  # hub files reach hundreds: only the best become candidates
        items[key] = neighbour(key, score, graph)
        new_keys.append(key)
    if new_keys:
        subset = {k: items.pop(k) for k in new_keys}
        hydrate(plpy, req, subset)
        items.update(subset)
