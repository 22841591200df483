#!/usr/bin/env bash
# Run every zero_stream test: C unit tests, pg_regress, TAP.
#
# Builds and installs the extension (root, or sudo), then runs the suites as
# an unprivileged user, because initdb refuses to run as root. As root, that
# user is "zstest" (created if missing) and the tests run in a copy of the
# tree it owns.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-deps.sh

SUDO=()
[ "$(id -u)" -ne 0 ] && SUDO=(sudo)
# CI sets ZS_WERROR=-Werror: warnings are errors there, not in a user's build
werror="ZS_WERROR=${ZS_WERROR:-}"
make -s -j2 "$werror"
"${SUDO[@]}" make -s install "$werror" >/dev/null

run_suites="make -s unitcheck '$werror' && env '$werror' test/fuzz/run.sh && make -s regresscheck && make -s tapcheck"

if [ "$(id -u)" -eq 0 ]; then
	id zstest >/dev/null 2>&1 || useradd --create-home --shell /bin/bash zstest
	work=$(mktemp -d /tmp/zero_stream-test.XXXXXX)
	cp -a "$root/." "$work/"
	chown -R zstest "$work"
	status=0
	runuser -u zstest -- bash -c "cd '$work' && $run_suites" || status=$?
	if [ $status -ne 0 ]; then
		for f in "$work"/test/regression.diffs; do [ -f "$f" ] && cat "$f"; done
		mkdir -p "$root/test/log" && cp -r "$work"/test/tmp_check/log/. "$root/test/log/" 2>/dev/null || true
	fi
	rm -rf "$work"
	exit $status
else
	bash -c "$run_suites" || { [ -f test/regression.diffs ] && cat test/regression.diffs; exit 1; }
fi
