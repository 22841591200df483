#!/usr/bin/env bash
# Benchmark: zero_stream against a stock zero-cache replication-manager on the
# same workloads, in one run on one machine (not a test; prints figures).
#
#   bench/vs_zero_cache.sh [bulk_rows] [single_txns]     (defaults 200000 20000)
#
# Workloads (bench/workload.sh's rows table and bulk procedure): bulk, bulk_rows
# rows in 1,000-row transactions; single, single_txns one-row transactions.
# Each is measured on two clusters of the same settings, never both at once:
#   zero-cache: @rocicorp/zero 1.9.0 on Node 22 from test/interop/prepare.sh's
#      cache (installed there from the npm registry if missing), run as a
#      replication-manager only (ZERO_NUM_SYNC_WORKERS=0: the dispatcher and its
#      change-streamer, which decodes the slot and stores "zero_0/cdc"."changeLog"
#      in the same database) with its stock settings but the ports and
#      ZERO_CHANGE_STREAMER_STARTUP_DELAY_MS=0. It ran its initial sync of the
#      empty tables once and was stopped; the workload writes its WAL while it
#      is stopped, then a marker row; it is started, and timed from its slot
#      becoming active (START_REPLICATION) until its replicationState's
#      lastWatermark reaches the marker's (a lexi-encoded commit LSN that is
#      not purged away, unlike the change log's rows), checked every 50 ms by
#      one session waiting in the server; then stopped again.
#   zero_stream: the decoder is held back (zero_stream.database names a
#      database without the extension) while the same workload and marker
#      write their WAL; the server restarts with the real database and is
#      timed from the decoder's starting to stream (its "zero_stream decoding
#      slot" log line, as it may start before pg_ctl sees the server up) to
#      zero_stream.wait_for_catchup's condition (the slot confirmed up to the
#      flushed WAL), polled every 20 ms the same way.
# Both waiting sessions commit between polls: one that held its snapshot
# would keep every version of the rows the systems update (zero-cache's
# replicationState, once per transaction) from being pruned, and halve
# zero-cache's single-row rate.
# Both clusters restart between the workload and the catch-up, so both read
# the WAL from the OS's cache, and both wrote and checkpointed the WAL of
# ZS_BENCH_WARMUP rows (default 1000000; 0 skips) before their slots existed,
# so the catch-ups write into recycled WAL segments.
# CPU seconds (user + system, /proc/PID/stat) over the timed interval:
# zero-cache's own = its node processes (runner, dispatcher, change-streamer);
# zero_stream's own = its decoder, server and replicator workers; "PostgreSQL"
# = every other process of that cluster's postmaster (zero-cache's walsender,
# which decodes with pgoutput, and the sessions that store its change log;
# checkpointer, WAL writer, autovacuum for both). Memory: the peak of the sum of
# RssAnon (private memory) over zero-cache's node processes and over
# zero_stream's three workers, sampled every 0.2 s by one python process
# (which also runs for both), plus VmRSS and VmHWM.
# Output: a line per system and run, then per workload one line
#   RESULT vs_zero_cache workload=bulk rows=.. txns=.. zc_rows_per_s=.. ...
# (medians over ZS_BENCH_REPEAT=N runs, default 1; ratio_* = zero_stream /
# zero-cache, so > 1 is zero_stream faster for rates and < 1 is zero_stream
# cheaper for CPU and memory). ZS_BENCH_ONLY=bulk|single measures one
# workload. ZS_BENCH_CONF adds postgresql.conf lines to zero_stream's cluster
# only (e.g. zero_stream.replica_file = '' for no backup replica, which
# zero-cache's replication-manager does not keep either).
# Places: ZS_BENCH_DIR (default /tmp/zero_stream-bench-vs-zc-USER),
# ZS_BENCH_PORT (zero_stream's cluster, 54351), ZS_BENCH_ZC_PORT (zero-cache's
# cluster, on 127.0.0.1, 54352), ZS_BENCH_SERVER_PORT (zero_stream's server,
# 54353), ZS_BENCH_ZC_HTTP_PORT (zero-cache's ports, 54354..54356),
# ZS_BENCH_ZC_DIR (the zero-cache install). As root, PostgreSQL and zero-cache
# run as zstest (scripts/common.sh's run), from zstest's cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."

