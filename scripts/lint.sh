#!/usr/bin/env bash
# sqlfluff lints sql/ and the statements the server's Python runs
# (plpython/codesift_db/sql/; it cannot see inside $$ bodies, so big queries live
# as begin-atomic SQL functions or in those files); ruff lints and format-checks
# the Python; mypy type-checks plpython/ and loader/ ([tool.mypy] in pyproject.toml);
# plpgsql_check checks the PL/pgSQL bodies (scripts/plpgsql_check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/sqlfluff lint sql/ plpython/codesift_db/sql/
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
scripts/plpgsql_check.sh
