#!/usr/bin/env bash
# Benchmark: zero_stream's store rate against raw in-server pgoutput decoding
# of the same WAL, measured in the same run (not a test; prints figures).
#
#   bench/decode_vs_store.sh [bulk_rows] [single_txns]     (defaults 1000000 100000)
#
# For each workload (bulk: 1,000-row transactions; single: 1-row transactions;
# huge: one transaction of bulk_rows rows, ZS_BENCH_HUGE=0 skips it):
#   1. the decoder is held back (zero_stream.database points at a database
#      without the extension, so it waits) while the workload writes its WAL;
#   2. raw: pg_logical_slot_peek_binary_changes(pgoutput v1) over that WAL on
#      a second slot made anew where the workload starts, twice, then _get_,
#      each timed (the median counts);
#   3. zero_stream: restart with the real database; time from "streaming" to
#      the decoder having stored everything (zero_stream.wait_for_catchup,
#      waiting inside the server so that no polling takes CPU).
#   4. end to end: a subscriber (zero-stream-tail) follows the stream during
#      step 3; time from "streaming" to its receiving the last commit;
#   5. the backup replica (if any): how long after the store its replicator
#      has applied every row, and its CPU per row.
# ratio = raw time / zero_stream time (1.0 = as fast as decoding alone).
# CPU per row: each process's CPU (user + system, from /proc) divided by the
# rows, and its multiple of raw decoding's, whose CPU is read in its own
# backend around each call (the median of the three): the decoder (all of
# it: start-up, stores, and any purge meanwhile, whose rows are printed),
# the backup replica's replicator, the server and the subscriber; their sum
# is the pipeline's. The floor: PostgreSQL's own COPY of the same rows into
# a new table of changeLog's shape, its backend's CPU per row (what storing
# them costs without any decoding or encoding; a new table grows its files
# where the decoder's reuses the space the purge freed), and the same
# without the primary key (what the key's inserts cost). Each
# workload ends with one line a script can read:
#   RESULT decode_vs_store workload=bulk rows=... raw_cpu_us=... decoder_x=...
#   pipeline_x=... store_ratio=... e2e_ratio=...
# and with ZS_BENCH_REPEAT=N, "RESULT decode_vs_store_median ..." lines of
# the medians over the N runs.
# With more than 200,000 bulk rows, the 200 k / 20 k run is printed first
# (ZS_BENCH_SMALL=0 skips it). Also printed: the decoder's CPU per stored
# row and the decoder's and server's private memory (RssAnon), and what the
# figures depend on (machine, load, settings). ZS_BENCH_ONLY=huge (or bulk,
# single) measures that workload alone. ZS_BENCH_CONF adds
# postgresql.conf lines (e.g. zero_stream.replica_file = '' for no backup
# replica). ZS_BENCH_REPEAT=N measures each workload N times and prints the
# median ratios: raw decoding of one WAL is itself timed three times (its
# median is the baseline), as the same work varies by a third here.
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
checkpoint_timeout = 30min
${ZS_BENCH_CONF:-}"
set_database bench
run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE bench"
sql -d bench -c "$ROWS_TABLE_SQL" \
	-c "CREATE EXTENSION zero_stream"
until [ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ]; do sleep 0.1; done
sql -d bench -c "SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')" >/dev/null
sql -d bench -c "$BULK_PROCEDURE_SQL"

TAIL=$(pwd)/zero-stream-tail
# the subscriber's own CPU time, where GNU time is installed
TIMED=""
[ -x /usr/bin/time ] && TIMED="/usr/bin/time -o $DIR/e2e.time -f %U_%S"
make -s zero-stream-tail

# start_subscriber FROM OUT [IDLE]: follow the stream from watermark FROM, once
# the server is up, until nothing arrives for IDLE seconds (default 3)
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
		$TIMED "$TAIL" --timestamps --idle "${3:-3}" "ws://127.0.0.1:$SPORT/replication/v7/changes?wsBatched=true&taskID=b&id=e2e&replicaVersion=$rv&watermark=$1" > "$2" 2>/dev/null &
		sleep 0.1
		kill -0 $! 2>/dev/null && return
	done
}

