# Sourced by scripts/install.sh and Dockerfile.postgres: the one list of
# Debian packages codesift's server needs, per PostgreSQL major version.
# Usage: . scripts/packages.sh; server_packages 17

# Debian release -> the PostgreSQL major version it ships.
pg_major_for_debian() {
  case "$1" in
    12) echo 15 ;;
    13) echo 17 ;;
    *) return 1 ;;
  esac
}

# Packages installed from the distribution for PostgreSQL major version $1.
server_packages() {
  local v=$1
  echo "postgresql-$v postgresql-client-$v postgresql-plpython3-$v python3"
  if [ "$v" = 17 ]; then
    echo "postgresql-$v-pgvector"
  else
    # Debian 12 has no pgvector package: it is built from Debian 13's source package.
    echo "postgresql-server-dev-$v build-essential dpkg-dev"
  fi
}
