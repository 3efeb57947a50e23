#!/usr/bin/env bash
# scripts/services.sh: make sure the Postgres and Redis that enrichq needs are reachable.
#
#   scripts/services.sh up      ensure both are up, then create the database named in DATABASE_URL
#   scripts/services.sh down    stop only what `up` started itself (recorded in .data/started)
#   scripts/services.sh status  say whether each one answers
#
# `up` tries, for each service, in this order, and prints one line per decision:
#   1. already running at DATABASE_URL / REDIS_URL: use it;
#   2. a Docker engine that answers plus docker compose / docker-compose: `compose up -d postgres redis`;
#   3. local binaries: a stopped Debian cluster on the URL's port (pg_ctlcluster), else initdb + pg_ctl
#      into .data/postgres; redis-server daemonized with its files in .data/redis;
#   4. otherwise: exit 1 saying what to install.
# Running it again is harmless. Only hosts on this machine are ever started; a remote URL must answer.
#
# Environment: DATABASE_URL, REDIS_URL (defaults as in the README), ENRICHQ_SERVICES_TIMEOUT
# (seconds to wait for a started service, default 60).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DATA=$ROOT/.data
STARTED=$DATA/started
WAIT_SECS=${ENRICHQ_SERVICES_TIMEOUT:-60}
COMPOSE_FILE=$ROOT/docker-compose.yml

DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/enrichq?sslmode=disable}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}

