"""Upgrading to vectors keyed by content keeps the vectors computed before: migration
012 keys them by the text the loader embedded, so nothing is embedded again."""

import psycopg
from codesift.indexer import index_repository
from codesift.migrate import migrate
from codesift_db.embedtext import embedding_key, file_text, symbol_text

from tests.conftest import _dsn_of, commit, write_files
from tests.db.test_embedding_queue import functions
from tests.db.test_upgrade import sql_at

BEFORE_THE_STORE = "fbf894f"  # the last commit whose migrations end at 011
MODEL = "all-MiniLM-L6-v2"


def test_vectors_computed_before_the_store_are_keyed_and_reused(
    blank_postgresql, make_repo, tmp_path
):
    migrate(blank_postgresql, sql_dir=sql_at(BEFORE_THE_STORE, tmp_path))
    dsn = _dsn_of(blank_postgresql)
    root = make_repo({"calc.py": functions(10)})
    with psycopg.connect(dsn, autocommit=True) as conn:
        index_repository(conn, root, tenant="acme", embed=False, show_progress=False)
        # vectors as the old loader stored them: on the rows, with the model's name
        for table in ("code_symbols", "blobs"):
            conn.execute(
                f"update codesift.{table} set embedding_model = %s,"
                " embedding = array_fill(0.05::real, array[384])::vector",
                (MODEL,),
            )

    migrate(blank_postgresql)

    with psycopg.connect(dsn, autocommit=True) as conn:
        symbols = conn.execute(
            "select s.embedding_key, b.path_hint, s.kind, s.qualified_name, s.signature,"
            " s.body, s.doc from codesift.code_symbols s join codesift.blobs b"
            " on b.tenant_id = s.tenant_id and b.sha = s.blob_sha"
        ).fetchall()
        assert len(symbols) == 10
        for key, *fields in symbols:
            assert key == embedding_key(MODEL, symbol_text(*fields))
        blob = conn.execute(
            "select embedding_key, path_hint, content from codesift.blobs"
        ).fetchone()
        assert blob is not None and blob[0] == embedding_key(MODEL, file_text(blob[1], blob[2]))
        stored = conn.execute("select count(*) from codesift.embeddings").fetchone()
        assert stored is not None and stored[0] == 11

        write_files(root, {"calc.py": functions(10, changed=0)})
        commit(root, "change one function")
        summary = index_repository(conn, root, tenant="acme", show_progress=False)
    assert summary.embedded.computed == 2  # the changed function and the file
    assert summary.embedded.reused == 9
