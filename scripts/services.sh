#!/usr/bin/env bash
# scripts/services.sh: make sure the Postgres and Redis that enrichq needs answer.
#
#   scripts/services.sh up     start what does not answer at DATABASE_URL / REDIS_URL, then
#                              create DATABASE_URL's database if it is missing, and the
#                              services' role ENRICHQ_APP_ROLE (default enrichq_app) beside
#                              DATABASE_URL's user, the owner (docs/operations.md, "Database roles")
#   scripts/services.sh down   stop only what `up` started (.data/started lists how)
#
# `up` starts servers on this machine only, from their binaries: Postgres as the stopped Debian
# cluster on DATABASE_URL's port (pg_ctlcluster), else as a cluster of its own in .data/postgres
# (initdb, trust auth); Redis as a redis-server with its files in .data/redis. With Docker, run
# `docker compose up -d postgres redis` instead. Running it again is harmless.
# Environment: DATABASE_URL, REDIS_URL, ENRICHQ_APP_ROLE, ENRICHQ_SERVICES_TIMEOUT (seconds to
# wait, default 60).
set -euo pipefail

DATA=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.data
STARTED=$DATA/started
WAIT=${ENRICHQ_SERVICES_TIMEOUT:-60}
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
APP_ROLE=${ENRICHQ_APP_ROLE:-enrichq_app}
export PGCONNECT_TIMEOUT=5
# Debian keeps initdb and pg_ctl in a versioned directory: take the newest.
PG_DIR=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
[[ ! -d $PG_DIR ]] || PATH=$PATH:$PG_DIR

