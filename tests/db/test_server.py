"""The server codesift runs on: extensions and PL/Python's server-side packages."""


def test_extensions_installed(db):
    versions = dict(db.execute("select extname, extversion from pg_extension").fetchall())
    assert "plpython3u" in versions
    major, minor = (int(x) for x in versions["vector"].split(".")[:2])
    assert (major, minor) >= (0, 8)


def test_plpython_imports_server_side_packages(db):
    db.execute(
        """
        create function pg_temp.server_python() returns text language plpython3u as $$
        import numpy, tree_sitter, tokenizers, codesift_db
        return numpy.__version__
        $$
        """
    )
    assert db.execute("select pg_temp.server_python()").fetchone()[0].startswith("2.")
