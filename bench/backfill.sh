#!/usr/bin/env bash
# Benchmark: backfill rate, next to the bulk store rate and a raw read of the
# same table, in the same run; and the DDL capture's cost on a workload
# without DDL (not a test; prints figures).
#
#   bench/backfill.sh [rows] [pgbench_seconds]        (defaults 1000000 15)
#
# 1. bulk store: the decoder is held back while CALL bulk(rows, 1000) writes
#    1,000-row transactions, then restarted: time until the change log holds
#    the last one (as bench/decode_vs_store.sh measures it).
# 2. raw read: COPY (SELECT id, now() FROM big) TO /dev/null on the same
#    table: what reading the backfilled values costs by itself.
# 3. backfill: ALTER TABLE big ADD COLUMN c timestamptz DEFAULT now() on a
#    table of `rows` rows: time from the ALTER's commit until the
#    backfill-completed is stored ("backfilling" empty).
# 4. DDL capture: pgbench (TPC-B-like, no DDL) with the extension's event
#    trigger enabled and disabled, alternately, twice each: its cost should
#    not be measurable, as event triggers only run for DDL.
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${1:-1000000}
PGBENCH_SECONDS=${2:-15}
. scripts/common.sh
. bench/workload.sh
. bench/lib.sh
wait_streaming() { until [ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.01; done; }

# a benchmark that fails stops its own cluster
trap 'run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true' EXIT
init_cluster "$DIR" "$PORT" "zero_stream.port = $SPORT
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min"
set_database bench
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE bench"
sql -d bench -c "$ROWS_TABLE_SQL" -c "$BULK_PROCEDURE_SQL" \
	-c "CREATE TABLE big (id int PRIMARY KEY, label text)" \
	-c "INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, $ROWS) g" \
	-c "VACUUM ANALYZE big" \
	-c "CREATE EXTENSION zero_stream"
wait_streaming
echo "zero_stream backfill benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, $ROWS rows"

# 1. bulk store
set_database postgres; restart
sql -d bench -c "SET synchronous_commit = off" -c "CALL bulk($ROWS, 1000)"
target=$(sql -d bench -c "SELECT max(id) FROM rows")
set_database bench; restart
wait_streaming
t0=$(now)
until [ "$(sql -d bench -c "SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\" WHERE watermark = (SELECT last_watermark FROM zero_stream.status()) AND change->'new'->>'id' = '$target'")" = 1 ]; do sleep 0.01; done
t1=$(now)
echo "bulk store (1,000-row transactions):   $(rate "$ROWS" "$t0" "$t1")"

# 2. raw read of the values a backfill reads
t0=$(now)
sql -d bench -c "COPY (SELECT id, now() FROM big) TO STDOUT" > /dev/null
t1=$(now)
echo "raw read (COPY id, now() to /dev/null): $(rate "$ROWS" "$t0" "$t1")"

# 3. backfill
sql -d bench -c "SELECT zero_stream.wait_for_catchup('300s')" >/dev/null
ta=$(now)
sql -d bench -c "ALTER TABLE big ADD COLUMN c timestamptz DEFAULT now()"
t0=$(now)
until [ "$(sql -d bench -c "SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' = 'backfill-completed'")" = 1 ]; do sleep 0.01; done
t1=$(now)
chunks=$(sql -d bench -c "SELECT count(*) || ' messages, ' || pg_size_pretty(sum(length(change::text))) FROM \"zero_0/cdc\".\"changeLog\" WHERE change->>'tag' = 'backfill'")
echo "backfill (ADD COLUMN ... DEFAULT now()): $(rate "$ROWS" "$t0" "$t1")  ($chunks; from the ALTER's commit; the ALTER itself: $(rate "$ROWS" "$ta" "$t0"))"
grep "backfill of" "$DIR/server.log" | sed 's/^[^]]*] //' | tail -3

# 4. the DDL capture on a workload without DDL
run "$BIN/pgbench" -q -i -s 10 -h "$DIR" -p "$PORT" -U postgres bench >/dev/null 2>&1
tps() {
	run "$BIN/pgbench" -n -T "$PGBENCH_SECONDS" -c 2 -j 2 -h "$DIR" -p "$PORT" -U postgres bench 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
for round in 1 2; do
	on=$(tps)
	sql -d bench -c "ALTER EVENT TRIGGER zero_stream_capture_schema_change DISABLE"
	off=$(tps)
	sql -d bench -c "ALTER EVENT TRIGGER zero_stream_capture_schema_change ENABLE"
	echo "pgbench round $round: DDL capture enabled $on tps, disabled $off tps (ratio $(python3 -c "print(f'{$on / $off:.3f}')"))"
done
sql -d bench -c "SELECT zero_stream.wait_for_catchup('300s')" >/dev/null
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
