"""`codesift migrate` while the old version serves: re-running the idempotent files
rewrites only the functions whose definition or grants change (loader/codesift/migrate.py),
since a redefinition makes every session running that function rebuild it."""

import shutil
import threading
from pathlib import Path

import psycopg
from codesift.migrate import SQL_DIR, discover, migrate

FUNCTION_ROWS = (
    "select format('%s(%s)', p.proname, oidvectortypes(p.proargtypes)), p.xmin::text"
    " from pg_proc as p"
    " where p.pronamespace = 'codesift'::regnamespace order by 1"
)


def _copy_sql(tmp_path: Path) -> Path:
    target = tmp_path / "sql"
    shutil.copytree(SQL_DIR, target)
    return target


def _rows(conn: psycopg.Connection) -> dict[str, str]:
    """Each codesift function and the transaction that last wrote its catalog row."""
    return dict(conn.execute(FUNCTION_ROWS).fetchall())


def _rewritten(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The functions of `before` whose catalog row was written since."""
    return sorted(name for name in before if after[name] != before[name])


def _acl(conn: psycopg.Connection, signature: str) -> str:
    row = conn.execute(
        "select coalesce(proacl::text, 'default') from pg_proc where oid = %s::regprocedure",
        (signature,),
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_an_upgrade_that_changes_no_function_rewrites_none(blank_postgresql, tmp_path):
    conn = blank_postgresql
    migrate(conn)
    before = _rows(conn)
    sql_dir = _copy_sql(tmp_path)
    (sql_dir / "incremental" / "900-a-column.sql").write_text(
        "alter table codesift.settings add column note text;\n"
    )
    applied = migrate(conn, sql_dir=sql_dir).applied
    # every idempotent file ran again after the incremental one...
    idempotent = [f"{m.kind}/{m.name}" for m in discover(sql_dir) if m.kind == "idempotent"]
    assert applied == ["incremental/900-a-column.sql", *idempotent]
    # ...and not one function's catalog row was written
    assert _rows(conn) == before


def test_a_changed_function_is_the_only_one_redefined(blank_postgresql, tmp_path):
    conn = blank_postgresql
    migrate(conn)
    before = _rows(conn)
    sql_dir = _copy_sql(tmp_path)
    lookups = sql_dir / "idempotent" / "007-lookups.sql"
    text = lookups.read_text()
    head = text.index("create or replace function codesift.related_files(")
    body = text.index("as $$\n", head) + len("as $$\n")
    lookups.write_text(text[:body] + "# a new comment in the body\n" + text[body:])

    applied = migrate(conn, sql_dir=sql_dir).applied
    assert applied[0] == "idempotent/007-lookups.sql"
    after = _rows(conn)
    assert after.keys() == before.keys()
    assert _rewritten(before, after) == ["related_files(text, text, integer, integer, text)"]
    assert (
        "# a new comment in the body"
        in conn.execute("select prosrc from pg_proc where proname = 'related_files'").fetchone()[0]
    )


def test_a_new_function_gets_the_service_grants_and_not_public(blank_postgresql, tmp_path):
    conn = blank_postgresql
    migrate(conn)
    before = _rows(conn)
    sql_dir = _copy_sql(tmp_path)
    (sql_dir / "idempotent" / "050-probe.sql").write_text(
        "create or replace function codesift.probe() returns integer\n"
        "language sql immutable as $$ select 1 $$;\n"
    )
    applied = migrate(conn, sql_dir=sql_dir).applied
    # the files after the new one ran too: the grants reach the new function
    assert applied[0] == "idempotent/050-probe.sql"
    assert applied[-1] == "idempotent/099-privileges.sql"
    acl = _acl(conn, "codesift.probe()")
    for role in ("codesift_app", "codesift_loader", "codesift_tenant"):
        assert f"{role}=X/" in acl
    assert not any(item.startswith("=X") for item in acl.strip("{}").split(","))
    # the others were left as they were
    after = _rows(conn)
    del after["probe()"]
    assert after == before


def test_a_barred_grant_added_by_hand_is_revoked_and_nothing_else_moves(blank_postgresql):
    conn = blank_postgresql
    migrate(conn)
    conn.execute("grant execute on function codesift.forget_tenant() to codesift_app, public")
    before = _rows(conn)
    conn.execute(
        "update codesift.schema_migrations set checksum = 'x' where name = '099-privileges.sql'"
    )
    migrate(conn)
    acl = _acl(conn, "codesift.forget_tenant()")
    assert "codesift_app=" not in acl
    assert not any(item.startswith("=X") for item in acl.strip("{}").split(","))
    after = _rows(conn)
    assert _rewritten(before, after) == ["forget_tenant()"]


ROUNDS = 3


def test_calls_go_on_while_every_idempotent_file_is_re_run(blank_postgresql, tmp_path):
    """Sessions calling PL/Python functions while migrate re-runs every idempotent file
    (an incremental one was added each round) all succeed, and the server stays up."""
    conn = blank_postgresql
    migrate(conn)
    dsn = conn.info.dsn
    stop = threading.Event()
    errors: list[BaseException] = []
    calls = [0]

    def call() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                while not stop.is_set():
                    c.execute("select codesift.path_terms('src/requests/sessions.py')")
                    calls[0] += 1
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        sql_dir = _copy_sql(tmp_path)
        for i in range(ROUNDS):
            (sql_dir / "incremental" / f"90{i}-a-column.sql").write_text(
                f"alter table codesift.settings add column note{i} text;\n"
            )
            assert len(migrate(conn, sql_dir=sql_dir).applied) > 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert calls[0] > 0
    assert conn.execute("select 1").fetchone() == (1,)
