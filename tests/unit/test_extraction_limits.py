"""Per-blob limits of extraction (codesift_db.budget): 1 MiB adversarial files stay within
the caps, what is over a cap is counted, and the blob's flag says so.

These assert caps and counts, never times (bench/extraction_adversarial_bench.py prints the
times). Every call that must be deterministic runs with Budget(seconds=None): caps only, no
deadline, so a slow or loaded machine cannot change a result.
"""

from __future__ import annotations

import random
import re

import pytest
from codesift_db import budget, identifiers
from codesift_db.budget import Budget
from codesift_db.ingest import extraction, import_extraction, symbols

MIB = 1 << 20


def fill(unit, size: int = MIB) -> tuple[str, int]:
    """Repeat unit(i) until `size` characters; (text cut to size, units wholly inside)."""
    parts, n, i = [], 0, 0
    while n < size:
        part = unit(i)
        parts.append(part)
        n += len(part)
        i += 1
    whole = i if n == size else i - 1
    return "".join(parts)[:size], whole


def caps_only() -> Budget:
    return Budget(seconds=None)


# --------------------------------------------------------------------------- markdown


def test_a_mebibyte_of_headings_keeps_the_first_sections_and_counts_the_rest():
    text, count = fill(lambda i: f"# heading {i}\n")
    limits = caps_only()
    found = symbols.extract_symbols("HEADINGS.md", text, limits=limits)
    assert len(found) == budget.MAX_SECTIONS
    assert {s["kind"] for s in found} == {"section"}
    assert [s["name"] for s in found[:3]] == ["heading 0", "heading 1", "heading 2"]
    assert found[-1]["start_line"] == budget.MAX_SECTIONS
    # the last line was cut mid-heading: it is a heading too ('# heading 7...')
    total = count + (not text.endswith("\n"))
    assert limits.reason() == f"sections cap 5000 ({total - 5000} more)"


def test_nested_headings_end_where_the_slow_scan_ended_them():
    rng = random.Random(7)
    lines = []
    for i in range(3000):
        roll = rng.random()
        if roll < 0.5:
            lines.append("#" * rng.randint(1, 6) + f" h{i}")
        elif roll < 0.55:
            lines.append("```")  # fences hide the headings inside them
        else:
            lines.append(f"text {i}")
    text = "\n".join(lines) + "\n"
    found = symbols.extract_symbols("doc.md", text, limits=caps_only())
    # the reference: every heading scans the later ones (the old, quadratic rule)
    headings, fence = [], False
    for row, line in enumerate(lines):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            headings.append((row, len(line.split(" ")[0])))
    expected = []
    for i, (row, level) in enumerate(headings):
        end = len(lines) - 1
        for later_row, later_level in headings[i + 1 :]:
            if later_level <= level:
                end = later_row - 1
                break
        expected.append((row + 1, end + 1))
    spans: dict[str, list[int]] = {}  # a section's parts tile its span; names are unique
    for s in found:
        span = spans.setdefault(s["name"], [s["start_line"], s["end_line"]])
        span[0], span[1] = min(span[0], s["start_line"]), max(span[1], s["end_line"])
    assert [tuple(spans[f"h{lines[r - 1].split(' h')[1]}"]) for r, _ in expected] == expected


OLD_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


def test_heading_titles_are_what_the_old_regex_captured():
    rng = random.Random(11)
    alphabet = ["#", " ", "\t", "a", "b", "\r", "\xa0", "##"]
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        m = OLD_HEADING.match(line)
        old = (len(m.group(1)), m.group(2).strip()) if m and (m.group(2) or "").strip() else None
        assert symbols._heading(line) == old, repr(line)


def test_a_heading_with_a_huge_run_of_blanks_is_one_title():
    # the old regex backtracked over every split of the blanks: quadratic in their number
    line = "# a" + " " * 200_000 + "b"
    assert symbols._heading(line) == (1, "a" + " " * 200_000 + "b")
    found = symbols.extract_symbols("x.md", line + "\n", limits=caps_only())
    assert [s["kind"] for s in found] == ["section"]


# --------------------------------------------------------------------------- one-line functions


@pytest.mark.parametrize(
    "path, unit",
    [
        ("many.py", lambda i: f"def f{i}(): pass\n"),
        ("many.js", lambda i: f"function f{i}() {{}}\n"),
    ],
)
def test_a_mebibyte_of_one_line_functions_keeps_the_first_5000(path, unit):
    text, count = fill(unit)
    limits = caps_only()
    found = symbols.extract_symbols(path, text, limits=limits)
    assert len(found) == budget.MAX_SYMBOLS
    assert [s["name"] for s in found[:2]] == ["f0", "f1"]
    assert found[-1]["name"] == f"f{budget.MAX_SYMBOLS - 1}"
    assert {s["kind"] for s in found} == {"function"}
    # the file's last line is cut mid-definition; it may or may not still parse as one
    more = int(re.fullmatch(r"symbols cap 5000 \((\d+) more\)", limits.reason()).group(1))
    assert count - budget.MAX_SYMBOLS <= more <= count + 1 - budget.MAX_SYMBOLS


