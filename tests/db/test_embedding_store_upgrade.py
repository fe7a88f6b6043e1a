"""Upgrading to vectors keyed by content keeps the vectors computed before: migration
012 keys them by the text the loader embedded, so nothing is embedded again."""

import psycopg
from codesift.indexer import index_repository
from codesift.migrate import migrate
from codesift_db.embedtext import embedding_key, file_text, symbol_text

from tests.conftest import _dsn_of, commit, git, write_files
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
    content = (root / "calc.py").read_text()
    sha = git(root, "rev-parse", "HEAD:calc.py").strip()
    with psycopg.connect(dsn, autocommit=True) as conn:
        # the blob as the loader of that release pushed it (the trigger extracts symbols),
        # with vectors as it stored them: on the rows, with the model's name
        tenant = conn.execute(
            "insert into codesift.tenants (name) values ('acme') returning id"
        ).fetchone()[0]
        conn.execute(
            "insert into codesift.blobs (tenant_id, sha, size, language, content, path_hint)"
            " values (%s, %s, %s, 'python', %s, 'calc.py')",
            (tenant, sha, len(content.encode()), content),
        )
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

        # the current loader: the stored blob and its vectors are reused as they are
        unchanged = index_repository(conn, root, tenant="acme", show_progress=False)
        assert unchanged.new_blobs == 0 and unchanged.embedded.computed == 0
        write_files(root, {"calc.py": functions(10, changed=0)})
        commit(root, "change one function")
        summary = index_repository(conn, root, tenant="acme", show_progress=False)
    assert summary.embedded.computed == 2  # the changed function and the file
    assert summary.embedded.reused == 9
