"""The table of languages (codesift_db.ingest.languages): what each name and extension maps to."""

from codesift_db.ingest import import_extraction, languages, symbols


def test_extensions_file_names_and_aliases():
    detect = languages.detect_language
    assert detect("a/b.py") == detect("a/b.PYI") == "python"
    assert detect("x.mjs") == detect("x.jsx") == "javascript"
    assert (detect("x.mts"), detect("x.tsx"), detect("x.h"), detect("x.h++")) == (
        "typescript",
        "tsx",
        "c",
        "cpp",
    )
    assert detect("lib/Rakefile") == detect("Gemfile") == "ruby"
    assert detect("notes.mdx") == "markdown"
    assert detect("docs/index.rst") == detect("CHANGES.rest") == "rst"
    assert detect("Makefile") is None and detect("x.sql") is None
    assert symbols.detect_language is languages.detect_language
    assert [
        languages.canonical(a) for a in ("JS", "c#", "C_Sharp", "md", "reStructuredText", "Kotlin")
    ] == ["javascript", "csharp", "csharp", "markdown", "rst", "kotlin"]


def test_grammars_and_import_rules():
    assert set(languages.GRAMMARS) == set(languages.BY_NAME) - {"markdown", "rst"}
    assert languages.GRAMMARS["tsx"] == ("tree_sitter_typescript", "language_tsx")
    assert import_extraction.LANGUAGES == (
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "java",
        "rust",
    )
    rules = languages.IMPORT_RULES
    assert rules["typescript"] is rules["javascript"] and rules["tsx"].style == "js"
    assert (rules["go"].max_start_depth, rules["java"].max_start_depth) == (3, 1)
    assert rules["rust"].max_start_depth is None


def test_comment_syntax():
    line = languages.COMMENT_LINE.match
    for text in ("// a", "/// doc", "# a", "-- a", "/* a", " * a", " */"):
        assert line(text), text
    for text in ("#!/usr/bin/env python", "#[derive(Debug)]", "x = 1  # a"):
        assert not line(text), text