def test_symbol_text_is_capped_when_nested_symbols_repeat_long_lines():
    # 32 nested functions around 1 MiB of 5,000-character lines: every level repeats the
    # lines as parts, 32 MiB of bodies unless capped
    head = "".join(f"function f{i}() {{\n" for i in range(32))
    line = "  x = '" + "a" * 4990 + "';\n"
    body = line * ((MIB - 2 * len(head)) // len(line))
    text = head + body + "}\n" * 32
    limits = caps_only()
    found = symbols.extract_symbols("nested.js", text, limits=limits)
    total = sum(len(s["body"]) for s in found)
    assert budget.MAX_SYMBOL_TEXT_CHARS <= total < budget.MAX_SYMBOL_TEXT_CHARS + 2 * len(line)
    assert re.fullmatch(r"symbol text cap 16777216 \(\d+ more symbols\)", limits.reason()), (
        limits.reason()
    )


# --------------------------------------------------------------------------- nesting


@pytest.mark.parametrize(
    "path, text",
    [
        ("deep.py", "(" * 200_000),
        ("deep.js", "{" * 200_000),
        ("deep.py", "(\n" * 200_000),
        ("deep.js", "{\n" * 200_000),
        ("deep.c", "{\n" * 200_000),
        ("deep.txt", "{\n" * 200_000),
        ("deep.js", "[\n" * 200_000),
        ("deep.rs", "mod a {\n" * 100_000),
        ("deep.md", "> " * 200_000 + "# x\n"),
        ("deep.js", "function f() {\n" * 75_000),
    ],
)
def test_deeply_nested_brackets_extract_within_the_caps(path, text):
    limits = caps_only()
    found = symbols.extract_symbols(path, text, limits=limits)
    assert len(found) <= budget.MAX_SYMBOLS
    assert sum(len(s["body"]) for s in found) <= budget.MAX_SYMBOL_TEXT_CHARS + MIB
    for s in found:
        assert 1 <= s["start_line"] <= s["end_line"] <= text.count("\n") + 1
    language = symbols.detect_language(path)
    if language in import_extraction.LANGUAGES:
        assert import_extraction.extract_imports(path, text, language, limits) == []


def test_a_definition_under_100k_levels_of_parentheses_is_found():
    depth = 100_000
    text = "(\n" * depth + "handler = function () { return 1 }\n" + ")\n" * depth
    found = symbols.extract_symbols("deep.js", text, limits=caps_only())
    assert [(s["name"], s["start_line"]) for s in found] == [("handler", depth + 1)]


def test_nested_functions_stop_at_max_nesting():
    text = "function f() {\n" * 2000 + "}\n" * 2000
    limits = caps_only()
    found = symbols.extract_symbols("nest.js", text, limits=limits)
    assert {s["qualified_name"].count(".") for s in found} == set(range(symbols.MAX_NESTING))
    assert limits.reason() is None


def test_many_declarators_in_one_statement():
    text, count = fill(lambda i: f"  f{i} = function () {{}},\n", MIB // 4)
    text = "var first = 1,\n" + text.rsplit("\n", 1)[0].rstrip(",") + ";\n"
    limits = caps_only()
    found = symbols.extract_symbols("decl.js", text, limits=limits)
    assert len(found) == budget.MAX_SYMBOLS
    assert found[0]["name"] == "f0" and found[0]["start_line"] == 2


# --------------------------------------------------------------------------- imports


@pytest.mark.parametrize(
    "path, language, unit, first",
    [
        ("imports.py", "python", lambda i: f"import m{i}\n", "m0"),
        ("imports.js", "javascript", lambda i: f"import {{ a{i} }} from './m{i}';\n", "./m0"),
        ("imports.go", "go", lambda i: f'import m{i} "example.com/m{i}"\n', "example.com/m0"),
        ("imports.rs", "rust", lambda i: f"use crate::m{i}::T;\n", "crate::m0"),
    ],
)
def test_a_mebibyte_of_imports_keeps_the_first_5000(path, language, unit, first):
    text, _ = fill(unit)
    if language == "go":
        text = "package p\n" + text
    limits = caps_only()
    found = import_extraction.extract_imports(path, text, language, limits)
    assert len(found) == budget.MAX_IMPORTS
    assert found[0]["module"] == first
    assert [f["line"] for f in found] == sorted(f["line"] for f in found)
    assert re.fullmatch(r"imports cap 5000 \(\d+ more statements\)", limits.reason())


def test_require_deep_in_nesting_keeps_its_names():
    depth = 3000
    text = (
        "function f() {\n" * depth
        + "const { a, b: c } = require('./a');\nx = await import('./b');\n"
        + "}\n" * depth
    )
    found = import_extraction.extract_imports("deep.js", text, "javascript", caps_only())
    assert [(f["module"], f["names"], f["line"]) for f in found] == [
        ("./a", ["a", "b"], depth + 1),
        ("./b", ["x"], depth + 2),
    ]


def test_rust_mod_chains_under_deep_inline_modules():
    depth = 2000
    text = "".join(f"mod m{i} {{\n" for i in range(depth)) + "mod leaf;\n" + "}\n" * depth
    found = import_extraction.extract_imports("src/lib.rs", text, "rust", caps_only())
    chain = [f"m{i}" for i in range(depth - 63, depth)]
    assert [f["module"] for f in found] == ["::".join([*chain, "leaf"])]


# --------------------------------------------------------------------------- terms


def test_terms_are_capped_and_the_rest_counted_in_characters():
    text = "abc " * (MIB // 4)
    limits = caps_only()
    terms = identifiers.identifier_terms(text, limits)
    assert terms.count(" ") + 1 == identifiers.MAX_DOC_TERMS
    indexed = identifiers.MAX_DOC_TERMS * 4  # 'abc ' per term
    assert limits.reason() == f"terms cap 50000 ({len(text) - indexed} chars not indexed)"
    assert identifiers.identifier_terms(text) == terms  # the same without a budget


# --------------------------------------------------------------------------- the blob


def test_extract_blob_of_a_normal_file_is_complete():
    text = '"""Doc."""\n\nimport os\n\n\n# Says hi.\ndef hello(name):\n    return name\n'
    blob = extraction.extract_blob("pkg/hello.py", text, "python", Budget())
    assert blob["limited"] is None
    assert [s["name"] for s in blob["symbols"]] == ["hello"]
    assert blob["symbols"][0]["doc"] == "Says hi."
    assert [i["module"] for i in blob["imports"]] == ["os"]
    assert blob["line_count"] == 8 and "hello" in blob["terms"].split()


def test_extract_blob_flags_every_cap_it_hit():
    text, count = fill(lambda i: f"# heading {i}\n")
    blob = extraction.extract_blob("HEADINGS.md", text, "markdown", caps_only())
    assert len(blob["symbols"]) == budget.MAX_SECTIONS
    path_terms = len(identifiers.path_terms("HEADINGS.md").split())
    assert blob["term_count"] == identifiers.MAX_DOC_TERMS + path_terms
    notes = blob["limited"].split("; ")
    assert [n.split(" cap ")[0] for n in notes] == ["terms", "sections"]
    assert notes[1] == f"sections cap 5000 ({count + 1 - 5000} more)"


def test_an_exhausted_budget_stores_what_was_extracted_and_says_so():
    text, _ = fill(lambda i: f"def f{i}(): pass\n", MIB // 8)
    blob = extraction.extract_blob("many.py", text, "python", Budget(seconds=0))
    assert blob["symbols"] == [] and blob["imports"] == []
    assert blob["limited"].startswith("time budget 0 s: file terms incomplete")
    assert blob["line_count"] == text.count("\n") + 1  # the file itself is still described


def test_a_parse_cancelled_at_the_deadline_does_not_leak_into_the_next_file():
    # tree-sitter resumes a cancelled parse on the parser's next call unless it is reset
    for language, path, unit in (
        ("python", "a.py", "def {}():\n    return 1\n"),
        ("javascript", "a.js", "function {}() {{ return 1 }}\n"),
    ):
        limits = Budget(seconds=0)
        assert symbols.extract_symbols(path, unit.format("first") * 2000, language, limits) == []
        assert limits.reason().startswith("time budget 0 s: symbols")
        other = unit.format("second") * 1000
        found = symbols.extract_symbols(path, other, language, caps_only())
        assert {s["name"] for s in found} == {"second"}
        assert len(found) == 1000


def test_the_session_setting_may_lower_the_budget_and_only_a_superuser_raise_it():
    assert budget.blob_seconds(None) == budget.BLOB_SECONDS
    assert budget.blob_seconds("") == budget.BLOB_SECONDS
    assert budget.blob_seconds("nan") == budget.BLOB_SECONDS
    assert budget.blob_seconds("0.5") == 0.5
    assert budget.blob_seconds("-3") == 0.0
    assert budget.blob_seconds("600") == budget.BLOB_SECONDS
    assert budget.blob_seconds("inf") == budget.BLOB_SECONDS
    assert budget.blob_seconds("600", superuser=True) == 600.0
