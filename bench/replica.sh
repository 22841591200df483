#!/usr/bin/env bash
# Benchmark of SQLite replicas (not a test; prints figures), next to raw
# in-server pgoutput decoding of the same WAL in the same run:
#   initial copy: SEED rows copied into the backup replica when the slot is
#                 created (from the server log);
#   restore:      zero-stream-replica restoring a snapshot of that replica
#                 over HTTP (MB/s);
#   apply:        zero-stream-replica applying ROWS rows behind it, in
#                 1,000-row transactions and then in single-row ones
#                 (rows/s), against pg_logical_slot_get_binary_changes over
#                 the same WAL.
#
#   bench/replica.sh [seed_rows] [rows] [single_txns]   (defaults 1000000 1000000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
SEED=${1:-1000000}
ROWS=${2:-1000000}
SINGLE=${3:-100000}
. scripts/common.sh
. bench/workload.sh
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-replica-$(id -un)}
PORT=${ZS_BENCH_PORT:-54359}
SPORT=${ZS_BENCH_SERVER_PORT:-54360}
CLI=$(pwd)/zero-stream-replica
make -s zero-stream-replica

sql() { run "$BIN/psql" -X -q -At -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }

init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -c "$ROWS_TABLE_SQL" \
	-c "INSERT INTO rows SELECT g, g, 'label ' || g, now(), g * 1.25 FROM generate_series(1, $SEED) g" \
	-c "ANALYZE rows"
sql -c "$BULK_PROCEDURE_SQL"
sql -c "CREATE EXTENSION zero_stream"
until [ "$(sql -c "SELECT backup_state FROM zero_stream.status()")" = following ]; do sleep 0.2; done
echo "zero_stream replica benchmark: $(sql -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, SQLite $(sqlite3 --version | cut -d' ' -f1)"
grep -o "initial copy: [0-9]* tables, [0-9]* rows .* in [0-9.]* s" "$DIR/server.log" | sed 's/ into "[^"]*"//' |
	python3 -c "
import re, sys
line = sys.stdin.read().strip()
m = re.search(r'([0-9]+) rows .* in ([0-9.]+) s', line)
print(f'initial copy: {line}  ({int(m.group(1)) / float(m.group(2)):.0f} rows/s)')"

FILE="$DIR/app.db"
rm -f "$FILE"*
"$CLI" sync --idle 1 "ws://127.0.0.1:$SPORT" "$FILE" 2> "$DIR/restore.log"
grep -o "restored .*" "$DIR/restore.log" | sed 's/^/restore: /'

sql -c "SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')" >/dev/null
apply() {
	local name=$1 call=$2 rows=$3
	sql -c "SELECT pg_replication_slot_advance('bench_raw', pg_current_wal_lsn())" >/dev/null
	sql -c "SET synchronous_commit = off" -c "$call"
	sql -c "SELECT zero_stream.wait_for_catchup('600 s')" >/dev/null
	local t0 t1
	t0=$(now)
	sql -c "SELECT count(*) FROM pg_logical_slot_get_binary_changes('bench_raw', NULL, NULL, 'proto_version', '1', 'publication_names', '_zero_public_0')" >/dev/null
	t1=$(now)
	# the same transactions twice: as a backup-style replica, then with changeLog2
	cp "$FILE" "$FILE.before"
	for mode in plain change-log; do
		cp "$FILE.before" "$FILE"
		rm -f "$FILE-wal" "$FILE-shm"
		"$CLI" sync --idle 1 $([ $mode = change-log ] && echo --change-log) \
			"ws://127.0.0.1:$SPORT" "$FILE" 2> "$DIR/apply-$name.log"
		python3 - "$name" "$mode" "$rows" "$t0" "$t1" "$DIR/apply-$name.log" <<'PY'
import re, sys
name, mode, rows, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
m = re.search(r'\((\d+) rows applied in ([0-9.]+) s\)', open(sys.argv[6]).read())
applied, secs = int(m.group(1)), float(m.group(2)) - 1.0   # less the --idle second
raw = t1 - t0
print(f"apply {name:6s} {mode:10s}: {applied} rows in {secs:6.2f}s = {applied / secs:9.0f} rows/s   "
      f"raw decode {raw:6.2f}s = {rows / raw:9.0f} rows/s   ratio {raw / secs:.2f}")
PY
	done
	rm -f "$FILE.before"
}
apply bulk "CALL bulk($ROWS, 1000)" "$ROWS"
apply single "CALL bulk($SINGLE, 1)" "$SINGLE"
"$CLI" status "$FILE" | head -3
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
