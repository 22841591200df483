#!/usr/bin/env bash
# Benchmark: what carrying a partition's rows costs when it is attached to a
# table published through its root (issue 41), against the same ATTACH
# without the extension's event triggers and against the reset it replaces,
# in the same run (not a test; prints figures).
#
#   bench/partitions.sh [rows] [root_rows]       (defaults 1000000 1000000)
#
# The root table ev holds root_rows rows in one partition; staging tables of
# `rows` rows (id int, k int, v text of 32 characters: a ~70-byte tuple) are
# attached to it, each after a CHECKPOINT, three ways:
#   1. plain:  attached to staging.ev, a root no publication publishes (what
#              PostgreSQL's ATTACH costs by itself: the partition
#              constraint's scan; the capture finds nothing to carry);
#   2. carry:  zero_stream's capture carries the rows (the default up to
#              zero_stream.partition_carry_rows): the ATTACH's time and WAL,
#              and how long the decoder takes from the ATTACH's commit until
#              the inserts are stored;
#   3. reset:  partition_carry_rows = 0: the ATTACH's time and WAL, and how
#              long until the root's backfill (all of its rows, the attached
#              ones included) is stored, during which Zero does not sync it.
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${1:-1000000}
ROOT_ROWS=${2:-1000000}
. scripts/common.sh
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
sql -d bench -c "CREATE TABLE ev (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k)" \
	-c "CREATE TABLE ev_0 PARTITION OF ev FOR VALUES FROM (0) TO (100)" \
	-c "INSERT INTO ev SELECT g, g % 100, md5(g::text) FROM generate_series(1, $ROOT_ROWS) g" \
	-c "CREATE SCHEMA staging" \
	-c "CREATE TABLE staging.ev (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k)"
for p in 1 2 3; do
	sql -d bench -c "CREATE TABLE staging.p$p (id int, k int, v text, PRIMARY KEY (id, k))" \
		-c "INSERT INTO staging.p$p SELECT g, ${p}00 + g % 100, md5(g::text) FROM generate_series(1, $ROWS) g" \
		-c "VACUUM ANALYZE staging.p$p"
done
sql -d bench -c "CREATE EXTENSION zero_stream"
wait_streaming
sql -d bench -c "SELECT zero_stream.wait_for_catchup('600s')" >/dev/null
heap=$(sql -d bench -c "SELECT pg_size_pretty(pg_relation_size('staging.p1'))")
echo "zero_stream partition benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores;" \
	"attaching $ROWS rows ($heap of heap) to a root of $ROOT_ROWS rows"

# attach ROOT P SETTINGS: prints "<seconds> <WAL bytes>" of the ATTACH
attach() {
	local root=$1 p=$2 settings=$3 l0 t0 t1
	sql -d bench -c "CHECKPOINT"
	l0=$(sql -d bench -c "SELECT pg_current_wal_insert_lsn()")
	t0=$(now)
	sql -d bench -c "$settings" -c "ALTER TABLE $root ATTACH PARTITION staging.p$p FOR VALUES FROM (${p}00) TO ($((p + 1))00)" 2>/dev/null
	t1=$(now)
	echo "$(python3 -c "print(f'{$t1 - $t0:.2f}')") $(sql -d bench -c "SELECT pg_current_wal_insert_lsn() - '$l0'")"
}
mb() { python3 -c "print(f'{$1 / 1048576:.1f} MB')"; }

# 1. plain
read -r s w <<<"$(attach staging.ev 1 "SET application_name = bench")"
echo "plain ATTACH (nothing carried): $s s, WAL $(mb "$w")"

# 2. carry
read -r s w <<<"$(attach ev 2 "SET zero_stream.partition_carry_rows = $ROWS")"
t0=$(now)
sql -d bench -c "SELECT zero_stream.wait_for_catchup('600s')" >/dev/null
t1=$(now)
echo "carried ATTACH:                 $s s, WAL $(mb "$w"); stored by the decoder in $(rate "$ROWS" "$t0" "$t1")"

# 3. reset
read -r s w <<<"$(attach ev 3 "SET zero_stream.partition_carry_rows = 0")"
t0=$(now)
until [ "$(sql -d bench -c "SELECT NOT EXISTS (SELECT FROM \"zero_0/cdc\".backfilling)")" = t ]; do sleep 0.05; done
t1=$(now)
total=$(sql -d bench -c "SELECT count(*) FROM ev")
echo "reset ATTACH:                   $s s, WAL $(mb "$w"); the root backfilled ($total rows) in $(rate "$total" "$t0" "$t1")"
