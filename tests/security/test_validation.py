"""Validation: every bad argument or setting is a clear error with the right SQLSTATE,
raised before any work, and no error carries a literal 'HINT: None'.

Two tenants index a repository of the same name with the same content; the calls run as
the application role with acme's tenant set.
"""

import psycopg
import pytest

from .refusals import refused
from .two_tenants import index_two_tenants

FLOAT_KNOBS = ["hop_decay", "jaccard_threshold", "recency_lambda", "lexical_weight", "dense_weight"]
NON_FINITE = ["NaN", "Infinity", "-Infinity"]
ENTRY_POINTS = {
    # function: the float knobs it takes
    "pack_context": FLOAT_KNOBS,
    "explain_context": FLOAT_KNOBS,
    "hybrid_search": ["recency_lambda", "lexical_weight", "dense_weight"],
}


@pytest.fixture
def two(dsn, make_repo):
    return index_two_tenants(dsn, make_repo)


@pytest.fixture
def acme(two, app_connect):
    return app_connect(two["acme"].id)


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize(
    "function, knob",
    [(f, k) for f, knobs in ENTRY_POINTS.items() for k in knobs],
)
def test_non_finite_knobs_are_invalid_parameter_values(acme, function, knob, value):
    error = refused(
        acme,
        f"select count(*) from codesift.{function}('redirects', repo => 'shared',"
        f" {knob} => %s::float8)",
        (value,),
        says=knob,
    )
    assert "finite" in error.diag.message_primary or "must be" in error.diag.message_primary


@pytest.mark.parametrize(
    "call, sqlstate, says",
    [
        ("pack_context('')", "22023", "non-empty"),
        ("pack_context('x', token_budget => 0)", "22023", "token_budget"),
        ("pack_context('x', graph_depth => 9)", "22023", "graph_depth"),
        ("pack_context('x', hop_decay => 0)", "22023", "hop_decay"),
        ("pack_context('x', jaccard_threshold => 2)", "22023", "jaccard_threshold"),
        ("pack_context('x', recency_lambda => -1)", "22023", "recency_lambda"),
        ("pack_context('x', lexical_weight => 0, dense_weight => 0)", "22023", "weight"),
        ("pack_context('x', lexical_weight => -1)", "22023", "weight"),
        ("pack_context('x', ranking => 'magic')", "22023", "ranking"),
        ("pack_context('x', token_budget => null)", "22023", "must not be null"),
        ("explain_context('x', hop_decay => 1.5)", "22023", "hop_decay"),
        ("hybrid_search('x', k => 0)", "22023", "k must"),
        ("hybrid_search('x', k => null)", "22004", "k must not be null"),
        ("pack_context('x', repo => 'nope')", "42704", "unknown repository"),
        ("pack_context_text('x', token_budget => -5)", "22023", "token_budget"),
    ],
)
def test_bad_arguments_have_the_right_errcode_and_no_none_hint(acme, call, sqlstate, says):
    refused(acme, f"select * from codesift.{call}", None, sqlstate, says)


def test_errors_without_a_hint_have_no_hint_line(acme):
    error = refused(acme, "select * from codesift.pack_context('x', token_budget => 0)")
    assert error.diag.message_hint is None


@pytest.mark.parametrize(
    "raw",
    ["٤٢", "４２", "4٢", "42x", "1e3", "-1", "0x2a", "4 2", "42" + "0" * 30],
)
def test_the_tenant_setting_takes_only_ascii_digits(two, app_connect, raw):
    conn = app_connect()
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (raw,))
    with pytest.raises(psycopg.Error) as info:
        conn.execute("select * from codesift.pack_context('redirects', repo => 'shared')")
    error = info.value
    assert error.sqlstate in ("22023", "22P02"), str(error)
    assert "app.current_tenant_id" in error.diag.message_primary
    assert error.diag.message_hint != "None"
    # and reading a table directly fails the same way, never as another tenant
    with pytest.raises(psycopg.Error) as info:
        conn.execute("select count(*) from codesift.files")
    assert info.value.sqlstate in ("22023", "22P02")


def test_an_ascii_tenant_id_still_works(two, app_connect):
    conn = app_connect()
    conn.execute("select set_config('app.current_tenant_id', %s, false)", (str(two["acme"].id),))
    rows = conn.execute(
        "select path from codesift.pack_context('follow_redirects', repo => 'shared')"
    ).fetchall()
    assert rows and not any("secret_globex" in p for (p,) in rows)


BM25 = (
    "select count(*) from codesift._bm25_symbols(%s, array['redirects'], %s::bigint[], null, null,"
    " null, 10, 1.2, 0.75)"
)


def _runner(db, app_connect, tenant_id):
    allowed = db.execute(
        "select has_function_privilege('codesift_app',"
        " 'codesift._bm25_symbols(bigint,text[],bigint[],text,text,text[],integer,float8,float8,"
        "float8[],integer)',"
        " 'execute')"
    ).fetchone()[0]
    if allowed:
        return app_connect(tenant_id)
    db.execute("select set_config('app.current_tenant_id', %s, false)", (str(tenant_id),))
    return db


@pytest.mark.parametrize(
    "depth", ["abc", "1e99", "1.5", "99999999999", "2000000", "12abc", "'1000'", "1_000"]
)
def test_a_bad_bm25_depth_is_a_clear_error(db, two, acme, app_connect, depth):
    acme.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    refused(
        acme,
        "select count(*) from codesift.pack_context('follow_redirects', repo => 'shared')",
        says="codesift.bm25_depth",
    )
    refused(
        acme,
        "select count(*) from codesift.hybrid_search('follow_redirects', repo => 'shared')",
        says="codesift.bm25_depth",
    )
    conn = _runner(db, app_connect, two["acme"].id)
    conn.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    error = refused(conn, BM25, (two["acme"].id, [two["acme"].repo_id]), says="bm25_depth")
    assert "reset codesift.bm25_depth" in error.diag.message_hint
    # ts_rank_cd does not read the setting
    acme.execute(
        "select count(*) from codesift.pack_context('follow_redirects', repo => 'shared',"
        " ranking => 'ts_rank_cd')"
    )


@pytest.mark.parametrize(
    "depth, documents, reads",
    [
        ("", 0, 2000),
        ("", 100_000, 2000),
        ("", 300_000, 6_000),
        ("", 500_000, 8_000),  # the most a tier's size reads
        ("", 10**15, 8_000),
        ("", 2**63 - 1, 8_000),  # hostile sizes read a clean depth, no error
        ("", -(2**63), 2000),
        ("", None, 2000),
        (" 2500 ", 500_000, 2500),  # a setting is read as it is, whatever the tier's size
        ("-5", 0, 1),
        ("0", 0, 1),
    ],
)
def test_the_bm25_depth_for_a_tier_of_so_many_documents(db, depth, documents, reads):
    db.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    got = db.execute("select codesift._bm25_depth(%s::bigint)", (documents,)).fetchone()[0]
    assert got == reads


@pytest.mark.parametrize("depth, reads", [("", 2000), (" 2500 ", 2500), ("-5", 1), ("0", 1)])
def test_a_good_bm25_depth_is_read(db, acme, depth, reads):
    db.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    assert db.execute("select codesift._bm25_depth()").fetchone()[0] == reads
    acme.execute("select set_config('codesift.bm25_depth', %s, false)", (depth,))
    assert acme.execute(
        "select count(*) from codesift.pack_context('follow_redirects', repo => 'shared')"
    ).fetchone()[0]
