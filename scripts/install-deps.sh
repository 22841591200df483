#!/usr/bin/env bash
# Install what zero_stream needs to build and test on Debian 12 (bookworm).
# Uses sudo when not run as root.
set -euo pipefail

packages=(build-essential postgresql-15 postgresql-server-dev-15 postgresql-client-15 libssl-dev
	libcjson-dev libsqlite3-dev sqlite3 libipc-run-perl python3 bc openssl curl
	clang libclang-rt-14-dev llvm-14)	# test/fuzz: libFuzzer, sanitizer runtimes, llvm-symbolizer

# test/t/023 installs zero-cache and Node 22 from the npm registry with npm
command -v npm >/dev/null || packages+=(npm)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${packages[*]}" >&2; exit 1; }
	SUDO=(sudo)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	"${SUDO[@]}" apt-get update -qq
	# the whole list, so that an older preinstalled postgresql-15 is upgraded
	# to the minor version of the server headers we build against
	DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${packages[@]}" >/dev/null
fi
# Debian's postgresql package starts a cluster of its own; we never use it
