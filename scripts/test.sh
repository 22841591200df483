#!/usr/bin/env bash
# Run every zero_stream test: the C unit tests and the fuzzers once (against
# the host's PostgreSQL 15), then pg_regress and the TAP suite on each
# PostgreSQL version of ZS_PG_VERSIONS (default "15 17 18 19"): 15 on the host,
# 17, 18 and 19 in cached Debian roots (scripts/pg-root.sh), the versions' suites
# side by side. A version whose root or packages cannot be made fails the
# run, loudly; it is never skipped. ZS_PG_VERSIONS=15 runs the host's alone.
# Then the Debian packages of those versions (suite "packages"): built by
# scripts/package.sh, each installed into its version's root and used there
# by test/package/test_package.sh (15's, the host's own, only has its
# contents checked: a package is never installed on this machine). The
# package test removes the extension from the root; the next run's
# `make install` there puts it back.
#
# Builds and installs the extension (root, or sudo), then runs the suites as
# an unprivileged user, because initdb refuses to run as root. As root, that
# user is "zstest" (created if missing) and the tests run in a copy of the
# tree it owns; in a root, in a copy of the tree bound into it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
versions=${ZS_PG_VERSIONS:-15 17 18 19}

scripts/install-deps.sh

SUDO=()
[ "$(id -u)" -ne 0 ] && SUDO=(sudo)
# CI sets ZS_WERROR=-Werror: warnings are errors there, not in a user's build
werror="ZS_WERROR=${ZS_WERROR:-}"
make -s -j2 "$werror"
"${SUDO[@]}" make -s install "$werror" >/dev/null

logs=$(mktemp -d /tmp/zero_stream-test-logs.XXXXXX)
chmod 755 "$logs"

# the other versions' roots are made (or found cached) while the host tests run
root_jobs=()
for v in $versions; do
	[ "$v" = 15 ] && continue
	scripts/pg-root.sh "$v" >"$logs/root$v.log" 2>&1 &
	root_jobs+=("$v:$!")
done

# as_tester DIR CMD: CMD in DIR as the unprivileged user
if [ "$(id -u)" -eq 0 ]; then
	id zstest >/dev/null 2>&1 || useradd --create-home --shell /bin/bash zstest
	work=$(mktemp -d /tmp/zero_stream-test.XXXXXX)
	cp -a "$root/." "$work/"
	chown -R zstest "$work"
	as_tester() { runuser -u zstest -- bash -c "cd '$1' && $2"; }
else
	work=$root
	as_tester() { bash -c "cd '$1' && $2"; }
fi

status=0
failed=()
passed=()
suite() {	# suite NAME: record the result of the command just run
	if [ "$1" = ok ]; then passed+=("$2"); else failed+=("$2"); status=1; fi
}

if as_tester "$work" "make -s unitcheck '$werror' && env '$werror' test/fuzz/run.sh"; then
	suite ok "unit and fuzz"
else
	suite fail "unit and fuzz"
fi

# one version's pg_regress and TAP suite, its output in $logs/pg$v.log
run_version() {
	local v=$1
	if [ "$v" = 15 ]; then
		as_tester "$work" "make -s regresscheck && make -s tapcheck" || {
			[ -f "$work/test/regression.diffs" ] && cat "$work/test/regression.diffs"
			return 1
		}
		return 0
	fi
	# a clean copy of the tree, owned by zstest, built against the root's server
	local copy
	copy=$(mktemp -d "/tmp/zero_stream-test-pg$v.XXXXXX")
	cp -a "$root/." "$copy/"
	make -s -C "$copy" clean >/dev/null 2>&1 || true
	rm -rf "$copy/test/fuzz/build" "$copy"/zero-stream-{tail,replica,fanout}
	# owned by the root's zstest (the host's zstest has its uid, when there is one)
	"${SUDO[@]}" chown -R "$(scripts/pg-root.sh "$v" run -- id -u zstest | tail -1)" "$copy"
	local in_root=(scripts/pg-root.sh "$v" run --bind "$copy:/src" --bind "$ports:$ports"
		--env "PG_TEST_PORT_DIR=$ports" --cd /src)
	"${in_root[@]}" --user zstest -- make -s -j2 "$werror" &&
		"${in_root[@]}" -- make -s install "$werror" >/dev/null &&
		"${in_root[@]}" --user zstest -- bash -c 'make -s regresscheck && make -s tapcheck' || {
		[ -f "$copy/test/regression.diffs" ] && cat "$copy/test/regression.diffs"
		# (17 and later write the TAP logs under the tree's top, 15 under test/)
		mkdir -p "$root/test/log/pg$v"
		for d in "$copy/test/tmp_check/log" "$copy/tmp_check/log" "$copy/log"; do
			[ -d "$d" ] && cp -r "$d/." "$root/test/log/pg$v/"
		done
		rm -rf "$copy"
		return 1
	}
	rm -rf "$copy"
}

