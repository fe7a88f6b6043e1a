"""pipeline/outlines.py without a database: which definitions an outline lists, how each
line is cut, and what the outline costs."""

import pytest
from codesift_db import identifiers, navigation
from codesift_db.pipeline import outlines
from codesift_db.tokens import estimate_tokens


def _sym(name, start, end, depth=0, kind="function", signature=None, qualified=None):
    return {
        "name": name,
        "qualified_name": qualified or name,
        "kind": kind,
        "depth": depth,
        "start_line": start,
        "end_line": end,
        "signature": signature if signature is not None else f"def {name}(self):",
    }


CLASS = [
    _sym("Orders", 1, 100, kind="class", signature="class Orders:"),
    _sym("refund", 2, 20, 1, "method", qualified="Orders.refund"),
    _sym("ship", 21, 40, 1, "method", qualified="Orders.ship"),
    _sym("inner", 22, 30, 2, qualified="Orders.ship.inner"),
    _sym("audit", 41, 100, 1, "method", qualified="Orders.audit"),
    _sym("make_orders", 101, 110),
]


def test_a_long_signature_is_cut_after_the_name():
    long = _sym(
        "prepare_content_length",
        1,
        9,
        signature="def prepare_content_length(self, body, files=None, json=None, headers=None):",
    )
    line = outlines.short_line(long)
    assert line == "  def prepare_content_length"  # its name alone
    assert estimate_tokens(line) <= outlines.LINE_TOKENS
    short = _sym("f", 1, 2, signature="def f(x):")
    assert outlines.short_line(short) == "  def f(x):"  # as file_outline shows it


def test_a_name_longer_than_a_line_is_never_cut_inside():
    # the agent asks find_symbol by the name: a cut one would name nothing
    name = "test_unicode_literal_in_parametrized_fixture_ids"
    line = outlines.short_line(_sym(name, 1, 2))
    assert estimate_tokens(line) > outlines.LINE_TOKENS
    assert line == f"  def {name}"


def test_a_name_too_long_for_a_line_is_cut_where_the_tokens_run_out():
    name = "_".join(["very"] * 30)  # over NAME_TOKENS: generated code
    line = outlines.short_line(_sym(name, 1, 2))
    assert line.endswith(outlines.CUT) and estimate_tokens(line) <= outlines.LINE_TOKENS


def test_left_out_keeps_what_no_packed_span_holds_whole():
    spans = [(21, 40), (95, 120)]  # ship (and inner) packed; a span cutting audit in half
    names = [s["name"] for s in outlines.left_out(CLASS, spans)]
    assert names == ["Orders", "refund", "audit"]  # make_orders is held whole by 95-120
    assert outlines.left_out(CLASS, [(1, 200)]) == []


def test_enclosing_finds_the_definition_each_sits_in():
    assert outlines.enclosing(CLASS) == [None, 0, 0, 2, 0, None]


def test_names_sharing_the_question_s_words_come_first_then_the_ranking_s_choice():
    wanted = {(41, 100): 0.2, (101, 110): 0.5}  # audit and make_orders, the ranking's
    order = outlines.chosen_first(CLASS, wanted, identifiers.query_terms("ship the orders"))
    # Orders.ship and the function inside it (two of the question's words), then of those
    # with one, the candidates by score (make_orders, audit), then file order
    assert order == [2, 3, 5, 4, 0, 1]
    assert outlines.chosen_first(CLASS, {}, ["refund"])[0] == 1
    # a long question's names weigh more than its prose
    weighted = outlines.chosen_first(CLASS, {}, ["ship", "refund"], [0.2, 1.0])
    assert weighted[:2] == [1, 2]
    header = outlines.header_entry(CLASS[1:])
    assert header is not None and (header["start_line"], header["end_line"]) == (1, 1)
    assert outlines.chosen_first([*CLASS, header], {}, [])[0] == len(CLASS)  # the header first
    assert outlines.header_entry(CLASS) is None  # a definition on line 1: no header


