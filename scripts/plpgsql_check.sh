#!/usr/bin/env bash
# Lints the bodies of codesift's PL/pgSQL functions with the plpgsql_check extension
# (sqlfluff cannot see inside $$ bodies): a scratch database on CODESIFT_DSN's server
# (unset: the embedded cluster, started if needed) is migrated, every plpgsql function of
# schema codesift is checked, and any error or warning fails. Skipped, saying so, where
# the server has no plpgsql_check (Debian: apt-get install postgresql-NN-plpgsql-check).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${CODESIFT_DSN:-}" ]; then
  eval "$(scripts/db.sh start)"
fi
psql_() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
if [ -z "$(psql_ "$CODESIFT_DSN" -Atc "select 1 from pg_available_extensions where name = 'plpgsql_check'")" ]; then
  echo "plpgsql_check: not installed on this server, PL/pgSQL bodies not checked" \
    "(apt-get install postgresql-NN-plpgsql-check)"
  exit 0
fi
db="codesift_plpgsql_check_$$"
scratch=$(.venv/bin/python - "$db" <<'PY'
import sys
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from codesift.db import current_dsn
print(make_conninfo(**{**conninfo_to_dict(current_dsn()), "dbname": sys.argv[1]}))
PY
)
trap 'psql_ "$CODESIFT_DSN" -c "drop database if exists $db" >/dev/null' EXIT
psql_ "$CODESIFT_DSN" -c "create database $db" >/dev/null
out=$(CODESIFT_DSN=$scratch .venv/bin/codesift migrate 2>&1) || { echo "$out"; exit 1; }
psql_ "$scratch" -c "create extension plpgsql_check" >/dev/null
found=$(psql_ "$scratch" -At -F ' | ' -c "
  select p.oid::regprocedure, c.lineno, c.level, c.message
  from pg_proc as p
  inner join pg_namespace as n on p.pronamespace = n.oid
  inner join pg_language as l on p.prolang = l.oid,
  lateral plpgsql_check_function_tb(p.oid, fatal_errors => false, extra_warnings => false) as c
  where n.nspname = 'codesift' and l.lanname = 'plpgsql' and p.prorettype <> 'trigger'::regtype")
checked=$(psql_ "$scratch" -Atc "
  select count(*) from pg_proc as p
  inner join pg_namespace as n on p.pronamespace = n.oid
  inner join pg_language as l on p.prolang = l.oid
  where n.nspname = 'codesift' and l.lanname = 'plpgsql' and p.prorettype <> 'trigger'::regtype")
if [ -n "$found" ]; then
  echo "plpgsql_check found problems in codesift's PL/pgSQL functions:"
  echo "$found"
  exit 1
fi
echo "plpgsql_check: $checked PL/pgSQL functions, no errors or warnings"
