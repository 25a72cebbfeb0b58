#!/usr/bin/env bash
# A private, disposable PostgreSQL cluster for Gatehouse's tests and benches.
#
#   scripts/pg.sh start [DIR]   initdb (first time) and start; prints the URL
#   scripts/pg.sh stop  [DIR]   stop it (fine if it is not running)
#   scripts/pg.sh url   [DIR]   print the URL of the running cluster
#   scripts/pg.sh restart [DIR] stop and start (tests of dropped connections)
#   scripts/pg.sh status [DIR]  exit 0 when running
#   scripts/pg.sh reset [DIR]   stop and delete the cluster (tests leave databases)
#   scripts/pg.sh drop-test-dbs [DIR]  drop the databases tests left (gh_*; ~8 MB each)
#
# Usage: GATEHOUSE_TEST_PG_URL=$(scripts/pg.sh start) cargo test
#
# The cluster lives in DIR (default: target/pg in the repository, or
# $GATEHOUSE_PG_DIR), listens only on 127.0.0.1 on a high port (55432, or the
# next free one, or $GATEHOUSE_PG_PORT), keeps its unix socket inside its data
# directory, and trusts the superuser `gatehouse` from loopback only. The role
# `gatehouse_pw` is the exception: it must log in with a password (tests of
# authentication failures set one). Tuned for throwaway data (fsync off).
#
# As root (CI on a fresh Debian 12) PostgreSQL is installed with apt if missing,
# and the server runs as the `postgres` system user, which owns DIR.
# Messages go to stderr; stdout carries only the URL.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CMD=${1:-}
DIR=${2:-${GATEHOUSE_PG_DIR:-$REPO/target/pg}}
PG_USER=gatehouse
DEFAULT_PORT=${GATEHOUSE_PG_PORT:-55432}

say() { echo "pg.sh: $*" >&2; }
die() {
	say "$*"
	exit 1
}

find_bindir() {
	local initdb
	initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
	[ -n "$initdb" ] && dirname "$initdb"
}

install_postgres() {
	[ "$(id -u)" -eq 0 ] || die "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); run: sudo apt-get install -y postgresql"
	say "installing PostgreSQL with apt"
	# Debian's package would create and start a system-wide cluster on 5432;
	# this script runs its own, so ask it not to (only on a machine without one).
	if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
		mkdir -p /etc/postgresql-common
		echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq postgresql >&2
}

# Runs a PostgreSQL program as the cluster's owner.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

ensure_owner_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	if ! id -u postgres >/dev/null 2>&1; then
		say "creating the postgres system user"
		useradd --system --user-group --home-dir /var/lib/postgresql --no-create-home \
			--shell /usr/sbin/nologin postgres
	fi
}

port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
	local p=$DEFAULT_PORT
	while ! port_free "$p"; do
		p=$((p + 1))
		[ "$p" -lt $((DEFAULT_PORT + 100)) ] || die "no free port in $DEFAULT_PORT..$p"
	done
	echo "$p"
}

# As root, the server runs as `postgres`, which must reach DIR; a checkout in a
# folder closed to other users (say under /root) gets its cluster under /tmp
# instead, at a path derived from DIR so every command finds the same one.
resolve_dir() {
	if [ "$(id -u)" -eq 0 ] && id -u postgres >/dev/null 2>&1; then
		mkdir -p "$DIR"
		chown postgres:postgres "$DIR"
		if ! runuser -u postgres -- test -w "$DIR"; then
			local alt
			alt=/tmp/gatehouse-pg-$(printf '%s' "$DIR" | sha256sum | cut -c1-12)
			say "the postgres user cannot reach $DIR; using $alt"
			DIR=$alt
			mkdir -p "$DIR"
			chown postgres:postgres "$DIR"
			chmod 700 "$DIR"
		fi
	fi
	DATA=$DIR/data
	PORT_FILE=$DIR/port
	LOG=$DIR/postgres.log
}
DATA=$DIR/data
PORT_FILE=$DIR/port
LOG=$DIR/postgres.log

url() {
	[ -f "$PORT_FILE" ] || die "no cluster in $DIR; run: scripts/pg.sh start"
	echo "postgres://$PG_USER@127.0.0.1:$(cat "$PORT_FILE")"
}

