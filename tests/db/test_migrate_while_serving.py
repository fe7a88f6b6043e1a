"""`codesift migrate` while the old version serves: re-running the idempotent files
rewrites only the functions whose definition or grants change (loader/codesift/migrate.py),
since a redefinition makes every session running that function rebuild it; and an upgrade
that meets busy tables (a deadlock with a worker, a long transaction) rolls back, pauses and
tries again, the other sessions losing nothing."""

import shutil
import threading
import time
from pathlib import Path

import psycopg
from codesift.errors import MigrationError
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


def _waiting_for_a_lock(conn: psycopg.Connection, pid: int) -> bool:
    row = conn.execute(
        "select exists (select from pg_locks where pid = %s and not granted)", (pid,)
    ).fetchone()
    return bool(row and row[0])


def _until(check, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _upgrade_in_a_thread(dsn: str, sql_dir: Path, **kw) -> tuple[threading.Thread, dict]:
    """migrate(sql_dir) on its own connection in a thread; its pid, result or error and
    the busy reports go into the dict returned."""
    out: dict = {"busy": []}
    conn = psycopg.connect(dsn)
    out["pid"] = conn.info.backend_pid

    def run() -> None:
        try:
            with conn:
                out["result"] = migrate(
                    conn, sql_dir=sql_dir, on_busy=lambda *a: out["busy"].append(a), **kw
                )
        except Exception as exc:  # asserted by the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def _deadlock_a_worker(dsn: str, watcher: psycopg.Connection, upgrade: dict) -> None:
    """A worker's transaction that holds code_symbols while the upgrade waits for it, then
    reads settings, which the upgrade locked first: a deadlock, which the upgrade detects.
    The worker's transaction must still commit."""
    with psycopg.connect(dsn) as worker:
        # the session that checks for the deadlock first is the one cancelled: the upgrade's,
        # which waited first, once the worker's own check comes later than any host's delay
        worker.execute("set deadlock_timeout = '60s'")
        worker.execute("lock table codesift.code_symbols in row exclusive mode")
        _until(lambda: _waiting_for_a_lock(watcher, upgrade["pid"]))
        worker.execute("select count(*) from codesift.settings").fetchone()
        worker.execute("insert into codesift.settings (key, value) values ('probe', 'kept')")
    # the connection's block committed: the worker lost nothing


def _installed_with_an_upgrade(conn: psycopg.Connection, tmp_path: Path) -> tuple[str, Path]:
    """The database installed (committed), and a copy of sql/ with one more migration: a
    column added to settings. Its DSN and the copy."""
    migrate(conn)
    conn.commit()
    sql_dir = _copy_sql(tmp_path)
    (sql_dir / "incremental" / "900-a-column.sql").write_text(
        "alter table codesift.settings add column note text;\n"
    )
    return conn.info.dsn, sql_dir


def test_an_upgrade_that_deadlocks_with_a_worker_tries_again(blank_postgresql, tmp_path):
    dsn, sql_dir = _installed_with_an_upgrade(blank_postgresql, tmp_path)
    with psycopg.connect(dsn, autocommit=True) as watcher:
        thread, upgrade = _upgrade_in_a_thread(dsn, sql_dir)
        _deadlock_a_worker(dsn, watcher, upgrade)
        thread.join(60)
        assert "error" not in upgrade, upgrade.get("error")
        assert "incremental/900-a-column.sql" in upgrade["result"].applied
        assert [why for _, _, why in upgrade["busy"]] == ["deadlock detected"]
        assert watcher.execute(
            "select value from codesift.settings where key = 'probe'"
        ).fetchone() == ("kept",)


def test_an_upgrade_out_of_attempts_changes_nothing_and_says_why(blank_postgresql, tmp_path):
    dsn, sql_dir = _installed_with_an_upgrade(blank_postgresql, tmp_path)
    with psycopg.connect(dsn, autocommit=True) as watcher:
        thread, upgrade = _upgrade_in_a_thread(dsn, sql_dir, attempts=1)
        _deadlock_a_worker(dsn, watcher, upgrade)
        thread.join(60)
        error = upgrade.get("error")
        assert isinstance(error, MigrationError)
        assert "in use by other sessions" in str(error) and "Nothing was changed" in str(error)
        assert upgrade["busy"] == []
        columns = watcher.execute(
            "select count(*) from information_schema.columns"
            " where table_schema = 'codesift' and table_name = 'settings' and column_name = 'note'"
        ).fetchone()
        assert columns == (0,)


def test_an_upgrade_waits_out_a_long_transaction(blank_postgresql, tmp_path, monkeypatch):
    from codesift import migrate as migrate_module

    monkeypatch.setattr(migrate_module, "LOCK_TIMEOUT", "200ms")
    monkeypatch.setattr(migrate_module, "PAUSES_S", (0.1,))
    dsn, sql_dir = _installed_with_an_upgrade(blank_postgresql, tmp_path)
    with psycopg.connect(dsn) as reader:
        reader.execute("select count(*) from codesift.settings").fetchone()  # holds it
        # attempts to spare: a slow host may take a while to end the reader's transaction
        thread, upgrade = _upgrade_in_a_thread(dsn, sql_dir, attempts=100)
        _until(lambda: len(upgrade["busy"]) >= 2)  # timed out twice, still trying
    thread.join(60)  # the reader's transaction ended with its block
    assert "error" not in upgrade, upgrade.get("error")
    assert "incremental/900-a-column.sql" in upgrade["result"].applied
    assert {why for _, _, why in upgrade["busy"]} == {"canceling statement due to lock timeout"}
