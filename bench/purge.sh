#!/usr/bin/env bash
# Benchmark: purging the change log (not a test; prints figures).
#
#   bench/purge.sh [rows] [purge_interval]       (defaults 1000000 1s)
#
# In one run, on one cluster:
#   1. store rate without purging: CALL bulk(rows, 1000) with the decoder
#      live and a subscriber (zero-stream-tail) keeping up; time until the
#      change log holds the last transaction; the log's size then;
#   2. purge rate: zero_stream.purge() on that log (the subscriber and the
#      backup replica are at the head, so nearly all of it goes);
#   3. store rate with purging every purge_interval during the same load;
#      the log's size at the end. While the decoder stores a backlog the
#      purge gets at most 10% of its time, so the log grows during such a
#      burst (by what the backup replica and the purge have not caught up);
#   4. after the burst: how long until the purge has brought the log back
#      to its floor (the backup replica and the subscriber at the head, the
#      log holding only the newest transaction), and its size then: the
#      table keeps its pages, which autovacuum makes free for the next
#      writes, so a second burst of the same size (5.) should not grow it
#      much (shown by the size after phase 5 and its catch-up).
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${1:-1000000}
INTERVAL=${2:-1s}
. scripts/common.sh
. bench/workload.sh
. bench/lib.sh
size() { sql -d bench -c "SELECT pg_size_pretty(pg_total_relation_size('\"zero_0/cdc\".\"changeLog\"')) || ', ' || (SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\") || ' rows'"; }

trap 'kill $TAIL_PID 2>/dev/null || true; run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true' EXIT
TAIL_PID=
init_cluster "$DIR" "$PORT" "zero_stream.port = $SPORT
zero_stream.database = 'bench'
zero_stream.purge_interval = 0
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE bench"
sql -d bench -c "$ROWS_TABLE_SQL" -c "$BULK_PROCEDURE_SQL" -c "CREATE EXTENSION zero_stream"
until [ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
make -s zero-stream-tail
rv=$(sql -d bench -c "SELECT replica_version FROM zero_stream.status()")
./zero-stream-tail --idle 600 "ws://127.0.0.1:$SPORT/replication/v6/changes?taskID=b&id=bench&replicaVersion=$rv&watermark=$rv" >/dev/null 2>&1 &
TAIL_PID=$!
echo "zero_stream purge benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, $ROWS rows per phase"

# the writes, then one session that waits in the server until all is stored
# (no polling: on 2 cores it would take CPU from the decoder)
store() {
	local t0 t1
	t0=$(now)
	sql -d bench -c "CALL bulk($ROWS, 1000)" -c "SELECT zero_stream.wait_for_catchup('3600s')" >/dev/null
	t1=$(now)
	rate "$ROWS" "$t0" "$t1"
}

echo "1. store, no purging (writes + store):     $(store); log: $(size)"
sql -d bench -c "SELECT zero_stream.wait_for_catchup('300s')" >/dev/null
until [ "$(sql -d bench -c "SELECT backup_watermark = last_watermark FROM zero_stream.status()")" = t ]; do sleep 0.1; done
sleep 1
n=$(sql -d bench -c 'SELECT count(*) FROM "zero_0/cdc"."changeLog"')
t0=$(now)
purged=$(sql -d bench -c "SELECT rows || ' rows, ' || pg_size_pretty(bytes) || ', held by ' || held_by FROM zero_stream.purge('600s')")
t1=$(now)
rows=$(sql -d bench -c "SELECT last_purge_rows FROM (SELECT purged_rows AS last_purge_rows FROM zero_stream.status()) s")
echo "2. purge() of a $n-row log: $purged; $(rate "$rows" "$t0" "$t1")"
sql -d bench -c "ALTER SYSTEM SET zero_stream.purge_interval = '$INTERVAL'" -c "SELECT pg_reload_conf()" >/dev/null
echo "3. store, purging every $INTERVAL:          $(store); log: $(size)"
sql -d bench -x -c "SELECT purged_rows, pg_size_pretty(purged_bytes) AS purged, purge_held_by, retained_bytes FROM zero_stream.status()"

# the purge is back at the floor: everything but the newest transaction is
# gone, with the backup replica at the head (polled once a second: the
# decoder is idle by now)
settle() {
	local t0 t1
	t0=$(now)
	for _ in $(seq 1 900); do
		[ "$(sql -d bench -c "SELECT s.backup_watermark = s.last_watermark AND
			(SELECT min(watermark COLLATE \"C\") FROM \"zero_0/cdc\".\"changeLog\") = s.last_watermark
			FROM zero_stream.status() s")" = t ] && break
		sleep 1
	done
	t1=$(now)
	python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):7.1f} s')" "$t0" "$t1"
}
echo "4. back at the floor after the burst in:    $(settle); log: $(size)"
echo "5. the same burst again, purging:           $(store); log: $(size)"
echo "   back at the floor in:                    $(settle); log: $(size)"
kill $TAIL_PID 2>/dev/null || true
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
