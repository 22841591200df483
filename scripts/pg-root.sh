#!/usr/bin/env bash
# A Debian root with another PostgreSQL major, to build and test zero_stream
# against it: 17 from Debian 13 (trixie), 18 from unstable (sid), 19 from
# unstable with experimental's postgresql-19 (its release candidate; switch
# to sid's own package once 19 reaches sid). 15 is this machine's own
# (Debian 12, bookworm) and needs no root.
#
#   scripts/pg-root.sh VERSION          # make (or reuse) the root; prints its directory on its last line
#   scripts/pg-root.sh VERSION run [--user zstest] [--bind HOSTDIR:ROOTDIR]... [--cd ROOTDIR]
#                                  [--env NAME=VALUE]... -- CMD ARGS...
#                                       # run CMD inside the root (made first if needed); exits with CMD's status
#
# Environment:
#   ZS_PG_ROOTS   the cache folder (default $HOME/.cache/zero_stream-pgroots);
#                 the root of VERSION is <cache>/pg<VERSION>
#
# Exit status: 0 ready (or CMD's status for run); 1 the root cannot be made or
# does not work (a failure, printed loudly, never a skip); 2 usage.
#
# How it makes a root: `debootstrap --variant=minbase SUITE` from
# deb.debian.org (debootstrap is installed on the host with apt-get if
# missing), then apt-get inside it installs the server, its headers and the
# TAP modules (postgresql-server-dev-N), and what the build and the tests use
# (scripts/install-deps.sh's list, without the fuzzers' clang runtimes: the
# fuzzers run on the host only). No server ever runs there on its own: a
# policy-rc.d refuses every service start and createcluster.conf says
# create_main_cluster = false before the postgresql-N packages are installed.
# An unprivileged user zstest (initdb refuses root) gets the uid of the host's
# zstest when the host has one, so a tree chowned to zstest on the host is
# zstest's in the root too. The root is checked (pg_config's major, the TAP
# modules, pg_regress) and only then stamped <root>/.ready; a root without its
# stamp (an interrupted run) is deleted and made again, never used. A ready
# root that lacks a package of the list (the list grew since it was made) gets
# it with apt-get before it is used, under the exclusive lock. A lock
# (<cache>/pg<VERSION>.lock) keeps two runs from making the same root at once;
# `run` holds it shared while CMD runs, so a root is never remade under a
# running command.
#
# Mounts: /proc, /dev, /dev/pts and /dev/shm (a private tmpfs), and --bind's
# folders exist only while a command runs in the root, and only in a mount
# namespace of its own (unshare --mount, with its own PID and IPC namespaces):
# the host never sees them, and they vanish with the command, whatever way it
# ends. Processes still running in the root when CMD ends (a server CMD left
# started) are named and killed, so nothing of the root outlives the script;
# its SysV shared memory goes with the IPC namespace.
#
# Inside the root, CMD gets a clean environment: PATH with
# /usr/lib/postgresql/VERSION/bin first, PG_CONFIG set to its pg_config, HOME,
# USER, LANG=C.UTF-8, TERM, the host's trusted certificates (bound over the
# root's bundle, and named for Node: npm in the root trusts what the host's
# does), the caller's ZS_* variables, and --env's.
set -euo pipefail

