#!/usr/bin/env bash
# sqlfluff lints sql/ (it cannot see inside $$ bodies, so big queries live as
# begin-atomic SQL functions); ruff lints and format-checks the Python.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/sqlfluff lint sql/
.venv/bin/ruff check .
.venv/bin/ruff format --check .
