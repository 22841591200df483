#!/usr/bin/env bash
# Benchmark of failover mode (not a test; prints figures), PostgreSQL 17+:
# a primary and one local streaming standby (physical slot, slot sync on),
# commit -> received latency, p50/p99, at RATE single-row transactions/s
# for SECS seconds (pgbench -R), one subscriber on the primary's server and
# one on the standby's, in two phases of the same run:
#   no wait:  synchronized_standby_slots empty (the primary's own figure)
#   failover: synchronized_standby_slots = the standby's slot, so the decoder
#             sends nothing the standby has not flushed
# The standby's subscriber measures commit on the primary -> frame from
# the standby (its server reads the replicated change log as replay
# brings it). Subscribers are zero-stream-tail processes that print to a
# file and ack every message.
#
#   bench/failover.sh [rate] [secs]     (defaults 500 10)
# Set PG_CONFIG to a PostgreSQL 17 or 18 build with zero_stream installed.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-500}
SECS=${2:-10}
. scripts/common.sh
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-failover-$(id -un)}
PORT=${ZS_BENCH_PORT:-54359}
SPORT=${ZS_BENCH_SERVER_PORT:-54360}
SB_PORT=$((PORT + 2))
SB_SPORT=$((SPORT + 2))
TAIL=$(pwd)/zero-stream-tail
make -s zero-stream-tail

version=$("$BIN/postgres" -V | sed -E 's/.* ([0-9]+)(\.[0-9]+)?.*/\1/')
if [ "$version" -lt 17 ]; then
	echo "bench/failover.sh needs PostgreSQL 17 or later (PG_CONFIG); $BIN/postgres is $version" >&2
	exit 1
fi

psql_at() { local port=$1; shift; run "$BIN/psql" -X -q -At -h "$DIR" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
primary() { psql_at "$PORT" "$@"; }
standby() { psql_at "$SB_PORT" "$@"; }
stop_all() {
	run "$BIN/pg_ctl" -D "$DIR/standby" stop -m immediate >/dev/null 2>&1 || true
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true
}
# a benchmark that fails stops its own clusters
trap stop_all EXIT

run "$BIN/pg_ctl" -D "$DIR/standby" stop -m immediate >/dev/null 2>&1 || true
init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT
zero_stream.replica_file = ''
shared_buffers = 256MB
max_wal_senders = 4"
echo "host replication postgres 127.0.0.1/32 trust" >> "$DIR/data/pg_hba.conf"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
primary -c "CREATE TABLE rows (id bigint PRIMARY KEY, n int, label text)" \
	-c "CREATE SEQUENCE lat_seq" \
	-c "SELECT pg_create_physical_replication_slot('sb1')" >/dev/null
primary -c "CREATE EXTENSION zero_stream"
until [ "$(primary -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done

# the standby: a base backup of the primary, with slot sync
run "$BIN/pg_basebackup" -D "$DIR/standby" -h "$DIR" -p "$PORT" -U postgres -X stream -S sb1 >/dev/null
cat >> "$DIR/standby/postgresql.conf" <<CONF
port = $SB_PORT
zero_stream.port = $SB_SPORT
primary_conninfo = 'host=$DIR port=$PORT user=postgres dbname=postgres application_name=sb1'
primary_slot_name = 'sb1'
sync_replication_slots = on
hot_standby_feedback = on
CONF
run touch "$DIR/standby/standby.signal"
run "$BIN/pg_ctl" -D "$DIR/standby" -l "$DIR/standby.log" -w start >/dev/null
until [ "$(standby -c "SELECT state FROM zero_stream.status()")" = standby ]; do sleep 0.1; done
RV=$(primary -c "SELECT replica_version FROM zero_stream.status()")
until [ "$(standby -c "SELECT replica_version FROM zero_stream.status()")" = "$RV" ]; do sleep 0.1; done

echo "INSERT INTO rows VALUES (nextval('lat_seq'), 1, 'l');" > "$DIR/lat.sql"
chmod 644 "$DIR/lat.sql"

# phase LABEL: both subscribers from the primary's head, RATE tx/s for SECS s
phase() {
	local label=$1 head
	primary -c "SELECT zero_stream.wait_for_catchup('60 s')" >/dev/null
	head=$(primary -c "SELECT last_watermark FROM zero_stream.status()")
	until [ "$(standby -c "SELECT last_watermark FROM zero_stream.status()")" = "$head" ]; do sleep 0.05; done
	"$TAIL" --timestamps --idle 3 "ws://127.0.0.1:$SPORT/replication/v6/changes?taskID=bench&id=p-$label&replicaVersion=$RV&watermark=$head" > "$DIR/$label-primary.out" 2>/dev/null &
	"$TAIL" --timestamps --idle 3 "ws://127.0.0.1:$SB_SPORT/replication/v6/changes?taskID=bench&id=s-$label&replicaVersion=$RV&watermark=$head" > "$DIR/$label-standby.out" 2>/dev/null &
	sleep 0.5
	run "$BIN/pgbench" -n -c 2 -j 2 -R "$RATE" -T "$SECS" -f "$DIR/lat.sql" -h "$DIR" -p "$PORT" -U postgres postgres > "$DIR/pgbench-$label.out" 2>&1
	wait
	python3 - "$label" "$DIR/$label-primary.out" "$DIR/$label-standby.out" <<'PY'
import json, sys
def lat(path):
    out = []
    for line in open(path):
        recv, frame = line.split(' ', 1)
        msg = json.loads(frame).get('msg')
        if msg and msg[0] == 'commit':
            out.append((int(recv) - msg[1]['commitTime']) / 1000.0)
    return sorted(out)
label = sys.argv[1]
for who, path in (('primary', sys.argv[2]), ('standby', sys.argv[3])):
    l = lat(path)
    if not l:
        print(f'{label:9s} {who}: no transactions received')
        continue
    pick = lambda q: l[min(len(l) - 1, int(q * len(l)))]
    print(f'{label:9s} {who}: {len(l)} transactions: commit -> received p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms')
PY
}

echo "zero_stream failover benchmark: PostgreSQL $version, $RATE single-row transactions/s for $SECS s, $(nproc) cores, one local standby"
primary -c "ALTER SYSTEM SET synchronized_standby_slots = ''" -c "SELECT pg_reload_conf()" >/dev/null
phase "no-wait"
primary -c "ALTER SYSTEM SET synchronized_standby_slots = 'sb1'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
[ "$(primary -c "SELECT failover_standbys FROM zero_stream.status()")" = sb1 ] ||
	{ echo "synchronized_standby_slots did not take effect" >&2; exit 1; }
phase "failover"
primary -c "SELECT 'slot synced on the standby: ' || failover_synced FROM zero_stream.status()"
