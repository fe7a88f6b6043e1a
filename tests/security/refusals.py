"""How a refused call must look: the right SQLSTATE, no empty hint, the session still usable."""

import psycopg
import pytest


def refused(conn, sql, params=None, sqlstate="22023", says=None) -> psycopg.Error:
    """Run sql, expect it to fail with sqlstate (and a message containing says), cleanly."""
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params)
    error = info.value
    assert error.sqlstate == sqlstate, str(error)
    if says is not None:
        assert says in error.diag.message_primary, error.diag.message_primary
    assert error.diag.message_hint != "None"
    assert "HINT:  None" not in str(error) and "HINT: None" not in str(error)
    assert conn.execute("select 1").fetchone()[0] == 1  # the session goes on
    return error
