#!/usr/bin/env bash
# The main job on an embedded default: a throwaway PostgreSQL 15 cluster with
# zero_stream preloaded, some writes, the change log they produce, and a
# SQLite replica (zero-stream-replica) that follows live writes.
#
#   scripts/demo.sh          install what the demo needs, build, make install, run, show, stop
#   scripts/demo.sh --keep   leave the cluster and the replica running (prints how to use and stop them)
#   scripts/demo.sh --help   this text
#
# Settings (environment):
#   ZS_DEMO_DIR          the demo's folder: cluster (data/), its socket, app.db, server.log and
#                        replica.log; emptied at each run. Default /tmp/zero_stream-demo-$USER
#                        (one per user; if another user holds that name, one of the user's own
#                        /tmp/zero_stream-demo-$USER.XXXXXX). As root it must be reachable by "zstest".
#   ZS_DEMO_PORT         the cluster's port, default 54329: a Unix socket in ZS_DEMO_DIR only (no TCP)
#   ZS_DEMO_SERVER_PORT  zero_stream's subscriber server (zero_stream.port), TCP on 127.0.0.1,
#                        default 54330; when unset and 54330 is in use, the next free one of 54331..54349
#   ZS_DEMO_TIMEOUT      seconds each step may wait (streaming, catch-up, the replica), default 60
#
# Installs its packages (scripts/install-deps.sh --demo: the build and the main
# job, not the test toolchain) and the extension (make install) with sudo when
# not root; a user without sudo can run it once the server has this tree's
# build (the install is skipped when the installed files are the same). As
# root the cluster runs as the unprivileged user "zstest" (initdb refuses root).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^$/{/^#/!q;s/^# \{0,1\}//p}' "$0"; }
keep=false
for a in "$@"; do
	case $a in
	--keep) keep=true ;;
	-h|--help) usage; exit 0 ;;
	*) echo "demo: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
	esac
done

TIMEOUT=${ZS_DEMO_TIMEOUT:-60}
DIR=""
cluster_started=false
replica_pid=""
say() { echo "demo: $*" >&2; }
fail() { say "$*"; exit 1; }
# a run that fails stops what it started and says where the logs are
finish() {
	local rc=$?
	[ "$rc" -eq 0 ] && return
	if [ -n "$replica_pid" ]; then kill "$replica_pid" 2>/dev/null || true; fi
	if $cluster_started; then
		# (a server still starting may not have written postmaster.pid yet)
		for _ in $(seq 1 50); do
			if [ -f "$DIR/data/postmaster.pid" ]; then
				run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null 2>&1 && break
			fi
			sleep 0.1
		done
		say "failed (exit $rc); stopped what it started; logs: $DIR/server.log (the cluster), $DIR/replica.log (zero-stream-replica)"
	fi
}
trap finish EXIT

scripts/install-deps.sh --demo
make -s -j2

# make install, unless the server already has this build (as a user without
# sudo, that is the way to run the demo)
pg_config=${PG_CONFIG:-pg_config}
installed() {
	local lib ext f
	lib=$("$pg_config" --pkglibdir)
	ext=$("$pg_config" --sharedir)/extension
	cmp -s zero_stream.so "$lib/zero_stream.so" || return 1
	for f in zero_stream.control sql/zero_stream--*.sql; do
		cmp -s "$f" "$ext/$(basename "$f")" || return 1
	done
}
if ! installed; then
	if [ "$(id -u)" -eq 0 ]; then
		make -s install >/dev/null
	elif command -v sudo >/dev/null; then
		sudo make -s install >/dev/null
	else
		fail "the server's zero_stream ($("$pg_config" --pkglibdir)/zero_stream.so) is not this tree's build, and installing it needs root or sudo: run 'make install' here as root, then this script again"
	fi
fi

. scripts/common.sh

# the folder: the user's own; never another user's leftovers
user=$(id -un)
DIR=${ZS_DEMO_DIR:-/tmp/zero_stream-demo-$user}
if [ "$(id -u)" -ne 0 ] && [ -e "$DIR" ] && [ ! -O "$DIR" ]; then
	owner=$(stat -c %U "$DIR")
	[ -z "${ZS_DEMO_DIR:-}" ] || fail "ZS_DEMO_DIR=$DIR belongs to $owner: choose another folder"
	# the one an earlier run made, else a new one
	for d in "/tmp/zero_stream-demo-$user".*; do
		if [ -d "$d" ] && [ -O "$d" ]; then DIR=$d; break; fi
	done
	[ "$DIR" != "/tmp/zero_stream-demo-$user" ] || DIR=$(mktemp -d "/tmp/zero_stream-demo-$user.XXXXXX")
	say "/tmp/zero_stream-demo-$user belongs to $owner; using $DIR"
