"""Identifier-aware terms for the lexical leg (PostgreSQL text search, 'simple' config).

Plain Python, no database. Three entry points:

* ``identifier_terms(text)``: the document side. Every identifier in a blob or symbol body
  contributes its whole form and its parts, so ``searchBlobs``, ``search_blobs``,
  ``SearchBlobs`` and ``search-blobs`` all index ``searchblobs search blobs``. Feed it to
  ``to_tsvector('simple', identifier_terms(content))``.
* ``path_terms(path)``: the same for a repository path (components, stem, extension).
* ``query_terms(text)``: the query side: the same splitting of a natural-language question
  or identifier-laden text, minus stopwords, deduplicated, capped; join with ``' | '`` for an
  OR ``to_tsquery('simple', ...)``.

Assumption about PostgreSQL's default text-search parser (used by every built-in config,
'simple' included), to be verified by a DB test:

  The parser treats '_' as a separator ('search_blobs' -> 'search', 'blobs'), keeps a
  hyphenated word whole *and* as parts ('search-blobs' -> 'search-blobs', 'search',
  'blobs'), and turns dotted runs into host/file tokens ('res.clearCookie' ->
  'res.clearcookie', 'route.js' -> 'route.js'). None of those forms can be produced
  reliably on both sides, so every term emitted here is a run of [a-z0-9] only, separated
  by single spaces. For such input the parser is the identity: each run is one asciiword /
  numword / uint token, and the 'simple' dictionary only lowercases (no stopwords, no
  stemming). The "whole identifier" is therefore emitted *joined*, separators removed:
  search_blobs / searchBlobs / search-blobs -> 'searchblobs'. The query side emits the same
  joined form, so an exact identifier in a question matches its whole-identifier lexeme
  (a strong, rare term) as well as its parts. A dotted chain is split into its identifiers
  ('res.clearCookie' -> 'res clearcookie clear cookie'); the dotted whole is not kept.

  Terms are ASCII only: non-ASCII letters act as separators on both sides (consistently).
  Single characters are dropped on both sides (noise; 'x', 'i').

Size bounds (a tsvector must stay under 1 MB; positions above 16383 are clamped anyway):
at most MAX_DOC_TERMS terms and MAX_DOC_CHARS characters per document, terms at most
MAX_TERM_LEN long; hash-like tokens (hex digests, base64) are skipped.

Light stemming: the 'simple' dictionary does not stem, so 'redirects' in a question does not
match 'resolve_redirect' in code. query_terms adds a crude singular form of plural-looking
words ('redirects' -> 'redirect', 'dependencies' -> 'dependency', 'matches' -> 'match') after
the original terms (see tests/unit/test_identifiers.py::test_plural_variants_improve_matching
for the measured effect on a toy corpus). The document side is not expanded: ~8 % of the terms
of Python code look plural, so it would grow every tsvector by that much for the rarer
singular-question/plural-only-code case. -ed/-ing forms are not stripped (too many false
stems: 'parsed' -> 'pars').
"""

from __future__ import annotations

import re

from . import budget

__all__ = [
    "MAX_DOC_CHARS",
    "MAX_DOC_TERMS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_LEN",
    "STOPWORDS",
    "identifier_terms",
    "path_terms",
    "query_terms",
    "split_identifier",
]

MAX_DOC_TERMS = budget.MAX_DOC_TERMS
MAX_DOC_CHARS = budget.MAX_DOC_CHARS
MAX_QUERY_TERMS = 64
MAX_TERM_LEN = 64
_QUERY_SCAN_CHARS = 1 << 20  # query_terms reads at most this much text

