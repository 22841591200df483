#!/usr/bin/env bash
# The main job on an embedded default: a throwaway PostgreSQL 15 cluster with
# zero_stream preloaded, some writes, and the change log they produce.
#
#   scripts/demo.sh          run, show, stop the cluster
#   scripts/demo.sh --keep   leave the cluster running (the script prints how to connect)
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
sql() { run "$BIN/psql" -X -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

echo "== initdb and start a cluster in $DIR (port $PORT) with zero_stream preloaded"
init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'"
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

if $keep; then
	echo "cluster left running: psql -h $DIR -p $PORT -U postgres   (stop: $BIN/pg_ctl -D $DIR/data stop)"
else
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
	echo "== cluster stopped (run with --keep to leave it running)"
fi