self=$(readlink -f "$0")
log() { echo "pg-root: $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
usage() {
	sed -n '6,9p' "$self" | sed 's/^#//' >&2
	exit 2
}

[ $# -ge 1 ] || usage
args=("$@")
version=$1
shift

# ---- the internal half of `run`: PID 1 of a fresh mount/PID/IPC namespace ----
# (the script re-executes itself under unshare with "__ns" as its second argument)
if [ "${1:-}" = "__ns" ]; then
	shift
	dir=$1 user=$2 cd=$3
	shift 3
	binds=() envs=()
	while [ "$1" != "--" ]; do
		case $1 in
			--bind) binds+=("$2") ;;
			--env) envs+=("$2") ;;
		esac
		shift 2
	done
	shift
	exec 9>&-	# the lock stays with the unshare process outside, not with CMD's children
	mounted=()
	# the namespace takes its mounts with it anyway; this unmounts them in
	# order (innermost first) on every way out, as a second guarantee
	cleanup() {
		local i
		for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
			umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
		done
	}
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM HUP
	mnt() { mount "$@"; mounted+=("${!#}"); }
	mnt -t proc proc "$dir/proc"
	mnt --bind /dev "$dir/dev"
	mnt --bind /dev/pts "$dir/dev/pts"
	mnt -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$dir/dev/shm"
	# the host's trusted certificates (a proxy's CA among them, if the host
	# trusts one), for npm in the root (TAP 023 installs zero-cache)
	if [ -f /etc/ssl/certs/ca-certificates.crt ] && [ -f "$dir/etc/ssl/certs/ca-certificates.crt" ]; then
		mnt --bind /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
	fi
	for b in ${binds[@]+"${binds[@]}"}; do
		mkdir -p "$dir${b#*:}"
		mnt --bind "${b%%:*}" "$dir${b#*:}"
	done
	home=/root
	[ "$user" = root ] || home=$(chroot "$dir" getent passwd "$user" | cut -d: -f6)
	vars=(PATH="/usr/lib/postgresql/$version/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		PG_CONFIG="/usr/lib/postgresql/$version/bin/pg_config" HOME="$home" USER="$user" LOGNAME="$user"
		LANG=C.UTF-8 TERM="${TERM:-dumb}" DEBIAN_FRONTEND=noninteractive
		SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt)
	while IFS= read -r v; do vars+=("$v=${!v}"); done < <(compgen -v ZS_ || true)
	vars+=(${envs[@]+"${envs[@]}"})
	as_user=()
	[ "$user" = root ] || as_user=(setpriv --reuid="$user" --regid="$user" --init-groups --)
	status=0
	chroot "$dir" env -i "${vars[@]}" "${as_user[@]}" env -C "$cd" "$@" || status=$?
	# what CMD left running in the root (this namespace's processes but us)
	left=()
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		[ "$p" = "$$" ] || left+=("$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-80)")
	done
	if [ ${#left[@]} -gt 0 ]; then
		log "killing ${#left[@]} processes CMD left running in the root:"
		printf '  %s\n' "${left[@]}" >&2
		kill -KILL -1 2>/dev/null || true
		# wait (5 s at most) until only this PID 1 is left
		for _ in $(seq 50); do
			others=0
			for p in /proc/[0-9]*; do [ "$p" = "/proc/$$" ] || others=1; done
			[ $others -eq 0 ] && break
			sleep 0.1
		done
	fi
	exit $status
fi

case $version in
	15) log "PostgreSQL 15 is this machine's own (Debian 12, bookworm): nothing to do"; exit 0 ;;
	17) suite=trixie ;;
	18) suite=sid ;;
	19) suite=sid ;;
	*) log "VERSION is 15, 17, 18 or 19, not '$version'"; usage ;;
esac