say() { printf 'services: %s\n' "$*"; }
warn() { printf 'services: %s\n' "$*" >&2; }
die() {
	warn "$*"
	exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

# with_timeout SECS CMD...: run CMD, killed after SECS when coreutils' timeout exists.
with_timeout() {
	local secs=$1
	shift
	if have timeout; then
		timeout "$secs" "$@"
	else
		"$@"
	fi
}

urldecode() {
	local s=${1//%/\\x}
	printf '%b' "$s"
}

# parse_url URL: sets U_SCHEME U_USERINFO (raw, without '@') U_USER U_PASS U_HOSTPORT (raw)
# U_HOST U_PORT U_PATH (decoded, without leading '/') U_QUERY. Handles scheme://[user[:pass]@]host[:port][/path][?query]
# and bracketed IPv6 hosts.
parse_url() {
	local url=$1 rest ui
	[[ $url == *://* ]] || die "not a URL: '$url'"
	U_SCHEME=${url%%://*}
	rest=${url#*://}
	U_USERINFO="" U_USER="" U_PASS=""
	# userinfo ends at the last '@' before the path (a password may hold '/', '?' or '@' unencoded)
	if [[ $rest == *@* ]]; then
		ui=${rest%@*}
		rest=${rest##*@}
		U_USERINFO=$ui
		if [[ $ui == *:* ]]; then
			U_USER=$(urldecode "${ui%%:*}")
			U_PASS=$(urldecode "${ui#*:}")
		else
			U_USER=$(urldecode "$ui")
		fi
	fi
	U_QUERY=""
	if [[ $rest == *\?* ]]; then
		U_QUERY=${rest#*\?}
		rest=${rest%%\?*}
	fi
	U_PATH=""
	if [[ $rest == */* ]]; then
		U_PATH=$(urldecode "${rest#*/}")
		rest=${rest%%/*}
	fi
	U_HOSTPORT=$rest
	U_PORT=""
	if [[ $rest == \[* ]]; then
		U_HOST=${rest%%]*}
		U_HOST=${U_HOST#[}
		rest=${rest#*]}
		[[ $rest == :* ]] && U_PORT=${rest#:}
	elif [[ $rest == *:* ]]; then
		U_HOST=${rest%:*}
		U_PORT=${rest##*:}
	else
		U_HOST=$rest
	fi
	U_HOST=$(urldecode "$U_HOST")
	if [[ -n $U_PORT && ! $U_PORT =~ ^[0-9]+$ ]]; then
		die "bad port '$U_PORT' in '$url'"
	fi
}

# query_param NAME QUERY: the value of NAME in a query string, if present.
query_param() {
	local kv
	local IFS='&'
	for kv in $2; do
		if [[ $kv == "$1="* ]]; then
			urldecode "${kv#*=}"
			return 0
		fi
	done
	return 1
}

parse_urls() {
	parse_url "$DATABASE_URL"
	case $U_SCHEME in postgres | postgresql) ;; *) die "DATABASE_URL must start with postgres:// (got '$U_SCHEME://')" ;; esac
	PG_HOST=$U_HOST
	if [[ -z $PG_HOST ]]; then
		PG_HOST=$(query_param host "$U_QUERY" || true)
	fi
	PG_PORT=${U_PORT:-$(query_param port "$U_QUERY" || echo 5432)}
	PG_USER=${U_USER:-$(query_param user "$U_QUERY" || true)}
	PG_DB=${U_PATH:-$(query_param dbname "$U_QUERY" || true)}
	PG_DB=${PG_DB:-${PG_USER:-$(id -un)}}
	# the same connection, to the maintenance database, for checks and CREATE DATABASE
	local auth=""
	[[ -n $U_USERINFO ]] && auth="$U_USERINFO@"
	PG_ADMIN_URL="$U_SCHEME://$auth$U_HOSTPORT/postgres"
	[[ -n $U_QUERY ]] && PG_ADMIN_URL+="?$U_QUERY"
	# host for a plain TCP check: a socket directory or nothing means this machine
	PG_TCP_HOST=$PG_HOST
	[[ -z $PG_TCP_HOST || $PG_TCP_HOST == /* ]] && PG_TCP_HOST=127.0.0.1

	parse_url "$REDIS_URL"
	case $U_SCHEME in redis | rediss) ;; *) die "REDIS_URL must start with redis:// (got '$U_SCHEME://')" ;; esac
	R_TLS=""
	[[ $U_SCHEME == rediss ]] && R_TLS=1
	R_HOST=${U_HOST:-127.0.0.1}
	R_PORT=${U_PORT:-6379}
	R_USER=$U_USER
	R_PASS=$U_PASS
}

is_local_host() {
	case $1 in
	"" | /* | localhost | 127.* | ::1 | 0.0.0.0 | "::" | localhost.*) return 0 ;;
	esac
	[[ $1 == "$(hostname 2>/dev/null || true)" ]]
}

tcp_open() {
	# shellcheck disable=SC2016 # $0/$1 are expanded by the inner bash
	with_timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null
}

# ---------------------------------------------------------------- Postgres tools and checks

PG_BIN_DIRS=()
find_pg_bin_dirs() {
	local d
	local -a globbed=()
	for d in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /opt/homebrew/opt/postgresql@*/bin \
		/usr/local/opt/postgresql@*/bin /Applications/Postgres.app/Contents/Versions/*/bin; do
		[[ -d $d ]] && globbed+=("$d")
	done
	((${#globbed[@]})) || return 0
	# newest version first
	while IFS= read -r d; do
		PG_BIN_DIRS+=("$d")
	done < <(printf '%s\n' "${globbed[@]}" | sort -rV)
}

# pg_tool NAME: print the path of a Postgres program (PATH first, then the versioned bin dirs).
pg_tool() {
	local d
	if have "$1"; then
		command -v "$1"
		return 0
	fi
	for d in ${PG_BIN_DIRS[@]+"${PG_BIN_DIRS[@]}"}; do
		if [[ -x $d/$1 ]]; then
			printf '%s\n' "$d/$1"
			return 0
		fi
	done
	return 1
}

PG_CHECK=""
pg_up() {
	local tool
	if tool=$(pg_tool pg_isready); then
		PG_CHECK=pg_isready
		with_timeout 10 "$tool" -q -t 3 -d "$PG_ADMIN_URL"
	elif tool=$(pg_tool psql); then
		PG_CHECK=psql
		PGCONNECT_TIMEOUT=3 with_timeout 10 "$tool" -X -w -q -A -t -d "$PG_ADMIN_URL" -c 'SELECT 1' >/dev/null 2>&1
	else
		PG_CHECK="a TCP connect (no pg_isready or psql found)"
		tcp_open "$PG_TCP_HOST" "$PG_PORT"
	fi
}

# ---------------------------------------------------------------- Redis checks

R_CHECK=""
redis_cli() {
	local -a opts=(-h "$R_HOST" -p "$R_PORT")
	[[ -n $R_TLS ]] && opts+=(--tls)
	[[ -n $R_USER ]] && opts+=(--user "$R_USER")
	[[ -n $R_PASS ]] && opts+=(-a "$R_PASS" --no-auth-warning)
	with_timeout 5 redis-cli "${opts[@]}" "$@"
}

redis_up() {
	if have redis-cli; then
		R_CHECK=redis-cli
		[[ $(redis_cli ping 2>/dev/null) == PONG ]]
	else
		R_CHECK="a TCP connect (no redis-cli found)"
		tcp_open "$R_HOST" "$R_PORT"
	fi
}

# ---------------------------------------------------------------- bookkeeping

# record KIND ARG...: remember that `up` started something, tab-separated, once.
record() {
	local line
	line=$(printf '%s\t' "$@")
	line=${line%$'\t'}
	mkdir -p "$DATA"
	if [[ ! -f $STARTED ]] || ! grep -qxF -- "$line" "$STARTED"; then
		printf '%s\n' "$line" >>"$STARTED"
	fi
}

# wait_for DESC CHECK-FUNCTION: poll CHECK for up to WAIT_SECS seconds.
wait_for() {
	local desc=$1 check=$2 deadline=$((SECONDS + WAIT_SECS))
	while ! "$check"; do
		if ((SECONDS >= deadline)); then
			warn "$desc: not reachable after ${WAIT_SECS}s (raise ENRICHQ_SERVICES_TIMEOUT to wait longer)"
			return 1
		fi
		sleep 1
	done
}

# ---------------------------------------------------------------- Docker

COMPOSE=()
docker_usable() {
	have docker || return 1
	with_timeout 15 docker info >/dev/null 2>&1 || return 1
	if docker compose version >/dev/null 2>&1; then
		COMPOSE=(docker compose)
	elif have docker-compose; then
		COMPOSE=(docker-compose)
	else
		return 1
	fi
	[[ -f $COMPOSE_FILE ]]
}

compose() {
	ENRICHQ_PG_PORT=$PG_PORT ENRICHQ_REDIS_PORT=$R_PORT ENRICHQ_PG_USER=${PG_USER:-postgres} \
		"${COMPOSE[@]}" -f "$COMPOSE_FILE" "$@"
}

# container_healthy SERVICE: the compose container reports healthy (or runs, without a healthcheck).
container_healthy() {
	local id st
	id=$(compose ps -q "$1" 2>/dev/null | head -n1)
	[[ -n $id ]] || return 1
	st=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id" 2>/dev/null)
	[[ $st == healthy || $st == running ]]
}
pg_container_ready() { container_healthy postgres && pg_up; }
redis_container_ready() { container_healthy redis && redis_up; }

start_with_docker() {
	local -a svcs=("$@")
	say "${svcs[*]}: starting with ${COMPOSE[*]} (docker-compose.yml, published on 127.0.0.1:$PG_PORT / 127.0.0.1:$R_PORT)"
	if ! compose up -d "${svcs[@]}"; then
		warn "${COMPOSE[*]} up failed; trying local binaries"
		return 1
	fi
	local s ok=0
	for s in "${svcs[@]}"; do
		record compose "$s"
		case $s in
		postgres) wait_for "postgres (docker, waiting for health)" pg_container_ready || ok=1 ;;
		redis) wait_for "redis (docker, waiting for health)" redis_container_ready || ok=1 ;;
		esac
	done
	return "$ok"
}

# ---------------------------------------------------------------- local Postgres

PG_AS=""
# as_pg CMD...: run CMD as the postgres OS user when we are root (initdb and postgres refuse root).
as_pg() {
	case $PG_AS in
	"") "$@" ;;
	runuser) (cd / && runuser -u postgres -- "$@") ;;
	su) (cd / && su -s /bin/bash postgres -c "$(printf '%q ' "$@")") ;;
	esac
}

start_pg_debian() {
	have pg_lsclusters && have pg_ctlcluster || return 1
	local ver name port status rest
	while read -r ver name port status rest; do
		[[ $port == "$PG_PORT" && $status == down ]] || continue
		say "postgres: starting the stopped Debian cluster $ver/$name on port $port (pg_ctlcluster $ver $name start)"
		if pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start 2>/dev/null ||
			pg_ctlcluster "$ver" "$name" start; then
			record pg_ctlcluster "$ver" "$name"
			wait_for "postgres (cluster $ver/$name)" pg_up
			return
		fi
		warn "postgres: pg_ctlcluster $ver $name start failed; trying initdb into .data/postgres"
		return 1
	done < <(pg_lsclusters -h 2>/dev/null || true)
	return 1
}

tail_log() {
	[[ -f $1 ]] || return 0
	warn "last lines of $1:"
	tail -n 15 "$1" >&2 || true
}

start_pg_initdb() {
	local initdb bindir
	if ! initdb=$(pg_tool initdb); then
		warn "postgres: no initdb found (looked in PATH and /usr/lib/postgresql/*/bin)"
		return 1
	fi
	initdb=$(readlink -f "$initdb" 2>/dev/null || printf '%s' "$initdb")
	bindir=${initdb%/*}
	if [[ ! -x $bindir/pg_ctl || ! -x $bindir/postgres ]]; then
		warn "postgres: found $initdb but no pg_ctl/postgres beside it"
		return 1
	fi
	if [[ $(id -u) == 0 ]]; then
		if ! id postgres >/dev/null 2>&1; then
			warn "postgres: running as root and there is no 'postgres' user: initdb and postgres refuse to run as root." \
				"Create one (useradd --system --create-home postgres) or run this script as a normal user."
			return 1
		fi
		if have runuser; then PG_AS=runuser; else PG_AS=su; fi
	fi

	local pgdata=$DATA/postgres run=$DATA/postgres-run user=${PG_USER:-postgres}
	mkdir -p "$pgdata" "$run"
	chmod 700 "$pgdata"
	if [[ -n $PG_AS ]]; then
		chown postgres "$pgdata" "$run"
		if ! as_pg test -w "$run"; then
			warn "postgres: the 'postgres' user cannot write $run (a parent directory is closed to it):" \
				"move the checkout somewhere it can reach, run as a normal user, or start Postgres yourself and set DATABASE_URL"
			return 1
		fi
	fi
	if [[ ! -s $pgdata/PG_VERSION ]]; then
		say "postgres: initdb into .data/postgres with $bindir (superuser '$user', trust auth)"
		if ! as_pg "$bindir/initdb" -D "$pgdata" -U "$user" --auth=trust --encoding=UTF8 --no-locale >"$run/initdb.log" 2>&1; then
			warn "postgres: initdb failed"
			tail_log "$run/initdb.log"
			return 1
		fi
	fi
	# ours, but running with other settings (e.g. DATABASE_URL's port changed): restart it
	if as_pg "$bindir/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
		say "postgres: .data/postgres is running but not at $PG_TCP_HOST:$PG_PORT; restarting it"
		as_pg "$bindir/pg_ctl" -D "$pgdata" -m fast -w stop >>"$run/pg_ctl.log" 2>&1 || true
	fi
	local sock=$run listen=${PG_HOST:-localhost}
	[[ $listen == /* ]] && listen=localhost
	if ((${#sock} > 90)); then # a Unix socket path is limited to ~107 bytes
		sock=$(mktemp -d "${TMPDIR:-/tmp}/enrichq-pg.XXXXXX")
		[[ -n $PG_AS ]] && chown postgres "$sock"
	fi
	say "postgres: starting .data/postgres with pg_ctl on $listen:$PG_PORT (socket dir $sock, log $run/postgres.log)"
	if ! as_pg "$bindir/pg_ctl" -D "$pgdata" -l "$run/postgres.log" -w -t "$WAIT_SECS" \
		-o "-h '$listen' -p $PG_PORT -k '$sock'" start >>"$run/pg_ctl.log" 2>&1; then
		warn "postgres: pg_ctl start failed"
		tail_log "$run/postgres.log"
		return 1
	fi
	record pg_ctl "$bindir" "$pgdata"
	wait_for "postgres (.data/postgres)" pg_up
}

start_pg_local() {
	start_pg_debian || start_pg_initdb
}

# ---------------------------------------------------------------- local Redis

start_redis_local() {
	if ! have redis-server; then
		warn "redis: no redis-server on PATH"
		return 1
	fi
	local dir=$DATA/redis
	local -a bind
	case $R_HOST in
	localhost) bind=(127.0.0.1 -::1) ;;
	*) bind=("$R_HOST") ;;
	esac
	mkdir -p "$dir"
	say "redis: starting redis-server on $R_HOST:$R_PORT (no persistence, files in .data/redis)"
	local -a args=(--daemonize yes --bind "${bind[@]}" --port "$R_PORT" --save "" --appendonly no
		--dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid")
	[[ -n $R_PASS ]] && args+=(--requirepass "$R_PASS")
	if ! redis-server "${args[@]}"; then
		warn "redis: redis-server failed to start"
		tail_log "$dir/redis.log"
		return 1
	fi
	record redis "$dir/redis.pid"
	wait_for "redis (.data/redis)" redis_up || {
		tail_log "$dir/redis.log"
		return 1
	}
}

# ---------------------------------------------------------------- database

ensure_database() {
	local psql exists out
	if ! psql=$(pg_tool psql); then
		warn "database '$PG_DB': psql not found, so it cannot be checked or created here; create it yourself if missing"
		return 0
	fi
	if ! exists=$(PGCONNECT_TIMEOUT=5 "$psql" -X -w -q -A -t -v ON_ERROR_STOP=1 -v db="$PG_DB" \
		-d "$PG_ADMIN_URL" 2>&1 <<<"SELECT 1 FROM pg_database WHERE datname = :'db';"); then
		die "database '$PG_DB': cannot query the server with DATABASE_URL's credentials" \
			"(put the password in DATABASE_URL, or allow trust/peer auth in pg_hba.conf): $exists"
	fi
	if [[ $exists == 1 ]]; then
		say "database '$PG_DB': exists"
		return 0
	fi
	if out=$(PGCONNECT_TIMEOUT=5 "$psql" -X -w -q -v ON_ERROR_STOP=1 -v db="$PG_DB" \
		-d "$PG_ADMIN_URL" 2>&1 <<<'CREATE DATABASE :"db";'); then
		say "database '$PG_DB': created"
	elif [[ $out == *"already exists"* ]]; then
		say "database '$PG_DB': exists (created concurrently)"
	else
		die "database '$PG_DB': CREATE DATABASE failed: $out"
	fi
}

# ---------------------------------------------------------------- commands

install_help() {
	warn "cannot get $1 running."
	cat >&2 <<'EOF'
Install them (or Docker with compose, and this script uses docker-compose.yml):
  Debian/Ubuntu:  sudo apt-get install postgresql redis-server
  macOS:          brew install postgresql@16 redis
  Docker:         https://docs.docker.com/engine/install/ (then: scripts/services.sh up)
Or point DATABASE_URL / REDIS_URL at instances that already run, e.g.
  export DATABASE_URL='postgres://user:pass@db.internal:5432/enrichq?sslmode=disable'
  export REDIS_URL='redis://:pass@cache.internal:6379/0'
EOF
	exit 1
}

cmd_up() {
	parse_urls
	local need_pg="" need_redis=""
	if pg_up; then
		say "postgres: already running at ${PG_HOST:-local socket}:$PG_PORT (checked with $PG_CHECK); using it"
	else
		need_pg=1
		is_local_host "$PG_HOST" ||
			die "postgres: DATABASE_URL points at $PG_HOST:$PG_PORT, which does not answer and is not this machine; start it there or change DATABASE_URL"
	fi
	if redis_up; then
		say "redis: already running at $R_HOST:$R_PORT (checked with $R_CHECK); using it"
	else
		need_redis=1
		is_local_host "$R_HOST" ||
			die "redis: REDIS_URL points at $R_HOST:$R_PORT, which does not answer and is not this machine; start it there or change REDIS_URL"
	fi

	if [[ -n $need_pg || -n $need_redis ]]; then
		local -a svcs=()
		[[ -n $need_pg ]] && svcs+=(postgres)
		[[ -n $need_redis ]] && svcs+=(redis)
		if docker_usable; then
			if start_with_docker "${svcs[@]}"; then
				need_pg="" need_redis=""
			fi
		else
			say "${svcs[*]}: no usable Docker engine with compose; using local binaries"
		fi
		if [[ -n $need_pg ]] && ! pg_up; then
			start_pg_local || install_help "Postgres at $PG_TCP_HOST:$PG_PORT"
		fi
		if [[ -n $need_redis ]] && ! redis_up; then
			start_redis_local || install_help "Redis at $R_HOST:$R_PORT"
		fi
	fi
	ensure_database
}

stop_one() {
	local kind=$1 a=${2:-} b=${3:-} pid i
	case $kind in
	compose)
		docker_usable || {
			warn "cannot stop compose service $a: no usable Docker engine"
			return 1
		}
		say "stopping compose service $a"
		compose stop "$a"
		;;
	pg_ctlcluster)
		say "stopping Debian cluster $a/$b (pg_ctlcluster $a $b stop)"
		pg_ctlcluster --skip-systemctl-redirect "$a" "$b" stop 2>/dev/null || pg_ctlcluster "$a" "$b" stop
		;;
	pg_ctl)
		if [[ ! -f $b/postmaster.pid ]]; then
			say "postgres in $b: not running"
			return 0
		fi
		[[ $(id -u) == 0 ]] && { if have runuser; then PG_AS=runuser; else PG_AS=su; fi; }
		say "stopping postgres in $b (pg_ctl stop -m fast)"
		as_pg "$a/pg_ctl" -D "$b" -m fast -w stop >/dev/null
		;;
	redis)
		pid=$(cat "$a" 2>/dev/null || true)
		if [[ -z $pid ]] || ! kill -0 "$pid" 2>/dev/null; then
			say "redis ($a): not running"
			return 0
		fi
		if [[ $(ps -o comm= -p "$pid" 2>/dev/null) != redis-server* ]]; then
			say "redis ($a): pid $pid is no longer redis-server; leaving it alone"
			return 0
		fi
		say "stopping redis-server (pid $pid)"
		kill "$pid"
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || return 0
			sleep 0.2
		done
		warn "redis-server (pid $pid) did not exit within 10s"
		return 1
		;;
	*)
		warn "unknown entry '$kind' in $STARTED; ignoring it"
		;;
	esac
}

cmd_down() {
	if [[ ! -s $STARTED ]]; then
		say "nothing to stop: this script started nothing (no $STARTED)"
		return 0
	fi
	parse_urls
	find_pg_bin_dirs
	local -a lines=() keep=()
	local line i kind a b
	while IFS= read -r line; do
		[[ -n $line ]] && lines+=("$line")
	done <"$STARTED"
	for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
		IFS=$'\t' read -r kind a b <<<"${lines[i]}"
		stop_one "$kind" "$a" "$b" || keep=("${lines[i]}" ${keep[@]+"${keep[@]}"})
	done
	if ((${#keep[@]})); then
		printf '%s\n' "${keep[@]}" >"$STARTED"
		die "some services could not be stopped; still listed in $STARTED"
	fi
	rm -f "$STARTED"
}

cmd_status() {
	parse_urls
	find_pg_bin_dirs
	local rc=0
	if pg_up; then say "postgres: up at ${PG_HOST:-local socket}:$PG_PORT"; else
		say "postgres: down at ${PG_HOST:-local socket}:$PG_PORT"
		rc=1
	fi
	if redis_up; then say "redis: up at $R_HOST:$R_PORT"; else
		say "redis: down at $R_HOST:$R_PORT"
		rc=1
	fi
	if [[ -s $STARTED ]]; then
		say "started by this script (.data/started):"
		sed 's/^/  /' "$STARTED"
	fi
	return "$rc"
}

main() {
	case ${1:-} in
	up)
		find_pg_bin_dirs
		cmd_up
		;;
	down) cmd_down ;;
	status) cmd_status ;;
	*)
		printf 'usage: %s up|down|status\n' "$0" >&2
		exit 2
		;;
	esac
}

main "$@"
