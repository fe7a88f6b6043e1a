"""Unit tests of codesift_db.identifiers (no database).

The lexeme model assumed here (each space-separated [a-z0-9]+ run of identifier_terms and
each query_terms entry is exactly one 'simple' lexeme) is verified against PostgreSQL by the
DB tests; these tests simulate matching as set intersection."""

import re
import time

import pytest
from codesift_db.identifiers import (
    MAX_DOC_CHARS,
    MAX_DOC_TERMS,
    MAX_QUERY_TERMS,
    identifier_terms,
    path_terms,
    query_terms,
    split_identifier,
)

SAFE = re.compile(r"[a-z0-9]+")


def terms(text):
    return identifier_terms(text).split()


def assert_safe(out):
    """Only [a-z0-9]+ runs separated by single spaces: the parser keeps each as one lexeme."""
    if out:
        assert all(SAFE.fullmatch(t) for t in out.split(" ")), out[:200]


@pytest.mark.parametrize(
    "identifier, expected",
    [
        ("searchBlobs", "searchblobs search blobs"),
        ("search_blobs", "searchblobs search blobs"),
        ("SearchBlobs", "searchblobs search blobs"),
        ("search-blobs", "searchblobs search blobs"),
        ("SEARCH_BLOBS", "searchblobs search blobs"),
        ("HTTPServer", "httpserver http server"),
        ("res.clearCookie", "res clearcookie clear cookie"),
        ("getURL2Path", "geturl2path get url url2 path"),
        ("XMLHttpRequest", "xmlhttprequest xml http request"),
        ("__init__", "init"),
        ("$scope", "scope"),
        ("toBase64", "tobase64 to base 64 base64"),
        ("search", "search"),
    ],
)
def test_identifier_examples(identifier, expected):
    out = identifier_terms(identifier)
    assert out == expected
    assert_safe(out)


def test_all_spellings_share_the_whole_and_the_parts():
    spellings = ["searchBlobs", "search_blobs", "SearchBlobs", "search-blobs", "SEARCH_BLOBS"]
    wanted = {"searchblobs", "search", "blobs"}
    for spelling in spellings:
        assert set(terms(spelling)) == wanted
        assert wanted <= set(query_terms(spelling))
    assert {"search", "blobs"} <= set(query_terms("search blobs"))


def test_code_snippet_keeps_order_and_repeats():
    code = "def searchBlobs(repo):\n    return repo.search_blobs(q)  # search\n"
    assert terms(code) == [
        "def",
        "searchblobs",
        "search",
        "blobs",
        "repo",
        "return",
        "repo",
        "searchblobs",
        "search",
        "blobs",
        "search",
    ]


def test_noise_is_dropped():
    assert identifier_terms("x = i-1; y[0] = a + b") == ""  # single chars
    assert identifier_terms("e3b0c44298fc1c149afbf4c8996fb924") == ""  # a hex digest
    assert identifier_terms("sha512-9cbD0Vba1Y1x1kTvJH5dQ2u8F2q3W7mX0==") == "sha512 sha 512"
    assert identifier_terms("404 0x7fffffff 3600") == "404 0x7fffffff 3600"
    assert identifier_terms("a" * 10_000) == ""  # no absurd lexemes
    assert split_identifier("") == ()


def test_non_ascii_and_odd_input():
    assert identifier_terms("größe = café") == "gr caf"  # non-ASCII letters separate
    assert_safe(identifier_terms("größe = café 😀 \x00 \ud800 naïveMatch"))
    assert identifier_terms("") == ""
    assert identifier_terms(None) == ""  # type: ignore[arg-type]
    assert identifier_terms(b"bytes") == ""  # type: ignore[arg-type]


def test_doc_bounds():
    code = "someIdentifier another_one Third " * 100_000  # 3.3 MB, 700k terms unbounded
    out = identifier_terms(code)
    assert len(out.split(" ")) <= MAX_DOC_TERMS
    assert len(out) <= MAX_DOC_CHARS
    assert_safe(out)
    long_terms = ("abcdefghij" * 6 + str(i) + " " for i in range(100_000))
    out = identifier_terms("".join(long_terms))
    assert len(out) <= MAX_DOC_CHARS
    assert_safe(out)
    one_line = "x" * 2_000_000 + " getUser"
    assert identifier_terms(one_line) == "getuser get user"


def test_identifier_terms_speed_sanity():
    code = (
        "export function resolveRedirects(req, res, next) {\n"
        "  const location = res.getHeader('Location');\n"
        "  if (!location || res.statusCode < 300) return next();\n"
        "  this.httpClient.followRedirect(location, { maxRedirects: 10 });\n"
        "}\n"
    )
    text = code * 4000  # ~1 MB
    started = time.process_time()
    for _ in range(3):
        identifier_terms(text)
    elapsed = time.process_time() - started
    assert elapsed < 10  # sanity only; bench/ measures throughput