# `run`'s options, checked before anything is made
mode="make"
user=root cd=/ ns_opts=()
if [ $# -gt 0 ]; then
	[ "$1" = run ] || usage
	mode=run
	shift
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		[ $# -ge 2 ] || usage
		case $1 in
			--user) user=$2 ;;
			--cd) cd=$2 ;;
			--bind)
				host_dir=${2%%:*} root_dir=${2#*:}
				[[ $2 == *:* && -d $host_dir && $root_dir == /* && $root_dir != */..* ]] ||
					{ log "--bind HOSTDIR:ROOTDIR: an existing host folder and an absolute path in the root, not '$2'"; exit 2; }
				ns_opts+=(--bind "$(readlink -f "$host_dir"):$root_dir") ;;
			--env)
				[[ $2 == [A-Za-z_]*=* ]] || { log "--env NAME=VALUE, not '$2'"; exit 2; }
				ns_opts+=(--env "$2") ;;
			*) usage ;;
		esac
		shift 2
	done
	[ $# -ge 2 ] || usage	# "--" and a command
	shift
fi

# everything from here needs root (debootstrap, chroot, mounts): as another
# user, start again under sudo, with the cache folder this user would use
cache=${ZS_PG_ROOTS:-${HOME:-/tmp}/.cache/zero_stream-pgroots}
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || die "need root or sudo to make and enter the PostgreSQL $version root"
	exec sudo env ZS_PG_ROOTS="$cache" "$self" "${args[@]}"
fi
dir="$cache/pg$version"
stamp="$dir/.ready"
bin="/usr/lib/postgresql/$version/bin"
logfile="$cache/pg$version.log"
# scripts/install-deps.sh's list at this version (npm: test/t/023 and
# test/interop/prepare.sh; ca-certificates: npm's https; prometheus and
# python3-jsonschema: the metrics and META.json checks; build-essential,
# debhelper, postgresql-server-dev-all, dpkg-dev and fakeroot:
# scripts/package.sh); procps for ps. A cached root that lacks one of them
# gets it before it is used (top_up).
# 19 comes from experimental, with the libpq it is built with (apt takes
# a name/experimental from there, and everything else from sid).
release=
[ "$version" != 19 ] || release=/experimental
packages=("postgresql-$version$release" "postgresql-server-dev-$version$release"
	"postgresql-client-$version$release"
	gcc make libc6-dev libssl-dev libcjson-dev libsqlite3-dev liblz4-dev sqlite3 libipc-run-perl perl
	python3 bc openssl curl ca-certificates npm procps
	build-essential debhelper postgresql-server-dev-all dpkg-dev fakeroot prometheus python3-jsonschema)
[ -z "$release" ] || packages+=("libpq5$release" "libpq-dev$release")

# in_root USER CD [--bind H:R]... [--env N=V]... -- CMD...: CMD in the root,
# in a namespace of its own (see __ns above)
in_root() {
	unshare --mount --propagation private --pid --ipc --fork --kill-child --mount-proc \
		"$self" "$version" __ns "$dir" "$@"
}

# the root works: pg_config at the right major, the TAP modules, pg_regress,
# IPC::Run, a compiler, the user zstest; and no cluster of Debian's own
check() {
	local pgxs
	[ -x "$dir$bin/pg_config" ] || return 1
	# (a release candidate says "PostgreSQL 19rc1")
	chroot "$dir" "$bin/pg_config" --version | grep -Eq "^PostgreSQL $version(\.|beta|rc)" || return 1
	pgxs=$(dirname "$(chroot "$dir" "$bin/pg_config" --pgxs)")
	[ -f "$dir$pgxs/../../src/test/perl/PostgreSQL/Test/Cluster.pm" ] || return 1
	[ -x "$dir$pgxs/../../src/test/regress/pg_regress" ] || return 1
	chroot "$dir" perl -MIPC::Run -e 1 || return 1
	chroot "$dir" sh -c 'command -v gcc && command -v make && command -v prove && command -v npm' >/dev/null || return 1
	chroot "$dir" id zstest >/dev/null || return 1
	[ ! -e "$dir/etc/postgresql/$version/main" ] || return 1
}

mkdir -p "$cache"
exec 9>"$cache/pg$version.lock"
flock 9

t=$(date +%s)
# step NAME CMD...: CMD's output in the log; a failure shows its end and stops here
step() {
	local name=$1
	shift
	echo "== $name: $*" >>"$logfile"
	if ! "$@" >>"$logfile" 2>&1; then
		log "$name failed after $(( $(date +%s) - t )) s; the end of $logfile:"
		tail -n 30 "$logfile" | sed 's/^/  /' >&2
		die "the $suite root for PostgreSQL $version cannot be made"
	fi
	log "$name in $(( $(date +%s) - t )) s"
	t=$(date +%s)
}
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0)

# top_up: the packages of the list a ready root lacks (the list grew since
# it was made), installed under the exclusive lock, so that a cached root
# never silently lacks one
top_up() {
	local p missing=()
	for p in "${packages[@]}"; do
		chroot "$dir" dpkg-query -W -f='${Status}' "${p%/*}" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	log "the cached $suite root lacks ${missing[*]}: installing (log $logfile)"
	echo "== top-up $(date -u +%Y-%m-%dT%H:%MZ)" >>"$logfile"
	step "apt-get update" in_root root / -- "${apt[@]}" update
	step "apt-get install ${missing[*]}" in_root root / -- "${apt[@]}" install "${missing[@]}"
	in_root root / -- apt-get clean >>"$logfile" 2>&1
	check || die "the $suite root in $dir fails its check after installing ${missing[*]} (see $logfile)"
}

if [ -f "$stamp" ] && check 2>/dev/null; then
	[ $mode = run ] || log "warm cache: $suite root for $(cat "$stamp") at $dir"
	top_up