# clusters of every version share one port reservation folder
# (PostgreSQL::Test::Cluster's PG_TEST_PORT_DIR), so that side by side they
# never take the same port
ports=$(mktemp -d /tmp/zero_stream-test-ports.XXXXXX)
chmod 1777 "$ports"
export PG_TEST_PORT_DIR=$ports

jobs_of=()
no_root=()
for v in $versions; do
	if [ "$v" != 15 ]; then
		for j in "${root_jobs[@]}"; do
			[ "${j%%:*}" = "$v" ] || continue
			if ! wait "${j#*:}"; then
				echo "=== PostgreSQL $v: its root could not be made (FAILED, not skipped):" >&2
				cat "$logs/root$v.log" >&2
				suite fail "PostgreSQL $v (no root)"
				no_root+=("$v")
				continue 2
			fi
		done
	fi
	start=$(date +%s)
	{
		rc=0
		run_version "$v" || rc=$?
		echo "exit=$rc seconds=$(($(date +%s) - start))"
	} >"$logs/pg$v.log" 2>&1 &
	jobs_of+=("$v:$!")
done
for j in ${jobs_of[@]+"${jobs_of[@]}"}; do
	v=${j%%:*}
	wait "${j#*:}" || true
	echo "=== PostgreSQL $v: pg_regress and TAP"
	cat "$logs/pg$v.log"
	if tail -1 "$logs/pg$v.log" | grep -q '^exit=0 '; then
		suite ok "PostgreSQL $v"
	else
		suite fail "PostgreSQL $v"
	fi
done

# the packages, once the versions' suites are done with their roots (the
# package test empties a root of make install's files); a version without a
# root fails here too, without a second attempt at making it
run_packages() {
	local v pkg_versions=() rc=0 debs
	for v in $versions; do
		if [[ " ${no_root[*]-} " == *" $v "* ]]; then
			echo "PostgreSQL $v: no root, no package (FAILED)"
			rc=1
		else
			pkg_versions+=("$v")
		fi
	done
	[ ${#pkg_versions[@]} -gt 0 ] || return 1
	ZS_PKG_OUT=$pkg_out scripts/package.sh "${pkg_versions[@]}" || rc=1
	for v in "${pkg_versions[@]}"; do
		debs=("$pkg_out/postgresql-$v-zero-stream_"*.deb)
		if [ ! -f "${debs[0]}" ]; then
			echo "PostgreSQL $v: no package to test (FAILED)"
			rc=1
			continue
		fi
		test/package/test_package.sh "$v" "${debs[0]}" || rc=1
	done
	return $rc
}
pkg_out=$(mktemp -d /tmp/zero_stream-test-packages.XXXXXX)
start=$SECONDS
pkg_rc=0
run_packages >"$logs/packages.log" 2>&1 || pkg_rc=$?
echo "=== Debian packages (scripts/package.sh, test/package/test_package.sh)"
cat "$logs/packages.log"
echo "exit=$pkg_rc seconds=$((SECONDS - start))"
if [ $pkg_rc -eq 0 ]; then suite ok packages; else suite fail packages; fi
rm -rf "$pkg_out"

if [ "$(id -u)" -eq 0 ] && [ $status -ne 0 ]; then
	mkdir -p "$root/test/log" && cp -r "$work"/test/tmp_check/log/. "$root/test/log/" 2>/dev/null || true
fi
# what failed, last, where a reader of a long log looks: each failed
# version's failing tests and their diagnostics (prove's "#" lines)
for v in $versions; do
	[ -f "$logs/pg$v.log" ] && ! tail -1 "$logs/pg$v.log" | grep -q '^exit=0 ' || continue
	echo "=== PostgreSQL $v: why it failed"
	grep -E '^(not ok|#|t/|test/t/.*(Dubious|Failed))|Failed test|Wstat' "$logs/pg$v.log" |
		grep -vE '^# (initializing|using temp instance|All [0-9]+ tests passed)' | tail -80 || true
done
[ "$work" = "$root" ] || rm -rf "$work"
rm -rf "$logs" "$ports"
for s in ${passed[@]+"${passed[@]}"}; do echo "passed: $s"; done
for s in ${failed[@]+"${failed[@]}"}; do echo "FAILED: $s"; done
echo "suites: ${#passed[@]} passed, ${#failed[@]} failed"
exit $status
