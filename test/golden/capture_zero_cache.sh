#!/usr/bin/env bash
# Capture what a stock zero-cache stores in its change log for a workload: the reference rows
# zero_stream's change log must match (test/golden/DDL.md).
#
# usage: capture_zero_cache.sh SETUP.sql WORKLOAD.sql OUT.jsonl
#
# It makes a throwaway PostgreSQL cluster (wal_level=logical, nothing preloaded: zero-cache
# creates its own schemas, event triggers, publication-bound slot), applies SETUP.sql, adds the
# marker table public.zc_marker (n int PRIMARY KEY, label text), starts a full stock zero-cache
# (its own replication-manager and one sync worker; app id zero, shard 0, so its change log is
# "zero_0/cdc"."changeLog" in the same database) with ZERO_APP_PUBLICATIONS=$ZC_PUBLICATION and
# waits for its initial sync. Then it runs WORKLOAD.sql group by group: a line
# "-- LABEL description" (LABEL: a letter, digits, optionally letters, e.g. L01 or L09b) starts
# a group, and each group runs with its own psql (so a CONCURRENTLY statement runs outside a
# transaction block). After each group it inserts the marker row (n, LABEL) and waits until
# zero-cache has stored it, every backfill it started has its backfill-completed, and the change
# log has been still for $ZC_SETTLE_MS. Zero-cache stores transactions in commit order, so the
# transactions between the marker of the previous group and this group's marker are this
# group's. What zero-cache stores while it starts (before the workload) is labelled STARTUP,
# its backfill transactions BACKFILL, the markers' transactions "mark". Zero-cache purges its
# change log as its replica catches up (about a minute later), so the log is dumped with
# dump_changelog.sh after every group; OUT.jsonl is the union of those dumps, in the same
# order. OUT.labels.tsv has a line per transaction (ordinal, label, description [changes],
# watermark; compare.py reads the first three) and a "#" line per group that stored nothing.
# Everything the script started is stopped on every way out: zero-cache (its process group)
# and the cluster.
#
# Runs as an unprivileged user (initdb refuses root) with PostgreSQL's bin first on PATH and
# python3, e.g. in a PostgreSQL 17 root (scripts/pg-root.sh; OUT's folder writable by zstest):
#   mkdir -p /tmp/zc-out && chown zstest: /tmp/zc-out
#   scripts/pg-root.sh 17 run --user zstest --bind /work/main:/src --bind /tmp/zc-out:/out \
#     --bind /home/zstest/.cache/zero_stream-interop:/home/zstest/.cache/zero_stream-interop \
#     --cd /src -- bash test/golden/capture_zero_cache.sh test/golden/ddl_setup.sql \
#     test/golden/ddl_workload.sql /out/ddl_changelog.jsonl
#
# Environment:
#   ZC_ZERO_DIR      the zero-cache install (test/interop/prepare.sh's folder; default
#                    $HOME/.cache/zero_stream-interop/zero-1.9.0-node22): node_modules/.bin/node
#                    and node_modules/@rocicorp/zero/out/zero/src/cli.js
#   ZC_PUBLICATION   the publication zero-cache replicates (default zc_pub; SETUP.sql makes it,
#                    and it must publish public.zc_marker)
#   ZC_TIMEOUT       seconds to wait for each step (default 120)
#   ZC_SETTLE_MS     how long the change log must be still after a marker (default 1500)
#   ZC_KEEP=1        keep the work folder (logs, data) also on success
# Exit status: 0 captured; 1 a failure (zero-cache's log tail is printed); 2 usage.
set -euo pipefail

