#!/usr/bin/env bash
# Benchmark: the WAL the change log writes against the WAL of the
# application's own writes that it records, and the change log's size per
# change (issue 39; not a test, nothing is asserted, it prints figures).
#
#   bench/wal.sh [bulk_rows] [single_txns]     (defaults 200000 20000)
#
# Workloads (ZS_BENCH_ONLY=<name> measures one):
#   bulk           bulk_rows rows in 1,000-row inserts (bench/workload.sh's
#                  rows table, 5 columns, and its bulk procedure);
#   single_insert  single_txns one-row inserts into the same table;
#   single_update  single_txns one-row updates of a table of ~100-byte rows
#                  (id, n, at and a 76-character text: 97 bytes of data, a
#                  ~125-byte tuple), 5 x single_txns rows written beforehand
#                  (before CREATE EXTENSION: the change log does not hold
#                  them) and vacuumed; transaction i updates n and at of row
#                  5 * i, so every page of the table is updated about twelve
#                  times;
#   single_insert_live  single_insert's transactions committed with
#                  synchronous_commit on while the decoder streams
#                  (ZS_BENCH_LIVE=0 skips it; see below).
# The first three have two phases each, and nothing else writes during either:
#   1. the application: the decoder is held back (zero_stream.database names a
#      database without the extension, as in decode_vs_store.sh, so it waits)
#      while the workload writes (synchronous_commit off: the same WAL,
#      sooner); its WAL is the difference of pg_current_wal_insert_lsn()
#      around it;
#   2. the change log: the server restarts with the real database and the
#      decoder catches up (zero_stream.wait_for_catchup, then until the WAL
#      stops growing); its WAL is the LSN difference from before the restart
#      to then: everything the decoder writes to store the workload (the
#      change log's heap and index, its TOAST, replicationState, the commit
#      records) and the restart's shutdown checkpoint record (~100 bytes).
# Both phases start right after a checkpoint (the CHECKPOINT before phase 1;
# for phase 2 a CHECKPOINT and the restart's shutdown checkpoint), so each
# pays the full-page images of the pages it touches first after a checkpoint,
# as a primary does once per checkpoint cycle: for bulk and single-row inserts
# that is little (new pages need none), for updates spread over a table it is
# most of the application's WAL. pg_walinspect (contrib, PostgreSQL 15+; in
# the bench database's schema zs_walinspect) splits each phase's WAL by
# resource manager and by relation (of a record's first block) and gives the
# full-page images' share; the ratio without them is printed too.
# Caught up this way, the decoder stores a whole backlog in a few local
# commits. single_insert_live is the other end: one client committing one row
# at a time, durably, reaches a decoder that keeps up one transaction at a
# time, and it stores nearly each in a local commit of its own (a commit
# record, a replicationState update). Both write at once there, so the WAL
# after a CHECKPOINT is split by transaction with pg_walinspect: the
# decoder's (those that wrote to the change log's schema) and the
# application's.
# Each workload runs on a fresh cluster, so its change log starts empty
# (ZS_BENCH_SHARED=1: one cluster for all, in this order, each workload's
# change log after the others'). Empty matters: PostgreSQL's free space map
# keeps each full page's last free bytes, and a later small row (a begin or
# commit message) that fits there pays a full-page image of that old page
# after every checkpoint; after a bulk workload, single-row transactions fill
# those holes. That cost belongs to the log's history more than to the
# workload, and the shared mode shows it.
# Also printed per workload: the growth of the change log's relations (the sum
# of pg_total_relation_size over every table of the change-log schema, so a
# chunk table counts as the changeLog table does today) per stored change and
# per row, the changes stored (changeLog's messages: begin, each row's,
# commit; and status()'s counters: rows' changes, transactions, local
# commits), the change text's bytes per change, and one line a script can
# read:
#   RESULT wal workload=bulk rows=... txns=... app_wal_bytes=... log_wal_bytes=...
#   ratio=... table_bytes=... table_bytes_per_row=... (then more fields)
# Settings: autovacuum off (an autovacuum of the application's table during
# the catch-up would be counted as the change log's, and one of the change
# log during the application's phase as the application's) and
# zero_stream.purge_interval = 0 (the purge's deletes are another cost; this
# measures storing); checkpoint_timeout 30min and max_wal_size 8GB, so no
# checkpoint starts inside a phase; wal_keep_size 8GB, so the WAL of both
# phases is still there for pg_walinspect after the checkpoints.
# ZS_BENCH_CONF adds postgresql.conf lines (e.g. wal_compression = on). The
# figures do not depend on the machine's speed or load (WAL bytes, not time),
# only on these settings, the code and the workloads' order.
# Places: ZS_BENCH_DIR (default /tmp/zero_stream-bench-wal-USER),
# ZS_BENCH_PORT (54361), ZS_BENCH_SERVER_PORT (zero_stream's server, 54362).
set -euo pipefail
cd "$(dirname "$0")/.."