# An identifier: word characters and '$', optionally hyphen-joined to further words that
# start with a letter ('search-blobs', 'max-width'; 'i-1' stays two tokens).
_IDENT = re.compile(r"[A-Za-z0-9_$]+(?:-[A-Za-z][A-Za-z0-9_$]*)*")
# Parts of one identifier: ACRONYM (before Capital+lower), Capitalised or lower words, digits.
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SIMPLE = re.compile(r"[a-z]+")
_SNAKE = re.compile(r"[a-z_]+")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don done down during each either else etc even ever every few for from further get
    gets got had hadn has hasn have haven having he her here hers herself him himself his how
    however i if in into is isn it its itself just let lets like ll may me might more most
    must mustn my myself need needs no nor not now of off often on once only or other our
    ours ourselves out over own per please re really same shall shan she should shouldn so
    some such than that the their theirs them themselves then there these they this those
    through to too under until up upon us use used using ve very via want wants was wasn way
    we were weren what when where whether which while who whom whose why will with within
    without won would wouldn yet you your yours yourself yourselves
    anyone anything someone something somewhere everything
    code codebase file files function functions method methods implemented implement
    implementation defined define located locate find show tell explain happen happens
    happening work works working handle handled handles logic part place thing things
    """.split()
)


def _hashlike(token: str) -> bool:
    """Hex digests, base64 blobs, UUID pieces: many digit runs in a long token."""
    if len(token) < 16:
        return False
    runs = 0
    prev_digit = False
    for ch in token:
        is_digit = ch.isdigit()
        if is_digit and not prev_digit:
            runs += 1
            if runs >= 4:
                return True
        prev_digit = is_digit
    return False


def split_identifier(token: str) -> tuple[str, ...]:
    """Lowercased terms for one identifier: the joined whole, then its parts (deduplicated).

    'searchBlobs' -> ('searchblobs', 'search', 'blobs'); 'getURL2Path' -> ('geturl2path',
    'get', 'url', 'url2', 'path') (an alphabetic part followed by digits also yields the
    joined form, so 'toBase64' indexes 'base64'). Terms shorter than 2 or longer than
    MAX_TERM_LEN are dropped; hash-like tokens give ()."""
    if len(token) >= 16 and _hashlike(token):
        return ()
    parts = _PART.findall(token)
    if not parts:
        return ()
    if token[0].isdigit():  # a number literal (404, 0x1f, 3600): the whole only
        whole = "".join(parts).lower()
        return (whole,) if 2 <= len(whole) <= 16 else ()
    lowered = [p.lower() for p in parts]
    terms = ["".join(lowered)]
    if len(lowered) > 1:
        prev = ""
        for part in lowered:
            terms.append(part)
            if prev and part.isdigit() and not prev.isdigit():
                terms.append(prev + part)
            prev = part
    return tuple(dict.fromkeys(t for t in terms if 2 <= len(t) <= MAX_TERM_LEN))


def _token_terms(token: str) -> tuple[str, ...]:
    if len(token) > 4 * MAX_TERM_LEN:
        return ()
    if _SIMPLE.fullmatch(token):  # fast path: a plain lowercase word
        return (token,) if 2 <= len(token) <= MAX_TERM_LEN else ()
    if _SNAKE.fullmatch(token):  # fast path: lower_snake_case
        parts = [p for p in token.split("_") if p]
        if len(parts) == 1:
            return (parts[0],) if 2 <= len(parts[0]) <= MAX_TERM_LEN else ()
        terms = ["".join(parts)]
        terms.extend(parts)
        return tuple(dict.fromkeys(t for t in terms if 2 <= len(t) <= MAX_TERM_LEN))
    return split_identifier(token)


_CHUNK = 1 << 18
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$-")


def _chunks(text: str):
    """Pieces of text of about _CHUNK characters, cut between identifiers when possible."""
    start, n = 0, len(text)
    while start < n:
        end = start + _CHUNK
        if end >= n:
            yield text[start:]
            return
        cut = end
        floor = max(start + 1, end - 512)
        while cut > floor and text[cut - 1] in _IDENT_CHARS:
            cut -= 1
        if cut == floor:  # a giant token: split it (it is junk anyway)
            cut = end
        yield text[start:cut]
        start = cut


# token -> its rendered terms ("searchblobs search blobs"), shared by all calls in a backend
# (common identifiers repeat across files); cleared when full to bound memory (~10 MB).
_RENDERED: dict[str, str] = {}
_RENDERED_MAX = 1 << 16


def identifier_terms(text: str, limits: budget.Budget | None = None) -> str:
    """Space-separated lowercase terms for to_tsvector('simple', ...): each identifier's joined
    whole and its parts, in document order, repeats kept (term frequency matters for ranking),
    bounded by MAX_DOC_TERMS / MAX_DOC_CHARS. Never raises; non-str input gives ''.

    With `limits` (a budget.Budget) the text past the caps is counted there ('terms cap
    50000 (N chars not indexed)'), and the scan stops when its deadline passes."""
    if not isinstance(text, str) or not text:
        return ""
    try:
        # Per chunk: one findall, Python work only for tokens never seen before, then a
        # C-level map/filter/join over all tokens.
        rendered = _RENDERED
        pieces: list[str] = []
        n_terms = 0
        n_chars = 0
        capped = False
        for chunk in _chunks(text):
            if limits is not None and limits.expired():
                break
            tokens = _IDENT.findall(chunk)
            new = set(tokens).difference(rendered)
            if new:
                if len(rendered) + len(new) > _RENDERED_MAX:
                    rendered.clear()
                    new = set(tokens)
                for token in new:
                    rendered[token] = " ".join(_token_terms(token))
            piece = " ".join(filter(None, map(rendered.__getitem__, tokens)))
            if not piece:
                continue
            count = piece.count(" ") + 1
            if n_terms + count > MAX_DOC_TERMS:
                room = MAX_DOC_TERMS - n_terms
                piece = " ".join(piece.split(" ", room)[:room])
                count = room
                capped = True
            pieces.append(piece)
            n_terms += count
            n_chars += len(piece) + 1
            if n_terms >= MAX_DOC_TERMS or n_chars >= MAX_DOC_CHARS:
                capped = True
                break
        result = " ".join(pieces)
        if len(result) > MAX_DOC_CHARS:
            result = result[: MAX_DOC_CHARS + 1].rsplit(" ", 1)[0]
        if capped and limits is not None:
            kept = result.count(" ") + 1 if result else 0
            left = len(text) - _offset_of_term(text, kept)
            limits.over("terms", MAX_DOC_TERMS, left, "chars not indexed")
        return result
    except Exception:
        return ""


def _offset_of_term(text: str, number: int) -> int:
    """Offset in `text` of the identifier that yields term `number` (0-based) of
    identifier_terms(text), or len(text) when there are not that many. Linear; run once per
    capped document."""
    seen = 0
    base = 0
    for chunk in _chunks(text):
        for match in _IDENT.finditer(chunk):
            token = match.group()
            terms = _RENDERED.get(token)
            if terms is None:
                terms = " ".join(_token_terms(token))
            if terms:
                seen += terms.count(" ") + 1
                if seen > number:
                    return base + match.start()
        base += len(chunk)
    return len(text)


def path_terms(path: str) -> str:
    """Terms for a repository path: every component identifier-split, stem and extension
    included, deduplicated: 'lib/router/route.js' -> 'lib router route js';
    'src/test_utils.py' -> 'src testutils test utils py'. Never raises."""
    if not isinstance(path, str) or not path:
        return ""
    try:
        seen: dict[str, None] = {}
        for token in _IDENT.findall(path[:4096]):
            for term in _token_terms(token):
                seen[term] = None
        return " ".join(seen)
    except Exception:
        return ""


def _singular(term: str) -> tuple[str, ...]:
    """Crude singular candidates of a plural-looking word (may be non-words; harmless)."""
    if len(term) < 4 or not term.endswith("s") or not term.isalpha():
        return ()
    if term.endswith(("ss", "us", "is", "ous")):
        return ()
    if term.endswith("ies") and len(term) > 4:
        return (term[:-3] + "y", term[:-1])
    if term.endswith(("sses", "ches", "shes", "xes", "zes")):
        return (term[:-2], term[:-1])
    return (term[:-1],)


# `res.sendFile`, `app.handle`: parts of a dotted name are names, never stopwords
# (anchored at word starts and possessive, so a 1 MB word stays linear)
_DOTTED = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)+")


