# A throw-away PostgreSQL for the tests (sourced by e2e.sh): pg_start makes
# a cluster with Debian's PostgreSQL in a temporary directory (a copy of
# one initdb made once, pg_template), run as the postgres user when the
# tests run as root, listening only on a Unix socket in that directory;
# pg_db NAME creates a database and prints its URI; pg_server start|stop
# runs pg_ctl on it (a test takes the server away under profd with it);
# pg_stop stops the cluster and removes it (e2e.sh's cleanup calls it).

PG_DIR=
PG_BIN=

# pg_as CMD...: runs CMD as the user that owns the cluster.
pg_as() {
	if [ "$(id -u)" -eq 0 ]; then
		# from / : the caller's directory may be closed to postgres
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# pg_available: true when PostgreSQL's server programs are installed.
pg_available() {
	PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || return 1
	[ "$(id -u)" -ne 0 ] || id postgres >/dev/null 2>&1
}

# pg_initdb DIR: a new cluster in DIR/data (DIR owned by the cluster's
# user), its log in DIR/initdb.log.
pg_initdb() {
	pg_as "$PG_BIN/initdb" -N -D "$1/data" -U profd --auth=trust \
	    -E UTF8 --locale=C.UTF-8 >"$1/initdb.log" 2>&1 ||
	    { cat "$1/initdb.log" >&2; return 1; }
}

# pg_template: prints the folder of an initdb'd cluster to copy, made once
# per build tree and PostgreSQL version under $PROFD_PG_TEMPLATE (default
# test/pg-template; a lock keeps tests starting side by side from making
# it twice). initdb costs a second of CPU, a copy a tenth; some 30 tests
# start a cluster, and the suite runs twice in CI.
pg_template() {
	local root=${PROFD_PG_TEMPLATE:-${top_builddir:-.}/test/pg-template} lock t
	local dir=$root/${PG_BIN%/bin}
	dir=$root/pg${dir##*/}
	[ -f "$dir/ready" ] && { echo "$dir"; return 0; }
	mkdir -p "$root" || return 1
	exec {lock}>>"$root/lock" && flock -w 120 "$lock"
	if [ ! -f "$dir/ready" ]; then
		t=$(mktemp -d "$root/new.XXXXXX") && chmod 755 "$t" &&
		    { [ "$(id -u)" -ne 0 ] || chown postgres "$t"; } &&
		    pg_initdb "$t" && rm -rf "$dir" && mv "$t" "$dir" &&
		    touch "$dir/ready" || { rm -rf "$t"; exec {lock}>&-; return 1; }
	fi
	exec {lock}>&-
	echo "$dir"
}

# pg_start: a cluster (a copy of pg_template's, or initdb when it cannot
# be made) started (once); sets PG_DIR.
pg_start() {
	local tpl
	[ -n "$PG_DIR" ] && return 0
	pg_available || { echo "pg_start: PostgreSQL server not installed" >&2; return 1; }
	PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/profd-pg.XXXXXX")
	chmod 755 "$PG_DIR"
	[ "$(id -u)" -eq 0 ] && chown postgres "$PG_DIR"
	if tpl=$(pg_template 2>/dev/null) && cp -a "$tpl/data" "$PG_DIR/data"; then
		:
	else
		rm -rf "$PG_DIR/data"
		pg_initdb "$PG_DIR" || return 1
	fi
	pg_server start || return 1
}

# pg_server start|stop|restart: pg_ctl on the cluster (waits).
pg_server() {
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
	    -t 60 -m fast -o "-c listen_addresses='' -c unix_socket_directories='$PG_DIR' -c max_connections=300 -c shared_buffers=128MB" \
	    "$1" >/dev/null
}

# pg_db NAME: creates database NAME (if new) and prints its URI. Call
# pg_start first, outside the $(...) that takes the URI.
pg_db() {
	[ -n "$PG_DIR" ] || { echo "pg_db: pg_start first" >&2; return 1; }
	pg_as "$PG_BIN/psql" -h "$PG_DIR" -U profd -d postgres -qAt -c \
	    "SELECT 1 FROM pg_database WHERE datname = '$1'" | grep -q 1 ||
	    pg_as "$PG_BIN/createdb" -h "$PG_DIR" -U profd "$1" || return 1
	echo "postgresql://profd@/$1?host=$PG_DIR"
}

# pg_sql DB SQL: runs SQL in database DB, prints rows unaligned.
pg_sql() {
	pg_as "$PG_BIN/psql" -h "$PG_DIR" -U profd -d "$1" -qAt -c "$2"
}

# pg_stop: stops the cluster and removes it.
pg_stop() {
	[ -n "$PG_DIR" ] || return 0
	pg_server stop 2>/dev/null || pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$PG_DIR"
	PG_DIR=
}