def test_among_the_rest_the_definitions_nearest_the_question_come_first():
    near = {(2, 20): 0.1, (41, 100): 0.6, (101, 110): 0.3}  # refund, audit, make_orders
    # no name shares a word and none is a candidate: the nearest first, the others (no
    # vector) after them in file order
    assert outlines.chosen_first(CLASS, {}, ["parcel"], near=near) == [4, 5, 1, 0, 2, 3]
    # a name sharing the question's words and a candidate still come before
    order = outlines.chosen_first(CLASS, {(101, 110): 0.5}, ["ship"], near=near)
    assert order[:3] == [2, 3, 5] and order[3:5] == [4, 1]
    assert outlines.chosen_first(CLASS, {}, []) == outlines.chosen_first(CLASS, {}, [], near={})


def test_a_cut_outline_shows_the_chosen_lines_with_their_parents_in_file_order():
    header = "# app:orders.py (outline: 6 definitions not packed)"
    order = [3, 5, 0, 1, 2, 4]  # inner first: it brings ship and Orders with it
    full = outlines.render(header, CLASS, order, 10_000)
    assert full is not None and full[2] is False and full[1] == list(range(6))
    # room for the header, inner with its parents and the cut marker, not for make_orders
    lines = [outlines.short_line(s) for s in CLASS]
    room = estimate_tokens("\n".join([header, lines[0], lines[2], lines[3], "  ..."]))
    text, listed, cut = outlines.render(header, CLASS, order, room)
    assert listed == [0, 2, 3] and cut
    assert text.split("\n") == [header, lines[0], lines[2], lines[3], "  ..."]
    assert estimate_tokens(text) <= room
    assert outlines.render(header, CLASS, order, estimate_tokens(header)) is None


def test_the_header_cites_the_file():
    item = {"repository": "shop", "path": "a\nb.py", "blob_sha": "ab" * 20}
    assert outlines.header_line(item, 3) == (
        "# shop:a b.py (outline: 3 definitions not packed) @ blob abababababab"
    )
    assert "1 definition not" in outlines.header_line(item, 1)


def test_files_to_outline_skips_files_packed_whole_and_takes_the_best_first():
    def item(path, kind="function", packed=False, truncated=False):
        return {
            "repository_id": 1,
            "path": path,
            "blob_sha": f"sha-{path}",
            "kind": kind,
            "packed": packed,
            "truncated": truncated,
        }

    ranked = [item("a.py"), item("whole.py", "file"), item("a.py"), item("cut.py", "file")]
    packed = [
        item("whole.py", "file", packed=True),
        item("cut.py", "file", packed=True, truncated=True),
    ]
    assert [f["path"] for f in outlines.files_to_outline(ranked, packed)] == ["a.py", "cut.py"]
    many = [item(f"f{i}.py") for i in range(3 * outlines.OUTLINE_FILES)]
    assert len(outlines.files_to_outline(many, [])) == outlines.OUTLINE_FILES


def test_thousands_of_definitions_cost_no_more_than_the_cap():
    defs = [_sym(f"handler_{i}", 2 * i + 1, 2 * i + 2) for i in range(5000)]
    order = list(range(len(defs)))
    text, listed, cut = outlines.render("# gen.py (outline)", defs, order, 240)
    assert cut and text.endswith(navigation.INDENT + navigation.CUT_MARKER)
    assert estimate_tokens(text) <= 240 and 0 < len(listed) < 100


@pytest.mark.parametrize(
    "line, name, cut",
    [
        ("    @setupmethod def record(self, func):", "record", "    def record"),
        # a setter's decorator names the property: the name after it is the definition's
        (
            "  @static_folder.setter def static_folder(self, value):",
            "static_folder",
            "  def static_folder",
        ),
        ("  func (c *Context) ClientIP() string {", "ClientIP", "  func (c *Context) ClientIP"),
        ("  @mark.parametrize('a b', [1, 2]) def test_x(a, b):", "test_x", "  def test_x"),
        ("  def foo(foo):", "foo", "  def foo"),
        ("  def foo():", "bar", None),  # the name is not on the line
    ],
)
def test_named_cuts_a_line_after_the_definition_s_name(line, name, cut):
    assert outlines.named(line, name) == cut


def test_listable_leaves_out_local_definitions_and_repeated_names():
    symbols = [
        *CLASS,
        _sym("static_folder", 111, 112, 0),
        _sym("static_folder", 113, 114, 0),  # its setter
    ]
    names = [s["qualified_name"] for s in outlines.listable(symbols)]
    # Orders.ship.inner is local to the method it is defined in
    assert names == [
        "Orders",
        "Orders.refund",
        "Orders.ship",
        "Orders.audit",
        "make_orders",
        "static_folder",
    ]
