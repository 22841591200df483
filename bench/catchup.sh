#!/usr/bin/env bash
# Benchmark: a live subscriber's latency while many subscribers catch up
# (not a test, prints figures). Run it alone on the machine.
#
#   bench/catchup.sh [rounds] [subscribers] [log_rows]     (defaults 3 64 200000)
#
# A change log of log_rows rows (transactions of 1,000 rows) is written
# first. A live subscriber (zero-stream-tail --timestamps) follows the head
# while pgbench commits 100 single-row transactions/s. Each round:
#   1. unloaded: 10 s with only the live subscriber;
#   2. loaded: `subscribers` more subscribers read the log from its start
#      (v6, one frame per message, each acked) until every one has caught
#      up with the head, then leave. They are the subscriptions of one
#      zero-stream-fanout process, which checks that each receives every
#      transaction once, in order (64 client processes would take the CPU
#      from the server, the decoder and the live subscriber on a small
#      machine, and measure the scheduler).
# Printed per round: the live subscriber's commit -> received latency
# (p50/p99/max) unloaded and loaded, the p99 ratio, the catch-up's duration
# and rate, the server worker's RssAnon before, at most during, once every
# subscriber has caught up, and after they are gone, the time the server
# worker, the decoder and the live client waited for a CPU (run queue,
# /proc/<pid>/schedstat) per second unloaded and loaded, and the catch-up
# client's CPU time. Then the range of the ratios over the rounds.
# ZS_BENCH_CONF adds postgresql.conf lines (e.g. zero_stream.catchup_share = 50);
# CLIENT_NICE=19 runs the catch-up client at that niceness (on a small
# machine, to tell the server's part of the latency from the client's CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
# NAME=value arguments are settings (PG_CONFIG=...), the others the figures
args=()
for a in "$@"; do case $a in *=*) export "${a?}" ;; *) args+=("$a") ;; esac; done
ROUNDS=${args[0]:-3}
NSUB=${args[1]:-64}
LOG_ROWS=${args[2]:-200000}
. scripts/common.sh
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-catchup-$(id -un)}
PORT=${ZS_BENCH_PORT:-54359}
SPORT=${ZS_BENCH_SERVER_PORT:-54360}
TAIL=$(pwd)/zero-stream-tail
FANOUT=$(pwd)/zero-stream-fanout
make -s zero-stream-tail zero-stream-fanout

