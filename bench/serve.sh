#!/usr/bin/env bash
# Benchmark of the subscriber server (not a test; prints figures):
#   catch-up: one subscriber from replicaVersion through ROWS stored changes,
#             with plain (v6) and batched (v7) frames;
#   latency:  commit -> subscriber received, p50/p99, at 1,000 single-row
#             transactions/s for 10 s (pgbench -R), one live subscriber.
# Subscribers are zero-stream-tail processes that print to /dev/null and
# ack every message, so the client's own cost is part of the figures.
# Fan-out (many subscribers) is bench/fanout.sh's: a client process each
# would measure the machine's scheduler on a small machine.
#
#   bench/serve.sh [rows]        (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
. scripts/common.sh
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-serve-$(id -un)}
PORT=${ZS_BENCH_PORT:-54349}
SPORT=${ZS_BENCH_SERVER_PORT:-54350}
TAIL=$(pwd)/zero-stream-tail
make -s zero-stream-tail

sql() { run "$BIN/psql" -X -q -At -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }

init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT
zero_stream.max_subscribers = 64
shared_buffers = 512MB
max_wal_size = 8GB"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -c "CREATE TABLE rows (id bigint PRIMARY KEY, n int, label text)" -c "CREATE EXTENSION zero_stream"
until [ "$(sql -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
sql -c "SET synchronous_commit = off" -c "
DO \$\$ BEGIN
  FOR t IN 0 .. $ROWS / 1000 - 1 LOOP
    INSERT INTO rows SELECT t * 1000 + g, g, 'label ' || g FROM generate_series(1, 1000) g;
    COMMIT;
  END LOOP;
END \$\$"
sql -c "SELECT zero_stream.wait_for_catchup('600 s')" >/dev/null
RV=$(sql -c "SELECT replica_version FROM zero_stream.status()")
MSGS=$(sql -c "SELECT count(*) + 1 - 2 FROM \"zero_0/cdc\".\"changeLog\"")   # + status - seed rows
URL="ws://127.0.0.1:$SPORT/replication/v6/changes?taskID=bench&replicaVersion=$RV&watermark=$RV"
BATCHED="ws://127.0.0.1:$SPORT/replication/v7/changes?taskID=bench&wsBatched=true&replicaVersion=$RV&watermark=$RV"

# subscribe N URL LABEL: N subscribers read the whole log; each ends after 1 s
# without a message, which is taken off the elapsed time
subscribe() {
	local n=$1 url=$2 label=$3 t0 t1
	t0=$(now)
	for i in $(seq 1 "$n"); do "$TAIL" --idle 1 "$url&id=b$i" > /dev/null 2>&1 & done
	wait
	t1=$(now)
	python3 -c "
import sys
n, m, t, label = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) - 1.0, sys.argv[4]
print(f'{label:8s} {n:3d} subscriber(s): {m} messages each in {t:6.2f}s: {m/t:9.0f} msg/s per subscriber, {n*m/t:9.0f} msg/s in all', file=sys.stderr)
print(t)" "$n" "$MSGS" "$(echo "$t1 - $t0" | bc)" "$label"
}

echo "zero_stream serve benchmark: $ROWS rows in 1,000-row transactions, $MSGS messages per subscriber, $(nproc) cores"
subscribe 1 "$URL" "v6" >/dev/null
subscribe 1 "$BATCHED" "v7-batch" >/dev/null
# latency of live streaming at a steady 1,000 tx/s
HEAD=$(sql -c "SELECT last_watermark FROM zero_stream.status()")
"$TAIL" --timestamps --idle 3 "ws://127.0.0.1:$SPORT/replication/v6/changes?taskID=bench&id=lat&replicaVersion=$RV&watermark=$HEAD" > "$DIR/latency.out" 2>/dev/null &
sleep 0.5
echo "INSERT INTO rows VALUES (1000000000 + :client_id * 100000000 + nextval('lat_seq'), 1, 'l');" > "$DIR/lat.sql"
sql -c "CREATE SEQUENCE IF NOT EXISTS lat_seq"
run "$BIN/pgbench" -n -c 2 -j 2 -R 1000 -T 10 -f "$DIR/lat.sql" -h "$DIR" -p "$PORT" -U postgres postgres > "$DIR/pgbench.out" 2>&1
wait
python3 - "$DIR/latency.out" <<'PY'
import json, sys
lat = []
for line in open(sys.argv[1]):
    recv, frame = line.split(' ', 1)
    msg = json.loads(frame).get('msg')
    if msg and msg[0] == 'commit':
        lat.append((int(recv) - msg[1]['commitTime']) / 1000.0)
lat.sort()
if lat:
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f'latency: {len(lat)} transactions at ~1000 tx/s: commit -> received p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms, max {lat[-1]:.2f} ms')
PY

run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
