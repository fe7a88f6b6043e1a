"""Adversarial blobs through the real trigger: what is over a per-blob cap is left out and
counted in codesift.blobs.extraction_limited; an exhausted time budget is flagged too, and
the blob is stored either way.

The superuser session raises its budget (codesift.extraction_seconds) so that the caps, not
the machine's speed, decide every count asserted here.
"""

import hashlib

MIB = 1 << 20


def fill(unit) -> tuple[str, int]:
    parts, n, i = [], 0, 0
    while n < MIB:
        part = unit(i)
        parts.append(part)
        n += len(part)
        i += 1
    return "".join(parts)[:MIB], i


def insert(conn, tenant: int, content: str, path: str, language: str | None) -> str:
    sha = hashlib.sha1(content.encode()).hexdigest()
    conn.execute(
        "insert into blobs (tenant_id, sha, size, language, content, path_hint)"
        " values (%s, %s, %s, %s, %s, %s)",
        (tenant, sha, len(content.encode()), language, content, path),
    )
    return sha


def counts(db, tenant: int, sha: str) -> tuple:
    return db.execute(
        "select b.extraction_limited,"
        " (select count(*) from code_symbols s where s.tenant_id = b.tenant_id"
        "  and s.blob_sha = b.sha),"
        " (select count(*) from blob_imports i where i.tenant_id = b.tenant_id"
        "  and i.blob_sha = b.sha),"
        " b.term_count, b.line_count, length(b.content)"
        " from blobs b where b.tenant_id = %s and b.sha = %s",
        (tenant, sha),
    ).fetchone()


def test_adversarial_blobs_are_capped_counted_and_flagged(db, app_connect):
    tenant = db.execute("insert into tenants (name) values ('acme') returning id").fetchone()[0]
    db.execute("set codesift.extraction_seconds = 600")

    headings, count = fill(lambda i: f"# heading {i}\n")
    sha = insert(db, tenant, headings, "docs/HEADINGS.md", "markdown")
    limited, symbols, imports, terms, lines, size = counts(db, tenant, sha)
    assert (symbols, imports, size) == (5000, 0, MIB)
    assert limited.split("; ")[-1] == f"sections cap 5000 ({count - 5000} more)"
    assert limited.startswith("terms cap 50000 (")
    assert lines == headings.count("\n") + 1
    first = db.execute(
        "select name, start_line from code_symbols where blob_sha = %s order by start_line limit 1",
        (sha,),
    ).fetchone()
    assert first == ("heading 0", 1)

    functions, _ = fill(lambda i: f"def f{i}(): pass\n")
    sha = insert(db, tenant, functions, "pkg/many.py", "python")
    limited, symbols, imports, *_ = counts(db, tenant, sha)
    assert (symbols, imports) == (5000, 0)
    assert "; symbols cap 5000 (" in limited

    statements, _ = fill(lambda i: f"import module_{i}\n")
    sha = insert(db, tenant, statements, "pkg/imports.py", "python")
    limited, symbols, imports, *_ = counts(db, tenant, sha)
    assert imports == 5000 and symbols <= 5000
    assert "imports cap 5000 (" in limited

    nested = "{\n" * (MIB // 2)
    sha = insert(db, tenant, nested, "deep.js", "javascript")
    limited, symbols, imports, *_ = counts(db, tenant, sha)
    assert symbols <= 5000 and imports == 0

    normal = "import os\n\n\ndef hello(name):\n    return os.path.join(name)\n"
    sha = insert(db, tenant, normal, "pkg/hello.py", "python")
    assert counts(db, tenant, sha)[:3] == (None, 1, 1)

    # any session may lower its budget: at 0 s the blob is stored, flagged, not extracted
    app = app_connect(tenant)
    app.execute("set codesift.extraction_seconds = 0")
    sha = insert(app, tenant, normal.replace("hello", "bye"), "pkg/bye.py", "python")
    limited, symbols, imports, *_ = counts(db, tenant, sha)
    assert limited.startswith("time budget 0 s: ")
    assert (symbols, imports) == (0, 0)
