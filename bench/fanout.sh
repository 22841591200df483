#!/usr/bin/env bash
# Benchmark: fan-out (not a test, prints figures). Run it alone on
# the machine.
#
#   bench/fanout.sh [subscribers] [transactions] [rows_per_transaction] [repeats]
#                                                   (defaults 32 200 1000 3)
#
# A change log of `transactions` transactions of `rows_per_transaction`
# inserts is written and stored first; nothing is written while measuring.
# Then, `repeats` times: one subscriber reads the whole log from its start,
# and `subscribers` subscribers read it at once; every subscriber is a
# subscription of one zero-stream-fanout process (so that the clients do not
# take the server's CPU as a process each would), which acks every frame
# and checks that each receives every transaction once, in order, and that
# all receive the same ones. A subscriber's rate is its rows over the time
# from its connection to its last message. Printed: the one-subscriber
# rates, each run's rates of the many as a ratio to the median
# one-subscriber rate (min, median, max), their sum, and the server
# worker's CPU time and the client's. PROTO=v7 uses v7 /changes with
# wsBatched=true (batched frames); ZS_BENCH_CONF adds postgresql.conf lines.
set -euo pipefail
cd "$(dirname "$0")/.."
args=()
for a in "$@"; do case $a in *=*) export "${a?}" ;; *) args+=("$a") ;; esac; done
NSUB=${args[0]:-32}
TXNS=${args[1]:-200}
ROWS=${args[2]:-1000}
REPEATS=${args[3]:-3}
PROTO=${PROTO:-v6}
. scripts/common.sh
. bench/lib.sh
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-fanout-$(id -un)}
FANOUT=$(pwd)/zero-stream-fanout
make -s zero-stream-fanout

cleanup() { run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true; }
trap cleanup EXIT

init_cluster "$DIR" "$PORT" "zero_stream.database = 'postgres'
zero_stream.port = $SPORT
zero_stream.max_subscribers = $((NSUB + 8))
zero_stream.purge_interval = 0
shared_buffers = 256MB
max_wal_size = 4GB
${ZS_BENCH_CONF:-}"
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -c "CREATE TABLE t (id bigserial PRIMARY KEY, v text)" -c "CREATE EXTENSION zero_stream"
until [ "$(sql -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
sql -c "SET synchronous_commit = off" -c "
DO \$\$ BEGIN
  FOR i IN 1 .. $TXNS LOOP
    INSERT INTO t (v) SELECT 'fan-out row ' || g || ' of transaction ' || i FROM generate_series(1, $ROWS) g;
    COMMIT;
  END LOOP;
END \$\$"
sql -c "SELECT zero_stream.wait_for_catchup('600 s')" >/dev/null
RV=$(sql -c "SELECT replica_version FROM zero_stream.status()")
HEAD=$(sql -c "SELECT last_watermark FROM zero_stream.status()")
SERVER=$(sql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream server'")
LOGROWS=$(sql -c "SELECT count(*) FROM \"zero_0/cdc\".\"changeLog\"")
case $PROTO in
	v7) PATHQ="replication/v7/changes?wsBatched=true&" ;;
	*) PATHQ="replication/v6/changes?" ;;
esac
# user + system CPU time of a process, in seconds
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
settings=$(sql -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
	WHERE name IN ('zero_stream.catchup_page_rows', 'zero_stream.catchup_share',
	               'zero_stream.subscriber_backlog_limit', 'zero_stream.poll_interval')")

echo "fan-out benchmark: $(sql -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "settings: $settings; $PROTO"
echo "log: $LOGROWS rows ($TXNS transactions of $ROWS rows); 1 vs $NSUB subscribers in one zero-stream-fanout process"

# run N TAG: every subscriber reads the log from its start to its head
run_subscribers() {
	local n=$1 tag=$2 s0 c0 rc=0
	s0=$(cpu "$SERVER")
	"$FANOUT" --subscriptions "$n" --until "$HEAD" --idle 30 \
		"ws://127.0.0.1:$SPORT/${PATHQ}id=$tag-%d&taskID=bench&replicaVersion=$RV&watermark=$RV" \
		> "$DIR/$tag.out" 2> "$DIR/$tag.err" || rc=$?
	echo "server_cpu=$(python3 -c "print(f'{$(cpu "$SERVER") - $s0:.2f}')")" >> "$DIR/$tag.out"
	if [ "$rc" -ne 0 ]; then
		echo "$tag: zero-stream-fanout exited with $rc" >&2
		cat "$DIR/$tag.err" >&2
		grep -v 'status=ok' "$DIR/$tag.out" | head -5 >&2
		exit 1
	fi
	until [ "$(sql -c "SELECT count(*) FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')")" = 0 ]; do sleep 0.1; done
}
for r in $(seq 1 "$REPEATS"); do
	run_subscribers 1 "one$r"
	run_subscribers "$NSUB" "many$r"
done
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null

python3 - "$DIR" "$REPEATS" "$NSUB" <<'PY'
import statistics, sys
d, repeats, nsub = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def read(tag):
    subs, extra = [], {}
    for line in open(f"{d}/{tag}.out"):
        f = dict(kv.split('=', 1) for kv in line.split() if '=' in kv)
        if 'sub' in f:
            subs.append(f)
        else:
            extra.update(f)
    return subs, extra
def rate(f):
    return int(f['rows']) / ((int(f['last_us']) - int(f['connected_us'])) / 1e6)
ones, runs = [], []
for r in range(1, repeats + 1):
    (one,), e1 = read(f"one{r}")
    ones.append((rate(one), e1))
    runs.append(read(f"many{r}"))
base = statistics.median(x for x, _ in ones)
for r, (x, e) in enumerate(ones, 1):
    print(f"one subscriber, run {r}: {x:9.0f} rows/s ({e['rows']} rows, {e['seconds']} s; "
          f"server CPU {e['server_cpu']} s, client CPU {e['cpu']} s)")
print(f"one-subscriber rate (median of {repeats}): {base:.0f} rows/s")
mins = []
for r, (subs, e) in enumerate(runs, 1):
    rates = sorted(rate(f) for f in subs)
    ratios = [x / base for x in rates]
    mins.append(ratios[0])
    print(f"{nsub} subscribers, run {r}: ratio to one min {ratios[0]:.2f} median {statistics.median(ratios):.2f} "
          f"max {ratios[-1]:.2f}; rates {rates[0]:.0f} .. {rates[-1]:.0f} rows/s, "
          f"{sum(rates):.0f} rows/s in all ({sum(rates) / base:.1f}x one); {e['seconds']} s; "
          f"server CPU {e['server_cpu']} s, client CPU {e['cpu']} s; all ok: {e['ok']}/{e['subscriptions']}")
print(f"min ratio over {repeats} runs: {min(mins):.2f} .. {max(mins):.2f} (issue 14 asks >= 0.8)")
PY
