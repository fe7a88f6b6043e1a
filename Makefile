# One-line targets calling scripts. `make test` and `make demo` install and
# start everything they need by themselves.
.PHONY: help install db db-stop migrate test lint demo bench expected clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

install:  ## install PostgreSQL + pgvector + plpython3u, .venv/ and .server-python/ (idempotent)
	@scripts/install.sh

db: install  ## create/start the embedded database and migrate it; prints export CODESIFT_DSN=...
	@scripts/db.sh start

db-stop:  ## stop the embedded database
	@scripts/db.sh stop

migrate: install  ## apply pending migrations to CODESIFT_DSN (or the embedded database)
	@.venv/bin/codesift migrate

test: install  ## run every test against a real PostgreSQL (starts the embedded one unless CODESIFT_DSN is set)
	@scripts/test.sh

lint: install  ## sqlfluff over sql/, ruff over the Python
	@scripts/lint.sh

demo: install  ## index a sample repository and ask it a question
	@scripts/demo.sh

bench: install  ## run the benchmarks in bench/ (not part of the tests)
	@scripts/bench.sh

expected: install  ## rewrite tests/expected/surface.txt from a freshly migrated database
	@[ -n "$${CODESIFT_DSN:-}" ] || scripts/db.sh start >/dev/null; .venv/bin/python scripts/surface.py
