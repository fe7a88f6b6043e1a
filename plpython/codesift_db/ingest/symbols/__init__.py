"""Symbol extraction: split a source file into functions, classes, methods, routes, sections.

Server-free: PL/Python shims import this package; it only needs the tree-sitter grammar wheels
(each imported lazily, so a missing grammar disables only its language).

    detect_language(path) -> 'python' | 'javascript' | ... | 'markdown' | 'rst' | None
    extract_symbols(path, text, language=None) -> [symbol dict, ...] ordered by start_line

Each symbol is a dict with exactly the keys name, qualified_name, kind, start_line, end_line
(1-based, inclusive), signature, body (the exact lines start..end joined by '\\n'), parent,
part, name_line and docstring. Decisions worth knowing:

* `name_line` is the line of the name (1-based, inside the range): the `def` line of a
  decorated Python function, a method's name line below its annotations, the title line of
  a section (below an rst overline); a fallback block's is the line its name was read from.
  Every part of a split symbol carries the whole definition's name_line.
* `docstring` is a Python function's or class's docstring (comments.clean_docstring), ''
  elsewhere; the comment above a definition is read by extraction (comments.leading_comment)
  and stored after it (comments.symbol_doc).

* Ranges include what is glued to a definition: Python decorators, JS/TS decorators, Rust
  `#[...]` attributes, `export`, C++ `template <...>`, and Java/C#/PHP annotations (which the
  grammars already put inside the declaration). Preceding comments are not included.
* `signature` is the text from the range start up to the body opening (so decorators and
  annotations are part of it), whitespace-collapsed, at most 300 characters.
* `parent` is the qualified name of the enclosing scope: a class, an impl/receiver type, a
  C++/TS namespace, a Rust mod, a JS object literal bound to a name; None at top level.
  Java packages and C#/PHP namespaces are not part of qualified names.
* 'function' becomes 'method' when defined directly in a class-like body (class, interface,
  struct, trait, Rust impl) or qualified by a type (Go receiver, C++ `Class::method`).
  Ruby modules are reported as 'class'. Rust traits, enums and all structs are 'type'.
* Routes: JS `app.get('/x', ...)` (name 'GET /x'); Python `@app.route/get/post...`; Java
  `@GetMapping`-style and JAX-RS annotations; C# `[HttpGet]`/`[Route]`. Python/Java/C# routes
  keep the function's name.
* Splitting: a symbol longer than MAX_SYMBOL_LINES or MAX_SYMBOL_CHARS is emitted ONLY as
  parts 1..n (no part 0) that tile its line range exactly. Cuts prefer the shallowest syntax
  boundary (between methods, then between statements), then blank lines, then any line; a
  comment or decorator stays with what follows it. A single line over the limit stays whole;
  if splitting cannot produce two parts the symbol is emitted whole as part 0.
* Declarations without a body (prototypes, abstract/interface methods) are not symbols.
  Syntax errors: tree-sitter recovers; a definition whose header holds a multi-line ERROR
  (it swallowed the code after it) is dropped, while definitions inside it are kept.
* Documents (markdown, reStructuredText) are sections named by their headings, never by a
  line of their text; one without any heading is windows named by the file's base name.
* Fallback ('block' kind): unknown languages, a missing grammar, a parsed file that yields
  no symbol at all, files over MAX_PARSE_CHARS and minified files (mostly lines over 10,000
  characters) use top-level brace blocks or indentation blocks (whichever covers more lines),
  else windows of FALLBACK_WINDOW_LINES lines. Block names are best effort.
* Never raises: any failure degrades to the fallback, then to an empty list. Tree walks are
  iterative, so thousands of nesting levels are fine; symbols nested deeper than MAX_NESTING
  are not reported, and one over-limit line range is reported once (minified code).
* Bounded work (extraction runs inside the server, where it cannot be cancelled): every pass
  is linear in the file (parents come from the walk's own path, never from node.parent,
  which costs the node's depth); at most budget.MAX_SYMBOLS symbols (budget.MAX_SECTIONS
  markdown sections) and budget.MAX_SYMBOL_TEXT_CHARS characters of bodies are kept, the
  first in file order, the rest counted; with a budget.Budget the walk and the parse stop at
  its deadline, keeping what was found. What was left out is noted in the budget.

The package, one concern a module (names keep their leading underscore: private to the
package; the names tests and other modules read are re-exported here):

    __init__.py    extract_symbols, the entry point: the language, then tree-sitter or
                   markdown, else the fallback
    core.py        the file as rows (_Source), the capped output (_Out), and _emit, which
                   splits an over-limit symbol into parts
    spec.py        what a language's tree rules are made of: _Spec, the _Def/_Container a
                   handler returns, the walk's context (_Ctx) and the node helpers
    walk.py        the tree-sitter walk: parsers, the registry of specs (_SPECS), ranges,
                   signatures and syntax cuts
    python.py, javascript.py (JavaScript, TypeScript, TSX), go.py, java.py, csharp.py,
    rust.py, c.py (C and C++), ruby.py, php.py
                   a language's handlers and its _Spec each
    markdown.py    markdown sections (ATX and setext headings), and the section tree
    rst.py         reStructuredText sections (underlined and overlined titles)
    fallback.py    top-level brace or indentation blocks, else fixed windows
    comments.py    leading_comment, the doc comment above a symbol; clean_docstring;
                   symbol_doc, the two as the stored doc
"""