def query_terms(text: str) -> list[str]:
    """Terms for an OR lexical query: identifier-split like identifier_terms, lowercased,
    stopwords removed, deduplicated in order, only [a-z0-9]+ (safe inside to_tsquery),
    at most MAX_QUERY_TERMS. Crude singular forms of plural words follow the original
    terms while there is room. Never raises; fast on 100 KB of text."""
    if not isinstance(text, str) or not text:
        return []
    try:
        primary: dict[str, None] = {}
        variants: dict[str, None] = {}
        dotted = {
            part.lower()
            for chain in _DOTTED.findall(text, 0, _QUERY_SCAN_CHARS)
            for part in chain.split(".")
        }
        for token in dict.fromkeys(_IDENT.findall(text, 0, _QUERY_SCAN_CHARS)):
            terms = _token_terms(token)
            # stopwords are dropped from plain words only: in `app.handle` or `getOut`
            # every part is part of a name the user typed
            compound = len(terms) > 1 or token.lower() in dotted
            for term in terms:
                if (term in STOPWORDS and not compound) or term in primary:
                    continue
                primary[term] = None
                for variant in _singular(term):
                    if variant not in STOPWORDS and len(variant) >= 2:
                        variants[variant] = None
            if len(primary) >= MAX_QUERY_TERMS:
                break
        result = list(primary)[:MAX_QUERY_TERMS]
        for variant in variants:
            if len(result) >= MAX_QUERY_TERMS:
                break
            if variant not in primary:
                result.append(variant)
        return result
    except Exception:
        return []
