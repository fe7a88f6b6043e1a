"""Sections of documents (markdown, reStructuredText) are named by their headings: never by a
line of their text, a bullet least of all. Real-world-like READMEs, changelogs and Sphinx
pages."""

from codesift_db.ingest.symbols import extract_symbols


def _sections(path: str, text: str) -> list[tuple]:
    """(qualified name, kind, start_line, end_line, name_line) of each symbol."""
    return [
        (s["qualified_name"], s["kind"], s["start_line"], s["end_line"], s["name_line"])
        for s in extract_symbols(path, text)
    ]


def _names(path: str, text: str) -> set[str]:
    return {s["name"] for s in extract_symbols(path, text)}


# a README in setext style: the title and its sections underlined
README = """\
Requests
========

[![Downloads](https://static.pepy.tech/badge/requests/month)](https://pepy.tech/project/requests)

Requests is a simple, yet elegant, HTTP library.

- Keep-Alive & Connection Pooling
- International Domains and URLs
  (continued on a second line)
- Sessions with Cookie Persistence

Installing Requests
-------------------

```console
$ python -m pip install requests
---
```

| Feature | Supported |
|---------|-----------|
| HTTP/2  | no        |

Supported Features & Best-Practices
-----------------------------------

* Automatic Decompression
* Basic & Digest Authentication
---

A paragraph of two lines
is not a title.
---

## Cloning the repository

Done.
"""


def test_a_setext_readme_is_named_by_its_headings():
    assert _sections("README.md", README) == [
        ("Requests", "section", 1, 38, 1),
        ("Requests > Installing Requests", "section", 13, 24, 13),
        ("Requests > Supported Features & Best-Practices", "section", 25, 35, 25),
        ("Requests > Cloning the repository", "section", 36, 38, 36),
    ]
    symbols = extract_symbols("README.md", README)
    assert symbols[1]["signature"] == "Installing Requests"


# keep-a-changelog: ATX headings, bullets under them, YAML front matter
CHANGELOG = """\
---
title: Changelog
---

# Changelog

All notable changes to this project will be documented in this file.

## [Unreleased]

### Added
- New visual identity by [@tylerfortune8](https://github.com/tylerfortune8).
- Version navigation.

### Fixed
- Fix typos in Ukrainian translation.
  Second line of the item.

## [1.1.1] - 2023-03-05
- Arabic translation (#444).
"""


def test_a_changelog_has_no_bullet_sections():
    assert _sections("CHANGELOG.md", CHANGELOG) == [
        ("Changelog", "section", 5, 20, 5),
        ("Changelog > [Unreleased]", "section", 9, 18, 9),
        ("Changelog > [Unreleased] > Added", "section", 11, 14, 11),
        ("Changelog > [Unreleased] > Fixed", "section", 15, 18, 15),
        ("Changelog > [1.1.1] - 2023-03-05", "section", 19, 20, 19),
    ]


def test_a_document_without_headings_is_named_by_its_file():
    notes = "- Fix the build\n  on Windows.\n- Bump the version\n  to 2.0.\n" * 20
    for path in ("docs/NOTES.md", "docs/notes.rst"):
        found = extract_symbols(path, notes)
        assert {s["name"] for s in found} == {path.rsplit("/", 1)[1]}
        assert [(s["kind"], s["start_line"]) for s in found] == [("block", 1), ("block", 61)]


# click's CHANGES.rst: underlined versions, bullets with continuation lines
CHANGES = """\
.. currentmodule:: click

Version 8.1.8
-------------

Unreleased

-   Fix an issue with type hints for ``click.open_file()``. :issue:`2717`
-   Fix issue where error message for invalid ``click.Path`` displays on
    separate lines. :issue:`2697`


Version 8.1.7
-------------

Released 2023-08-17

-   Fix issue with regex flags in shell completion. :issue:`2581`
"""


def test_an_rst_changelog_is_named_by_its_versions():
    assert _sections("CHANGES.rst", CHANGES) == [
        ("Version 8.1.8", "section", 3, 12, 3),
        ("Version 8.1.7", "section", 13, 18, 13),
    ]
    names = _names("CHANGES.rst", CHANGES)
    assert not names & {"Fix", "Released", "Unreleased", "currentmodule"}


# a Sphinx page: an overlined title, directives, a literal block, a transition, lists above
# adornment lines, a field list, a role in a title, an underline too short for its title
INDEX = """\
.. rst-class:: hide-header

==================
 Welcome to Flask
==================

.. image:: _static/flask-horizontal.png
    :align: center

Welcome to Flask's documentation.

User's Guide
------------

Flask provides configuration and conventions::

    Not a title
    -----------

.. toctree::
   :maxdepth: 2

   installation

- a list item
-------------

:Author: Armin
--------------

----------

API Reference
-------------

:mod:`flask.json` helpers
~~~~~~~~~~~~~~~~~~~~~~~~~

text

Short
~~

Too short to be a title.

Additional Notes
----------------

Design notes.
"""


def test_a_sphinx_page_is_named_by_its_titles():
    assert _sections("docs/index.rst", INDEX) == [
        ("Welcome to Flask", "section", 3, 49, 4),
        ("Welcome to Flask > User's Guide", "section", 12, 32, 12),
        ("Welcome to Flask > API Reference", "section", 33, 45, 33),
        ("Welcome to Flask > API Reference > :mod:`flask.json` helpers", "section", 36, 45, 36),
        ("Welcome to Flask > Additional Notes", "section", 46, 49, 46),
    ]
    found = extract_symbols("docs/index.rst", INDEX)
    assert found[0]["signature"] == "Welcome to Flask"


def test_rst_levels_follow_the_order_styles_appear_in():
    text = "Part\n####\n\nChapter\n*******\n\nSection\n=======\n\nOther chapter\n*************\n"
    assert [s[0] for s in _sections("book.rst", text)] == [
        "Part",
        "Part > Chapter",
        "Part > Chapter > Section",
        "Part > Other chapter",
    ]


def test_a_title_follows_a_title_without_a_blank_line():
    text = "Title\n=====\nSubtitle\n--------\ntext\n"
    assert [s[0] for s in _sections("a.rst", text)] == ["Title", "Title > Subtitle"]
    text = "# Title\nSubtitle\n--------\ntext\n"
    assert [s[0] for s in _sections("a.md", text)] == ["Title", "Title > Subtitle"]
