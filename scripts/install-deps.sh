#!/usr/bin/env bash
# Install what zero_stream needs on Debian 12 (bookworm), with apt-get; uses
# sudo when not run as root, and neither when everything is installed.
#
#   scripts/install-deps.sh          everything: the build, the demo and every test (scripts/test.sh, CI)
#   scripts/install-deps.sh --demo   the build and the main job alone (scripts/demo.sh): compiler,
#                                    PostgreSQL 15 server, client and headers, cJSON, SQLite, OpenSSL
#
# postgresql-server-dev-15 brings clang-14, llvm-14-dev and libpq-dev with it
# (PGXS compiles the server's JIT bitcode with clang); the rest of the test
# toolchain (the fuzzers' libFuzzer and sanitizer runtimes, llvm-symbolizer,
# IPC::Run for TAP, npm for zero-cache) is installed only for the tests.
set -euo pipefail

usage() { sed -n '2,7s/^# \{0,1\}//p' "$0"; }
set_=all
case "${1:-}" in
'') ;;
--demo) set_=demo ;;
-h|--help) usage; exit 0 ;;
*) echo "install-deps: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac

# the build and the main job (scripts/demo.sh)
packages=(build-essential postgresql-15 postgresql-server-dev-15 postgresql-client-15
	libssl-dev libcjson-dev libsqlite3-dev liblz4-dev sqlite3)
if [ "$set_" = all ]; then
	# the tests: TAP (IPC::Run), the test tools and scripts (python3, bc, openssl, curl)
	packages+=(libipc-run-perl python3 bc openssl curl)
	# test/fuzz: libFuzzer, sanitizer runtimes, llvm-symbolizer
	packages+=(clang libclang-rt-14-dev llvm-14)
	# the metrics check (promtool, test/t/044) and META.json's (make metacheck)
	packages+=(prometheus python3-jsonschema)
	# scripts/package.sh: the Debian packages (pg_buildext, dpkg-buildpackage)
	packages+=(debhelper postgresql-server-dev-all dpkg-dev fakeroot)
	# test/t/023 installs zero-cache and Node 22 from the npm registry with npm
	command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
	SUDO=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
# the whole list, so that an older preinstalled postgresql-15 is upgraded
# to the minor version of the server headers we build against
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
# Debian's postgresql package starts a cluster of its own; we never use it
# Debian's prometheus starts its own server (and node-exporter, recommended)
# as services; TAP 044 starts a Prometheus of its own, so these only cost
# CPU: stopped
for s in prometheus prometheus-node-exporter; do
	"${SUDO[@]}" service "$s" stop >/dev/null 2>&1 || true
done
