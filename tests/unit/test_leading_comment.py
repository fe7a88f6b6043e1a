"""Doc comments above symbols: they feed the lexical terms and the embedding text."""

from codesift_db.ingest.symbols import leading_comment

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