BULK_ROWS=${1:-200000}
SINGLE_TXNS=${2:-20000}
# the updated table has this many rows per update; transaction i updates row STRIDE * i
STRIDE=5
export ZS_BENCH_DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-wal-$(id -un)}
export ZS_BENCH_PORT=${ZS_BENCH_PORT:-54361}
export ZS_BENCH_SERVER_PORT=${ZS_BENCH_SERVER_PORT:-54362}
. scripts/common.sh
. bench/workload.sh
. bench/lib.sh

# a benchmark that fails (or is interrupted) stops its own cluster
trap 'run "$BIN/pg_ctl" -D "$DIR/data" stop -m immediate >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# restart, or start, once more if it fails: the library may be being
# reinstalled (make install) while this runs, and a half-written one fails
# the start; the WAL figures do not depend on which build runs
restart_retry() {
	local i
	for i in 1 2 3; do
		if [ -f "$DIR/data/postmaster.pid" ]; then
			restart && return 0
		else
			run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w start >/dev/null && return 0
		fi
		echo "(the server did not start, attempt $i; see $DIR/server.log)" >&2
		sleep 5
	done
	return 1
}
LIB=$("$BIN/pg_config" --pkglibdir)/zero_stream.so
lib_sum() { md5sum "$LIB" 2>/dev/null | cut -c1-12; }
LIB_SUM=$(lib_sum)