# cpu_ms PID: the process's CPU time so far (user + system), in ms
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat"; }
# lines of a psql script: after $(backend_cpu_to FILE), each $(backend_cpu)
# appends the session's backend CPU so far (user + system ticks) to FILE
backend_cpu_to() { printf '%s\n' 'SELECT pg_backend_pid() AS bpid \gset' "\\setenv ZS_CPU_FILE $1" '\setenv ZS_CPU_PID :bpid'; }
backend_cpu() { printf '%s\n' "\\! awk '{print \$14 + \$15}' /proc/\$ZS_CPU_PID/stat >> \$ZS_CPU_FILE"; }
rss_kb() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
worker_pid() { sql -d bench -c "SELECT pid FROM zero_stream.workers() WHERE worker = '$1'"; }

measure() {
	local name=$1 call=$2 rows=$3
	[ -z "${ZS_BENCH_ONLY:-}" ] || [ "$ZS_BENCH_ONLY" = "$name" ] || return 0
	# hold the decoder back while the workload writes WAL; the raw slot starts
	# where the workload starts (not at our own change-log writes of the last phase)
	local from; from=$(sql -d bench -c "SELECT last_watermark FROM zero_stream.status()")
	# the decoder's slot restarts where the workload starts: a restart point
	# (the running transactions, which a checkpoint logs), then one row the
	# decoder stores and confirms past it. Otherwise its start-up would
	# decode again the WAL since its slot's older restart point (the last
	# workload's, and its own change-log writes), which a decoder that keeps
	# running never does
	local mark slot; slot=$(sql -d bench -c "SELECT slot_name FROM zero_stream.status()")
	# (the running transactions are logged before the checkpoint's record)
	mark=$(sql -d bench -c "SELECT pg_current_wal_lsn()")
	sql -d bench -c "CHECKPOINT"
	sql -d bench -c "CALL bulk(1, 1)" -c "SELECT zero_stream.wait_for_catchup('60s')" >/dev/null
	sql -d bench -c "DO \$\$DECLARE deadline timestamptz := clock_timestamp() + interval '30 s'; BEGIN WHILE (SELECT restart_lsn < '$mark' FROM pg_replication_slots WHERE slot_name = '$slot') AND clock_timestamp() < deadline LOOP PERFORM pg_sleep(0.05); END LOOP; END\$\$"
	[ "$(sql -d bench -c "SELECT restart_lsn >= '$mark' FROM pg_replication_slots WHERE slot_name = '$slot'")" = t ] ||
		echo "(the decoder's slot kept an older restart point: its start-up decodes more WAL)" >&2
	from=$(sql -d bench -c "SELECT last_watermark FROM zero_stream.status()")
	set_database postgres; restart
	# a new raw slot: its decoding starts where the workload does (an
	# advanced slot keeps its restart point, and its calls would decode the
	# WAL before it again, such as the last store's change-log writes)
	sql -d bench -c "SELECT pg_drop_replication_slot('bench_raw')" \
		-c "SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')" >/dev/null
	sql -d bench -c "SET synchronous_commit = off" -c "$call"
	sql -d bench -c "SELECT pg_switch_wal()" >/dev/null
	local wal_mb; wal_mb=$(sql -d bench -c "SELECT round(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) / 1048576.0) FROM pg_replication_slots WHERE slot_name = 'bench_raw'")

	# raw decoding, three times over the same WAL (peek, peek, then get,
	# which consumes it): this machine's timings of the very same work vary
	# by a third from one call to the next, so the ratio uses the median
	# (and the CPU its backend spent, read from /proc around the call in the
	# same session: user + system ticks)
	local t0 t1 msgs raws="" rawcpus="" fn c0 c1
	for fn in peek peek get; do
		rm -f "$DIR/raw.cpu"
		t0=$(now)
		msgs=$(sql -d bench -f - <<-SQL
			$(backend_cpu_to "$DIR/raw.cpu")
			$(backend_cpu)
			SELECT count(*) FROM pg_logical_slot_${fn}_binary_changes('bench_raw', NULL, NULL, 'proto_version', '1', 'publication_names', '_zero_public_0');
			$(backend_cpu)
		SQL
		)
		t1=$(now)
		raws="$raws $(python3 -c "print($t1 - $t0)")"
		{ read -r c0; read -r c1; } < "$DIR/raw.cpu"
		rawcpus="$rawcpus $(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))"
	done

	set_database bench; restart
	# from here on the decoder's start-up counts: reading the slot, finding
	# where to start, and the first decoded round
	local tr; tr=$(now)
	# one huge transaction: nothing is sent before decoding reaches its
	# commit (about the raw decoding time), so wait that long for data
	start_subscriber "$from" "$DIR/e2e.out" "$(python3 -c "print(3 + int(3 * max(map(float, '$raws'.split()))))")"
	# one session waits in the server (no polling from here: on 2 cores every
	# psql started while the decoder works would take CPU from it): the time
	# the decoder reports streaming, then the time everything is stored
	local times; times=$(sql -d bench \
		-c "DO \$\$BEGIN WHILE (SELECT state FROM zero_stream.status()) IS DISTINCT FROM 'streaming' LOOP PERFORM pg_sleep(0.002); END LOOP; END\$\$" \
		-c "SELECT extract(epoch FROM clock_timestamp())" \
		-c "SELECT zero_stream.wait_for_catchup('900s')" \
		-c "SELECT extract(epoch FROM clock_timestamp())" | tr '\n' ' ')
	local t2 t3 ok; read -r t2 ok t3 <<< "$times"
	[ "$ok" = t ] || { echo "the decoder did not catch up" >&2; return 1; }
	local dpid spid rpid; dpid=$(worker_pid decoder); spid=$(worker_pid server); rpid=$(worker_pid replicator)
	local dcpu drss srss rcpu=0 purged; dcpu=$(cpu_ms "$dpid"); drss=$(rss_kb "$dpid"); srss=$(rss_kb "$spid")
	purged=$(sql -d bench -c "SELECT coalesce(purged_rows, 0) FROM zero_stream.status()")
	[ -n "$rpid" ] && rcpu=$(cpu_ms "$rpid")
	# the backup replica's replicator applies the same rows behind the store:
	# when it has them all, and its CPU per row (it started with the decoder)
	local t4=0 rcpu_all=0
	if [ -n "$rpid" ]; then
		# (at most 5 minutes: a failing replicator is not waited for)
		t4=$(sql -d bench -c "DO \$\$DECLARE deadline timestamptz := clock_timestamp() + interval '5 min'; BEGIN WHILE (SELECT backup_watermark IS DISTINCT FROM last_watermark FROM zero_stream.status()) AND clock_timestamp() < deadline LOOP PERFORM pg_sleep(0.01); END LOOP; END\$\$" \
			-c "SELECT extract(epoch FROM clock_timestamp())")
		# (a replicator that restarted meanwhile has no such process: 0)
		rcpu_all=$(cpu_ms "$rpid" 2>/dev/null || echo 0)
	fi
	wait
	local scpu; scpu=$(cpu_ms "$spid")
	# what storing the same rows costs PostgreSQL itself: COPY (a
	# multi-insert, as the decoder's) of the stored rows into a new table of
	# changeLog's shape (its key, its collation; the change as text, which
	# COPY does not parse), then into one without the key, in another
	# database, which the decoder skips; the CPU of COPY FROM's backend
	rm -f "$DIR/floor.cpu" "$DIR/floor.copy"
	sql -d bench -c "COPY (SELECT * FROM \"zero_0/cdc\".\"changeLog\" WHERE watermark > '$from') TO '$DIR/floor.copy'"
	sql -d postgres -f - >/dev/null <<-SQL
		SET client_min_messages = warning;
		DROP TABLE IF EXISTS store_floor;
		CREATE TABLE store_floor (watermark text COLLATE "C", pos int8, change text NOT NULL,
		  precommit text, PRIMARY KEY (watermark, pos));
		$(backend_cpu_to "$DIR/floor.cpu")
		$(backend_cpu)
		COPY store_floor FROM '$DIR/floor.copy';
		$(backend_cpu)
		DROP TABLE store_floor;
		CREATE TABLE store_floor (watermark text COLLATE "C", pos int8, change text NOT NULL,
		  precommit text);
		$(backend_cpu)
		COPY store_floor FROM '$DIR/floor.copy';
		$(backend_cpu)
		DROP TABLE store_floor;
	SQL
	rm -f "$DIR/floor.copy"
	local floorcpu nokeycpu c2 c3; { read -r c0; read -r c1; read -r c2; read -r c3; } < "$DIR/floor.cpu"
	floorcpu=$(( (c1 - c0) * 1000 / $(getconf CLK_TCK) ))
	nokeycpu=$(( (c3 - c2) * 1000 / $(getconf CLK_TCK) ))
	python3 - "$name" "$rows" "$msgs" "$wal_mb" "$raws" "$tr" "$t2" "$t3" "$DIR/e2e.out" \
		"$dcpu" "$drss" "$srss" "$scpu" "$rcpu" "$DIR/e2e.time" "$t4" "$rcpu_all" "$DIR/ratios" \
		"$rawcpus" "$purged" "$floorcpu" "$nokeycpu" <<'PY'
import statistics, sys
name, rows, msgs, wal = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
raws = sorted(map(float, sys.argv[5].split()))
rawcpus = sorted(map(int, sys.argv[19].split()))
purged = int(sys.argv[20] or 0)
floor_ms, nokey_ms = int(sys.argv[21]), int(sys.argv[22])
tr, t2, t3 = map(float, sys.argv[6:9])
dcpu, drss, srss, scpu, rcpu = map(int, sys.argv[10:15])
t4, rcpu_all = float(sys.argv[16]), int(sys.argv[17])
# the last commit received (status frames, e.g. a lag report, come later)
last = None
for line in open(sys.argv[9]):
    recv, frame = line.split(' ', 1)
    if '["commit",' in frame:
        last = int(recv) / 1e6
try:
    user, system = open(sys.argv[15]).read().split()[-1].split('_')
    tcpu_s = float(user) + float(system)
    tcpu = f"{tcpu_s:.2f} s"
except (OSError, ValueError):
    tcpu_s, tcpu = float('nan'), "?"
raw, zs = statistics.median(raws), t3 - tr
e2e = (last - tr) if last else float('nan')
print(f"{name:7s} rows={rows:>8d} wal={wal:>5s}MB pgoutput_msgs={msgs:>8d}  "
      f"raw={raw:6.2f}s ({rows/raw:9.0f} rows/s; median of {raws[0]:.2f}..{raws[-1]:.2f})  "
      f"store={zs:6.2f}s ({rows/zs:9.0f} rows/s, ratio {raw/zs:.2f})  "
      f"end-to-end={e2e:6.2f}s ({rows/e2e:9.0f} rows/s, ratio {raw/e2e:.2f})")
# CPU per row (us) of each process, and its multiple of raw decoding's
# (the median of its backend's CPU over the three calls); the pipeline is
# the decoder, the backup replica's replicator, the server and the subscriber
raw_us = statistics.median(rawcpus) * 1000 / rows
dec_us, rep_us, srv_us = dcpu * 1000 / rows, rcpu_all * 1000 / rows, scpu * 1000 / rows
sub_us = tcpu_s * 1e6 / rows
pipe_us = dec_us + rep_us + srv_us + (0 if sub_us != sub_us else sub_us)
x = lambda us: us / raw_us if raw_us > 0 else float('nan')
print(f"{'':7s} CPU per row: raw decoding {raw_us:.2f} us in its backend (median of "
      f"{rawcpus[0]/1000:.2f}..{rawcpus[-1]/1000:.2f} s); decoder {dec_us:.2f} us = {x(dec_us):.2f}x raw, "
      f"replicator {rep_us:.2f} us = {x(rep_us):.2f}x, server {srv_us:.2f} us, subscriber {sub_us:.2f} us; "
      f"pipeline {pipe_us:.2f} us = {x(pipe_us):.2f}x raw (goal: decoder <= 2x, pipeline <= 4x); "
      f"the decoder purged {purged} rows meanwhile")
floor_us = floor_ms * 1000 / rows
print(f"{'':7s} floor: PostgreSQL's own COPY of the stored rows into a new table of changeLog's shape "
      f"{floor_us:.2f} us per row = {x(floor_us):.2f}x raw decoding, without the primary key "
      f"{nokey_ms * 1000 / rows:.2f} us (the key: {(floor_ms - nokey_ms) * 1000 / rows:.2f} us); "
      f"the decoder, which also decodes and encodes them, {dec_us / floor_us if floor_us else float('nan'):.2f}x this COPY's CPU")
result = dict(workload=name, rows=rows, raw_s=round(raw, 3), raw_cpu_us=round(raw_us, 3),
              decoder_us=round(dec_us, 3), decoder_x=round(x(dec_us), 3),
              replicator_us=round(rep_us, 3), replicator_x=round(x(rep_us), 3),
              server_us=round(srv_us, 3), subscriber_us=round(sub_us, 3),
              pipeline_us=round(pipe_us, 3), pipeline_x=round(x(pipe_us), 3),
              store_ratio=round(raw / zs, 3), e2e_ratio=round(raw / e2e, 3), purged_rows=purged,
              floor_us=round(floor_us, 3), floor_x=round(x(floor_us), 3),
              floor_nokey_us=round(nokey_ms * 1000 / rows, 3))
print("RESULT decode_vs_store " + " ".join(f"{k}={v}" for k, v in result.items()))
with open(sys.argv[18], "a") as f:
    f.write(" ".join(f"{k}={v}" for k, v in result.items()) + "\n")
print(f"{'':7s} start-up (server up -> streaming) {t2 - tr:.2f} s; CPU: decoder {dcpu/1000:.2f} s "
      f"= {dcpu*1000/rows:.2f} us per stored row, server {scpu/1000:.2f} s, replicator {rcpu/1000:.2f} s (during the store), "
      f"subscriber process {tcpu}; RssAnon decoder {drss/1024:.1f} MB, server {srss/1024:.1f} MB")
if t4 > 0:
    per_row = f"{rcpu_all/1000:.2f} s = {rcpu_all*1000/rows:.2f} us per row" if rcpu_all else "? (it restarted)"
    print(f"{'':7s} backup replica: every row applied {t4 - t3:.2f} s after the store; replicator CPU {per_row}")
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

setting() { sql -d bench -c "SELECT current_setting('$1')"; }
echo "zero_stream benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ {print $2}') GB"
echo "depends on: load average before the run $(cut -d' ' -f1-3 /proc/loadavg) (run it alone);" \
	"shared_buffers $(setting shared_buffers), wal_buffers $(setting wal_buffers)," \
	"commit_batch_size $(setting zero_stream.commit_batch_size), changelog_chunk_size $(setting zero_stream.changelog_chunk_size), changelog_compression $(setting zero_stream.changelog_compression)," \
	"backup replica '$(setting zero_stream.replica_file)' (if set, its replicator applies every change on the other core)," \
	"purge_interval $(setting zero_stream.purge_interval), live_buffer $(setting zero_stream.live_buffer), collation of changeLog.watermark" \
	"'$(sql -d bench -c "SELECT coalesce(collname, 'default') FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation WHERE attrelid = '\"zero_0/cdc\".\"changeLog\"'::regclass AND attname = 'watermark'")'," \
	"WAL segments recycled (warm-up above)"
echo "targets (issue 14), ratios to raw decoding: bulk store >= 0.35, bulk end-to-end >= 0.35 (goal 0.5), single-row store >= 0.6, single-row end-to-end >= 0.5, huge (one transaction) end-to-end >= 0.5"
: > "$DIR/ratios"
for _ in $(seq 1 "${ZS_BENCH_REPEAT:-1}"); do
	if [ "$BULK_ROWS" -gt 200000 ] && [ "${ZS_BENCH_SMALL:-1}" = 1 ]; then
		measure bulk "CALL bulk(200000, 1000)" 200000
		measure single "CALL bulk(20000, 1)" 20000
	fi
	measure bulk "CALL bulk($BULK_ROWS, 1000)" "$BULK_ROWS"
	measure single "CALL bulk($SINGLE_TXNS, 1)" "$SINGLE_TXNS"
	# one transaction of bulk_rows rows: how far behind raw decoding its last
	# row reaches a subscriber (issue 14: within 2x, end-to-end ratio >= 0.5)
	[ "${ZS_BENCH_HUGE:-1}" = 1 ] && measure huge "CALL bulk($BULK_ROWS, $BULK_ROWS)" "$BULK_ROWS"
done
# ZS_BENCH_REPEAT=N runs every workload N times: the median ratios and their range
if [ "${ZS_BENCH_REPEAT:-1}" -gt 1 ]; then
	python3 - "$DIR/ratios" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = dict(kv.split("=", 1) for kv in line.split())
    runs.setdefault((r["workload"], int(r["rows"])), []).append(r)
for (name, rows), rs in runs.items():
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    rng = lambda k: f"{min(float(r[k]) for r in rs):.2f}..{max(float(r[k]) for r in rs):.2f}"
    print(f"{name:7s} rows={rows:>8d} over {len(rs)} runs: store ratio median {med('store_ratio'):.2f} "
          f"({rng('store_ratio')}), end-to-end median {med('e2e_ratio'):.2f} ({rng('e2e_ratio')}); "
          f"CPU per row x raw: decoder median {med('decoder_x'):.2f} ({rng('decoder_x')}), "
          f"pipeline median {med('pipeline_x'):.2f} ({rng('pipeline_x')})")
    keys = [k for k in rs[0] if k not in ("workload", "rows")]
    print(f"RESULT decode_vs_store_median workload={name} rows={rows} runs={len(rs)} "
          + " ".join(f"{k}={med(k):.3f}" for k in keys))
PY
fi
sql -d bench -x -c "SELECT transactions_stored, changes_stored, local_commits FROM zero_stream.status()"
run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
