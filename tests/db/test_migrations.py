"""The migration runner against a real, initially empty database."""

import shutil
import subprocess
import threading
from pathlib import Path

import psycopg
import pytest
from codesift.errors import MigrationError
from codesift.migrate import SQL_DIR, discover, migrate


def _copy_sql(tmp_path: Path) -> Path:
    target = tmp_path / "sql"
    shutil.copytree(SQL_DIR, target)
    return target


def test_second_run_applies_nothing(blank_postgresql):
    first = migrate(blank_postgresql)
    assert first.applied == [f"{m.kind}/{m.name}" for m in discover()]
    assert migrate(blank_postgresql).applied == []
    tables = blank_postgresql.execute(
        "select count(*) from pg_tables where schemaname = 'codesift'"
    ).fetchone()[0]
    assert tables >= 8


def test_search_path_and_embedding_dim_recorded(blank_postgresql):
    migrate(blank_postgresql, embedding_dim=256)
    dim = blank_postgresql.execute(
        "select value from codesift.settings where key = 'embedding_dim'"
    ).fetchone()[0]
    assert dim == "256"
    typmod = blank_postgresql.execute(
        "select atttypmod from pg_attribute where attrelid = 'codesift.code_symbols'::regclass"
        " and attname = 'embedding'"
    ).fetchone()[0]
    assert typmod == 256
    with pytest.raises(MigrationError, match="dimension 256, not 384"):
        migrate(blank_postgresql, embedding_dim=384)
    setting = blank_postgresql.execute(
        "select setconfig from pg_db_role_setting s join pg_database d on d.oid = s.setdatabase"
        " where d.datname = current_database()"
    ).fetchone()[0]
    assert "search_path=codesift, public" in setting


def test_edited_applied_migration_is_refused(blank_postgresql, tmp_path):
    sql_dir = _copy_sql(tmp_path)
    migrate(blank_postgresql, sql_dir=sql_dir)
    schema = sql_dir / "incremental" / "001-schema.sql"
    schema.write_text(schema.read_text() + "\n-- an innocent edit\n")
    with pytest.raises(MigrationError, match="was edited after it was applied"):
        migrate(blank_postgresql, sql_dir=sql_dir)


def test_database_ahead_of_code_is_refused(blank_postgresql):
    migrate(blank_postgresql)
    blank_postgresql.execute(
        "insert into codesift.schema_migrations (kind, name, checksum)"
        " values ('incremental', '999-from-the-future.sql', 'x')"
    )
    blank_postgresql.commit()
    with pytest.raises(MigrationError, match="newer codesift"):
        migrate(blank_postgresql)


def test_failed_migration_leaves_database_unchanged(blank_postgresql, tmp_path):
    sql_dir = _copy_sql(tmp_path)
    (sql_dir / "incremental" / "900-broken.sql").write_text(
        "create table codesift.half_done (id int);\nselect no_such_function();\n"
    )
    with pytest.raises(MigrationError, match="900-broken.sql failed"):
        migrate(blank_postgresql, sql_dir=sql_dir)
    exists = blank_postgresql.execute(
        "select to_regclass('codesift.tenants'), to_regclass('codesift.half_done')"
    ).fetchone()
    assert exists == (None, None)


def test_two_installers_serialise(blank_postgresql):
    dsn = blank_postgresql.info.dsn
    results, errors = [], []

    def run():
        try:
            with psycopg.connect(dsn) as conn:
                results.append(migrate(conn).applied)
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(len(r) for r in results) == [0, len(discover())]


def _codesift(*args: str, dsn: str) -> subprocess.CompletedProcess:
    exe = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "codesift"
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        env={"CODESIFT_DSN": dsn, "PATH": "/usr/bin:/bin"},
    )


def test_cli_migrate_twice(blank_postgresql):
    dsn = blank_postgresql.info.dsn
    first = _codesift("migrate", dsn=dsn)
    assert first.returncode == 0, first.stderr
    assert "migration(s) applied" in first.stderr
    second = _codesift("migrate", dsn=dsn)
    assert second.returncode == 0
    assert "nothing to apply" in second.stderr


@pytest.mark.parametrize(
    "dsn, message",
    [
        ("postgresql://nobody@127.0.0.1:1/nodb", "cannot connect to PostgreSQL"),
        # libpq's cause, not only the hint line it indents under it
        ("postgresql://nobody@127.0.0.1:1/nodb", "port 1 failed: Connection refused Is the server"),
        ("this is not a dsn", "not a valid connection string"),
    ],
)
def test_cli_bad_dsn_is_one_clear_message(dsn, message):
    result = _codesift("migrate", dsn=dsn)
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