sql() { run "$BIN/psql" -X -q -At -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
rss() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
# nanoseconds the processes waited on a run queue so far (summed), and ran
runq() { local t=0 p; for p in "$@"; do t=$((t + $(cut -d' ' -f2 "/proc/$p/schedstat"))); done; echo $t; }
oncpu() { cut -d' ' -f1 "/proc/$1/schedstat"; }

# a benchmark that fails stops its own cluster and its subscribers
LOAD_PID=""
cleanup() {
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null || true
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true
}
trap cleanup EXIT

init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT
zero_stream.max_subscribers = $((NSUB + 8))
zero_stream.purge_interval = 0
zero_stream.poll_interval = 20
shared_buffers = 256MB
max_wal_size = 4GB
${ZS_BENCH_CONF:-}"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -c "CREATE TABLE t (id bigserial PRIMARY KEY, v text)" -c "CREATE EXTENSION zero_stream"
until [ "$(sql -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
# transactions of 998 inserts: 1,000 rows of the log each with begin and commit
sql -c "SET synchronous_commit = off" -c "
DO \$\$ BEGIN
  FOR i IN 1 .. $LOG_ROWS / 1000 LOOP
    INSERT INTO t (v) SELECT 'catch-up row ' || g || ' of transaction ' || i FROM generate_series(1, 998) g;
    COMMIT;
  END LOOP;
END \$\$"
sql -c "SELECT zero_stream.wait_for_catchup('600 s')" >/dev/null
RV=$(sql -c "SELECT replica_version FROM zero_stream.status()")
HEAD=$(sql -c "SELECT last_watermark FROM zero_stream.status()")
SERVER=$(sql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream server'")
DECODER=$(sql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'")
LOGROWS=$(sql -c "SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\"")

"$TAIL" --timestamps "ws://127.0.0.1:$SPORT/replication/v6/changes?id=live&taskID=bench&replicaVersion=$RV&watermark=$HEAD" \
	> "$DIR/live.out" 2> "$DIR/live.err" &
LIVE=$!
echo "INSERT INTO t (v) VALUES ('live');" > "$DIR/insert.sql"
run "$BIN/pgbench" -n -c 2 -j 2 -R 100 -T 100000 -f "$DIR/insert.sql" -h "$DIR" -p "$PORT" -U postgres postgres \
	> "$DIR/pgbench.out" 2>&1 &
LOAD_PID=$!
sleep 2

echo "catch-up benchmark: $(sql -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "log: $LOGROWS rows; $NSUB subscribers catch up from its start while one follows the head (100 transactions/s)"
: > "$DIR/rounds"
for round in $(seq 1 "$ROUNDS"); do
	t0=$(now)
	q0s=$(runq "$SERVER"); q0d=$(runq "$DECODER"); q0l=$(runq "$LIVE"); c0s=$(oncpu "$SERVER"); c0d=$(oncpu "$DECODER")
	sleep 10
	t1=$(now)
	q1s=$(runq "$SERVER"); q1d=$(runq "$DECODER"); q1l=$(runq "$LIVE"); c1s=$(oncpu "$SERVER"); c1d=$(oncpu "$DECODER")
	rss_before=$(rss "$SERVER")
	nice -n "${CLIENT_NICE:-0}" "$FANOUT" --subscriptions "$NSUB" \
		"ws://127.0.0.1:$SPORT/replication/v6/changes?id=c$round-%d&taskID=bench&replicaVersion=$RV&watermark=$RV" \
		> "$DIR/c$round.out" 2> "$DIR/c$round.err" &
	FAN_PID=$!
	# caught up: every one is live, or has acked the head of the previous poll
	rss_max=$rss_before
	prev=$(sql -c "SELECT last_watermark FROM zero_stream.status()")
	deadline=$(( $(date +%s) + 900 ))
	while :; do
		r=$(rss "$SERVER"); [ "$r" -gt "$rss_max" ] && rss_max=$r
		done_count=$(sql -c "SELECT count(*) FROM zero_stream.subscribers()
			WHERE id LIKE 'c$round-%' AND state NOT IN ('departed', 'restored') AND (state = 'live' OR watermark_acked COLLATE \"C\" >= '$prev')")
		[ "$done_count" -eq "$NSUB" ] && break
		[ "$(date +%s)" -lt "$deadline" ] || { echo "round $round: the subscribers did not catch up in 900 s" >&2; exit 1; }
		prev=$(sql -c "SELECT last_watermark FROM zero_stream.status()")
		sleep 0.2
	done
	t2=$(now)
	q2s=$(runq "$SERVER"); q2d=$(runq "$DECODER"); q2l=$(runq "$LIVE"); c2s=$(oncpu "$SERVER"); c2d=$(oncpu "$DECODER")
	sleep 2
	rss_caught_up=$(rss "$SERVER")
	# the load goes on; the catch-up subscribers go (as clients leave), each
	# having received every transaction once, in order
	kill -TERM "$FAN_PID"
	rc=0; wait "$FAN_PID" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "round $round: zero-stream-fanout exited with $rc" >&2
		grep -v 'status=ok' "$DIR/c$round.out" | head -5 >&2
		exit 1
	fi
	until [ "$(sql -c "SELECT count(*) FROM zero_stream.subscribers() WHERE id LIKE 'c$round-%' AND state NOT IN ('departed', 'restored')")" = 0 ]; do sleep 0.2; done
	sleep 2
	rss_after=$(rss "$SERVER")
	client=$(awk '/^all / {for (i = 2; i <= NF; i++) if ($i ~ /^(ok|cpu)=/) printf "%s ", $i}' "$DIR/c$round.out")
	echo "$round $t0 $t1 $t2 $rss_before $rss_max $rss_caught_up $rss_after" \
		"$((q1s - q0s)) $((q1d - q0d)) $((q1l - q0l)) $((q2s - q1s)) $((q2d - q1d)) $((q2l - q1l))" \
		"$((c1s - c0s)) $((c1d - c0d)) $((c2s - c1s)) $((c2d - c1d)) $client" >> "$DIR/rounds"
done
kill "$LOAD_PID" 2>/dev/null || true
LOAD_PID=""
sleep 1

python3 - "$DIR/live.out" "$DIR/rounds" "$NSUB" "$LOGROWS" <<'PY'
import json, sys
lat = []   # (commit time s, latency ms)
for line in open(sys.argv[1]):
    recv, frame = line.split(' ', 1)
    msg = json.loads(frame)["msg"]
    if msg[0] == "begin":
        ct = int(msg[1]["commitTime"])
        lat.append((ct / 1e6, (int(recv) - ct) / 1000))
def stats(a, b):
    xs = sorted(l for t, l in lat if a <= t < b)
    if not xs:
        return None
    return (xs[len(xs) // 2], xs[min(len(xs) - 1, int(len(xs) * 0.99))], xs[-1], len(xs))
nsub, rows = int(sys.argv[3]), int(sys.argv[4])
ratios = []
for line in open(sys.argv[2]):
    r, t0, t1, t2, rb, rm, rc, ra, us, ud, ul, ls, ld, ll, ucs, ucd, lcs, lcd, ok, cpu = line.split()
    t0, t1, t2 = float(t0), float(t1), float(t2)
    # run-queue waits: ms per second of the phase
    uq = [int(x) / 1e6 / (t1 - t0) for x in (us, ud, ul)]
    lq = [int(x) / 1e6 / (t2 - t1) for x in (ls, ld, ll)]
    uc = [int(x) / 1e6 / (t1 - t0) for x in (ucs, ucd)]
    lc = [int(x) / 1e6 / (t2 - t1) for x in (lcs, lcd)]
    u, l = stats(t0, t1), stats(t1, t2)
    ratio = l[1] / u[1]
    ratios.append(ratio)
    print(f"round {r}: unloaded p50 {u[0]:6.1f} p99 {u[1]:6.1f} max {u[2]:6.1f} ms ({u[3]} txns) | "
          f"catching up ({t2 - t1:5.1f} s, {nsub * rows / (t2 - t1):8.0f} rows/s in all) "
          f"p50 {l[0]:6.1f} p99 {l[1]:7.1f} max {l[2]:7.1f} ms ({l[3]} txns) | p99 ratio {ratio:5.2f} | "
          f"server RssAnon kB: before {rb}, max {rm}, caught up {rc}, after {ra} | "
          f"run-queue wait ms/s server/decoder/live: unloaded {uq[0]:.0f}/{uq[1]:.0f}/{uq[2]:.0f}, "
          f"loaded {lq[0]:.0f}/{lq[1]:.0f}/{lq[2]:.0f} | on CPU ms/s server/decoder: unloaded {uc[0]:.0f}/{uc[1]:.0f}, "
          f"loaded {lc[0]:.0f}/{lc[1]:.0f} | catch-up client: {ok.split('=')[1]}/{nsub} subscriptions ok, {cpu.split('=')[1]} s CPU")
print(f"p99 ratio loaded/unloaded over {len(ratios)} rounds: {min(ratios):.2f} .. {max(ratios):.2f}")
PY
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