# setup [items]: a fresh cluster whose decoder streams the database bench,
# with the rows table, and with items (the table the updates update) when
# asked: its rows are written before CREATE EXTENSION, so the change log does
# not store them (the backup replica's initial copy copies them). Had the
# decoder stored them, the holes their transaction left in the change log's
# pages (each full page's last free bytes, which PostgreSQL's free space map
# records) would take the updates' small begin and commit rows, each paying a
# full-page image of an old page: a cost of the change log's history, not of
# the workload (ZS_BENCH_SHARED=1 shows it)
setup() {
	init_cluster "$DIR" "$PORT" "zero_stream.port = $SPORT
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min
wal_keep_size = 8GB
autovacuum = off
zero_stream.purge_interval = 0
${ZS_BENCH_CONF:-}"
	set_database bench
	restart_retry
	sql -d postgres -c "CREATE DATABASE bench"
	sql -d bench -c "$ROWS_TABLE_SQL" -c "$BULK_PROCEDURE_SQL" \
		-c "CREATE TABLE items (id bigint PRIMARY KEY, n int, at timestamptz, payload text)" \
		-c "CREATE PROCEDURE updates(total int, stride int) LANGUAGE plpgsql AS \$\$
BEGIN
  FOR i IN 1 .. total LOOP
    UPDATE items SET n = n + 1, at = now() WHERE id = i * stride;
    COMMIT;
  END LOOP;
END \$\$"
	if [ "${1:-}" = items ]; then
		# then vacuumed, as autovacuum would have done (hint bits, visibility map)
		sql -d bench -c "SET synchronous_commit = off" \
			-c "INSERT INTO items SELECT g, 0, now(), rpad('item ' || g || ' ', 76, 'abcdefghijklmnopqrstuvwxyz') FROM generate_series(1, $((STRIDE * SINGLE_TXNS))) g"
		sql -d bench -c "VACUUM (ANALYZE) items"
	fi
	# pg_walinspect, where this PostgreSQL has it, in a schema of its own (the
	# publication publishes the schema public)
	WALINSPECT=$(sql -d bench -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_walinspect'")
	if [ "$WALINSPECT" = 1 ]; then
		sql -d bench -c "CREATE SCHEMA zs_walinspect" -c "CREATE EXTENSION pg_walinspect SCHEMA zs_walinspect"
	fi
	sql -d bench -c "CREATE EXTENSION zero_stream"
	local i
	for i in $(seq 1 600); do
		[ "$(sql -d bench -c "SELECT state FROM zero_stream.status()")" = streaming ] && break
		[ "$i" -lt 600 ] || { echo "zero_stream's decoder does not stream (see $DIR/server.log)" >&2; exit 1; }
		sleep 0.1
	done
	# the change log's schema ("zero_0/cdc" with the default app_id and shard)
	CDC=$(sql -d bench -c "SELECT change_log_schema FROM zero_stream.status()")
	CDC=${CDC:-zero_0/cdc}
	[ -n "$HEADER" ] || header
}

lsn() { sql -d bench -c "SELECT pg_current_wal_insert_lsn()"; }
# the bytes of every table of the change log's schema, with their indexes and TOAST
log_size() {
	sql -d bench -c "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0), count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$CDC' AND c.relkind IN ('r', 'p', 'm')" | tr '|' ' '
}
# quiet: until the WAL's insert position stays put for a second (at most 60 s;
# the decoder has stored everything, this waits for any write that follows)
quiet() {
	local a b i
	a=$(lsn)
	for i in $(seq 1 60); do
		sleep 1
		b=$(lsn)
		[ "$a" = "$b" ] && return 0
		a=$b
	done
	echo "(the WAL kept growing after the catch-up: the change log's figure includes that)" >&2
}
# walsplit FROM TO OUT: the WAL between two LSNs by resource manager ("rm"
# lines) and by the relation of each record's first block ("rel" lines):
# kind|label|records|bytes|full-page image bytes. The WAL must be flushed up
# to TO (pg_walinspect reads only flushed WAL): call it after a CHECKPOINT.
walsplit() {
	if [ "$WALINSPECT" != 1 ]; then : > "$3"; return 0; fi
	sql -d bench -F '|' -f - > "$3" <<-SQL
		SELECT 'rm', "resource_manager/record_type", count, combined_size, fpi_size
		  FROM zs_walinspect.pg_get_wal_stats('$1', '$2') WHERE count > 0;
		WITH r AS (
		  SELECT resource_manager AS rm, record_length AS len, fpi_length AS fpi,
		         regexp_match(block_ref, 'rel (\d+)/(\d+)/(\d+)') AS m
		    FROM zs_walinspect.pg_get_wal_records_info('$1', '$2')),
		g AS (
		  SELECT m[1]::oid AS spc, m[2]::oid AS db, m[3]::oid AS node,
		         CASE WHEN m IS NULL THEN rm END AS rm,
		         count(*) AS n, sum(len) AS len, sum(fpi) AS fpi
		    FROM r GROUP BY 1, 2, 3, 4),
		l AS (
		  SELECT g.*, CASE
		      WHEN g.rm IS NOT NULL THEN 'no relation (' || g.rm || ')'
		      WHEN g.db = 0 THEN 'shared catalogs'
		      WHEN g.db <> (SELECT oid FROM pg_database WHERE datname = current_database()) THEN 'database ' || g.db
		      ELSE coalesce((
		        -- a TOAST table or its index is named after the table it serves
		        SELECT coalesce((SELECT 'TOAST of ' || t.oid::regclass FROM pg_class t
		                          WHERE t.reltoastrelid IN (c.oid, (SELECT indrelid FROM pg_index WHERE indexrelid = c.oid))),
		                        c.oid::regclass::text)
		          FROM pg_class c WHERE c.oid = pg_filenode_relation(CASE g.spc WHEN 1663 THEN 0 ELSE g.spc END, g.node)),
		        'relfilenode ' || g.node)
		    END AS label
		  FROM g)
		SELECT 'rel', label, sum(n), sum(len), sum(fpi) FROM l GROUP BY label;
	SQL
}

# walsides FROM TO OUT: the same WAL split between the application and the
# change log when both write at once (the live workload): a record belongs to
# the change log if its transaction wrote to a relation of the change log's
# schema (the decoder's transactions), or, without a transaction, if its
# block is in one (e.g. pruning replicationState); to the application if its
# transaction wrote elsewhere; else to neither (checkpoint, running
# transactions). Lines side|app, log or other|records|bytes|full-page image bytes.
walsides() {
	sql -d bench -F '|' -f - > "$3" <<-SQL
		WITH r AS (
		  SELECT xid::text::bigint AS x, record_length AS len, fpi_length AS fpi,
		         (regexp_match(block_ref, 'rel \d+/\d+/(\d+)'))[1]::oid AS node
		    FROM zs_walinspect.pg_get_wal_records_info('$1', '$2')),
		cdc AS (
		  SELECT pg_relation_filenode(c.oid) AS node FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		   WHERE n.nspname = '$CDC' AND pg_relation_filenode(c.oid) IS NOT NULL
		  UNION ALL
		  SELECT pg_relation_filenode(c.reltoastrelid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		   WHERE n.nspname = '$CDC' AND c.reltoastrelid <> 0),
		lx AS (SELECT DISTINCT x FROM r WHERE x <> 0 AND node IN (SELECT node FROM cdc))
		SELECT 'side', CASE WHEN x IN (SELECT x FROM lx) THEN 'log'
		                    WHEN x = 0 AND node IN (SELECT node FROM cdc) THEN 'log'
		                    WHEN x <> 0 THEN 'app' ELSE 'other' END AS side,
		       count(*), sum(len), sum(fpi)
		  FROM r GROUP BY 2;
	SQL
}

# measure NAME ROWS TXNS CALL [live]
# held back (the default): the application's phase, then the decoder's
# catch-up, each LSN difference alone; live: the decoder streams while the
# workload commits with synchronous_commit on, as an application's
# transactions are committed, and pg_walinspect tells the two apart
# (walsides). Held back, the decoder stores a whole backlog in a few local
# commits; live, one client's single-row transactions reach it one at a
# time, and it stores nearly each in its own local commit.
measure() {
	local name=$1 rows=$2 txns=$3 call=$4 mode=${5:-held}
	[ -z "${ZS_BENCH_ONLY:-}" ] || [ "$ZS_BENCH_ONLY" = "$name" ] || return 0
	# each workload on a fresh cluster and change log, unless ZS_BENCH_SHARED=1
	if [ "$SHARED" != 1 ]; then
		if [ "$name" = single_update ]; then setup items; else setup; fi
	fi
	if [ "$mode" = live ] && [ "$WALINSPECT" != 1 ]; then
		echo "$name: skipped (it needs pg_walinspect to tell the application's WAL from the change log's)"
		[ "$SHARED" = 1 ] || run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
		return 0
	fi
	# the change log's text of this workload is what follows the last stored watermark
	local from; from=$(sql -d bench -c "SELECT last_watermark FROM zero_stream.status()")
	local counts="SELECT changes_stored, transactions_stored, local_commits FROM zero_stream.status()"
	local a0 a1 l0 l1 size0 size1 nrel1 ok c0
	if [ "$mode" = live ]; then
		c0=$(sql -d bench -c "$counts")
		sql -d bench -c "CHECKPOINT"
		read -r size0 _ <<< "$(log_size)"
		a0=$(lsn)
		sql -d bench -c "SET synchronous_commit = on" -c "$call"
		ok=$(sql -d bench -c "SELECT zero_stream.wait_for_catchup('900s')")
		[ "$ok" = t ] || { echo "the decoder did not catch up within 900 s (see $DIR/server.log)" >&2; exit 1; }
		quiet
		a1=$(lsn) l0=$a0 l1=$a1
	else
		# 1. the application's WAL, the decoder held back
		set_database postgres; restart_retry
		sql -d bench -c "CHECKPOINT"
		a0=$(lsn)
		sql -d bench -c "SET synchronous_commit = off" -c "$call"
		a1=$(lsn)
		# 2. the change log's WAL: the decoder's catch-up alone (its counters
		# start at 0 with the restart)
		sql -d bench -c "CHECKPOINT"
		read -r size0 _ <<< "$(log_size)"
		l0=$(lsn) c0="0|0|0"
		set_database bench; restart_retry
		ok=$(sql -d bench -c "SELECT zero_stream.wait_for_catchup('900s')")
		[ "$ok" = t ] || { echo "the decoder did not catch up within 900 s (see $DIR/server.log)" >&2; exit 1; }
		quiet
		l1=$(lsn)
	fi
	read -r size1 nrel1 <<< "$(log_size)"
	local c1; c1=$(sql -d bench -c "$counts")
	# the stored change text (changeLog keeps zero-cache's columns, a view over
	# a chunked log included): its bytes per change
	local text; text=$(sql -d bench -c "SELECT count(*), coalesce(sum(octet_length(change::text)), 0) FROM \"$CDC\".\"changeLog\" WHERE watermark COLLATE \"C\" > '$from' COLLATE \"C\"")
	# pg_walinspect reads flushed WAL only: a checkpoint flushes it (after l1)
	sql -d bench -c "CHECKPOINT"
	if [ "$mode" = live ]; then
		: > "$DIR/app.split"
		walsides "$l0" "$l1" "$DIR/sides.split"
	else
		walsplit "$a0" "$a1" "$DIR/app.split"
		: > "$DIR/sides.split"
	fi
	walsplit "$l0" "$l1" "$DIR/log.split"
	local sum; sum=$(lib_sum)
	[ "$sum" = "$LIB_SUM" ] || echo "(zero_stream.so was reinstalled during the run: this workload may have been stored by another build)" >&2
	LIB_SUM=$sum
	python3 - "$name" "$rows" "$txns" "$a0" "$a1" "$l0" "$l1" "$size0" "$size1" "$nrel1" "$c0" "$c1" "$text" \
		"$DIR/app.split" "$DIR/log.split" "$DIR/sides.split" "$mode" <<'PY'
import sys
name, rows, txns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def lsn(s):
    hi, lo = s.split('/')
    return (int(hi, 16) << 32) + int(lo, 16)
a0, a1, l0, l1 = map(lsn, sys.argv[4:8])
size0, size1, nrel = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
# changes: the change log's messages (begin, one per row changed, commit),
# as changeLog lists them; row_changes: status().changes_stored, the rows'
row_changes, stored_txns, local_commits = (b - a for a, b in zip(map(int, sys.argv[11].split('|')), map(int, sys.argv[12].split('|'))))
changes, text_bytes = map(int, sys.argv[13].split('|'))
live = sys.argv[17] == 'live'
MB = 1e6
def split(path):
    rm, rel, side = [], [], {}
    for line in open(path):
        kind, label, n, size, fpi = line.rstrip('\n').split('|')
        if kind == 'side':
            side[label] = (int(n), int(size), int(fpi))
        else:
            (rm if kind == 'rm' else rel).append((label, int(n), int(size), int(fpi)))
    return sorted(rm, key=lambda r: -r[2]), sorted(rel, key=lambda r: -r[2]), side
app_rm, app_rel, _ = split(sys.argv[14])
log_rm, log_rel, _ = split(sys.argv[15])
_, _, sides = split(sys.argv[16])
table = size1 - size0
if live:
    # one stretch of WAL: each side's records, and the page headers and
    # alignment between them in proportion
    recs = sum(v[1] for v in sides.values())
    scale = (l1 - l0) / recs if recs else float('nan')
    side = lambda k, i: sides.get(k, (0, 0, 0))[i]
    app, log, other = (round(side(k, 1) * scale) for k in ('app', 'log', 'other'))
    app_fpi, log_fpi = side('app', 2), side('log', 2)
else:
    app, log, other = a1 - a0, l1 - l0, 0
    app_fpi = sum(r[3] for r in app_rm) if app_rm else None
    log_fpi = sum(r[3] for r in log_rm) if log_rm else None
ratio = log / app if app else float('nan')
per = lambda a, b: a / b if b else float('nan')
kinds = {'bulk': '1,000-row inserts', 'single_insert': 'single-row inserts',
         'single_update': 'single-row updates of a ~100-byte row',
         'single_insert_live': 'single-row inserts committed one at a time while the decoder streams'}
print(f"{name}: {rows} rows in {txns} transactions ({kinds.get(name, name)})")
fpi = lambda b: f", of it full-page images {b / MB:.2f} MB" if b is not None else ""
print(f"  application WAL {app / MB:8.2f} MB = {app / rows:7.1f} bytes per row{fpi(app_fpi)}")
print(f"  change log WAL  {log / MB:8.2f} MB = {log / rows:7.1f} bytes per row{fpi(log_fpi)};  ratio {ratio:.2f}x"
      + (f" ({(log - log_fpi) / (app - app_fpi):.2f}x without full-page images)" if app_fpi is not None and app > app_fpi else ""))
if live:
    print(f"  (one stretch of WAL, {(l1 - l0) / MB:.2f} MB, split by transaction: the decoder's or the application's;"
          f" neither, e.g. checkpoints, {other / MB:.2f} MB)")
print(f"  change-log table +{table / MB:.2f} MB (the {nrel} tables of its schema, with indexes and TOAST): "
      f"{per(table, changes):.1f} bytes per change, {per(table, rows):.1f} per row; {changes} changes stored "
      f"(begin, each row's, commit: {per(changes, rows):.2f} per row; status(): {row_changes} rows' changes in "
      f"{stored_txns} transactions, {local_commits} local commits); "
      f"change text {per(text_bytes, changes):.0f} bytes per change, {per(text_bytes, rows):.0f} per row")
def top(rs, n=6):
    out = [f"{label} {size / MB:.2f}" + (f" (FPI {f / MB:.2f})" if f else "") for label, _, size, f in rs[:n]]
    rest = sum(r[2] for r in rs[n:])
    if rest:
        out.append(f"{len(rs) - n} more {rest / MB:.2f}")
    return ", ".join(out)
for label, rm, rel, total in (("application", app_rm, app_rel, app),
                              ("application and change log" if live else "change log", log_rm, log_rel, l1 - l0)):
    if rm:
        recs = sum(r[2] for r in rm)
        print(f"  {label} WAL by resource manager, MB: {top(rm)}; records {recs / MB:.2f} MB of the {total / MB:.2f} MB"
              " (the rest: page headers, alignment)")
        print(f"  {label} WAL by relation, MB: {top(rel)}")
result = dict(workload=name, rows=rows, txns=txns, app_wal_bytes=app, log_wal_bytes=log, ratio=round(ratio, 3),
              table_bytes=table, table_bytes_per_row=round(per(table, rows), 1),
              changes=changes, table_bytes_per_change=round(per(table, changes), 1),
              app_wal_bytes_per_row=round(per(app, rows), 1), log_wal_bytes_per_row=round(per(log, rows), 1),
              change_text_bytes_per_change=round(per(text_bytes, changes), 1), row_changes=row_changes,
              stored_txns=stored_txns, local_commits=local_commits)
if app_fpi is not None:
    result.update(app_fpi_bytes=app_fpi, log_fpi_bytes=log_fpi,
                  ratio_without_fpi=round((log - log_fpi) / (app - app_fpi), 3) if app > app_fpi else 'nan')
print("RESULT wal " + " ".join(f"{k}={v}" for k, v in result.items()))
PY
	[ "$SHARED" = 1 ] || run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
}

setting() { sql -d bench -c "SELECT current_setting('$1')"; }
# header: what the figures depend on, printed once, from the first cluster
HEADER=""
header() {
	HEADER=1
	echo "zero_stream WAL benchmark: $(sql -d bench -c 'SELECT version()' | cut -d' ' -f1-2)," \
		"zero_stream $(sql -d bench -c "SELECT extension_version || ' (library ' || library_version || ')' FROM zero_stream.status()"); MB = 10^6 bytes"
	echo "depends on: default_toast_compression $(setting default_toast_compression), wal_compression $(setting wal_compression)," \
		"full_page_writes $(setting full_page_writes), wal_log_hints $(setting wal_log_hints), data_checksums $(setting data_checksums)," \
		"wal_level $(setting wal_level), shared_buffers $(setting shared_buffers), checkpoint_timeout $(setting checkpoint_timeout)," \
		"max_wal_size $(setting max_wal_size) (no checkpoint inside a phase), autovacuum $(setting autovacuum)," \
		"zero_stream.purge_interval $(setting zero_stream.purge_interval) (no purge), commit_batch_size $(setting zero_stream.commit_batch_size)," \
		"changelog_chunk_size $(setting zero_stream.changelog_chunk_size), changelog_compression $(setting zero_stream.changelog_compression), backup replica '$(setting zero_stream.replica_file)' (SQLite, no WAL);" \
		"the held-back workloads commit with synchronous_commit off (the same WAL, sooner), single_insert_live with on"
	echo "each phase starts after a checkpoint (application: CHECKPOINT; change log: CHECKPOINT and the restart's shutdown checkpoint)," \
		"so each pays the full-page images of the pages it touches first, as once per checkpoint cycle;" \
		"$( [ "$SHARED" = 1 ] && echo "one cluster and change log for all workloads, in order (ZS_BENCH_SHARED=1)" || echo "each workload on a fresh cluster and change log")," \
		"$( [ "$WALINSPECT" = 1 ] && echo "split with pg_walinspect" || echo "no pg_walinspect: totals only")"
}

SHARED=${ZS_BENCH_SHARED:-0}
if [ "$SHARED" = 1 ]; then
	# one cluster and change log for every workload, in order
	if [ -z "${ZS_BENCH_ONLY:-}" ] || [ "$ZS_BENCH_ONLY" = single_update ]; then setup items; else setup; fi
fi
measure bulk "$BULK_ROWS" $((BULK_ROWS / 1000)) "CALL bulk($BULK_ROWS, 1000)"
measure single_insert "$SINGLE_TXNS" "$SINGLE_TXNS" "CALL bulk($SINGLE_TXNS, 1)"
measure single_update "$SINGLE_TXNS" "$SINGLE_TXNS" "CALL updates($SINGLE_TXNS, $STRIDE)"
# the same single-row inserts with the decoder keeping up (ZS_BENCH_LIVE=0 skips it)
[ "${ZS_BENCH_LIVE:-1}" = 0 ] || measure single_insert_live "$SINGLE_TXNS" "$SINGLE_TXNS" "CALL bulk($SINGLE_TXNS, 1)" live
[ "$SHARED" != 1 ] || run "$BIN/pg_ctl" -D "$DIR/data" stop -m fast >/dev/null
