"""Vectors of the int8 engine in the store of vectors by content: kept under their own
identity, so a float32 run never takes an int8 vector for a text (nor the reverse), while
the rows still carry the database's model (queries, embedded in float32, read them)."""

import psycopg
import pytest
from codesift.errors import IndexingError
from codesift.indexer import index_repository
from codesift_db.embed import embedders, minilm, minilm_onnx
from codesift_db.embedtext import embedding_key, symbol_text

from tests.conftest import commit, write_files
from tests.db.test_embedding_queue import functions

pytestmark = pytest.mark.skipif(
    not minilm_onnx.available(), reason="onnxruntime, onnx or the model package is not installed"
)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv(minilm_onnx.CACHE_ENV, str(tmp_path / "cache"))


def _index(dsn, root, engine: str, monkeypatch):
    monkeypatch.setenv(embedders.ENGINE_ENV, engine)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set role codesift_loader")
        return index_repository(conn, root, tenant="acme", show_progress=False).embedded


def test_int8_rows_keep_the_model_and_take_the_int8_key(db, dsn, make_repo, monkeypatch):
    root = make_repo({"calc.py": functions(3)})
    assert _index(dsn, root, "onnx-int8", monkeypatch).computed == 4
    row = db.execute(
        "select s.embedding_key, s.embedding_model, b.path_hint, s.kind, s.qualified_name,"
        " s.signature, s.body, s.doc, s.embedding::text"
        " from codesift.code_symbols s join codesift.blobs b"
        " on b.tenant_id = s.tenant_id and b.sha = s.blob_sha order by s.id limit 1"
    ).fetchone()
    assert row is not None
    key, model, *fields, vector = row
    text = symbol_text(*fields)
    assert model == minilm.MODEL_NAME  # what the queue and the query side compare with
    assert key == embedding_key(minilm.MODEL_NAME + minilm_onnx.INT8_SUFFIX, text)
    assert key != embedding_key(minilm.MODEL_NAME, text)
    stored = [float(x) for x in vector.strip("[]").split(",")]
    fp32 = minilm.get_model().encode([text, ""])[0]
    cosine = float(sum(a * b for a, b in zip(stored, fp32, strict=True)))
    assert 0.97 <= cosine < 0.9999  # the int8 engine's vector, not the float32 one


def test_float32_and_int8_never_reuse_each_other(db, dsn, make_repo, monkeypatch):
    root = make_repo({"calc.py": functions(10)})
    assert _index(dsn, root, "onnx-int8", monkeypatch).computed == 11
    # a new blob with 9 unchanged functions: a float32 run computes them all again
    write_files(root, {"calc.py": functions(10, changed=2)})
    commit(root, "change one function")
    fp32 = _index(dsn, root, "onnx", monkeypatch)
    assert (fp32.computed, fp32.reused) == (11, 0)
    # and the next int8 run reuses the int8 vectors, the float32 ones the float32 runs
    write_files(root, {"calc.py": functions(10, changed=4)})
    commit(root, "change another")
    int8 = _index(dsn, root, "onnx-int8", monkeypatch)
    assert (int8.computed, int8.reused) == (2, 9)
    write_files(root, {"calc.py": functions(10, changed=6)})
    commit(root, "and another")
    # numpy and onnx share the float32 keys: computed are compute_2 as first written (the
    # float32 run saw only its changed body), the changed compute_6 and the file
    numpy = _index(dsn, root, "numpy", monkeypatch)
    assert (numpy.computed, numpy.reused) == (3, 8)


def test_an_unknown_engine_stops_the_loader_with_a_clear_error(db, dsn, make_repo, monkeypatch):
    root = make_repo({"calc.py": functions(2)})
    with pytest.raises(IndexingError, match="CODESIFT_EMBED_ENGINE='int4'"):
        _index(dsn, root, "int4", monkeypatch)
