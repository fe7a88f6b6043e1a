"""The calls of the best candidates (pipeline/callees.py) against real indexed repositories:
a helper that shares no word with the question is packed because the matched function calls
it; a call never reaches another tenant's code."""

import psycopg
from codesift.indexer import index_repository
from codesift_db import plans
from codesift_db.pipeline import callees

CHECKOUT_PY = '''"""Checkout."""
from app.rounding import settle_amount


def checkout_invoice_total(invoice):
    """The invoice total charged to the customer at checkout."""
    subtotal = sum(line.price for line in invoice.lines)
    audit_trail_total(invoice, subtotal)
    return settle_amount(subtotal, invoice.currency)
'''
ROUNDING_PY = '''"""Money."""
from decimal import ROUND_HALF_EVEN, Decimal


def settle_amount(value, currency):
    quantum = Decimal(10) ** -currency.digits
    return value.quantize(quantum, ROUND_HALF_EVEN)
'''
FILLER = "".join(f"def unrelated_{i}(x):\n    return x * {i}\n\n\n" for i in range(30))
ACME = {"app/checkout.py": CHECKOUT_PY, "app/rounding.py": ROUNDING_PY, "app/misc.py": FILLER}
# another tenant's repository of the same name defines what acme's checkout calls but lacks
GLOBEX = {
    "app/ledger.py": "def audit_trail_total(invoice, total):\n    return ('secret', total)\n",
    "app/misc.py": FILLER,
}
QUESTION = "checkout invoice total charged to the customer is wrong"


def _index(dsn, make_repo, files, tenant):
    root = make_repo(files, name=f"billing-{tenant}")
    with psycopg.connect(dsn) as conn:
        index_repository(
            conn, root, name="billing", tenant=tenant, embed=False, show_progress=False
        )


def _explain(conn, off=""):
    conn.execute("select set_config('codesift.retrieval_off', %s, false)", (off,))
    return conn.execute(
        "select path, symbol, why->>'called_by', packed from codesift.explain_context(%s,"
        " repo => 'billing', graph_depth => 0, dense_weight => 0, query_embedding => null)",
        (QUESTION,),
    ).fetchall()


def _tenant(db, name):
    return db.execute("select id from codesift.tenants where name = %s", (name,)).fetchone()[0]


def test_a_called_helper_is_packed_and_says_who_called_it(db, dsn, make_repo, app_connect):
    _index(dsn, make_repo, ACME, "acme")
    conn = app_connect(_tenant(db, "acme"))
    rows = _explain(conn)
    helper = [r for r in rows if r[1] == "settle_amount"]
    assert helper == [("app/rounding.py", "settle_amount", "checkout_invoice_total", True)]
    # switched off, nothing the question's words miss reaches the pack
    assert not any(r[0] == "app/rounding.py" for r in _explain(conn, "calls"))


def test_a_call_never_reaches_another_tenants_definition(db, dsn, make_repo, app_connect):
    _index(dsn, make_repo, GLOBEX, "globex")
    _index(dsn, make_repo, ACME, "acme")
    conn = app_connect(_tenant(db, "acme"))
    rows = _explain(conn)
    assert any(r[1] == "settle_amount" for r in rows)  # the calls were followed
    assert not any(r[0] == "app/ledger.py" or r[1] == "audit_trail_total" for r in rows)


def test_a_call_never_reaches_another_repository_of_the_tenant(db, dsn, make_repo, app_connect):
    # the same tenant's other repository defines what checkout calls but its own lacks
    root = make_repo({"app/ledger.py": GLOBEX["app/ledger.py"]}, name="ledger-acme")
    with psycopg.connect(dsn) as conn:
        index_repository(conn, root, name="ledger", tenant="acme", embed=False, show_progress=False)
    _index(dsn, make_repo, ACME, "acme")
    rows = _explain(app_connect(_tenant(db, "acme")))
    assert any(r[1] == "settle_amount" for r in rows)
    assert not any(r[1] == "audit_trail_total" for r in rows)


def test_a_symbol_calling_thousands_of_names_adds_a_bounded_few(db, dsn, make_repo, app_connect):
    # every name it calls is defined once in the repository: all resolvable
    names = [f"step_{i:04d}" for i in range(3000)]
    body = "".join(f"    step_{i:04d}(order)\n" for i in range(3000))
    files = {
        "app/checkout.py": '"""Checkout."""\n\n\ndef checkout_invoice_total(order):\n'
        '    """The invoice total charged to the customer at checkout."""\n' + body,
        "app/steps.py": "".join(f"def {n}(order):\n    return order\n\n\n" for n in names),
    }
    _index(dsn, make_repo, files, "acme")
    rows = _explain(app_connect(_tenant(db, "acme")))
    reached = [r for r in rows if r[2] is not None]  # only checkout.py calls anything
    assert 0 < len(reached) <= callees.CALLEES_PER_SEED * callees.SEEDS_PER_FILE


def test_a_method_defined_in_hundreds_of_files_resolves_in_the_callers_own(
    db, dsn, make_repo, app_connect
):
    # `settle_amount` is a method of 120 other classes whose files sort before the caller's:
    # the call on self still means the caller's own
    other = "class Ledger{i}:\n    def settle_amount(self, value):\n        return value\n"
    files = {f"app/aa_{i:03d}.py": other.format(i=i) for i in range(120)}
    files["app/zz_checkout.py"] = (
        "class Checkout:\n"
        "    def checkout_invoice_total(self, invoice):\n"
        '        """The invoice total charged to the customer at checkout."""\n'
        "        return self.settle_amount(sum(invoice.lines))\n\n"
        "    def settle_amount(self, value):\n"
        "        return round(value, 2)\n\n"
        # too big to pack whole: its methods are candidates only as the ranking finds them
        + "".join(
            f"    def unrelated_{i}(self, x):\n        return x * {i}\n\n" for i in range(300)
        )
    )
    _index(dsn, make_repo, files, "acme")
    rows = _explain(app_connect(_tenant(db, "acme")))
    called = {(r[0], r[1]) for r in rows if r[2] == "Checkout.checkout_invoice_total"}
    assert called == {("app/zz_checkout.py", "Checkout.settle_amount")}


def test_a_helper_defined_in_many_files_is_read_a_bounded_few_times(
    db, dsn, make_repo, app_connect
):
    # `settle_amount` is a top-level function of 60 files: a bare call to it is ambiguous
    # whichever of them the lookup reads, so it reads at most a few dozen, not all
    helper = "def settle_amount(value):\n    return value\n"
    files = {f"app/aa_{i:03d}.py": helper for i in range(60)}
    files["app/checkout.py"] = CHECKOUT_PY.replace("from app.rounding import settle_amount\n", "")
    _index(dsn, make_repo, files, "acme")
    conn = app_connect(_tenant(db, "acme"))
    types = ", ".join(callees.CALLED_TYPES)
    conn.execute(f"prepare called ({types}) as {plans.load('called_symbols')}")
    repository = conn.execute("select id from codesift.repositories").fetchone()[0]
    rows = conn.execute(
        f"execute called(array[{int(repository)}], array['settle_amount'], array[]::text[],"
        " array[]::bigint[], array[]::text[], array['settle_amount'], current_tenant_id(),"
        f" {callees.BARE_READ})"
    ).fetchall()
    assert 0 < len(rows) <= callees.BARE_READ
    # and none is taken for the one the call means
    reached = [r for r in _explain(conn) if r[2] is not None]
    assert not any(r[1] == "settle_amount" for r in reached)
