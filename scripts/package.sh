#!/usr/bin/env bash
# Build the Debian packages of zero_stream (debian/, pg_buildext): one
# postgresql-V-zero-stream .deb per PostgreSQL major V, each with
# `dpkg-buildpackage -us -uc -b` in a clean copy of the tree, 15 on this
# machine (Debian 12), 17, 18 and 19 in their Debian roots (scripts/pg-root.sh),
# so that each package depends on the libraries of the release it is for.
#
#   scripts/package.sh [VERSION...]     default: 15 17 18 19
#
# Environment:
#   ZS_PKG_OUT   the folder the .debs are collected in (default
#                /tmp/zero_stream-packages); a version's older .debs there
#                are replaced. Its path is printed on the last line.
#
# The clean copy holds the files git knows (tracked, and untracked ones that
# .gitignore does not exclude), so nothing built here gets in; outside a git
# checkout it is a copy of the tree after `make clean`. Each .deb is checked
# to hold what `make install` installs: the library, the control file, every
# SQL script of the Makefile's DATA and the clients zero-stream-tail and
# zero-stream-replica in /usr/lib/postgresql/V/bin.
#
# The build dependencies (debhelper, postgresql-server-dev-all, dpkg-dev,
# fakeroot and the libraries' headers) are installed with apt-get when
# missing, with sudo when not root; the roots have them in their package list.
# The changelog's version must be the extension's (zero_stream.control's
# default_version) with a Debian revision, e.g. 0.4.0-1.
# Exit status: 0 every version built; 1 a build or its check failed (all
# versions are tried); 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
say() { echo "package: $*" >&2; }

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(15 17 18 19)
for v in "${versions[@]}"; do
	case $v in
		15 | 17 | 18 | 19) ;;
		*) say "VERSION is 15, 17, 18 or 19, not '$v'"; exit 2 ;;
	esac
done
# the package's version is the extension's, with a Debian revision
ext_version=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" zero_stream.control)
deb_version=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' debian/changelog)
if [ "${deb_version%-*}" != "$ext_version" ]; then
	say "debian/changelog's version $deb_version is not the extension's $ext_version (zero_stream.control) with a revision: add a changelog entry"
	exit 1
fi
out=${ZS_PKG_OUT:-/tmp/zero_stream-packages}
mkdir -p "$out"
out=$(readlink -f "$out")

SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo)

# the build dependencies on this machine, for 15
host_deps() {
	local p missing=()
	for p in debhelper postgresql-server-dev-all dpkg-dev fakeroot postgresql-server-dev-15 \
		libcjson-dev libsqlite3-dev liblz4-dev libssl-dev build-essential; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing ${missing[*]}"
	"${SUDO[@]}" apt-get update -qq
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# clean_copy DIR: the tree's source files in DIR
clean_copy() {
	local dir=$1
	mkdir -p "$dir"
	if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
		# (a file deleted but not yet committed is listed and skipped)
		git -C "$root" ls-files -z --cached --others --exclude-standard |
			(cd "$root" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
			tar -C "$root" --null -T - -cf - | tar -C "$dir" -xf -
	else
		cp -a "$root/." "$dir/"
		make -s -C "$dir" clean >/dev/null 2>&1 || true
		rm -rf "$dir/debian/.debhelper" "$dir"/debian/postgresql-*-zero-stream "$dir/debian/files"
	fi
}

# check_deb V DEB: DEB holds what make install installs for V
check_deb() {
	local v=$1 deb=$2 list f missing=()
	list=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
	local want=("/usr/lib/postgresql/$v/lib/zero_stream.so"
		"/usr/share/postgresql/$v/extension/zero_stream.control"
		"/usr/lib/postgresql/$v/bin/zero-stream-tail"
		"/usr/lib/postgresql/$v/bin/zero-stream-replica")
	for f in $(sed -n 's/^DATA *= *//p' "$root/Makefile"); do
		want+=("/usr/share/postgresql/$v/extension/$(basename "$f")")
	done
	for f in "${want[@]}"; do
		grep -qxF "$f" <<<"$list" || missing+=("$f")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		say "$(basename "$deb") lacks: ${missing[*]}"
		return 1
	fi
	say "$(basename "$deb"): ${#want[@]} files of make install present ($(grep -c . <<<"$list") entries)"
}

# build V: the .debs of V in $out
build() {
	local v=$1 work rc=0 start=$SECONDS
	work=$(mktemp -d "/tmp/zero_stream-pkg$v.XXXXXX")
	chmod 755 "$work"
	clean_copy "$work/src"
	# PG_SUPPORTED_VERSIONS: this version alone, whatever else has headers
	# installed; PG_UPDATECONTROL: debian/control is remade for it (the
	# committed one names the versions of the machine it was made on)
	local env=(PG_SUPPORTED_VERSIONS="$v" PG_UPDATECONTROL=1)
	say "PostgreSQL $v: dpkg-buildpackage in $work/src (log $work/build.log)"
	if [ "$v" = 15 ]; then
		host_deps
		(cd "$work/src" && env "${env[@]}" dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || rc=$?
	else
		scripts/pg-root.sh "$v" run --bind "$work:/pkg" --cd /pkg/src \
			--env "${env[0]}" --env "${env[1]}" -- dpkg-buildpackage -us -uc -b \
			>"$work/build.log" 2>&1 || rc=$?
	fi
	local debs=("$work"/postgresql-"$v"-zero-stream_*.deb)
	if [ $rc -ne 0 ] || [ ! -f "${debs[0]}" ]; then
		say "PostgreSQL $v: the build FAILED (exit $rc); the end of $work/build.log:"
		tail -n 40 "$work/build.log" | sed 's/^/  /' >&2
		return 1
	fi
	check_deb "$v" "${debs[0]}" || return 1
	rm -f "$out"/postgresql-"$v"-zero-stream*.deb
	cp "$work"/postgresql-"$v"-zero-stream*.deb "$out/"
	"${SUDO[@]}" rm -rf "$work"
	say "PostgreSQL $v: built in $((SECONDS - start)) s: $(basename "${debs[0]}")"
}

status=0
for v in "${versions[@]}"; do
	build "$v" || status=1
done
ls -l "$out"/*.deb >&2 2>/dev/null || true
echo "$out"
exit $status
