"""Query shaping: the question's lexical terms, the tsquery of two of them that picks a
large file's stand-in symbols, and the query vector (the caller's, checked, or embedded
here with the database's active model)."""

from .. import identifiers, plans
from ..embed import embedders
from ..errcodes import DATA_EXCEPTION
from .degraded import note, script_detail
from .params import Params, fail

# the model reads the first 256 word pieces (minilm.MAX_TOKENS): a few hundred characters
# of prose, or of code; tokenizing more only costs time
EMBED_QUERY_CHARS = 20_000
PAIR_TERMS = 12  # terms paired for the two-term test (66 pairs); a longer query keeps its first


def terms(query: str) -> list[str]:
    """Identifier-split OR terms of the question (what codesift._query_terms returns)."""
    return list(identifiers.query_terms(query) or [])


def two_terms_query(terms: list) -> str:
    """A tsquery text matching a document that holds at least two of `terms`."""
    words = ["'" + t.replace("'", "''").replace("\\", "\\\\") + "'" for t in terms[:PAIR_TERMS]]
    pairs = [f"({a} & {b})" for i, a in enumerate(words) for b in words[i + 1 :]]
    return " | ".join(pairs) or "'x' & !'x'"  # fewer than two terms: matches nothing


def vector_literal(vector) -> str:
    """A vector as a pgvector literal, 7 significant digits a component."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def settings(plpy) -> dict:
    return {r["key"]: r["value"] for r in plans.run(plpy, plans.load("settings"))}


def embed_query(
    plpy, text: str, db_settings: dict | None = None, notes: list[dict] | None = None
) -> str | None:
    """The query's vector as a pgvector literal, or None (with a NOTICE, and its reason in
    `notes` when given: degraded.py) when the configured embedder (codesift.settings,
    embedders.from_settings) cannot embed it."""
    db_settings = db_settings if db_settings is not None else settings(plpy)
    try:
        embedder = embedders.from_settings(db_settings)
        # the model truncates to its first word pieces anyway: never send megabytes
        return vector_literal(embedder.encode([text[:EMBED_QUERY_CHARS]])[0])
    except ImportError as exc:  # numpy or tokenizers missing on this server
        note(
            plpy,
            notes,
            "lexical_only",
            f"query embedding unavailable ({exc}): lexical + graph only",
        )
    except embedders.EndpointUnreachable as exc:
        note(
            plpy,
            notes,
            "embedding_endpoint_down",
            f"the embedding endpoint is down: query embedding unavailable ({exc}): "
            "lexical + graph only (or pass query_embedding)",
        )
    except embedders.EmbedderUnavailable as exc:
        note(
            plpy,
            notes,
            "lexical_only",
            f"query embedding unavailable ({exc}): lexical + graph only (or pass query_embedding)",
        )
    return None


def builtin(db_settings: dict) -> bool:
    """Whether the database embeds with the built-in (English-only) model."""
    return (db_settings.get("embedding_provider") or embedders.BUILTIN).strip() == embedders.BUILTIN


def query_vector(
    plpy, p: Params, text: str | None = None, notes: list[dict] | None = None
) -> tuple[str | None, str]:
    """The vector the dense legs search with (None: no model) and the model it is from;
    `text` (a long question's digest) is embedded instead of the question when given. Why
    the vector is missing or may miss goes to `notes` (degraded.py)."""
    db_settings = settings(plpy)
    model, dim = db_settings.get("embedding_model", ""), int(db_settings.get("embedding_dim", 0))
    if p.query_embedding is not None:
        given = plans.run(
            plpy, "select vector_dims($1::vector) as d", ["text"], [p.query_embedding]
        )[0]["d"]
        if given != dim:
            fail(
                plpy,
                f"query_embedding has {given} dimensions; this database expects {dim}",
                hint=f"embed the query with {model} ({dim} dimensions)",
                sqlstate=DATA_EXCEPTION,
            )
        return p.query_embedding, model
    vector = embed_query(plpy, text or p.query, db_settings, notes)
    if vector is not None and builtin(db_settings):
        detail = script_detail(p.query)
        if detail:
            note(plpy, notes, "question_script", detail)
    return vector, model
