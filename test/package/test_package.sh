#!/usr/bin/env bash
# Install a postgresql-V-zero-stream .deb (scripts/package.sh) into the
# PostgreSQL V root (scripts/pg-root.sh) and use it there: a cluster with
# the packaged library preloaded streams one committed transaction to the
# packaged zero-stream-tail over the subscriber server's real socket.
#
#   test/package/test_package.sh VERSION DEB
#
# The root is made clean first: the files a `make install` left there (the
# library, its bitcode, the control file and SQL scripts, the clients) are
# removed and checked gone, so that everything the cluster loads and runs
# comes from the package (dpkg -L and dpkg -S say so). apt-get installs the
# .deb, its dependencies resolving from the root's installed packages. The
# cluster runs as the root's user zstest in a temporary folder, on a Unix
# socket of its own and a free TCP port for zero_stream.port, with the
# settings of scripts/demo.sh. On every way out the cluster is stopped and
# the package removed (apt-get remove), which leaves the root without
# zero_stream: the next `make install` there (scripts/test.sh) puts it back.
#
# PostgreSQL 15 is this machine's own, and a package is never installed
# here: for 15 the .deb's contents and dependencies are checked
# (dpkg-deb), and the script says it was not installed.
#
# Exit status: 0 passed; 1 failed; 2 usage.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
say() { echo "test_package: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
usage() { sed -n '7p' "$0" | sed 's/^# *//' >&2; exit 2; }

# make_install_files PKGLIBDIR EXTENSIONDIR BINDIR MAKEFILE: the files
# `make install` installs, one a line (the SQL scripts: the Makefile's DATA)
make_install_files() {
	local lib=$1 ext=$2 bin=$3 makefile=$4 f
	echo "$lib/zero_stream.so"
	echo "$ext/zero_stream.control"
	for f in $(sed -n 's/^DATA *= *//p' "$makefile"); do echo "$ext/$(basename "$f")"; done
	echo "$bin/zero-stream-tail"
	echo "$bin/zero-stream-replica"
}

# ---------------------------------------------------------------- in the root
if [ "${1:-}" = --in-root ]; then
	v=$2 deb=$3
	pkg=postgresql-$v-zero-stream
	pgc=/usr/lib/postgresql/$v/bin/pg_config
	lib=$("$pgc" --pkglibdir)
	ext=$("$pgc" --sharedir)/extension
	bin=$("$pgc" --bindir)
	apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0)
	dir="" started=false
	as_zstest() { setpriv --reuid=zstest --regid=zstest --init-groups -- env HOME=/tmp "$@"; }
	finish() {
		local rc=$?
		if $started; then
			as_zstest "$bin/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || true
		fi
		if [ $rc -ne 0 ] && [ -n "$dir" ]; then
			for f in "$dir/server.log" "$dir/tail.err"; do
				[ -s "$f" ] && { say "the end of $f:"; tail -n 20 "$f" | sed 's/^/  /' >&2; }
			done
		fi
		[ -z "$dir" ] || rm -rf "$dir"
		if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
			"${apt[@]}" remove "$pkg" >/dev/null 2>&1 || { say "FAILED: apt-get remove $pkg"; rc=1; }
		fi
		exit $rc
	}
	trap finish EXIT

	# a clean root: no package from an interrupted run, no make install's files
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
		say "$pkg is installed (an interrupted run?): removed first"
		"${apt[@]}" remove "$pkg" >/dev/null
	fi
	found=$(ls -d "$lib"/zero_stream* "$lib"/bitcode/zero_stream* "$ext"/zero_stream* "$bin"/zero-stream-* 2>/dev/null | wc -l || true)
	rm -rf "$lib/zero_stream.so" "$lib/bitcode/zero_stream" "$lib/bitcode/zero_stream.index.bc" \
		"$ext"/zero_stream.control "$ext"/zero_stream--*.sql "$bin"/zero-stream-*
	left=$(ls -d "$lib"/zero_stream* "$lib"/bitcode/zero_stream* "$ext"/zero_stream* "$bin"/zero-stream-* 2>/dev/null || true)
	[ -z "$left" ] || fail "files of zero_stream remain in the root: $left"
	say "PostgreSQL $v root: $found paths of zero_stream (make install's) removed, none left; installing $(basename "$deb")"

	dir=$(mktemp -d /tmp/zs-package-test.XXXXXX)
	chown zstest "$dir"
	"${apt[@]}" install "$deb" >"$dir/apt.log" 2>&1 || {
		tail -n 20 "$dir/apt.log" >&2
		fail "apt-get install $deb"
	}
	owned=$(dpkg -L "$pkg")
	while read -r f; do
		grep -qxF "$f" <<<"$owned" || fail "dpkg -L $pkg does not list $f"
		[ -e "$f" ] || fail "$f of $pkg is not there"
		[ "$(dpkg -S "$f" | cut -d: -f1)" = "$pkg" ] || fail "$f does not belong to $pkg: $(dpkg -S "$f")"
	done < <(make_install_files "$lib" "$ext" "$bin" "$here/Makefile.data")
	say "$pkg $(dpkg-query -W -f='${Version}' "$pkg") installed; its files are the library, control file, SQL scripts and clients"

	# a free TCP port on 127.0.0.1 for the subscriber server
	port_in_use() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
	sport=""
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		port_in_use "$p" || { sport=$p; break; }
	done
	[ -n "$sport" ] || fail "no free TCP port found"

	as_zstest "$bin/initdb" -D "$dir/data" -U postgres -A trust >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; fail "initdb"; }
	cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = 5432