else
	total_start=$t
	: >"$logfile"

	if [ ! -x /usr/sbin/debootstrap ]; then
		step "apt-get install debootstrap (host)" \
			env DEBIAN_FRONTEND=noninteractive sh -c 'apt-get update -qq && apt-get install -y -qq debootstrap'
	fi

	# a half-made root: nothing may be mounted in it or run from it before it goes
	if [ -e "$dir" ]; then
		grep -q " ${dir}[/ ]" /proc/self/mountinfo && die "something is mounted under $dir; unmount it first"
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/root" 2>/dev/null)" != "$dir" ] || die "process ${p#/proc/} runs in $dir; stop it first"
		done
		log "$dir is not stamped or fails its check (an interrupted run?): made again"
		rm -rf --one-file-system "$dir"
	fi

	# debootstrap mounts /proc and /sys in the root for its second stage: in a
	# namespace of its own those mounts never reach the host, even if it dies.
	# It does not check the Release file's Valid-Until (only its signature,
	# with the host's debian-archive-keyring), so sid's stale one is no problem here.
	step "debootstrap --variant=minbase $suite" \
		unshare --mount --propagation private --pid --fork --kill-child --mount-proc \
		debootstrap --variant=minbase "$suite" "$dir" http://deb.debian.org/debian

	# apt and dpkg settings of the root, before any package is installed:
	# no recommends, no docs; for sid, the mirror's Release file is past its
	# Valid-Until date, which apt refuses without Check-Valid-Until false
	{
		echo 'APT::Install-Recommends "false";'
		echo 'Acquire::Languages "none";'
		echo 'Acquire::Retries "3";'
		[ "$suite" != sid ] || echo 'Acquire::Check-Valid-Until "false";'
	} >"$dir/etc/apt/apt.conf.d/90zero-stream"
	# experimental's packages are only ever taken by name/experimental
	[ -z "$release" ] ||
		echo 'deb http://deb.debian.org/debian experimental main' >"$dir/etc/apt/sources.list.d/experimental.list"
	printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
		'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' >"$dir/etc/dpkg/dpkg.cfg.d/90zero-stream"
	# no service ever starts in the root (Debian's postgresql-N starts its cluster)
	printf '#!/bin/sh\n# zero_stream roots run no services\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 755 "$dir/usr/sbin/policy-rc.d"

	step "apt-get update" in_root root / -- "${apt[@]}" update
	# postgresql-common first, to turn off the "main" cluster that
	# postgresql-N's postinst would otherwise create
	step "apt-get install postgresql-common" in_root root / -- "${apt[@]}" install postgresql-common
	sed -i 's/^#* *create_main_cluster *=.*/create_main_cluster = false/' "$dir/etc/postgresql-common/createcluster.conf"
	grep -qx 'create_main_cluster = false' "$dir/etc/postgresql-common/createcluster.conf" ||
		die "could not set create_main_cluster = false in the root's createcluster.conf"
	step "apt-get install ${#packages[@]} packages" in_root root / -- "${apt[@]}" install "${packages[@]}"
	in_root root / -- apt-get clean >>"$logfile" 2>&1

	# zstest, with the uid of the host's zstest if there is one
	uid_opts=()
	if host_uid=$(id -u zstest 2>/dev/null); then
		uid_opts=(--uid "$host_uid")
		host_gid=$(id -g zstest)
		chroot "$dir" getent group "$host_gid" >/dev/null ||
			chroot "$dir" groupadd --gid "$host_gid" zstest
		uid_opts+=(--gid "$host_gid")
	fi
	chroot "$dir" id zstest >/dev/null 2>&1 ||
		chroot "$dir" useradd --create-home --shell /bin/bash "${uid_opts[@]}" zstest ||
		die "could not create the user zstest in the root"

	if ! check; then
		die "the $suite root in $dir does not work: no PostgreSQL $version pg_config, TAP modules, pg_regress, IPC::Run, gcc/make/prove/npm or user zstest (see $logfile)"
	fi
	pg=$(chroot "$dir" "$bin/pg_config" --version)
	log "user zstest (uid $(chroot "$dir" id -u zstest)) and the checks in $(( $(date +%s) - t )) s"
	secs=$(( $(date +%s) - total_start ))
	size=$(du -sh --one-file-system "$dir" | cut -f1)
	echo "${pg#PostgreSQL }, made $(date -u +%Y-%m-%dT%H:%MZ) in ${secs} s, $size" >"$stamp"
	log "$suite root for $pg ready in $secs s (cached at $dir, $size)"
fi

if [ $mode = make ]; then
	echo "$dir"
	exit 0
fi

# run: the lock shared while CMD runs (other runs may share the root; a
# rebuild waits), held by unshare, which this script becomes
flock -s 9
[ "$user" = root ] || chroot "$dir" id "$user" >/dev/null 2>&1 || die "no user '$user' in the root"
exec unshare --mount --propagation private --pid --ipc --fork --kill-child --mount-proc \
	"$self" "$version" __ns "$dir" "$user" "$cd" ${ns_opts[@]+"${ns_opts[@]}"} -- "$@"
