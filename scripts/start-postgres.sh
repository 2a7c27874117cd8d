#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for the AMM postgres store (tests, CI, `fastslow bench memory`).
#
#   scripts/start-postgres.sh start [DIR]   init + start a cluster in DIR (default: a new temp dir) on a
#                                           free loopback port; prints its DSN as the last stdout line
#                                           and writes it to DIR/dsn
#   scripts/start-postgres.sh stop DIR      stop that cluster and delete DIR
#
# The server runs as the `postgres` user when started by root (initdb refuses root), trusts local
# connections only (127.0.0.1 and a socket inside DIR) and runs with fsync off: it holds test data only.
set -euo pipefail

cmd=${1:-start}
dir=${2:-}

bindir() {
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return
  fi
  local candidate
  candidate=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$candidate" ] && [ -x "$candidate/initdb" ]; then
    echo "$candidate"
    return
  fi
  if command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return
  fi
  echo "start-postgres: no PostgreSQL server binaries (apt-get install -y postgresql)" >&2
  exit 3
}

as_owner() {
  # Run a server command as the cluster owner: root hands it to `postgres`, anyone else runs it as itself.
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

case "$cmd" in
  start)
    bin=$(bindir)
    [ -n "$dir" ] || dir=$(mktemp -d /tmp/fastslow-pg.XXXXXX)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      id postgres >/dev/null 2>&1 || { echo "start-postgres: running as root but there is no postgres user" >&2; exit 3; }
      chown postgres "$dir"
      chmod 700 "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U fastslow -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 4; }
    port=$(free_port)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 5; }
    dsn="postgresql://fastslow@127.0.0.1:$port/postgres"
    echo "$dsn" >"$dir/dsn"
    echo "$dir" >&2
    echo "$dsn"
    ;;
  stop)
    [ -n "$dir" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    bin=$(bindir)
    if [ -d "$dir/data" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start [DIR] | stop DIR" >&2
    exit 2
    ;;
esac
