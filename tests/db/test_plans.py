"""plans.run_generic in a real backend: the statement runs under force_generic_plan (and with
sort=False, enable_sort off), returns what run() returns, and the session's settings are back
afterwards, also when the statement fails; under Citus (its settings present) nothing is
forced."""

import json

import pytest

# the mode a statement sees while it runs, and a value computed from its argument
PROBE = (
    "select current_setting('plan_cache_mode') as mode, current_setting('enable_sort') as sort,"
    " $1::int + 1 as n"
)


def _run_both(db, prelude: str = "", generic_args: str = "") -> dict:
    """run_generic and run of PROBE in one DO block; what each returned, and the mode after."""
    db.execute(
        "do $$\nimport json\nfrom codesift_db import plans\n"
        f"{prelude}\n"
        f"q = {PROBE!r}\n"
        f"out = {{'generic': dict(plans.run_generic(plpy, q, ['int'], [41]{generic_args})[0]),\n"
        "       'custom': dict(plans.run(plpy, q, ['int'], [41])[0])}\n"
        "plpy.execute(plpy.prepare(\"select set_config('test.out', $1, false)\", ['text']),"
        " [json.dumps(out)])\n"
        "$$ language plpython3u"
    )
    return json.loads(db.execute("select current_setting('test.out')").fetchone()[0])


@pytest.mark.parametrize("mode", ["auto", "force_custom_plan"])
def test_a_generic_run_is_generic_and_restores_the_mode(db, mode):
    db.execute(f"set plan_cache_mode = {mode}")
    out = _run_both(db)
    assert out["generic"] == {"mode": "force_generic_plan", "sort": "on", "n": 42}
    assert out["custom"] == {"mode": mode, "sort": "on", "n": 42}
    assert db.execute("show plan_cache_mode").fetchone()[0] == mode


def test_sorts_stay_as_the_session_has_them_unless_a_walk_turns_them_off(db):
    db.execute("set enable_sort = off")
    out = _run_both(db)
    assert out["generic"]["sort"] == "off" and out["custom"]["sort"] == "off"
    assert db.execute("show enable_sort").fetchone()[0] == "off"


def test_a_walk_is_planned_without_sorts_and_restores_them(db):
    """The dense legs' walk (sort=False) is planned with enable_sort off: the index's order
    is taken over sorting the rows; the setting is the session's again after."""
    out = _run_both(db, generic_args=", sort=False")
    assert out["generic"] == {"mode": "force_generic_plan", "sort": "off", "n": 42}
    assert out["custom"]["sort"] == "on"
    assert db.execute("show enable_sort").fetchone()[0] == "on"


def test_a_failing_statement_still_restores_the_mode(db):
    db.execute("set plan_cache_mode = force_custom_plan")
    prelude = (
        "try:\n"
        "    plans.run_generic(plpy, 'select 1 / $1', ['int'], [0])\n"
        "except plpy.SPIError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('the division by zero did not fail')"
    )
    out = _run_both(db, prelude)
    assert out["custom"]["mode"] == "force_custom_plan"
    assert db.execute("show plan_cache_mode").fetchone()[0] == "force_custom_plan"


def test_nothing_is_forced_where_citus_routes_statements(db):
    # Citus routes a statement by its tenant's value: its settings mark the cluster
    db.execute("set citus.propagate_set_commands = 'none'")
    out = _run_both(db, generic_args=", sort=False")
    assert out["generic"] == {"mode": "auto", "sort": "on", "n": 42}
