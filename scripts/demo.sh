#!/usr/bin/env bash
# The main job on an embedded default: a throwaway PostgreSQL 15 cluster with
# zero_stream preloaded, some writes, the change log they produce, and a
# SQLite replica (zero-stream-replica) that follows live writes.
#
#   scripts/demo.sh          run, show, stop the cluster and the replica
#   scripts/demo.sh --keep   leave both running (the script prints how to use them)
#
# As root the cluster runs as the unprivileged user "zstest" (initdb refuses root).
set -euo pipefail
cd "$(dirname "$0")/.."

keep=false
[ "${1:-}" = "--keep" ] && keep=true

scripts/install-deps.sh
SUDO=()
[ "$(id -u)" -ne 0 ] && SUDO=(sudo)
make -s -j2
"${SUDO[@]}" make -s install >/dev/null

. scripts/common.sh
DIR=${ZS_DEMO_DIR:-/tmp/zero_stream-demo}
PORT=${ZS_DEMO_PORT:-54329}
SPORT=${ZS_DEMO_SERVER_PORT:-54330}
REPLICA=$DIR/app.db
sql() { run "$BIN/psql" -X -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

echo "== initdb and start a cluster in $DIR (port $PORT) with zero_stream preloaded"
init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null

echo "== CREATE EXTENSION zero_stream"
sql -q -c "CREATE TABLE issue (id text PRIMARY KEY, title text, n int, big bigint, meta jsonb, created timestamptz)" \
	-c "CREATE EXTENSION zero_stream"
for _ in $(seq 1 100); do
	[ "$(sql -Atc "SELECT state FROM zero_stream.status()")" = streaming ] && break
	sleep 0.1
done

echo "== write some rows"
sql -q -c "INSERT INTO issue VALUES ('abc', 'first', 42, 9007199254740993, '{\"a\": 1}', '2026-01-01 12:00:00.123456+00')" \
	-c "BEGIN" -c "INSERT INTO issue SELECT 'i' || g, 'bulk ' || g, g, g, NULL, now() FROM generate_series(1, 1000) g" -c "COMMIT" \
	-c "UPDATE issue SET title = 'renamed' WHERE id = 'abc'" \
	-c "DELETE FROM issue WHERE id = 'i1'"
sql -Atc "SELECT zero_stream.wait_for_catchup()" >/dev/null

echo "== the change log (\"zero_0/cdc\".\"changeLog\"), first rows of each transaction"
sql -c "SELECT watermark, pos, left(change::text, 160) AS change
          FROM \"zero_0/cdc\".\"changeLog\"
         WHERE pos < 2 OR change->>'tag' = 'commit'
         ORDER BY watermark COLLATE \"C\", pos"
echo "== zero_stream.status()"
sql -x -c "SELECT * FROM zero_stream.status()"

echo "== zero-stream-replica: restore a snapshot into $REPLICA and follow the stream"
rm -f "$REPLICA" "$REPLICA"-*
./zero-stream-replica sync "ws://127.0.0.1:$SPORT" "$REPLICA" 2> "$DIR/replica.log" &
replica_pid=$!
until [ -f "$REPLICA" ] && grep -q following "$DIR/replica.log"; do sleep 0.1; done
cat "$DIR/replica.log"

echo "== live writes while the replica follows"
sql -q -c "INSERT INTO issue VALUES ('live', 'written after the snapshot', 7, 1, '[]', now())" \
	-c "UPDATE issue SET n = n + 1000 WHERE id LIKE 'i1%'" \
	-c "DELETE FROM issue WHERE id = 'i2'"
target=$(sql -Atc "SELECT zero_stream.wait_for_catchup(); SELECT last_watermark FROM zero_stream.status()" | tail -1)
until [ "$(./zero-stream-replica status "$REPLICA" | sed -n 's/^stateVersion: //p')" = "$target" ]; do sleep 0.1; done
./zero-stream-replica status "$REPLICA"
echo "== the same rows in Postgres and in the replica"
sql -Atc "SELECT count(*), sum(n), max(title) FROM issue"
sqlite3 "$REPLICA" "SELECT count(*), sum(n), max(title) FROM issue"

echo "== a migration: ALTER TABLE issue ADD COLUMN priority int NOT NULL DEFAULT 3 (the replica follows, typed)"
sql -q -c "ALTER TABLE issue ADD COLUMN priority int NOT NULL DEFAULT 3" \
	-c "UPDATE issue SET priority = 1 WHERE id = 'abc'"
target=$(sql -Atc "SELECT zero_stream.wait_for_catchup(); SELECT last_watermark FROM zero_stream.status()" | tail -1)
until [ "$(./zero-stream-replica status "$REPLICA" | sed -n 's/^stateVersion: //p')" = "$target" ]; do sleep 0.1; done
sql -Atc "SELECT change::text FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' = 'add-column'" | cut -c1-160
sqlite3 "$REPLICA" "SELECT name || ' ' || type FROM pragma_table_info('issue') WHERE name = 'priority'"
echo "Postgres: $(sql -Atc "SELECT count(*), sum(priority) FROM issue")   replica: $(sqlite3 "$REPLICA" "SELECT count(*), sum(priority) FROM issue")"

echo "== a migration with a volatile default: ALTER TABLE issue ADD COLUMN seen timestamptz DEFAULT clock_timestamp()"
echo "   (every existing row gets its own value, which the stream never carried: zero_stream backfills it)"
sql -q -c "ALTER TABLE issue ADD COLUMN seen timestamptz DEFAULT clock_timestamp()"
until [ "$(sql -Atc 'SELECT count(*) FROM "zero_0/cdc"."backfilling"')" = 0 ]; do sleep 0.1; done
target=$(sql -Atc "SELECT zero_stream.wait_for_catchup(); SELECT last_watermark FROM zero_stream.status()" | tail -1)
until [ "$(./zero-stream-replica status "$REPLICA" | sed -n 's/^stateVersion: //p')" = "$target" ]; do sleep 0.1; done
sql -Atc "SELECT watermark || ' ' || left(change::text, 150) FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' LIKE 'backfill%'"
sqlite3 "$REPLICA" "SELECT name || ' ' || type FROM pragma_table_info('issue') WHERE name = 'seen'"
echo "Postgres: $(sql -Atc "SELECT count(*), count(seen), sum(floor(extract(epoch FROM seen) * 1000)::int8) FROM issue")   replica: $(sqlite3 "$REPLICA" "SELECT count(*), count(seen), sum(CAST(seen AS INTEGER)) FROM issue")"

if $keep; then
	echo "left running: psql -h $DIR -p $PORT -U postgres; the replica $REPLICA (zero-stream-replica pid $replica_pid)"
	echo "stop: kill $replica_pid; $BIN/pg_ctl -D $DIR/data stop"
else
	kill -INT "$replica_pid"
	wait "$replica_pid" || true
	tail -1 "$DIR/replica.log"
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
	echo "== replica and cluster stopped (run with --keep to leave them running)"
fi