self=$(readlink -f "$0")
here=$(dirname "$self")
log() { echo "capture: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
if [ $# -ne 3 ] || [ "$1" = --help ]; then
	sed -n '5p' "$self" | sed 's/^# //' >&2
	exit 2
fi
[ "$(id -u)" != 0 ] || { log "run as an unprivileged user (initdb refuses root)"; exit 2; }
setup=$(readlink -f "$1")
workload=$(readlink -f "$2")
out=$(readlink -f "$3")
labels=${out%.jsonl}.labels.tsv
[ -f "$setup" ] || die "no setup file $1"
[ -f "$workload" ] || die "no workload file $2"

zero_dir=${ZC_ZERO_DIR:-$HOME/.cache/zero_stream-interop/zero-1.9.0-node22}
node=$zero_dir/node_modules/.bin/node
cli=$zero_dir/node_modules/@rocicorp/zero/out/zero/src/cli.js
pub=${ZC_PUBLICATION:-zc_pub}
timeout_s=${ZC_TIMEOUT:-120}
settle_ms=${ZC_SETTLE_MS:-1500}
[ -x "$node" ] || die "no node at $node (ZC_ZERO_DIR; test/interop/prepare.sh installs it)"
[ -f "$cli" ] || die "no zero-cache entry point at $cli"
command -v initdb >/dev/null || die "initdb is not on PATH (PostgreSQL's bin folder first)"

work=$(mktemp -d /tmp/zc-capture.XXXXXX)
pgdata=$work/pg
zlog=$work/zero-cache.log
zpid=
status_file=$work/.ok

# ---- stop everything on every way out ----
cleanup()
{
	local rc=$?
	set +e
	if [ $rc -ne 0 ] && [ -f "$zlog" ]; then
		log "zero-cache's log ($zlog), last lines:"
		tail -n 40 "$zlog" | cut -c1-400 >&2
	fi
	if [ -n "$zpid" ] && kill -0 "$zpid" 2>/dev/null; then
		kill -TERM -- "-$zpid" 2>/dev/null
		for _ in $(seq 100); do kill -0 -- "-$zpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$zpid" 2>/dev/null
	fi
	if [ -f "$pgdata/postmaster.pid" ]; then
		pg_ctl -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || pg_ctl -D "$pgdata" -m immediate -w stop >/dev/null 2>&1
	fi
	if [ $rc -eq 0 ] && [ -f "$status_file" ] && [ "${ZC_KEEP:-}" != 1 ]; then
		rm -rf "$work"
	else
		log "work folder kept: $work"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ---- free ports: a random base with the next three free too (zero-cache's sync, change-streamer,
# litestream ports), and one for PostgreSQL ----
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_ports()
{
	local n=$1 base i ok
	for _ in $(seq 200); do
		base=$((20000 + RANDOM % 40000))
		ok=1
		for ((i = 0; i < n; i++)); do port_free $((base + i)) || { ok=0; break; }; done
		[ $ok = 1 ] && { echo "$base"; return 0; }
	done
	return 1
}
pg_port=$(pick_ports 1) || die "no free port"
zport=$(pick_ports 4) || die "no free ports"

# ---- the cluster ----
initdb -D "$pgdata" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; die "initdb"; }
cat >>"$pgdata/postgresql.conf" <<EOF
port = $pg_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$work'
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_connections = 60
fsync = off
synchronous_commit = on
TimeZone = 'UTC'
DateStyle = 'ISO, MDY'
IntervalStyle = 'postgres'
lc_monetary = 'C'
log_min_messages = warning
log_statement = 'ddl'
log_line_prefix = '%m [%p] xid=%x '
EOF
pg_ctl -D "$pgdata" -l "$work/postgres.log" -w start >/dev/null || { tail -n 20 "$work/postgres.log" >&2; die "pg_ctl start"; }
db=zc
psql_() { psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p "$pg_port" -U postgres "$@"; }
psql_ -d postgres -c "CREATE DATABASE $db" >/dev/null
q() { psql_ -d "$db" -A -t -c "$1"; }

log "depends on: $(q 'SELECT version()')"
log "depends on: node $("$node" --version) ($node)"
log "depends on: @rocicorp/zero $("$node" -p "require('$zero_dir/node_modules/@rocicorp/zero/package.json').version") ($cli)"
log "cluster on port $pg_port, zero-cache on ports $zport..$((zport + 3)), work folder $work"

# ---- setup, marker table ----
psql_ -d "$db" -f "$setup" >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; die "setup $setup"; }
q "CREATE TABLE public.zc_marker (n int PRIMARY KEY, label text NOT NULL)" >/dev/null
[ "$(q "SELECT count(*) FROM pg_publication_tables WHERE pubname = '$pub' AND schemaname = 'public' AND tablename = 'zc_marker'")" = 1 ] ||
	die "publication $pub does not publish public.zc_marker"

# ---- zero-cache: a full single-node zero-cache, stock settings but the ports, one sync worker ----
mkdir -p "$work/zero/tmp"
setsid env -i PATH="$zero_dir/node_modules/.bin:/usr/bin:/bin" HOME="$HOME" LANG=C.UTF-8 \
	ZERO_UPSTREAM_DB="postgresql://postgres@127.0.0.1:$pg_port/$db" \
	ZERO_REPLICA_FILE="$work/zero/replica.db" \
	ZERO_APP_PUBLICATIONS="$pub" \
	ZERO_NUM_SYNC_WORKERS=1 \
	ZERO_UPSTREAM_MAX_CONNS=3 ZERO_CVR_MAX_CONNS=2 ZERO_CHANGE_MAX_CONNS=2 \
	ZERO_PORT="$zport" ZERO_CHANGE_STREAMER_PORT=$((zport + 1)) ZERO_LITESTREAM_PORT=$((zport + 2)) \
	ZERO_ADMIN_PASSWORD=capture ZERO_ENABLE_TELEMETRY=false \
	ZERO_LOG_FORMAT=text ZERO_LOG_LEVEL=info \
	ZERO_STORAGE_DB_TMP_DIR="$work/zero/tmp" \
	"$node" "$cli" >"$zlog" 2>&1 </dev/null &
zpid=$!

cl='"zero_0/cdc"."changeLog"'
alive() { kill -0 "$zpid" 2>/dev/null || die "zero-cache (pid $zpid) exited ($1)"; }
# wait_for WHAT SQL: until SQL prints t
wait_for()
{
	local what=$1 sql=$2 deadline=$((SECONDS + timeout_s))
	while :; do
		alive "waiting for $what"
		[ "$(q "$sql" 2>/dev/null || true)" = t ] && return 0
		[ $SECONDS -lt $deadline ] || die "timed out after ${timeout_s}s waiting for $what"
		sleep 0.2
	done
}
wait_for "the initial sync" "SELECT EXISTS (SELECT 1 FROM $cl)"
deadline=$((SECONDS + timeout_s))
while port_free "$zport"; do
	alive "waiting for its port"
	[ $SECONDS -lt $deadline ] || die "zero-cache does not listen on $zport"
	sleep 0.2
done
# what zero-cache stores on its own while it starts (its CVR schema's DDL, for one) is not the
# workload's: wait until the log is still, and remember those transactions
deadline=$((SECONDS + timeout_s))
last=-1 still=0
while [ $still -lt $((settle_ms > 3000 ? settle_ms : 3000)) ]; do
	alive "settling after the initial sync"
	cnt=$(q "SELECT count(*) FROM $cl")
	if [ "$cnt" = "$last" ]; then still=$((still + 100)); else still=0; fi
	last=$cnt
	[ $SECONDS -lt $deadline ] || die "the change log does not settle after the initial sync"
	sleep 0.1
done
q "SELECT DISTINCT watermark FROM $cl" >"$work/startup.txt"
# zero-cache purges what its replica has (the single-node replica monitor: checked every 30 s, purged
# 30 s later), so the log is dumped after every group and the dumps merged at the end
mkdir -p "$work/dumps"
snapshot()
{
	PSQL=$(command -v psql) bash "$here/dump_changelog.sh" -h "$work" -p "$pg_port" -U postgres -d "$db" \
		'zero_0/cdc' >"$work/dumps/$1.jsonl" || die "dump_changelog.sh"
}
snapshot 000
log "initial sync done ($cnt change-log rows, $(wc -l <"$work/startup.txt") transactions)"

# pending: a backfill (create-table/add-column "backfill") without its backfill-completed
pending_sql="
SELECT coalesce(sum(greatest(r.n - coalesce(c.n, 0), 0)), 0) FROM
  (SELECT coalesce(change->'table'->>'schema', change->'spec'->>'schema') s,
          coalesce(change->'table'->>'name', change->'spec'->>'name') t, count(*) n
     FROM $cl WHERE change->>'tag' IN ('create-table', 'add-column') AND change->'backfill' IS NOT NULL
    GROUP BY 1, 2) r
  LEFT JOIN (SELECT change->'relation'->>'schema' s, change->'relation'->>'name' t, count(*) n
               FROM $cl WHERE change->>'tag' = 'backfill-completed' GROUP BY 1, 2) c
  USING (s, t)"
# settle N: marker N stored, no backfill pending, the log still for settle_ms
settle()
{
	local n=$1 label=$2 deadline last cnt still
	wait_for "the marker of $label" "SELECT EXISTS (SELECT 1 FROM $cl WHERE change->>'tag' = 'insert'
		AND change->'relation'->>'name' = 'zc_marker' AND (change->'new'->>'n')::int = $n)"
	deadline=$((SECONDS + timeout_s))
	last=-1 still=0
	while :; do
		alive "settling after $label"
		cnt=$(q "SELECT count(*) || '/' || ($pending_sql) FROM $cl")
		if [ "$cnt" = "$last" ] && [ "${cnt#*/}" = 0 ]; then
			still=$((still + 100))
			[ $still -ge "$settle_ms" ] && return 0
		else
			still=0
		fi
		last=$cnt
		[ $SECONDS -lt $deadline ] || die "timed out after ${timeout_s}s settling after $label (rows/pending backfills $cnt)"
		sleep 0.1
	done
}

# ---- the workload, group by group ----
gdir=$work/groups
mkdir -p "$gdir"
awk -v dir="$gdir" '
	/^-- [A-Z][0-9]+[a-z]*( |$)/ {
		n++; f = sprintf("%s/%03d.sql", dir, n)
		label = $2; desc = $0; sub(/^-- [^ ]+ ?/, "", desc)
		printf "%s\t%s\n", label, desc > (dir "/index.tsv")
	}
	n > 0 { print > f }' "$workload"
[ -f "$gdir/index.tsv" ] || die "no \"-- LABEL description\" group in $workload"
: >"$work/groups.tsv"
n=0
while IFS=$'\t' read -r label desc; do
	n=$((n + 1))
	f=$(printf '%s/%03d.sql' "$gdir" "$n")
	before=$(wc -l <"$zlog")
	psql_ -d "$db" -f "$f" >"$gdir/$n.out" 2>&1 || { cat "$gdir/$n.out" >&2; die "group $label of $workload"; }
	q "INSERT INTO public.zc_marker VALUES ($n, '$label')" >/dev/null
	settle "$n" "$label"
	snapshot "$(printf %03d "$n")"
	printf '%s\t%s\t%s\n' "$n" "$label" "$desc" >>"$work/groups.tsv"
	# what zero-cache said meanwhile about errors, resets or schema changes it did not expect
	notes=$(tail -n +"$((before + 1))" "$zlog" | grep -iE 'error|reset|unsupported|warn' | cut -c1-300 || true)
	log "$label stored$([ -z "$notes" ] || printf ': zero-cache said:\n%s' "$notes")"
done <"$gdir/index.tsv"

# ---- the dump (the union of the snapshots) and its labels ----
python3 - "$out.tmp" "$work"/dumps/*.jsonl <<'EOF'
import json, sys
rows = {}
for f in sys.argv[2:]:
    for line in open(f, encoding="utf-8"):
        r = json.loads(line)
        k = (r["watermark"], r["pos"])
        if k in rows and rows[k][1] != r:
            sys.exit("capture: %s pos %d differs between snapshots (%s)" % (k[0], k[1], f))
        rows.setdefault(k, (line, r))
# dump_changelog.sh's order: watermark COLLATE "C", pos
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for k in sorted(rows, key=lambda k: (k[0].encode(), k[1])):
        out.write(rows[k][0])
EOF
python3 - "$out.tmp" "$work/groups.tsv" "$labels.tmp" "$work/startup.txt" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
groups = [l.rstrip("\n").split("\t", 2) for l in open(sys.argv[2], encoding="utf-8")]
startup = set(l.strip() for l in open(sys.argv[4], encoding="utf-8"))
txs = []                                  # [watermark, [changes]]
for r in rows:
    if not txs or txs[-1][0] != r["watermark"]:
        txs.append([r["watermark"], []])
    txs[-1][1].append(json.loads(r["change"]))

def tags(changes):
    out = []
    for c in changes[1:-1]:
        t = c["tag"]
        if t in ("insert", "update", "delete", "backfill", "backfill-completed"):
            o = c["relation"]["name"]
        elif t == "truncate":
            o = ",".join(x["name"] for x in c["relations"])
        elif t in ("create-table",):
            o = c["spec"]["name"]
        elif t in ("create-index",):
            o = c["spec"]["name"]
        elif t in ("drop-table", "drop-index"):
            o = c["id"]["name"]
        elif t in ("add-column", "update-column", "drop-column", "update-table-metadata"):
            o = c["table"]["name"]
        elif t == "rename-table":
            o = c["old"]["name"] + "->" + c["new"]["name"]
        else:
            o = ""
        s = (t + " " + o).strip()
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return "[" + ", ".join(s if k == 1 else "%s x%d" % (s, k) for s, k in out) + "]" if out else "[(no changes)]"

def marker(changes):
    for c in changes:
        if c["tag"] == "insert" and c["relation"]["name"] == "zc_marker":
            return int(c["new"]["n"])
    return None

out = open(sys.argv[3], "w", encoding="utf-8")
# compare.py reads the first three columns (ordinal, label, description)
out.write("# tx ordinal (0-based, begin..commit groups of the .jsonl)\tlabel\tdescription [changes]\twatermark\n")
gi = 0                                    # index into groups of the group being read
seen = set()
for i, (wm, ch) in enumerate(txs):
    line = lambda label, desc: out.write("%d\t%s\t%s %s\t%s\n" % (i, label, desc, tags(ch), wm))
    m = marker(ch)
    if i == 0:
        line("INIT", "initial-sync transaction at replicaVersion (written by zero itself)")
    elif wm in startup:
        line("STARTUP", "zero-cache's own transaction while it started (before the workload)")
    elif m is not None:
        g = groups[m - 1]
        if g[1] not in seen:
            out.write("#\t%s\t%s (nothing stored)\n" % (g[1], g[2]))
            seen.add(g[1])
        line("mark", "marker after " + g[1])
        gi = m
    elif ch[0].get("skipAck"):
        line("BACKFILL", "zero backfill transaction (skipAck, no upstream commit)")
    elif gi >= len(groups):
        line("?", "after the last marker")
    else:
        g = groups[gi]
        line(g[1], "(another transaction of the group)" if g[1] in seen else g[2])
        seen.add(g[1])
EOF
mv "$out.tmp" "$out"
mv "$labels.tmp" "$labels"
log "$(wc -l <"$out") change-log rows in $out, labels in $labels"
touch "$status_file"
