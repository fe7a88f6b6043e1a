"""The languages codesift knows: one table, read by symbol and import extraction.

Each Language names how a file is recognised (extensions, file names, aliases a caller may
pass), the tree-sitter grammar that parses it (a wheel imported lazily: a missing one
disables only its language), and, for the languages whose imports become graph edges, the
import rules (the tree-sitter query that finds the statements, a cheap keyword pre-filter,
how deep top-level-only imports can start, and the style: which extraction handler and
resolver read them). Symbol extraction's per-grammar tree rules are code and stay in
symbols.py (_SPECS).

The comment syntax is one pattern for every file, whatever its language (doc comments are
read from files without a grammar too): `//`, `///`, `/* ... */` and `*` continuation lines
(C family, JS/TS, Go, Java, Rust, C#, PHP), `#` (Python, Ruby, PHP; not `#!` nor Rust's
`#[`), and `--` (SQL, Lua, Haskell).

    detect_language(path) -> a Language's name, or None
    canonical(name) -> the Language's name for a caller-given name or alias
    BY_NAME, GRAMMARS, IMPORT_RULES, COMMENT_LINE, COMMENT_MARKER, SYMBOL_KINDS
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ImportRules:
    """How the import statements of a language are found (import_extraction.py) and
    resolved to paths of a repository (import_resolution.py)."""

    style: str  # python | js | go | java | rust: the handler and resolver family
    query: str  # tree-sitter query capturing the import statements
    keywords: str  # a file with no match of this pattern has no imports and is not parsed
    max_start_depth: int | None = None  # imports start no deeper (top-level-only languages)


@dataclass(frozen=True)
class Language:
    name: str
    extensions: tuple[str, ...] = ()  # lower case, with the dot
    filenames: tuple[str, ...] = ()  # lower case base names without a telling extension
    aliases: tuple[str, ...] = ()  # other names a caller may pass (lower case)
    grammar: tuple[str, str] | None = None  # (tree-sitter wheel, function giving the language)
    imports: ImportRules | None = None


_JS_QUERY = """
(import_statement) @import
(export_statement source: (string)) @export
(call_expression function: (identifier) @fn arguments: (arguments . (string) @arg)
  (#eq? @fn "require")) @require
(call_expression function: (import) arguments: (arguments . (string) @arg)) @dynamic
"""
_JS_KEYWORDS = r"\b(?:import|require|export)\b"
_JS_IMPORTS = ImportRules("js", _JS_QUERY, _JS_KEYWORDS)

LANGUAGES: tuple[Language, ...] = (
    Language(
        "python",
        (".py", ".pyi", ".pyw"),
        aliases=("py",),
        grammar=("tree_sitter_python", "language"),
        imports=ImportRules(
            "python",
            """
(import_statement) @import
(import_from_statement) @from
(call function: [(identifier) @fn (attribute attribute: (identifier) @fn)]
  arguments: (argument_list . (string) @arg)
  (#any-of? @fn "import_module" "__import__")) @dynamic
""",
            r"\bimport|__import__",
        ),
    ),
    Language(
        "javascript",
        (".js", ".mjs", ".cjs", ".jsx"),
        aliases=("js",),
        grammar=("tree_sitter_javascript", "language"),
        imports=_JS_IMPORTS,
    ),
    Language(
        "typescript",
        (".ts", ".mts", ".cts"),
        aliases=("ts",),
        grammar=("tree_sitter_typescript", "language_typescript"),
        imports=_JS_IMPORTS,
    ),
    Language(
        "tsx",
        (".tsx",),
        grammar=("tree_sitter_typescript", "language_tsx"),
        imports=_JS_IMPORTS,
    ),
    Language(
        "go",
        (".go",),
        grammar=("tree_sitter_go", "language"),
        imports=ImportRules("go", "(import_spec) @spec", r"\bimport\b", max_start_depth=3),
    ),
    Language(
        "java",
        (".java",),
        grammar=("tree_sitter_java", "language"),
        imports=ImportRules(
            "java", "(import_declaration) @import", r"\bimport\b", max_start_depth=1
        ),
    ),
    Language(
        "rust",
        (".rs",),
        grammar=("tree_sitter_rust", "language"),
        imports=ImportRules(
            "rust",
            """
(mod_item) @mod
(use_declaration) @use
""",
            r"\b(?:mod|use)\b",
        ),
    ),
    Language("c", (".c", ".h"), grammar=("tree_sitter_c", "language")),
    Language(
        "cpp",
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".inl"),
        aliases=("c++",),
        grammar=("tree_sitter_cpp", "language"),
    ),
    Language(
        "ruby",
        (".rb", ".rake", ".gemspec"),
        filenames=("rakefile", "gemfile", "guardfile"),
        aliases=("rb",),
        grammar=("tree_sitter_ruby", "language"),
    ),
    Language("php", (".php",), grammar=("tree_sitter_php", "language_php")),
    Language(
        "csharp",
        (".cs",),
        aliases=("c_sharp", "c#"),
        grammar=("tree_sitter_c_sharp", "language"),
    ),
    Language("markdown", (".md", ".markdown", ".mdx"), aliases=("md",)),
    Language("rst", (".rst", ".rest"), aliases=("restructuredtext", "rest")),
)

# every kind of symbol extraction stores (symbols/: the per-grammar specs, markdown
# sections, the fallback's blocks): what find_symbol's `kind` and pack_context's `kinds` take
SYMBOL_KINDS = ("function", "method", "class", "interface", "type", "route", "section", "block")

BY_NAME: dict[str, Language] = {lang.name: lang for lang in LANGUAGES}
_BY_EXTENSION = {ext: lang.name for lang in LANGUAGES for ext in lang.extensions}
_BY_FILENAME = {base: lang.name for lang in LANGUAGES for base in lang.filenames}
_ALIASES = {alias: lang.name for lang in LANGUAGES for alias in lang.aliases}

# language -> (grammar module, function returning the language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    lang.name: lang.grammar for lang in LANGUAGES if lang.grammar is not None
}
# language -> its import rules, for the languages whose imports are extracted
IMPORT_RULES: dict[str, ImportRules] = {
    lang.name: lang.imports for lang in LANGUAGES if lang.imports is not None
}

# A line of a comment block (see the module docstring), and the marker read off each line.
COMMENT_LINE = re.compile(r"^\s*(//|#(?![!\[])|--|/\*|\*|\*/)")
COMMENT_MARKER = re.compile(r"(?m)^\s*(///?|#|--|/\*\*?|\*/|\*)\s?")


def detect_language(path: str) -> str | None:
    """Language of a file from its name; None for anything we have no extractor for."""
    try:
        base = os.path.basename(str(path))
        if base.lower() in _BY_FILENAME:
            return _BY_FILENAME[base.lower()]
        return _BY_EXTENSION.get(os.path.splitext(base)[1].lower())
    except Exception:
        return None


def canonical(name: str) -> str:
    """The table's name for a caller-given language name or alias (any case); an unknown
    name comes back lower-cased."""
    name = name.lower()
    return _ALIASES.get(name, name)