shared_preload_libraries = 'zero_stream'
wal_level = logical
zero_stream.database = 'postgres'
zero_stream.port = $sport
CONF
	started=true
	as_zstest "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null || fail "the cluster did not start"
	sql() { as_zstest "$bin/psql" -X -q -h "$dir" -p 5432 -U postgres -d postgres -v ON_ERROR_STOP=1 -Atc "$1"; }

	# t is in schema public: the default publication streams it
	sql "CREATE TABLE t (id int PRIMARY KEY, v text)"
	sql "CREATE EXTENSION zero_stream"
	[ "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'zero_stream'")" = "$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')" ] ||
		fail "CREATE EXTENSION zero_stream did not install the package's version"
	deadline=$((SECONDS + 60))
	until [ "$(sql "SELECT state FROM zero_stream.status()")" = streaming ]; do
		[ $SECONDS -lt $deadline ] || fail "zero_stream.status() did not say 'streaming' within 60 s"
		sleep 0.2
	done
	value="from the package $RANDOM$RANDOM"
	sql "INSERT INTO t VALUES (1, '$value')"
	[ "$(sql "SELECT zero_stream.wait_for_catchup('60 s')")" = t ] ||
		fail "the decoder did not store the committed transaction within 60 s"
	rv=$(sql "SELECT replica_version FROM zero_stream.status()")

	# the packaged client over the real socket, from the start of the log
	url="ws://127.0.0.1:$sport/replication/v6/changes?id=package&replicaVersion=$rv&taskID=task&watermark=$rv"
	rc=0
	as_zstest timeout 60 "$bin/zero-stream-tail" --idle 3 "$url" >"$dir/tail.out" 2>"$dir/tail.err" || rc=$?
	[ $rc -eq 4 ] || fail "zero-stream-tail exited $rc, not 4 (idle after the stream)"
	grep '"tag":"insert"' "$dir/tail.out" | grep -qF "\"$value\"" ||
		{ cat "$dir/tail.out" >&2; fail "zero-stream-tail did not print the insert of '$value'"; }
	say "$bin/zero-stream-tail printed the committed insert ($(grep -c . "$dir/tail.out") messages)"

	as_zstest "$bin/pg_ctl" -D "$dir/data" stop -m fast >/dev/null || fail "the cluster did not stop"
	started=false
	"${apt[@]}" remove "$pkg" >/dev/null 2>&1 || fail "apt-get remove $pkg"
	[ ! -e "$lib/zero_stream.so" ] && [ ! -e "$bin/zero-stream-tail" ] || fail "apt-get remove $pkg left its files"
	say "$pkg removed; the root has no zero_stream"
	exit 0
fi

# ---------------------------------------------------------------- on the host
[ $# -eq 2 ] || usage
v=$1
deb=$(readlink -f "$2" 2>/dev/null || true)
[ -f "$deb" ] || { say "no .deb at '$2'"; usage; }
case $v in 15 | 17 | 18 | 19) ;; *) say "VERSION is 15, 17, 18 or 19, not '$v'"; usage ;; esac
[ "$(dpkg-deb -f "$deb" Package)" = "postgresql-$v-zero-stream" ] ||
	fail "$deb is $(dpkg-deb -f "$deb" Package), not postgresql-$v-zero-stream"
top=$(cd "$here/../.." && pwd)
start=$SECONDS

if [ "$v" = 15 ]; then
	list=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
	while read -r f; do
		grep -qxF "$f" <<<"$list" || fail "$(basename "$deb") lacks $f"
	done < <(make_install_files /usr/lib/postgresql/15/lib /usr/share/postgresql/15/extension \
		/usr/lib/postgresql/15/bin "$top/Makefile")
	dpkg-deb -f "$deb" Depends | grep -q "postgresql-15" || fail "$(basename "$deb") does not depend on postgresql-15"
	say "PostgreSQL 15: $(basename "$deb") holds make install's files and depends on postgresql-15;" \
		"NOT installed (15 is this machine's own and there is no clean root for it)"
	exit 0
fi

# the root sees the .deb's folder and a copy of this folder with the DATA line
work=$(mktemp -d /tmp/zs-package-test-host.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$here/test_package.sh" "$work/"
sed -n '/^DATA *=/p' "$top/Makefile" >"$work/Makefile.data"
chmod -R a+rX "$work"
rc=0
"$top/scripts/pg-root.sh" "$v" run --bind "$(dirname "$deb"):/zs-package" --bind "$work:/zs-package-test" --cd / -- \
	bash /zs-package-test/test_package.sh --in-root "$v" "/zs-package/$(basename "$deb")" || rc=$?
if [ $rc -eq 0 ]; then
	say "PostgreSQL $v: passed in $((SECONDS - start)) s"
else
	say "PostgreSQL $v: FAILED (exit $rc) after $((SECONDS - start)) s"
fi
exit $rc