from __future__ import annotations

import os
import re

from ... import budget
from ..languages import GRAMMARS, canonical, detect_language
from .comments import MAX_DOC_LINES, leading_comment, symbol_doc
from .core import MAX_SIGNATURE_CHARS, MAX_SYMBOL_CHARS, MAX_SYMBOL_LINES, _Out, _Source
from .fallback import FALLBACK_WINDOW_LINES, _fallback_symbols, _windows
from .markdown import _heading as _heading  # read by tests
from .markdown import _markdown_symbols
from .rst import _rst_symbols
from .walk import _PARSERS as _PARSERS  # read by tests
from .walk import MAX_NESTING, MAX_PARSE_CHARS, _parser, _tree_symbols

__all__ = [
    "FALLBACK_WINDOW_LINES",
    "MAX_DOC_LINES",
    "MAX_NESTING",
    "MAX_PARSE_CHARS",
    "MAX_SIGNATURE_CHARS",
    "MAX_SYMBOL_CHARS",
    "MAX_SYMBOL_LINES",
    "detect_language",
    "extract_symbols",
    "leading_comment",
    "symbol_doc",
]

# The documents' languages: their symbols are the sections their headings open.
_SECTIONS = {"markdown": _markdown_symbols, "rst": _rst_symbols}


def extract_symbols(
    path: str, text: str, language: str | None = None, limits: budget.Budget | None = None
) -> list[dict]:
    """All symbols of one file (see the module docstring). Never raises.

    `limits` (a budget.Budget) gives the deadline and receives the notes of what was left
    out; without it the caps still apply and nothing is noted."""
    if limits is None:
        limits = budget.unlimited()
    try:
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).decode("utf-8", "replace")
        if not isinstance(text, str) or not text.strip():
            return []
        limits.phase("symbols")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        src = _Source(path or "", text, lines)
        language = _resolve_language(path, text, language)
        out = _Out(limits)
        try:
            if language in _SECTIONS:
                out.reset("sections", budget.MAX_SECTIONS)
                _SECTIONS[language](src, out)
            elif language in GRAMMARS and _parser(language) is not None:
                _tree_symbols(src, language, out)
        except (Exception, RecursionError):
            out.reset()
        if not out.items and not limits.expired():
            out.reset()
            if language in _SECTIONS:  # a document without headings: its lines name nothing
                _windows(src, out, os.path.basename(src.path) or language)
            else:
                _fallback_symbols(src, out)
        symbols = out.items
        symbols.sort(key=lambda s: (s["start_line"], -s["end_line"], s["part"]))
        out.note()
        return symbols
    except (Exception, RecursionError):
        return []


def _resolve_language(path: str, text: str, language: str | None) -> str | None:
    if language:
        language = canonical(language)
    else:
        language = detect_language(path)
    # .h is C by default; headers that are plainly C++ parse far better with the C++ grammar.
    if language == "c" and str(path).lower().endswith(".h"):
        if _CPP_HINT.search(text[:200_000]):
            language = "cpp"
    return language


# Plainly C++ (possessive: a line of blanks costs its length, not its square).
_CPP_HINT = re.compile(r"^[^\S\n]*+(class|namespace|template\s*+<)\b|::", re.M)