BULK_ROWS=${1:-200000}
SINGLE_TXNS=${2:-20000}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
export ZS_BENCH_DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-vs-zc-$(id -un)}
export ZS_BENCH_PORT=${ZS_BENCH_PORT:-54351}
export ZS_BENCH_SERVER_PORT=${ZS_BENCH_SERVER_PORT:-54353}
ZC_PORT=${ZS_BENCH_ZC_PORT:-54352}
ZC_HTTP=${ZS_BENCH_ZC_HTTP_PORT:-54354}
WARMUP=${ZS_BENCH_WARMUP:-1000000}
. scripts/common.sh
. bench/workload.sh
. bench/lib.sh
ZDIR=$DIR/zc

# ---- zero-cache's install: test/interop/prepare.sh's cache folder of the
# user zero-cache runs as ----
if [ ${#as_user[@]} -gt 0 ]; then
	ZC_HOME=$(getent passwd zstest | cut -d: -f6)
else
	ZC_HOME=$HOME
fi
ZC_INSTALL=${ZS_BENCH_ZC_DIR:-$ZC_HOME/.cache/zero_stream-interop/zero-1.9.0-node22}
ZC_NODE=$ZC_INSTALL/node_modules/.bin/node
ZC_CLI=$ZC_INSTALL/node_modules/@rocicorp/zero/out/zero/src/cli.js
if [ ! -f "$ZC_INSTALL/.ready" ] || [ ! -x "$ZC_NODE" ] || [ ! -f "$ZC_CLI" ]; then
	[ -z "${ZS_BENCH_ZC_DIR:-}" ] || { echo "no zero-cache install in $ZC_INSTALL" >&2; exit 1; }
	echo "installing zero-cache 1.9.0 and Node 22 with test/interop/prepare.sh" >&2
	rc=0
	run env HOME="$ZC_HOME" ZS_INTEROP_CACHE="$ZC_HOME/.cache/zero_stream-interop" \
		bash -s < test/interop/prepare.sh >/dev/null || rc=$?
	[ $rc -eq 0 ] || { echo "test/interop/prepare.sh failed (status $rc; 2: the npm registry cannot be reached)" >&2; exit 1; }
fi

# ---- /proc: CPU ticks and memory of process trees, and a memory sampler ----
PROCS=$DIR.procs.py
cat > "$PROCS" <<'PY'
# procs.py snap ROOT | sample OUT ROOT | node ROOT | tree ROOT
import signal
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
import json, os, sys, time

def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[1]), int(rest[11]) + int(rest[12])      # ppid, utime + stime

def tree(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids.setdefault(stat(d)[0], []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [int(root)]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out

def cmd(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode(errors="replace").strip()

def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()

def mem(pid):
    m = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("RssAnon", "VmRSS", "VmHWM"):
                m[k] = int(v.split()[0])
    return m

def kind(c):
    for w in ("decoder", "server", "replicator"):
        if c.startswith("postgres: zero_stream " + w):
            return w
    return "other"

what, args = sys.argv[1], sys.argv[2:]
if what == "tree":
    print(" ".join(map(str, tree(args[0]))))
elif what == "node":                 # the first node process in ROOT's tree
    for p in sorted(tree(args[0])):
        try:
            if comm(p) == "node":
                print(p)
                break
        except OSError:
            pass
elif what == "snap":                 # pid -> [ticks, kind, RssAnon, VmRSS, VmHWM] (kB)
    out = {}
    for p in tree(args[0]):
        try:
            m = mem(p)
            out[p] = [stat(p)[1], kind(cmd(p)), m.get("RssAnon", 0), m.get("VmRSS", 0), m.get("VmHWM", 0)]
        except (OSError, IndexError, ValueError):
            pass
    json.dump(out, sys.stdout)
elif what == "sample":               # until SIGTERM: the peak sums per kind (kB), rewritten as they grow
    peak, pids, listed = {}, [], 0.0
    while not stop:
        if time.monotonic() - listed > 1.0:
            pids, listed = [(p, kind(cmd(p))) for p in tree(args[1]) if os.path.exists(f"/proc/{p}")], time.monotonic()
        sums = {}
        for p, k in pids:
            try:
                m = mem(p)
            except OSError:
                continue
            for key in (k, "all", "zs" if k != "other" else None):
                if key:
                    s = sums.setdefault(key, [0, 0])
                    s[0] += m.get("RssAnon", 0)
                    s[1] += m.get("VmRSS", 0)
        grew = False
        for key, (a, r) in sums.items():
            pk = peak.setdefault(key, [0, 0])
            if a > pk[0] or r > pk[1]:
                pk[0], pk[1], grew = max(pk[0], a), max(pk[1], r), True
        if grew:
            with open(args[0] + ".tmp", "w") as f:
                json.dump(peak, f)
            os.replace(args[0] + ".tmp", args[0])
        time.sleep(0.2)
PY
procs() { python3 "$PROCS" "$@"; }
# sampler_start ROOT / sampler_stop: the memory sampler of ROOT's tree, into $DIR/peak.json
sampler_start() { rm -f "$DIR/peak.json"; python3 "$PROCS" sample "$DIR/peak.json" "$1" >/dev/null & SAMPLER=$!; }
sampler_stop() { kill -TERM "$SAMPLER"; wait "$SAMPLER" || true; SAMPLER=""; }
pm_pid() { head -n 1 "$1/postmaster.pid"; }

# ---- stop everything this run started, on every way out ----
ZC_PID="" ZC_LAUNCH="" SAMPLER=""
zc_stop() {
	[ -n "$ZC_PID" ] || return 0
	local pids; pids=$(procs tree "$ZC_PID" 2>/dev/null || true)
	kill -TERM "$ZC_PID" 2>/dev/null || true
	for _ in $(seq 1 200); do
		local alive=0 p
		for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
	wait "$ZC_LAUNCH" 2>/dev/null || true
	ZC_PID="" ZC_LAUNCH=""
}
cleanup() {
	local rc=$?
	set +e
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2>/dev/null
	if [ $rc -ne 0 ] && [ -f "$ZDIR/zero-cache.log" ]; then
		echo "zero-cache's log ($ZDIR/zero-cache.log), last lines:" >&2
		tail -n 15 "$ZDIR/zero-cache.log" | cut -c1-300 >&2
	fi
	zc_stop
	run "$BIN/pg_ctl" -D "$ZDIR/data" stop -m immediate >/dev/null 2>&1
	run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1
	rm -f "$PROCS"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

CONF="shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min
log_line_prefix = '%n [%p] '"
MARKER_SQL="CREATE TABLE bench_marker (n serial PRIMARY KEY, at timestamptz DEFAULT now())"
# bg FILE CMD...: CMD with its output in FILE, waited for in the background,
# so that a signal stops the run at once rather than after a long statement
bg() { local f=$1; shift; "$@" > "$f" & wait $!; }
# warm_up SQL-FUNCTION: write and checkpoint WARMUP rows of WAL, then empty the table
warm_up() {
	[ "$WARMUP" -gt 0 ] || return 0
	bg /dev/null "$1" -c "SET synchronous_commit = off" -c "CALL bulk($WARMUP, 1000)"
	"$1" -c "TRUNCATE rows" -c "CHECKPOINT" -c "SELECT pg_switch_wal()" -c "CHECKPOINT" >/dev/null
}

# ---- zero_stream's cluster (lib.sh's $DIR, sql, set_database, restart) ----
# (a cluster a killed run left behind in $ZDIR is stopped before $DIR goes)
if [ -f "$ZDIR/data/postmaster.pid" ]; then
	run "$BIN/pg_ctl" -D "$ZDIR/data" stop -m immediate >/dev/null 2>&1 || true
fi
init_cluster "$DIR" "$PORT" "zero_stream.port = $SPORT
$CONF
${ZS_BENCH_CONF:-}"
set_database bench
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE bench"
sql -d bench -c "$ROWS_TABLE_SQL" -c "$MARKER_SQL" -c "$BULK_PROCEDURE_SQL"
zs_sql() { sql -d bench "$@"; }
warm_up zs_sql
sql -d bench -c "CREATE EXTENSION zero_stream"
for i in $(seq 1 600); do
	[ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ] && break
	[ "$i" -lt 600 ] || { echo "zero_stream's decoder does not stream (see $DIR/server.log)" >&2; exit 1; }
	sleep 0.1
done

# ---- zero-cache's cluster: the same settings, TCP on 127.0.0.1, nothing preloaded ----
init_cluster "$ZDIR" "$ZC_PORT" "$CONF
shared_preload_libraries = ''
listen_addresses = '127.0.0.1'"
run "$BIN/pg_ctl" -D "$ZDIR/data" -l "$ZDIR/server.log" -w start >/dev/null
zc_sql() { run "$BIN/psql" -X -q -At -h "$ZDIR" -p "$ZC_PORT" -U postgres -v ON_ERROR_STOP=1 -d zc "$@"; }
zc_restart() { run "$BIN/pg_ctl" -D "$ZDIR/data" -l "$ZDIR/server.log" -w restart -m fast >/dev/null; }
run "$BIN/psql" -X -q -h "$ZDIR" -p "$ZC_PORT" -U postgres -d postgres -c "CREATE DATABASE zc"
zc_sql -c "$ROWS_TABLE_SQL" -c "$MARKER_SQL" -c "$BULK_PROCEDURE_SQL"
warm_up zc_sql
zc_sql -c "CREATE PUBLICATION zc_pub FOR TABLE rows, bench_marker"
run mkdir -p "$ZDIR/zero/tmp"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$ZC_HTTP" $((ZC_HTTP + 1)) $((ZC_HTTP + 2)); do
	port_free "$p" || { echo "port $p is taken (ZS_BENCH_ZC_HTTP_PORT moves zero-cache's ports)" >&2; exit 1; }
done
zc_start() {
	run env -i PATH="$(dirname "$ZC_NODE"):/usr/bin:/bin" HOME="$ZC_HOME" LANG=C.UTF-8 \
		ZERO_UPSTREAM_DB="postgresql://postgres@127.0.0.1:$ZC_PORT/zc" \
		ZERO_REPLICA_FILE="$ZDIR/zero/replica.db" \
		ZERO_APP_PUBLICATIONS=zc_pub \
		ZERO_NUM_SYNC_WORKERS=0 \
		ZERO_CHANGE_STREAMER_STARTUP_DELAY_MS=0 \
		ZERO_TASK_ID=bench \
		ZERO_PORT="$ZC_HTTP" ZERO_CHANGE_STREAMER_PORT=$((ZC_HTTP + 1)) ZERO_LITESTREAM_PORT=$((ZC_HTTP + 2)) \
		ZERO_ADMIN_PASSWORD=bench ZERO_ENABLE_TELEMETRY=false \
		ZERO_STORAGE_DB_TMP_DIR="$ZDIR/zero/tmp" \
		"$ZC_NODE" "$ZC_CLI" >>"$ZDIR/zero-cache.log" 2>&1 </dev/null &
	ZC_LAUNCH=$!
	# the runner: the launched process itself, or its child under runuser
	for _ in $(seq 1 200); do
		ZC_PID=$(procs node "$ZC_LAUNCH" 2>/dev/null || true)
		[ -n "$ZC_PID" ] && return 0
		kill -0 "$ZC_LAUNCH" 2>/dev/null || break
		sleep 0.05
	done
	echo "zero-cache did not start" >&2
	return 1
}
SLOT_ACTIVE="EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name LIKE 'zero\\_0\\_%' AND active)"
# wait_in_server CONDITION SECONDS INTERVAL: one session polls CONDITION in
# the server until it holds; WAITED holds the time then and whether it holds. It
# commits between polls: a DO block that does not would hold its snapshot's
# xmin the whole time, and every row zero-cache updates (replicationState,
# once per transaction) would stay unpruned behind it.
WAITED=$DIR/waited
wait_in_server() {
	bg "$WAITED.out" zc_sql -c "DO \$\$DECLARE deadline timestamptz := clock_timestamp() + interval '$2 s'; BEGIN WHILE NOT ($1) AND clock_timestamp() < deadline LOOP COMMIT; PERFORM pg_sleep($3); END LOOP; END\$\$" \
		-c "SELECT extract(epoch FROM clock_timestamp())" -c "SELECT $1"
	{ tr '\n' ' ' < "$WAITED.out"; echo; } > "$WAITED"
}
# zero-cache's first start: the initial sync of the empty tables, its slot
zc_start
wait_in_server "$SLOT_ACTIVE AND EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = 'zero_0/cdc' AND tablename = 'replicationState')" 180 0.1
read -r _ ok < "$WAITED"
[ "$ok" = t ] || { echo "zero-cache's initial sync did not finish" >&2; exit 1; }
zc_stop

# lexi WATERMARK of an LSN: zero-cache's watermark of a commit at that LSN
lexi() {
	python3 -c "
import sys
hi, lo = sys.argv[1].split('/')
v, s = (int(hi, 16) << 32) + int(lo, 16), ''
while v:
    v, d = divmod(v, 36)
    s = '0123456789abcdefghijklmnopqrstuvwxyz'[d] + s
s = s or '0'
print('0123456789abcdefghijklmnopqrstuvwxyz'[len(s) - 1] + s)" "$1"
}

: > "$DIR/results.jsonl"
# report SYSTEM NAME ROWS TXNS TR T2 T3 OWN0 OWN1 PG0 PG1 SAMPLE: a line, and a record in results.jsonl
report() {
	python3 - "$@" "$DIR/results.jsonl" <<'PY'
import json, os, sys
sysname, name = sys.argv[1], sys.argv[2]
rows, txns = int(sys.argv[3]), int(sys.argv[4])
tr, t2, t3 = map(float, sys.argv[5:8])
load = lambda f: json.load(open(f)) if os.path.exists(f) else {}
own0, own1, pg0, pg1, peak = map(load, sys.argv[8:13])
hz = os.sysconf("SC_CLK_TCK")
def delta(s0, s1, pred):
    return sum(v[0] - s0.get(p, [0])[0] for p, v in s1.items() if pred(v[1])) / hz
zs_worker = lambda k: k != "other"
if sysname == "zc":
    own = delta(own0, own1, lambda k: True)
    pg = delta(pg0, pg1, lambda k: True)
    anon, rss = peak.get("all", [0, 0])
    hwm = sum(v[4] for v in own1.values())
    extra = ""
else:
    own = delta(pg0, pg1, zs_worker)
    pg = delta(pg0, pg1, lambda k: not zs_worker(k))
    anon, rss = peak.get("zs", [0, 0])
    dec = [v for v in pg1.values() if v[1] == "decoder"]
    hwm = sum(v[4] for v in pg1.values() if zs_worker(v[1]))
    by = {k: delta(pg0, pg1, lambda x, k=k: x == k) for k in ("decoder", "server", "replicator")}
    extra = (f"; decoder {by['decoder']:.2f} s, server {by['server']:.2f} s, replicator {by['replicator']:.2f} s;"
             f" decoder peak RssAnon {peak.get('decoder', [0])[0] / 1024:.1f} MB, VmHWM {dec[0][4] / 1024 if dec else 0:.1f} MB (with shared buffers)")
secs = t3 - t2
r = dict(sys=sysname, name=name, rows=rows, txns=txns, secs=secs, startup=t2 - tr, cpu=own, pg_cpu=pg,
         peak_mb=anon / 1024, peak_rss_mb=rss / 1024, hwm_mb=hwm / 1024)
label = "zero-cache " if sysname == "zc" else "zero_stream"
print(f"{name:6s} {label} rows={rows:>7d} txns={txns:>6d}  {secs:7.2f} s  {rows / secs:9.0f} rows/s  {txns / secs:8.0f} txns/s  "
      f"{f'(start-up {t2 - tr:.2f} s)  ' if sysname == 'zc' else ''}CPU own {own:.2f} s + PostgreSQL {pg:.2f} s = {own + pg:.2f} s  "
      f"peak RssAnon {anon / 1024:.1f} MB (VmRSS {rss / 1024:.1f} MB, VmHWM sum {hwm / 1024:.1f} MB){extra}")
with open(sys.argv[13], "a") as f:
    f.write(json.dumps(r) + "\n")
PY
}

epoch_sql="SELECT extract(epoch FROM clock_timestamp())"
measure_zc() {
	local name=$1 call=$2 rows=$3 txns=$4
	# the workload's WAL while zero-cache is stopped, then the marker, whose
	# commit is the first at or after LSN $lsn
	bg "$DIR/lsn" zc_sql -c "SET synchronous_commit = off" -c "$call" -c "SELECT pg_current_wal_insert_lsn()" -c "INSERT INTO bench_marker DEFAULT VALUES"
	local lsn; lsn=$(cat "$DIR/lsn")
	zc_sql -c "SELECT pg_switch_wal()" >/dev/null
	zc_restart
	local target; target=$(lexi "$lsn")
	local tr; tr=$(now)
	zc_start
	local t2 ok; wait_in_server "$SLOT_ACTIVE" 120 0.01; read -r t2 ok < "$WAITED"
	[ "$ok" = t ] || { echo "zero-cache did not start streaming" >&2; return 1; }
	local pm; pm=$(pm_pid "$ZDIR/data")
	procs snap "$ZC_PID" > "$DIR/own0.json"
	procs snap "$pm" > "$DIR/pg0.json"
	sampler_start "$ZC_PID"
	local t3; wait_in_server "(SELECT \"lastWatermark\" COLLATE \"C\" >= '$target' FROM \"zero_0/cdc\".\"replicationState\")" 900 0.05; read -r t3 ok < "$WAITED"
	procs snap "$ZC_PID" > "$DIR/own1.json"
	procs snap "$pm" > "$DIR/pg1.json"
	sampler_stop
	[ "$ok" = t ] || { echo "zero-cache did not store the marker within 900 s" >&2; return 1; }
	zc_stop
	report zc "$name" "$rows" "$txns" "$tr" "$t2" "$t3" "$DIR/own0.json" "$DIR/own1.json" "$DIR/pg0.json" "$DIR/pg1.json" "$DIR/peak.json"
}
measure_zs() {
	local name=$1 call=$2 rows=$3 txns=$4
	# the decoder held back while the same workload and marker write their WAL
	set_database postgres; restart
	bg /dev/null sql -d bench -c "SET synchronous_commit = off" -c "$call" -c "INSERT INTO bench_marker DEFAULT VALUES"
	sql -d bench -c "SELECT pg_switch_wal()" >/dev/null
	set_database bench
	local logpos; logpos=$(stat -c %s "$DIR/server.log")
	restart
	local tr; tr=$(now)
	# the decoder may start before pg_ctl sees the server up: its CPU counts
	# from its start (and every process of the restarted cluster's), and the
	# time from its "decoding slot" log line, written as it starts streaming
	local pm; pm=$(pm_pid "$DIR/data")
	sampler_start "$pm"
	# zero_stream.wait_for_catchup's loop, committing between polls as
	# wait_in_server does (a SELECT of it would hold one snapshot throughout)
	local ok t3; bg "$WAITED.out" sql -d bench -c "DO \$\$DECLARE target pg_lsn := pg_current_wal_flush_lsn(); deadline timestamptz := clock_timestamp() + interval '900 s'; BEGIN WHILE NOT (SELECT confirmed_lsn >= target AND state = 'streaming' FROM zero_stream.status()) AND clock_timestamp() < deadline LOOP COMMIT; PERFORM pg_sleep(0.02); END LOOP; IF clock_timestamp() >= deadline THEN RAISE EXCEPTION 'timed out'; END IF; END\$\$" \
		-c "$epoch_sql" -c "SELECT true" || true
	read -r t3 ok <<< "$(tr '\n' ' ' < "$WAITED.out")"
	procs snap "$pm" > "$DIR/pg1.json"
	sampler_stop
	[ "$ok" = t ] || { echo "the decoder did not catch up" >&2; return 1; }
	local t2; t2=$(tail -c +"$((logpos + 1))" "$DIR/server.log" | awk '/zero_stream decoding slot/ {t = $1} END {print t}')
	[ -n "$t2" ] || { echo "no \"zero_stream decoding slot\" line in $DIR/server.log" >&2; return 1; }
	echo '{}' > "$DIR/own0.json"; echo '{}' > "$DIR/own1.json"; echo '{}' > "$DIR/pg0.json"
	report zs "$name" "$rows" "$txns" "$tr" "$t2" "$t3" "$DIR/own0.json" "$DIR/own1.json" "$DIR/pg0.json" "$DIR/pg1.json" "$DIR/peak.json"
}
measure() {
	local name=$1
	[ -z "${ZS_BENCH_ONLY:-}" ] || [ "$ZS_BENCH_ONLY" = "$name" ] || return 0
	# zero_stream's decoder waits (idle) while zero-cache works
	set_database postgres; restart
	measure_zc "$@"
	measure_zs "$@"
}

zs_setting() { sql -d bench -c "SELECT current_setting('$1')"; }
zc_setting() { zc_sql -c "SELECT current_setting('$1')"; }
echo "zero_stream against zero-cache: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ {print $2}') GB;" \
	"zero-cache $("$ZC_NODE" -p "require('$ZC_INSTALL/node_modules/@rocicorp/zero/package.json').version") on node $("$ZC_NODE" --version) ($ZC_INSTALL)," \
	"zero_stream $(sql -d bench -c "SELECT extversion FROM pg_extension WHERE extname = 'zero_stream'")"
echo "depends on: load average before the run $LOAD_BEFORE (run it alone);" \
	"both clusters: shared_buffers $(zs_setting shared_buffers), fsync $(zc_setting fsync), synchronous_commit $(zc_setting synchronous_commit) (the workloads write with off)," \
	"max_wal_size $(zs_setting max_wal_size), $WARMUP warm-up rows;" \
	"zero-cache: ZERO_NUM_SYNC_WORKERS=0 (replication-manager), stock change-log batch size and back pressure, text logs at info;" \
	"zero_stream: commit_batch_size $(zs_setting zero_stream.commit_batch_size), changelog_chunk_size $(zs_setting zero_stream.changelog_chunk_size), changelog_compression $(zs_setting zero_stream.changelog_compression)," \
	"backup replica '$(zs_setting zero_stream.replica_file)' (if set, its replicator applies every change too; zero-cache's replication-manager keeps no replica)," \
	"purge_interval $(zs_setting zero_stream.purge_interval)"
for _ in $(seq 1 "${ZS_BENCH_REPEAT:-1}"); do
	measure bulk "CALL bulk($BULK_ROWS, 1000)" "$BULK_ROWS" $((BULK_ROWS / 1000))
	measure single "CALL bulk($SINGLE_TXNS, 1)" "$SINGLE_TXNS" "$SINGLE_TXNS"
done
# per workload: the medians over the runs, and one machine-readable line
python3 - "$DIR/results.jsonl" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault((r["name"], r["rows"], r["txns"]), {}).setdefault(r["sys"], []).append(r)
for (name, rows, txns), by in runs.items():
    m = {}
    for s in ("zc", "zs"):
        rs = by.get(s, [])
        med = lambda f: statistics.median(f(r) for r in rs)
        m[s] = dict(secs=med(lambda r: r["secs"]), rows=med(lambda r: rows / r["secs"]), txns=med(lambda r: txns / r["secs"]),
                    cpu=med(lambda r: r["cpu"]), pg=med(lambda r: r["pg_cpu"]), total=med(lambda r: r["cpu"] + r["pg_cpu"]),
                    peak=med(lambda r: r["peak_mb"]), n=len(rs))
    zc, zs = m["zc"], m["zs"]
    q = lambda a, b: a / b if b else float("nan")
    n = min(zc["n"], zs["n"])
    print(f"{name:6s} rows={rows} txns={txns}, median of {n} run(s): zero_stream {zs['rows']:.0f} rows/s against zero-cache {zc['rows']:.0f} "
          f"({q(zs['rows'], zc['rows']):.2f}x); CPU own {zs['cpu']:.2f} s against {zc['cpu']:.2f} s, with PostgreSQL's "
          f"{zs['total']:.2f} s against {zc['total']:.2f} s ({q(zs['total'], zc['total']):.2f}x); peak RssAnon {zs['peak']:.1f} MB against {zc['peak']:.1f} MB")
    print(f"RESULT vs_zero_cache workload={name} rows={rows} txns={txns} runs={n} "
          f"zc_secs={zc['secs']:.3f} zs_secs={zs['secs']:.3f} "
          f"zc_rows_per_s={zc['rows']:.0f} zs_rows_per_s={zs['rows']:.0f} ratio_rows={q(zs['rows'], zc['rows']):.2f} "
          f"zc_txns_per_s={zc['txns']:.0f} zs_txns_per_s={zs['txns']:.0f} ratio_txns={q(zs['txns'], zc['txns']):.2f} "
          f"zc_cpu_s={zc['cpu']:.2f} zs_cpu_s={zs['cpu']:.2f} ratio_cpu={q(zs['cpu'], zc['cpu']):.2f} "
          f"zc_pg_cpu_s={zc['pg']:.2f} zs_pg_cpu_s={zs['pg']:.2f} "
          f"zc_total_cpu_s={zc['total']:.2f} zs_total_cpu_s={zs['total']:.2f} ratio_total_cpu={q(zs['total'], zc['total']):.2f} "
          f"zc_peak_mb={zc['peak']:.1f} zs_peak_mb={zs['peak']:.1f} ratio_peak={q(zs['peak'], zc['peak']):.2f}")
PY
run "$BIN/pg_ctl" -D "$ZDIR/data" stop -m fast >/dev/null
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