fi
PORT=${ZS_DEMO_PORT:-54329}
REPLICA=$DIR/app.db
sql() { run "$BIN/psql" -X -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

# a replica this folder's last --keep run left running goes with its folder
if [ -f "$DIR/replica.pid" ]; then
	old=$(cat "$DIR/replica.pid")
	if grep -qs zero-stream-replica "/proc/$old/cmdline"; then kill "$old" 2>/dev/null || true; fi
fi

echo "== initdb a cluster in $DIR (port $PORT) with zero_stream preloaded"
init_cluster "$DIR" "$PORT"

# the subscriber server's TCP port: a port in use (another user's demo) would
# leave the replica following someone else's server
port_in_use() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
if [ -n "${ZS_DEMO_SERVER_PORT:-}" ]; then
	SPORT=$ZS_DEMO_SERVER_PORT
	! port_in_use "$SPORT" || fail "port $SPORT (ZS_DEMO_SERVER_PORT) is in use on 127.0.0.1: choose another"
else
	SPORT=54330
	while port_in_use "$SPORT"; do
		SPORT=$((SPORT + 1))
		[ "$SPORT" -lt 54350 ] || fail "ports 54330..54349 are all in use on 127.0.0.1: set ZS_DEMO_SERVER_PORT"
	done
fi
cat >> "$DIR/data/postgresql.conf" <<CONF
zero_stream.database = 'postgres'
zero_stream.port = $SPORT
CONF

# wait_until WHAT CMD...: CMD until it succeeds, at most TIMEOUT seconds; else
# fail naming WHAT (and fail at once if the replica exits meanwhile)
wait_until() {
	local what=$1 deadline=$((SECONDS + TIMEOUT))
	shift
	until "$@"; do
		if [ -n "$replica_pid" ] && ! kill -0 "$replica_pid" 2>/dev/null; then
			tail -5 "$DIR/replica.log" >&2 || true
			fail "zero-stream-replica exited while waiting for $what"
		fi
		[ "$SECONDS" -lt "$deadline" ] || fail "timed out after $TIMEOUT s waiting for $what"
		sleep 0.1
	done
}
streaming() { [ "$(sql -Atc "SELECT state FROM zero_stream.status()")" = streaming ]; }
replica_following() { [ -f "$REPLICA" ] && grep -q following "$DIR/replica.log"; }
replica_at() { [ "$(./zero-stream-replica status "$REPLICA" 2>/dev/null | sed -n 's/^stateVersion: //p')" = "$1" ]; }
backfilled() { [ "$(sql -Atc 'SELECT count(*) FROM "zero_0/cdc"."backfilling"')" = 0 ]; }
# the head of the change log once everything committed is stored
caught_up_head() {
	local out
	out=$(sql -Atc "SELECT zero_stream.wait_for_catchup('$TIMEOUT s'); SELECT last_watermark FROM zero_stream.status()")
	[ "$(head -1 <<<"$out")" = t ] ||
		fail "the decoder did not store the committed writes within $TIMEOUT s (zero_stream.wait_for_catchup)"
	tail -1 <<<"$out"
}
# the replica reaches the head of the change log
replica_follows() {
	local target
	target=$(caught_up_head)
	wait_until "the replica $REPLICA to reach stateVersion $target" replica_at "$target"
}

echo "== start it (the subscriber server on 127.0.0.1:$SPORT)"
cluster_started=true
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t "$TIMEOUT" start >/dev/null ||
	fail "the cluster did not start"

echo "== CREATE EXTENSION zero_stream"
sql -q -c "CREATE TABLE issue (id text PRIMARY KEY, title text, n int, big bigint, meta jsonb, created timestamptz)" \
	-c "CREATE EXTENSION zero_stream"
wait_until "zero_stream.status() to say 'streaming' (the decoder's start)" streaming

echo "== write some rows"
sql -q -c "INSERT INTO issue VALUES ('abc', 'first', 42, 9007199254740993, '{\"a\": 1}', '2026-01-01 12:00:00.123456+00')" \
	-c "BEGIN" -c "INSERT INTO issue SELECT 'i' || g, 'bulk ' || g, g, g, NULL, now() FROM generate_series(1, 1000) g" -c "COMMIT" \
	-c "UPDATE issue SET title = 'renamed' WHERE id = 'abc'" \
	-c "DELETE FROM issue WHERE id = 'i1'"
caught_up_head >/dev/null

echo "== the change log (\"zero_0/cdc\".\"changeLog\"), first rows of each transaction"
sql -c "SELECT watermark, pos, left(change::text, 160) AS change
          FROM \"zero_0/cdc\".\"changeLog\"
         WHERE pos < 2 OR change->>'tag' = 'commit'
         ORDER BY watermark COLLATE \"C\", pos"
echo "== how it is stored: compressed chunks (\"zero_0/cdc\".\"changeLogChunks\"), changeLog is a view over them"
sql -c "SELECT watermark AS last_row, pos, \"firstWatermark\" AS first_row, \"firstPos\", rows,
               size AS change_bytes, pg_column_size(chunk) AS stored_bytes
          FROM \"zero_0/cdc\".\"changeLogChunks\" ORDER BY watermark, pos"
echo "== zero_stream.status()"
sql -x -c "SELECT * FROM zero_stream.status()"

echo "== zero-stream-replica: restore a snapshot into $REPLICA and follow the stream"
rm -f "$REPLICA" "$REPLICA"-*
./zero-stream-replica sync "ws://127.0.0.1:$SPORT" "$REPLICA" </dev/null >/dev/null 2>"$DIR/replica.log" &
replica_pid=$!
echo "$replica_pid" > "$DIR/replica.pid"
wait_until "the replica to restore a snapshot into $REPLICA and follow the stream" replica_following
cat "$DIR/replica.log"

echo "== live writes while the replica follows"
sql -q -c "INSERT INTO issue VALUES ('live', 'written after the snapshot', 7, 1, '[]', now())" \
	-c "UPDATE issue SET n = n + 1000 WHERE id LIKE 'i1%'" \
	-c "DELETE FROM issue WHERE id = 'i2'"
replica_follows
./zero-stream-replica status "$REPLICA"
echo "== the same rows in Postgres and in the replica"
sql -Atc "SELECT count(*), sum(n), max(title) FROM issue"
sqlite3 "$REPLICA" "SELECT count(*), sum(n), max(title) FROM issue"

echo "== a migration: ALTER TABLE issue ADD COLUMN priority int NOT NULL DEFAULT 3 (the replica follows, typed)"
sql -q -c "ALTER TABLE issue ADD COLUMN priority int NOT NULL DEFAULT 3" \
	-c "UPDATE issue SET priority = 1 WHERE id = 'abc'"
replica_follows
sql -Atc "SELECT change::text FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' = 'add-column'" | cut -c1-160
sqlite3 "$REPLICA" "SELECT name || ' ' || type FROM pragma_table_info('issue') WHERE name = 'priority'"
echo "Postgres: $(sql -Atc "SELECT count(*), sum(priority) FROM issue")   replica: $(sqlite3 "$REPLICA" "SELECT count(*), sum(priority) FROM issue")"

echo "== a migration with a volatile default: ALTER TABLE issue ADD COLUMN seen timestamptz DEFAULT clock_timestamp()"
echo "   (every existing row gets its own value, which the stream never carried: zero_stream backfills it)"
sql -q -c "ALTER TABLE issue ADD COLUMN seen timestamptz DEFAULT clock_timestamp()"
caught_up_head >/dev/null	# the add-column stored, and with it the backfill it asks for
wait_until "the backfill of issue.seen (\"zero_0/cdc\".\"backfilling\" to empty)" backfilled
replica_follows
sql -Atc "SELECT watermark || ' ' || left(change::text, 150) FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' LIKE 'backfill%'"
sqlite3 "$REPLICA" "SELECT name || ' ' || type FROM pragma_table_info('issue') WHERE name = 'seen'"
echo "Postgres: $(sql -Atc "SELECT count(*), count(seen), sum(floor(extract(epoch FROM seen) * 1000)::int8) FROM issue")   replica: $(sqlite3 "$REPLICA" "SELECT count(*), count(seen), sum(CAST(seen AS INTEGER)) FROM issue")"

echo "== a partition attached with rows, then one detached: ALTER TABLE event ATTACH PARTITION archive.event_2023, DETACH PARTITION event_2024"
echo "   (their rows join or leave the root, published through it, without a change in the stream: the DDL capture carries them"
echo "    in the DDL's transaction, and the replica changes only those rows; the others keep their _0_version)"
sql -q -c "CREATE TABLE event (id int, year int, what text, PRIMARY KEY (id, year)) PARTITION BY LIST (year)" \
	-c "CREATE TABLE event_2024 PARTITION OF event FOR VALUES IN (2024)" \
	-c "INSERT INTO event SELECT g, 2024, 'this year ' || g FROM generate_series(1, 50) g" \
	-c "CREATE SCHEMA archive" \
	-c "CREATE TABLE archive.event_2023 (id int, year int, what text, PRIMARY KEY (id, year))" \
	-c "INSERT INTO archive.event_2023 SELECT g, 2023, 'last year ' || g FROM generate_series(1, 200) g"
replica_follows
echo "before:   Postgres: $(sql -Atc "SELECT count(*) FROM event")   replica: $(sqlite3 "$REPLICA" "SELECT count(*) FROM event")"
versions=$(sqlite3 "$REPLICA" "SELECT group_concat(\"_0_version\", ',') FROM (SELECT \"_0_version\" FROM event ORDER BY id)")
sql -q -c "ALTER TABLE event ATTACH PARTITION archive.event_2023 FOR VALUES IN (2023)"
caught_up_head >/dev/null
replica_follows
echo "attached: Postgres: $(sql -Atc "SELECT count(*), count(*) FILTER (WHERE year = 2023) FROM event")   replica: $(sqlite3 "$REPLICA" "SELECT count(*), count(*) FILTER (WHERE year = 2023) FROM event")"
echo "          the 50 rows of 2024 untouched in the replica: $([ "$(sqlite3 "$REPLICA" "SELECT group_concat(\"_0_version\", ',') FROM (SELECT \"_0_version\" FROM event WHERE year = 2024 ORDER BY id)")" = "$versions" ] && echo yes || echo NO)"
sql -Atc "SELECT count(*) FILTER (WHERE change->>'tag' = 'insert' AND change->'new'->>'year' = '2023') || ' inserts of event in the ATTACH''s transaction, '
	|| count(*) FILTER (WHERE change->>'tag' = 'drop-table') || ' drop-table of event (a reset)'
	FROM \"zero_0/cdc\".\"changeLog\" WHERE change->'relation'->>'name' = 'event' OR change->'id'->>'name' = 'event'"
sql -q -c "ALTER TABLE event DETACH PARTITION event_2024"
caught_up_head >/dev/null
wait_until "the backfill of event_2024, now a table of its own (\"zero_0/cdc\".\"backfilling\" to empty)" backfilled
replica_follows
echo "detached: Postgres: $(sql -Atc "SELECT count(*) FROM event")|$(sql -Atc "SELECT count(*) FROM event_2024")   replica: $(sqlite3 "$REPLICA" "SELECT count(*) FROM event")|$(sqlite3 "$REPLICA" "SELECT count(*) FROM event_2024") (event|event_2024)"

echo "== a partition truncated: TRUNCATE archive.event_2023 (pgoutput sends nothing for it; the TRUNCATE hook carries its rows' keys)"
sql -q -c "TRUNCATE archive.event_2023"
caught_up_head >/dev/null
replica_follows
echo "truncated: Postgres: $(sql -Atc "SELECT count(*) FROM event")   replica: $(sqlite3 "$REPLICA" "SELECT count(*) FROM event")"
sql -Atc "SELECT count(*) || ' deletes of event''s 2023 rows in the change log, ' || count(DISTINCT watermark) || ' transaction' FROM \"zero_0/cdc\".\"changeLog\"
	WHERE change->>'tag' = 'delete' AND change->'relation'->>'name' = 'event' AND change->'key'->>'year' = '2023'"

echo "== metrics: what Prometheus scrapes from GET /metrics on 127.0.0.1:$SPORT (also SELECT zero_stream.metrics())"
sql -Atc "SELECT zero_stream.metrics()" |
	grep -E '^zero_stream_(decoder_state\{state="streaming"\}|transactions_stored_total|changes_stored_total|lag_bytes|retained_wal_bytes|subscribers_connected|subscriber_lag_bytes)[ {]'
echo "== the extension's version: SQL objects and library (ALTER EXTENSION zero_stream UPDATE brings the SQL up to a new library)"
sql -Atc "SELECT 'SQL ' || extension_version || ', library ' || library_version FROM zero_stream.status()"

if $keep; then
	# the commands as the user who ran this script can run them: the
	# cluster's programs as its owner (zstest when run as root)
	q() { local s; s=$(printf '%q ' "$@"); echo "${s% }"; }
	echo "== left running (cluster in $DIR, owner $(stat -c %U "$DIR/data"); replica $REPLICA, zero-stream-replica pid $replica_pid)"
	echo "psql:    $(q "$BIN/psql" -h "$DIR" -p "$PORT" -U postgres postgres)"
	echo "replica: $(q sqlite3 "$REPLICA") (or: $(q "$(pwd)/zero-stream-replica" status "$REPLICA"))"
	echo "stop:    kill $replica_pid; $(q "${as_user[@]}" "$BIN/pg_ctl" -D "$DIR/data" stop)"
else
	kill -INT "$replica_pid"
	wait "$replica_pid" || true
	replica_pid=""
	rm -f "$DIR/replica.pid"
	tail -1 "$DIR/replica.log"
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
	cluster_started=false
	echo "== replica and cluster stopped (run with --keep to leave them running)"
fi
