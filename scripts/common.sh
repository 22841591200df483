# Sourced by the scripts: run PostgreSQL's programs as an unprivileged user.
# As root that is "zstest" (created if missing), since initdb refuses root.
# The programs of the PostgreSQL that PG_CONFIG names (a private build's, where
# the extension was installed with the same PG_CONFIG), else the system's.
if [ -n "${PG_CONFIG:-}" ]; then
	BIN=$("$PG_CONFIG" --bindir)
else
	BIN=/usr/lib/postgresql/15/bin
fi
as_user=()
if [ "$(id -u)" -eq 0 ]; then
	id zstest >/dev/null 2>&1 || useradd --create-home --shell /bin/bash zstest
	as_user=(runuser -u zstest --)
fi
run() { "${as_user[@]}" "$@"; }

# fresh_dir DIR: an empty directory the cluster's user owns
fresh_dir() {
	rm -rf "$1"
	mkdir -p "$1"
	if [ ${#as_user[@]} -gt 0 ]; then chown zstest "$1"; fi
}

# init_cluster DIR PORT [extra postgresql.conf lines]: a cluster in DIR/data
# listening only on a socket in DIR, with zero_stream preloaded
init_cluster() {
	local dir=$1 port=$2 extra=${3:-}
	if [ -f "$dir/data/postmaster.pid" ]; then
		run "$BIN/pg_ctl" -D "$dir/data" stop -m immediate >/dev/null 2>&1 || true
	fi
	fresh_dir "$dir"
	run "$BIN/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
	cat >> "$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
shared_preload_libraries = 'zero_stream'
wal_level = logical
$extra
CONF
}