say() { printf 'services: %s\n' "$*"; }
die() { say "$*" >&2 && exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install $2, or point $3 at a server that runs"; }

# The parts of scheme://[user[:password]@]host[:port][/path][?query] that starting a server needs.
URL_RE='^([a-z]+)://(([^:@/]*)(:([^@/]*))?@)?([^:/?]*)(:([0-9]+))?(/([^?]*))?(\?.*)?$'
[[ $DATABASE_URL =~ $URL_RE ]] || die "DATABASE_URL: cannot read '$DATABASE_URL'"
PG_USER=${BASH_REMATCH[3]:-postgres} PG_HOST=${BASH_REMATCH[6]} PG_PORT=${BASH_REMATCH[8]:-5432}
PG_DB=${BASH_REMATCH[10]:-$PG_USER}
# the same server and credentials, its maintenance database: to create PG_DB
PG_ADMIN_URL=${BASH_REMATCH[1]}://${BASH_REMATCH[2]}$PG_HOST${BASH_REMATCH[7]}/postgres${BASH_REMATCH[11]}
[[ $REDIS_URL =~ $URL_RE ]] || die "REDIS_URL: cannot read '$REDIS_URL'"
R_PASS=${BASH_REMATCH[5]} R_HOST=${BASH_REMATCH[6]:-127.0.0.1} R_PORT=${BASH_REMATCH[8]:-6379}

pg_ready() { pg_isready -q -d "$DATABASE_URL"; }
# redis-cli sends redis://:PASS@ as user "" (go-redis as no user, i.e. "default"): say default
redis_ready() { [[ $(redis-cli -u "${REDIS_URL/:\/\/:/://default:}" ping 2>/dev/null) == PONG ]]; }
is_local() { [[ $1 == "" || $1 == localhost || $1 == 127.* ]]; }
# record CMD...: the command that stops what was just started, for `down` (once)
record() {
	local line
	line=$(printf '%q ' "$@")
	grep -qxF -- "$line" "$STARTED" 2>/dev/null || echo "$line" >>"$STARTED"
}
# as_pg CMD...: initdb and postgres refuse to run as root, so root runs them as the postgres user
as_pg() { if ((EUID)); then "$@"; else (cd / && runuser -u postgres -- "$@"); fi; }

# wait_for WHAT CHECK: poll CHECK for up to WAIT seconds.
wait_for() {
	local i
	for ((i = 0; i < WAIT; i++)); do if "$2"; then return 0; fi; sleep 1; done
	die "$1: not answering after ${WAIT}s (ENRICHQ_SERVICES_TIMEOUT waits longer)"
}

start_pg() {
	local ver name port status _ bin pgdata=$DATA/postgres
	while read -r ver name port status _; do
		[[ $port == "$PG_PORT" && $status == down ]] || continue
		say "postgres: starting the stopped Debian cluster $ver/$name on port $port"
		pg_ctlcluster "$ver" "$name" start </dev/null
		record pg_ctlcluster "$ver" "$name" stop
		return
	done < <(pg_lsclusters -h 2>/dev/null || true)

	need initdb "Postgres (apt-get install postgresql)" DATABASE_URL
	[[ -n $PG_HOST ]] || die "postgres: a cluster in .data/postgres listens on TCP only: give DATABASE_URL a host"
	bin=$(dirname "$(readlink -f "$(command -v initdb)")")
	mkdir -p "$pgdata" && chmod 700 "$pgdata"
	((EUID)) || chown postgres "$pgdata"
	if [[ ! -s $pgdata/PG_VERSION ]]; then
		say "postgres: initdb into .data/postgres (superuser '$PG_USER', trust auth)"
		as_pg "$bin/initdb" -D "$pgdata" -U "$PG_USER" --auth=trust --encoding=UTF8 --no-locale >"$DATA/initdb.log" 2>&1 ||
			die "postgres: initdb failed, see .data/initdb.log (as root, it runs as the postgres user)"
	fi
	# ours, but running with other settings (DATABASE_URL's port changed): restart it
	if as_pg "$bin/pg_ctl" -D "$pgdata" status >/dev/null; then as_pg "$bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null; fi
	say "postgres: starting .data/postgres on $PG_HOST:$PG_PORT (log .data/postgres/server.log)"
	# TCP only (-k ''): the socket path of a deep checkout would pass the 107 bytes allowed
	as_pg "$bin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t "$WAIT" -o "-h $PG_HOST -p $PG_PORT -k ''" start >/dev/null ||
		die "postgres: pg_ctl start failed, see .data/postgres/server.log"
	record as_pg "$bin/pg_ctl" -D "$pgdata" -m fast -w stop
}

start_redis() {
	need redis-server "Redis (apt-get install redis-server)" REDIS_URL
	local dir=$DATA/redis bind=${R_HOST/#localhost/127.0.0.1}
	mkdir -p "$dir"
	say "redis: starting redis-server on $R_HOST:$R_PORT (no persistence, files in .data/redis)"
	redis-server --daemonize yes --bind "$bind" --port "$R_PORT" --save '' --appendonly no --dir "$dir" \
		--logfile "$dir/$R_PORT.log" --pidfile "$dir/$R_PORT.pid" ${R_PASS:+--requirepass "$R_PASS"}
	# the pid file, and only a redis-server: never a process that took the pid over later
	record pkill -x -F "$dir/$R_PORT.pid" redis-server
}

ensure_database() {
	if psql -X -w -q -d "$DATABASE_URL" -c 'SELECT 1' >/dev/null 2>&1; then
		say "database '$PG_DB': exists"
	elif psql -X -w -q -v ON_ERROR_STOP=1 -v db="$PG_DB" -d "$PG_ADMIN_URL" <<<'CREATE DATABASE :"db";'; then
		say "database '$PG_DB': created"
	else
		die "database '$PG_DB': missing, and DATABASE_URL's user cannot create it"
	fi
}

# The services' own role: it logs in and owns nothing; migrating as the owner grants it the rest.
# One URL for both (DATABASE_URL only) works as before: this role is then simply unused.
ensure_app_role() {
	local exists
	exists=$(psql -X -w -qAt -v role="$APP_ROLE" -d "$DATABASE_URL" <<<"SELECT 1 FROM pg_roles WHERE rolname = :'role';" 2>/dev/null) || exists=""
	if [[ $exists == 1 ]]; then
		say "role '$APP_ROLE': exists"
	elif psql -X -w -q -v ON_ERROR_STOP=1 -v role="$APP_ROLE" -d "$DATABASE_URL" <<<'CREATE ROLE :"role" LOGIN;' >/dev/null 2>&1; then
		say "role '$APP_ROLE': created (LOGIN, no privileges until a migration as the owner grants them)"
	else
		say "role '$APP_ROLE': missing, and DATABASE_URL's user cannot create it; services run as that user instead"
		return 0
	fi
	say "to run the services as '$APP_ROLE': DATABASE_URL=<the same URL as user $APP_ROLE> ENRICHQ_MIGRATE_DATABASE_URL=$DATABASE_URL"
}

up() {
	for t in pg_isready psql; do need $t "the Postgres client (apt-get install postgresql-client)" DATABASE_URL; done
	need redis-cli "the Redis client (apt-get install redis-tools)" REDIS_URL
	mkdir -p "$DATA"
	if pg_ready; then
		say "postgres: up at ${PG_HOST:-the local socket}:$PG_PORT; using it"
	else
		is_local "$PG_HOST" || die "postgres: $PG_HOST:$PG_PORT does not answer and is not this machine"
		start_pg
		wait_for postgres pg_ready
	fi
	if redis_ready; then
		say "redis: up at $R_HOST:$R_PORT; using it"
	else
		is_local "$R_HOST" || die "redis: $R_HOST:$R_PORT does not answer and is not this machine"
		start_redis
		wait_for redis redis_ready
	fi
	ensure_database
	ensure_app_role
}

down() {
	local cmd
	[[ -s $STARTED ]] || { say "nothing to stop: up started nothing" && return 0; }
	while IFS= read -r cmd; do
		say "stopping: $cmd"
		eval "$cmd" </dev/null || say "failed (stopped already?): $cmd"
	done <"$STARTED"
	rm -f "$STARTED"
}

case ${1:-} in
up | down) "$1" ;;
*) die "usage: $0 up|down" ;;
esac
