#!/usr/bin/env bash
# Dockerfile.postgres entrypoint: initialise the cluster once, run codesift's
# migrations (the same runner as `codesift migrate`) at every start, then serve in
# the foreground.
#
# The roles the services log in as, codesift_app (the MCP HTTP server) and
# codesift_loader (index, worker, token), get the passwords in CODESIFT_APP_PASSWORD
# and CODESIFT_LOADER_PASSWORD (or *_FILE) at every start; unset, they keep theirs
# (none at first: they cannot log in over TCP).
#
# Never serves a superuser without a password: the first start needs
# POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE, e.g. a Docker secret), every
# connection (socket or TCP) authenticates with scram-sha-256, and the server
# refuses to start when POSTGRES_HOST_AUTH_METHOD asks for anything else or
# when pg_hba.conf has a trust rule.
#
# TLS: when a certificate and its key are mounted (TLS_CERT_FILE and
# TLS_KEY_FILE, default /certs/server.crt and /certs/server.key) the server
# turns ssl on and TCP connections must use TLS (hostnossl is rejected). The
# key is copied into the data folder with mode 0600 for the postgres user, so
# the mounted files only need to be readable by it. Without them it serves
# plain TCP and says so (passwords still never cross the wire: SCRAM).
#
# pg_hba.conf is written on every start from these settings.
set -euo pipefail

die() { printf 'codesift-postgres: %s\n' "$*" >&2; exit 1; }
say() { printf 'codesift-postgres: %s\n' "$*" >&2; }

case "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" in
  scram-sha-256) ;;
  *) die "POSTGRES_HOST_AUTH_METHOD=${POSTGRES_HOST_AUTH_METHOD} is refused: this image only serves scram-sha-256 (set POSTGRES_PASSWORD)" ;;
esac

# secret NAME: $NAME_FILE's first line, else $NAME, else nothing.
secret() {
  local file_var="${1}_FILE"
  if [ -n "${!file_var:-}" ]; then
    [ -r "${!file_var}" ] || die "$file_var (${!file_var}) is not readable"
    head -n1 "${!file_var}"
  else
    printf '%s' "${!1:-}"
  fi
}
password() { secret POSTGRES_PASSWORD; }

cert=${TLS_CERT_FILE:-/certs/server.crt}
key=${TLS_KEY_FILE:-/certs/server.key}
tls=
if [ -e "$cert" ] || [ -e "$key" ]; then
  [ -r "$cert" ] && [ -r "$key" ] || die "TLS needs both a certificate ($cert) and its key ($key), readable by the postgres user"
  tls=1
fi

fresh=
if [ ! -f "$PGDATA/PG_VERSION" ]; then
  pw=$(password)
  [ -n "$pw" ] || die "set POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE): the superuser postgres is never served without a password"
  initdb -D "$PGDATA" -U postgres --pwfile=<(printf '%s\n' "$pw") -A scram-sha-256 -E UTF8 --no-locale
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "password_encryption = 'scram-sha-256'" >>"$PGDATA/postgresql.conf"
  fresh=1
fi

# Every start migrates (a newer image brings its migrations; twice applies nothing), on
# the socket only, and gives codesift's roles the passwords set for them.
pw=$(password)
if [ -n "$pw" ]; then
  app_pw=$(secret CODESIFT_APP_PASSWORD)
  loader_pw=$(secret CODESIFT_LOADER_PASSWORD)
  pg_ctl -D "$PGDATA" -w start -o "-c listen_addresses=''"
  [ -z "$fresh" ] || PGPASSWORD=$pw createdb -h /var/run/postgresql -U postgres codesift
  PGPASSWORD=$pw CODESIFT_DSN="host=/var/run/postgresql user=postgres dbname=codesift" \
    PYTHONPATH="/opt/codesift/loader:/opt/codesift/migrate-python:$PYTHONPATH" \
    python3 -c 'from codesift.cli import main; main()' migrate
  # Passwords travel in the environment, never on a command line.
  PGPASSWORD=$pw APP_PW=$app_pw LOADER_PW=$loader_pw \
    PYTHONPATH="/opt/codesift/migrate-python:$PYTHONPATH" python3 -c '
import os, psycopg
from psycopg import sql
with psycopg.connect("host=/var/run/postgresql user=postgres dbname=codesift", autocommit=True) as conn:
    for role, var in (("codesift_app", "APP_PW"), ("codesift_loader", "LOADER_PW")):
        if os.environ[var]:
            conn.execute(sql.SQL("alter role {} password {}").format(sql.Identifier(role), sql.Literal(os.environ[var])))
            print(f"codesift-postgres: password set for {role}")
'
  pg_ctl -D "$PGDATA" -w stop
  unset pw app_pw loader_pw
else
  say "no POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE): migrations were not run at this start"
fi

# Authentication: scram-sha-256 everywhere; over TCP, TLS only when it is on.
host=host
[ -z "$tls" ] || host=hostssl
umask 077
cat >"$PGDATA/pg_hba.conf" <<EOF
# Written by codesift's docker-entrypoint.sh on every start: edits here are overwritten.
# TYPE      DATABASE  USER  ADDRESS    METHOD
local       all       all              scram-sha-256
$host   all       all   0.0.0.0/0  scram-sha-256
$host   all       all   ::/0       scram-sha-256
EOF
if [ -n "$tls" ]; then
  echo "hostnossl   all       all   all        reject" >>"$PGDATA/pg_hba.conf"
fi
if grep -Ev '^[[:space:]]*(#|$)' "$PGDATA/pg_hba.conf" | grep -qw trust; then
  die "pg_hba.conf has a trust rule; refusing to start"
fi

ssl=()
if [ -n "$tls" ]; then
  mkdir -p "$PGDATA/tls"
  cp "$cert" "$PGDATA/tls/server.crt"
  cp "$key" "$PGDATA/tls/server.key"
  chmod 0600 "$PGDATA/tls/server.crt" "$PGDATA/tls/server.key"
  ssl=(-c ssl=on -c "ssl_cert_file=$PGDATA/tls/server.crt" -c "ssl_key_file=$PGDATA/tls/server.key")
  say "serving TLS with $cert; TCP clients must use it (sslmode=require or verify-full)"
else
  say "no TLS certificate at $cert: TCP is not encrypted (mount $cert and $key to serve TLS)"
fi
exec postgres -D "$PGDATA" "${ssl[@]}"