running() {
	local bindir
	bindir=$(find_bindir) || return 1
	[ -f "$DATA/PG_VERSION" ] || return 1
	as_owner "$bindir/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

init_cluster() {
	local bindir=$1 port
	port=$(pick_port)
	mkdir -p "$DIR"
	as_owner test -w "$DIR" || die "the cluster's owner cannot write $DIR; pass another DIR"
	rm -rf "$DATA"
	say "initdb in $DATA"
	as_owner "$bindir/initdb" -D "$DATA" -U "$PG_USER" --auth=trust --encoding=UTF8 \
		--locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 || {
		cat "$DIR/initdb.log" >&2
		die "initdb failed"
	}
	# Only loopback TCP and the private socket, both trusted: a test cluster.
	local socket_dir=$DATA
	# A unix socket path must fit in 107 bytes; past that, TCP only.
	[ ${#socket_dir} -lt 90 ] || socket_dir=
	as_owner tee -a "$DATA/postgresql.conf" >/dev/null <<EOF

# --- scripts/pg.sh: private test cluster ---
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$socket_dir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
EOF
	as_owner tee "$DATA/pg_hba.conf" >/dev/null <<EOF
# scripts/pg.sh: trust the local superuser over the socket and loopback only.
local all all trust
host  all gatehouse_pw 127.0.0.1/32 scram-sha-256
host  all all 127.0.0.1/32 trust
EOF
	echo "$port" | as_owner tee "$PORT_FILE" >/dev/null
}

start() {
	local bindir
	bindir=$(find_bindir) || true
	if [ -z "$bindir" ]; then
		install_postgres
		bindir=$(find_bindir) || die "PostgreSQL installed but initdb not found"
	fi
	command -v psql >/dev/null || die "psql is missing; install postgresql-client"
	ensure_owner_user
	resolve_dir
	if running; then
		say "already running ($DATA)"
		url
		return
	fi
	[ -f "$DATA/PG_VERSION" ] && [ -f "$PORT_FILE" ] || init_cluster "$bindir"
	local port
	port=$(cat "$PORT_FILE")
	port_free "$port" || die "port $port is taken by another program; stop it or remove $DIR"
	say "starting PostgreSQL on 127.0.0.1:$port (log: $LOG)"
	as_owner "$bindir/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null || {
		tail -n 20 "$LOG" >&2 || true
		die "PostgreSQL did not start"
	}
	psql "$(url)/postgres" -qAt -v ON_ERROR_STOP=1 -c \
		"SELECT 1 FROM pg_roles WHERE rolname = 'gatehouse_pw'" | grep -q 1 ||
		psql "$(url)/postgres" -q -v ON_ERROR_STOP=1 -c "CREATE ROLE gatehouse_pw LOGIN CREATEDB" >&2
	url
}

# Every test gets its own database and leaves it for a failure to be inspected; a
# full run leaves a few hundred (about 8 MB each), so test runs drop them.
drop_test_dbs() {
	running || die "not running; run: scripts/pg.sh start"
	local n
	n=$(psql "$(url)/postgres" -qAt -v ON_ERROR_STOP=1 -c \
		"SELECT count(*) FROM pg_database WHERE datname LIKE 'gh\\_%'")
	# One psql for all (\gexec runs each generated statement on its own).
	psql "$(url)/postgres" -qAt -v ON_ERROR_STOP=1 >&2 <<'SQL'
SELECT format('DROP DATABASE %I WITH (FORCE)', datname) FROM pg_database
WHERE datname LIKE 'gh\_%' \gexec
SQL
	say "dropped $n test databases"
}

stop() {
	if running; then
		say "stopping PostgreSQL ($DATA)"
		as_owner "$(find_bindir)/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null
	else
		say "not running"
	fi
}

[ "$CMD" = start ] || resolve_dir

case "$CMD" in
start) start ;;
stop) stop ;;
url)
	running || die "not running; run: scripts/pg.sh start"
	url
	;;
restart)
	stop
	start
	;;
status) running ;;
drop-test-dbs) drop_test_dbs ;;
reset)
	stop
	rm -rf "$DIR"
	;;
*) die "usage: scripts/pg.sh start|stop|restart|url|status|reset|drop-test-dbs [DIR]" ;;
esac
