#!/usr/bin/env bash
# Benchmark: zero_stream's store rate against raw in-server pgoutput decoding
# of the same WAL, measured in the same run (not a test; prints figures).
#
#   bench/decode_vs_store.sh [bulk_rows] [single_txns]     (defaults 1000000 100000)
#
# For each workload (bulk: 1,000-row transactions; single: 1-row transactions):
#   1. the decoder is held back (zero_stream.database points at a database
#      without the extension, so it waits) while the workload writes its WAL;
#   2. raw: pg_logical_slot_get_binary_changes(pgoutput v1) over that WAL on a
#      second slot, timed;
#   3. zero_stream: restart with the real database; time from "streaming" to
#      the change log holding the last transaction.
#   4. end to end: a subscriber (zero-stream-tail) follows the stream during
#      step 3; time from "streaming" to its receiving the last transaction.
# ratio = raw time / zero_stream time (1.0 = as fast as decoding alone).
set -euo pipefail
cd "$(dirname "$0")/.."

BULK_ROWS=${1:-1000000}
SINGLE_TXNS=${2:-100000}
. scripts/common.sh
. bench/workload.sh
. bench/lib.sh

# a benchmark that fails stops its own cluster
trap 'run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true' EXIT
init_cluster "$DIR" "$PORT" "zero_stream.port = $SPORT
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min"
set_database bench
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE bench"
sql -d bench -c "$ROWS_TABLE_SQL" \
	-c "CREATE EXTENSION zero_stream"
until [ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
sql -d bench -c "SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')" >/dev/null
sql -d bench -c "$BULK_PROCEDURE_SQL"

TAIL=$(pwd)/zero-stream-tail
make -s zero-stream-tail

# start_subscriber FROM OUT: follow the stream from watermark FROM, once the server is up
start_subscriber() {
	local rv=""
	# the decoder publishes the replicaVersion once it has started: wait for it
	for _ in $(seq 1 600); do
		rv=$(sql -d bench -c "SELECT replica_version FROM zero_stream.status()")
		[ -n "$rv" ] && break
		sleep 0.05
	done
	[ -n "$rv" ] || { echo "decoder did not publish its replicaVersion" >&2; return 1; }
	for _ in $(seq 1 100); do
		"$TAIL" --timestamps --idle 3 "ws://127.0.0.1:$SPORT/replication/v7/changes?wsBatched=true&taskID=b&id=e2e&replicaVersion=$rv&watermark=$1" > "$2" 2>/dev/null &
		sleep 0.1
		kill -0 $! 2>/dev/null && return
	done
}

measure() {
	local name=$1 call=$2 rows=$3
	# hold the decoder back while the workload writes WAL; the raw slot starts
	# where the workload starts (not at our own change-log writes of the last phase)
	local from; from=$(sql -d bench -c "SELECT last_watermark FROM zero_stream.status()")
	set_database postgres; restart
	sql -d bench -c "SELECT pg_replication_slot_advance('bench_raw', pg_current_wal_lsn())" >/dev/null
	sql -d bench -c "SET synchronous_commit = off" -c "$call"
	sql -d bench -c "SELECT pg_switch_wal()" >/dev/null
	local target; target=$(sql -d bench -c "SELECT max(id) FROM rows")
	local wal_mb; wal_mb=$(sql -d bench -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) / 1048576.0) FROM pg_replication_slots WHERE slot_name = 'bench_raw'")

	local t0 t1 t2 t3 msgs
	t0=$(now)
	msgs=$(sql -d bench -c "SELECT count(*) FROM pg_logical_slot_get_binary_changes('bench_raw', NULL, NULL, 'proto_version', '1', 'publication_names', '_zero_public_0')")
	t1=$(now)

	set_database bench; restart
	start_subscriber "$from" "$DIR/e2e.out"
	until [ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.01; done
	t2=$(now)
	until [ "$(sql -d bench -c "SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\" WHERE watermark = (SELECT last_watermark FROM zero_stream.status()) AND change->'new'->>'id' = '$target'")" = 1 ]; do sleep 0.01; done
	t3=$(now)
	wait
	python3 - "$name" "$rows" "$msgs" "$wal_mb" "$t0" "$t1" "$t2" "$t3" "$DIR/e2e.out" <<'PY'
import json, sys
name, rows, msgs, wal = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
t0, t1, t2, t3 = map(float, sys.argv[5:9])
last = None
for line in open(sys.argv[9]):
    recv, frame = line.split(' ', 1)
    last = int(recv) / 1e6
raw, zs = t1 - t0, t3 - t2
e2e = (last - t2) if last else float('nan')
print(f"{name:7s} rows={rows:>8d} wal={wal:>5s}MB pgoutput_msgs={msgs:>8d}  "
      f"raw={raw:6.2f}s ({rows/raw:9.0f} rows/s)  zero_stream={zs:6.2f}s ({rows/zs:9.0f} rows/s)  "
      f"ratio={raw/zs:.2f}  end-to-end={e2e:6.2f}s ({rows/e2e:9.0f} rows/s, ratio {raw/e2e:.2f})")
PY
}

# Warm-up, not measured: a fresh cluster zero-fills every new WAL segment,
# which a running server avoids by recycling old ones. Write and store about
# 1 GB of WAL once, then checkpoint, so both measurements below run against
# recycled segments, as in steady state.
sql -d bench -c "SET synchronous_commit = off" -c "CALL bulk(1000000, 1000)"
sql -d bench -c "SELECT zero_stream.wait_for_catchup('300s')" >/dev/null
sql -d bench -c "SELECT pg_replication_slot_advance('bench_raw', pg_current_wal_lsn())" >/dev/null
sql -d bench -c "CHECKPOINT" -c "SELECT pg_switch_wal()" -c "CHECKPOINT" >/dev/null

echo "zero_stream benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores"
measure bulk "CALL bulk($BULK_ROWS, 1000)" "$BULK_ROWS"
measure single "CALL bulk($SINGLE_TXNS, 1)" "$SINGLE_TXNS"
sql -d bench -x -c "SELECT transactions_stored, changes_stored, local_commits FROM zero_stream.status()"
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
