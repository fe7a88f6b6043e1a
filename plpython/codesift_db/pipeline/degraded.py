"""Why an answer is worse than it could be, said once per call: as a NOTICE (psql, the CLI
and the MCP tools show them) and in `why.degraded` of every row (BI tools see no NOTICE).
Each reason is {"code": ..., "detail": ...}; the codes:

  embedding_backlog        texts in scope wait for their vector: the dense leg sees part
  lexical_only             no query vector (no embedder answers), or nothing in scope has a
                           vector from the active model: lexical + graph only
  embedding_endpoint_down  the embedding endpoint cannot be reached: lexical + graph only
  question_script          the built-in (English) model and a question mostly in another
                           script
  not_indexed, stale_index, replica_lag   scope.py's freshness notices
  ranker_model             the ref's learned ranker model cannot be read: ranked without
                           it (rerank.py)
"""

import unicodedata

from .. import plans

# rows counted, at most, per table: every call pays for its count while a backlog shows
BACKLOG_CAP = 1_000  # unembedded rows in scope
SCOPE_CAP = 10_000  # texts in scope
SCRIPT_CHARS = 20_000  # of the question, read for its script (query.EMBED_QUERY_CHARS)
COUNT_TYPES = ["bigint", "bigint[]", "int", "int"]

# a letter's script is the first word of its Unicode name; these read better as
NAMES = {"CJK": "CJK (Chinese, Japanese, Korean) characters", "HANGUL": "Hangul"}


def note(plpy, notes: list[dict] | None, code: str, detail: str) -> None:
    """A NOTICE, and the reason in `notes` (once) when the call keeps them."""
    plpy.notice(detail)
    reason = {"code": code, "detail": detail}
    if notes is not None and reason not in notes:
        notes.append(reason)


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    words = name.split()
    if not words or "LATIN" in words:
        return "LATIN"
    return words[0]


def main_script(question: str) -> str | None:
    """The script (a readable name) of more than half of the question's letters when it is
    not Latin, else None: 'CJK (Chinese, ...)', 'Cyrillic', 'Arabic', 'Greek'..."""
    counts: dict[str, int] = {}
    letters = 0
    for ch in question[:SCRIPT_CHARS]:
        if unicodedata.category(ch).startswith("L"):
            letters += 1
            script = _script(ch)
            counts[script] = counts.get(script, 0) + 1
    other = {s: n for s, n in counts.items() if s != "LATIN"}
    if not letters or sum(other.values()) * 2 <= letters:
        return None
    script = max(other, key=lambda s: (other[s], s))
    return NAMES.get(script, script.capitalize())


def script_detail(question: str) -> str | None:
    """The question_script reason's text, or None when the question is mostly Latin."""
    script = main_script(question)
    if script is None:
        return None
    return (
        "the built-in embedding model reads English; this question is mostly "
        f"{script}: the dense leg may not match it (an embedding endpoint with a "
        "multilingual model would: codesift migrate --embedder)"
    )


def _count(n: int, capped: bool) -> str:
    return f"at least {n:,}" if capped else f"{n:,}"


def backlog_detail(plpy, tenant: int, repo_ids: list[int], model: str) -> tuple[str | None, bool]:
    """The embedding_backlog reason's text, or None when every live text in scope has been
    embedded (or refused: those wait for their retry); and whether no text in scope has a
    vector of `model` yet (every one waits), when the dense legs can find nothing. Reads the
    queue's partial indexes (sql/embedding_backlog.sql), each table to BACKLOG_CAP + 1 rows,
    from the smaller side: the tenant's backlog or the scope's live files, each sized to
    SCOPE_CAP + 1 first (the scope only when a backlog under that bound is compared with
    it: one at the bound walks the scope's files whatever their number); the same statement
    counts the texts in scope (to SCOPE_CAP + 1) only when a smaller backlog shows. A larger
    one is judged by whether the tenant holds any vector of the model at all
    (sql/tenant_vectors.sql): the dense legs would walk the index for nothing."""
    # planned once, whatever the arguments: every probe in it is kept a probe
    counts = plans.run_generic(
        plpy,
        plans.load("embedding_backlog"),
        COUNT_TYPES,
        [tenant, repo_ids, BACKLOG_CAP + 1, SCOPE_CAP + 1],
    )[0]
    pending = (counts["symbols"], counts["files"])
    waiting = sum(pending)
    if not waiting:
        return None, False
    tail = (
        " texts in scope are not embedded yet (codesift worker, or codesift index --wait, "
        "embeds them): the dense leg sees only part of the code"
    )
    if max(pending) > BACKLOG_CAP:
        # too many to compare with the texts in scope, which are not counted either
        return f"at least {waiting:,}{tail}", not tenant_vectors(plpy, tenant, model)
    total = (counts["scope_symbols"], counts["scope_files"])
    whole = max(total) > SCOPE_CAP
    return f"{waiting:,} of {_count(sum(total), whole)}{tail}", pending == total


def tenant_vectors(plpy, tenant: int, model: str) -> bool:
    """Whether the tenant holds any symbol or file vector of `model`."""
    found = plans.run(plpy, plans.load("tenant_vectors"), ["bigint", "text"], [tenant, model])
    return bool(found[0]["found"])
