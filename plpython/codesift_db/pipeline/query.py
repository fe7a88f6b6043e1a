"""Query shaping: the question's lexical terms, the tsquery of two of them that picks a
large file's stand-in symbols, and the query vector (the caller's, checked, or embedded
here with the database's active model)."""

from collections.abc import Callable

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
    return start_embedding(plpy, text, db_settings, notes)()


def start_embedding(
    plpy, text: str, db_settings: dict | None = None, notes: list[dict] | None = None
) -> Callable[[], str | None]:
    """Begin embedding the query; the function returned waits for its vector (embed_query's
    result). The built-in model on ONNX Runtime computes it beside the caller's SQL
    (embedders.start); the NOTICEs are raised here, on the backend's own thread."""
    db_settings = db_settings if db_settings is not None else settings(plpy)
    try:
        embedder = embedders.from_settings(db_settings)
        # the model truncates to its first word pieces anyway: never send megabytes
        wait = embedders.start(embedder, text[:EMBED_QUERY_CHARS])
    except (ImportError, embedders.EmbedderUnavailable) as exc:
        unavailable(plpy, exc, notes)
        return lambda: None

    def vector() -> str | None:
        try:
            return vector_literal(wait())
        except (ImportError, embedders.EmbedderUnavailable) as exc:
            unavailable(plpy, exc, notes)
            return None

    return vector


def unavailable(plpy, exc: Exception, notes: list[dict] | None) -> None:
    """Why the query has no vector: a NOTICE, and its reason in `notes`."""
    if isinstance(exc, ImportError):  # numpy or tokenizers missing on this server
        detail = f"query embedding unavailable ({exc}): lexical + graph only"
        note(plpy, notes, "lexical_only", detail)
    elif isinstance(exc, embedders.EndpointUnreachable):
        note(
            plpy,
            notes,
            "embedding_endpoint_down",
            f"the embedding endpoint is down: query embedding unavailable ({exc}): "
            "lexical + graph only (or pass query_embedding)",
        )
    else:
        note(
            plpy,
            notes,
            "lexical_only",
            f"query embedding unavailable ({exc}): lexical + graph only (or pass query_embedding)",
        )


def builtin(db_settings: dict) -> bool:
    """Whether the database embeds with the built-in (English-only) model."""
    return (db_settings.get("embedding_provider") or embedders.BUILTIN).strip() == embedders.BUILTIN


def query_vector(
    plpy,
    p: Params,
    text: str | None = None,
    notes: list[dict] | None = None,
    db_settings: dict | None = None,
) -> tuple[Callable[[], str | None], str]:
    """The vector the dense legs search with (None: no model), as a function that waits for
    it, and the model it is from; `text` (a long question's digest) is embedded instead of
    the question when given, beside the caller's next statements. Why the vector is missing
    or may miss goes to `notes` (degraded.py). `db_settings`: codesift.settings, when the
    caller has read them already."""
    db_settings = db_settings if db_settings is not None else settings(plpy)
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
        return lambda: p.query_embedding, model
    wait = start_embedding(plpy, text or p.query, db_settings, notes)

    def vector() -> str | None:
        found = wait()
        if found is not None and builtin(db_settings):
            detail = script_detail(p.query)
            if detail:
                note(plpy, notes, "question_script", detail)
        return found

    return vector, model
