"""A symbol's doc: the comment above it and, in Python, its docstring; it feeds the lexical
terms and the embedding text."""

import inspect

from codesift_db import embedtext
from codesift_db.ingest import extraction
from codesift_db.ingest.symbols import MAX_DOC_LINES, leading_comment
from codesift_db.ingest.symbols.comments import clean_docstring

JS = """x = 1;
/**
 * Transfer the file at the given path.
 * @public
 */

res.sendFile = function sendFile(path) {};
"""
GO = """package gin

// ClientIP implements one best effort algorithm
// to return the real client IP.
func (c *Context) ClientIP() string {
"""
PY = """import os

value = 1
def f():
    pass
"""


def test_jsdoc_block_with_a_blank_line_before_the_definition():
    assert leading_comment(JS.split("\n"), 7) == "Transfer the file at the given path.\n@public"


def test_go_line_comments():
    doc = leading_comment(GO.split("\n"), 5)
    assert doc == "ClientIP implements one best effort algorithm\nto return the real client IP."


def test_no_comment_and_shebang_and_first_line():
    assert leading_comment(PY.split("\n"), 4) == ""
    assert leading_comment(["#!/usr/bin/env python", "def f():"], 2) == ""
    assert leading_comment(["def f():"], 1) == ""


# --------------------------------------------------------------------------- docstrings

DOCSTRINGS = '''"""A module docstring: no symbol holds it."""
import functools


# Kept for the cache.
@functools.lru_cache()
def cached(fn):
    # a comment before the docstring
    r"""Cache *fn*.

    The second paragraph,
      indented further.
    """
    return fn


class Store:
    \'\'\'A store of blobs.\'\'\'

    def size(self):
        """One line."""
        return 1

    def not_doc(self):
        f"""an f-string is no docstring"""

    def bytes_doc(self):
        b"""nor bytes"""

    def later(self):
        x = 1
        """a string after a statement is no docstring"""


# Only a comment.
def commented():
    return 2
'''


def _docs(source: str, path: str = "store.py") -> dict[str, str]:
    found = extraction.extract_blob(path, source, "python")["symbols"]
    return {s["qualified_name"]: s["doc"] for s in found if s["part"] <= 1}


def test_a_python_docstring_is_the_doc_then_the_comment_above():
    docs = _docs(DOCSTRINGS)
    assert docs == {
        "cached": (
            "Cache *fn*.\n\nThe second paragraph,\n  indented further.\n\nKept for the cache."
        ),
        "Store": "A store of blobs.",
        "Store.size": "One line.",
        "Store.not_doc": "",
        "Store.bytes_doc": "",
        "Store.later": "",
        "commented": "Only a comment.",
    }


def test_a_docstring_is_capped_and_cleaned_like_inspect_cleandoc():
    long_doc = "\n".join(f"    line {i}" for i in range(200))
    source = f'def f():\n    """Summary.\n\n{long_doc}\n    """\n    return 1\n'
    doc = _docs(source)["f"]
    assert doc.split("\n")[:3] == ["Summary.", "", "line 0"]
    assert len(doc.split("\n")) == MAX_DOC_LINES
    for raw in (
        "\n\n  Title.\n\n    body\n      more\n  ",
        "Summary.\n\n    body\n      more\n    ",
        "\tTabbed.\n\tbody",
        "",
    ):
        assert clean_docstring(raw) == inspect.cleandoc(raw)


def test_the_docstring_feeds_the_terms_and_the_embedding_text():
    source = 'def f():\n    """Resolve widget aliases."""\n    return 1\n'
    (sym,) = extraction.extract_blob("w.py", source, "python")["symbols"]
    assert sym["doc"] == "Resolve widget aliases."
    # the doc's terms are counted besides the body's
    assert sym["terms"].split().count("aliases") == 2
    text = embedtext.symbol_text(
        "w.py", sym["kind"], sym["qualified_name"], sym["signature"], sym["body"], sym["doc"]
    )
    assert text.split("\n")[:2] == ["w.py function f", "Resolve widget aliases."]


def test_jsdoc_go_and_javadoc_comments_stay_the_doc():
    js = "/**\n * Sends the file.\n * @public\n */\nexport function send(path) {\n  return 1;\n}\n"
    (sym,) = extraction.extract_blob("send.js", js, "javascript")["symbols"]
    assert sym["doc"] == "Sends the file.\n@public"
    java = "/**\n * Gets it.\n */\n@Override\npublic String get() {\n    return x;\n}\n"
    (sym,) = extraction.extract_blob("A.java", f"class A {{\n{java}}}\n", "java")["symbols"][1:]
    assert sym["doc"] == "Gets it."
    go = "package x\n\n// Serve serves.\nfunc Serve() error {\n\treturn nil\n}\n"
    (sym,) = extraction.extract_blob("x.go", go, "go")["symbols"]
    assert sym["doc"] == "Serve serves."