def test_path_terms():
    assert path_terms("lib/router/route.js") == "lib router route js"
    assert path_terms("src/test_utils.py") == "src testutils test utils py"
    assert path_terms("src/components/SearchBox.tsx") == "src components searchbox search box tsx"
    assert path_terms("") == ""
    assert path_terms(None) == ""  # type: ignore[arg-type]
    assert_safe(path_terms("a/ü/😀/x-y.d.ts"))


def test_query_terms_natural_question():
    assert query_terms("Where are redirects followed?") == ["redirects", "followed", "redirect"]
    assert query_terms("How does searchBlobs handle search_blobs?") == [
        "searchblobs",
        "search",
        "blobs",
        "searchblob",
        "blob",
    ]
    assert query_terms("what is res.clearCookie") == ["res", "clearcookie", "clear", "cookie"]
    assert query_terms("the a is of") == []


ADVERSARIAL = [
    "foo & bar | !baz (qux) <-> quux:* 'quoted' \"dq\" \\ ; --",
    "SELECT * FROM users WHERE id = 1; DROP TABLE users; --",
    "'); select pg_sleep(10); --",
    "😀🔥 emoji only 💥 ✨",
    "\x00\x01\x02 control \x7f",
    "\ud800\udfff lone surrogates",
    ":* & | ! ( ) : * < > '",
    "",
    "   \n\t ",
    "ß" * 1000,
    "A" * 100_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_query_terms_adversarial(text):
    out = query_terms(text)
    assert isinstance(out, list)
    assert len(out) <= MAX_QUERY_TERMS
    assert len(out) == len(set(out))
    assert all(SAFE.fullmatch(t) for t in out)


def test_query_terms_sql_and_operators():
    assert query_terms("SELECT * FROM users WHERE id = 1; DROP TABLE users; --") == [
        "select",
        "users",
        "id",
        "drop",
        "table",
        "user",
    ]
    assert query_terms("foo & bar | !baz (qux) <-> quux:*") == ["foo", "bar", "baz", "qux", "quux"]
    assert query_terms(None) == []  # type: ignore[arg-type]


def test_query_terms_100kb_is_fast_and_capped():
    words = " ".join(f"symbol{i} camelCase{i} snake_case_{i}" for i in range(4000))[:100_000]
    stop = ("the is a of where how what " * 5000)[:100_000]
    mixed = ("😀 & | ! ( ) : * < > ' " * 5000)[:100_000]
    for text in (words, stop, mixed):
        started = time.perf_counter()
        out = query_terms(text)
        elapsed = time.perf_counter() - started
        assert len(out) <= MAX_QUERY_TERMS
        assert elapsed < 0.5  # target < 50 ms; generous for a loaded CI box
    assert len(query_terms(words)) == MAX_QUERY_TERMS


# A toy corpus to measure the crude plural stripping (set intersection ~ an OR tsquery).
CORPUS = {
    "sessions.py": "def resolve_redirect(self, resp, req): location = resp.headers['location']",
    "cookies.py": "class RequestsCookieJar: def set_cookie(self, cookie): self._cookies[cookie]",
    "adapters.py": "def send(self, request, timeout=None): conn = self.get_connection()",
    "utils.py": "def get_encoding_from_headers(headers): ctype = headers.get('content-type')",
    "hooks.py": "def dispatch_hook(key, hooks, hook_data): hooks = hooks or {}",
}
QUESTIONS = {
    "where are redirects resolved": "sessions.py",
    "how are cookies set": "cookies.py",
    "which connections get a timeout": "adapters.py",
    "encodings from the header": "utils.py",
}


def _recall_at_1(with_variants):
    docs = {path: set(terms(text)) for path, text in CORPUS.items()}
    hits = 0
    for question, gold in QUESTIONS.items():
        q = query_terms(question)
        if not with_variants:  # only the terms literally in the question
            literal = set(identifier_terms(question).split())
            q = [t for t in q if t in literal]
        scores = {path: len(docs[path].intersection(q)) for path in docs}
        others = max(score for path, score in scores.items() if path != gold)
        hits += scores[gold] > others  # a tie is a miss
    return hits


def test_plural_variants_improve_matching():
    without, with_ = _recall_at_1(False), _recall_at_1(True)
    assert with_ > without
    assert with_ == len(QUESTIONS)


def test_variants_come_after_originals_and_respect_the_cap():
    out = query_terms("dependencies matches classes status process")
    assert out[:5] == ["dependencies", "matches", "classes", "status", "process"]
    assert {"dependency", "match", "class"} <= set(out)
    assert "statu" not in out and "proces" not in out
    long_question = " ".join(f"word{i}s" for i in range(200))
    assert len(query_terms(long_question)) == MAX_QUERY_TERMS
