#!/usr/bin/env bash
# Build and run the libFuzzer targets of the codecs (test/fuzz/fuzz_*.c)
# with AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer.
#
#   test/fuzz/run.sh                   build every target and run them,
#                                      $ZS_FUZZ_JOBS (default: the CPUs) at once,
#                                      each for $ZS_FUZZ_SECONDS seconds; by
#                                      default the share of the run's budget
#                                      $ZS_FUZZ_BUDGET (default 300 s: with the
#                                      build, the step takes about 5.5 minutes)
#                                      that each round of ZS_FUZZ_JOBS targets
#                                      gets (10 targets on 2 CPUs: 60 s each,
#                                      the minute per target CI asks for)
#   test/fuzz/run.sh fuzz_http ...     only these targets
#   test/fuzz/run.sh --build-only      build, do not run
#
# Binaries, the grown corpora, logs and crash reproducers go to
# $ZS_FUZZ_BUILD (default test/fuzz/build, gitignored); the seed corpora in
# test/fuzz/corpus/<target>/ are only read. Exits non-zero if a target fails
# to build or finds a crash, a leak, undefined behaviour, a timeout or an
# out-of-memory input; the reproducer's path, its bytes (base64, so that a CI
# log alone suffices) and the command that reruns it are printed. At the end,
# a table gives each target's executions and the coverage it reached
# (libFuzzer's cov: edges and ft: features, and the corpus size, from its
# final DONE line). A target with test/fuzz/<name>.dict runs with it as
# libFuzzer's dictionary.
set -euo pipefail
cd "$(dirname "$0")/../.."

budget=${ZS_FUZZ_BUDGET:-300}
build=${ZS_FUZZ_BUILD:-test/fuzz/build}
cc=${ZS_FUZZ_CC:-clang}
pg_config=${PG_CONFIG:-pg_config}

# name, max_len, sources besides test/fuzz/<name>.c and libraries besides
# the common ones (what each links, as the unit tests' Makefile rules put
# the same sources together)
targets=(
	"fuzz_websocket 4096 src/codec/websocket.c"
	"fuzz_http 4096 src/codec/http.c"
	"fuzz_json_read 4096 src/codec/json_read.c src/codec/json_out.c"
	"fuzz_json_js 4096 src/codec/json_js.c src/codec/json_read.c src/codec/json_out.c"
	"fuzz_change_message 2048 src/codec/change_message.c src/codec/watermark.c src/codec/json_read.c src/codec/json_out.c"
	"fuzz_pgoutput 4096 src/decoding/pgoutput_read.c"
	"fuzz_value_encode 1024 src/decoding/value_encode.c src/codec/json_js.c src/codec/json_read.c src/codec/json_out.c"
	"fuzz_watermark 64 src/codec/watermark.c"
	"fuzz_chunk 4096 src/codec/changelog_chunk.c -llz4"
	"fuzz_replica 4096 src/replica/replica_apply.c src/replica/replica_ddl.c src/replica/replica_column_ddl.c src/replica/replica_backfill.c src/replica/replica_schema.c src/replica/replica_sqlite.c src/codec/json_read.c src/codec/json_out.c -lsqlite3"
)

build_only=false
selected=()
for arg in "$@"; do
	case "$arg" in
		--build-only) build_only=true ;;
		fuzz_*) selected+=("$arg") ;;
		*) echo "usage: $0 [--build-only] [fuzz_<target> ...]" >&2; exit 2 ;;
	esac
done

command -v "$cc" >/dev/null || { echo "fuzz: $cc not found (scripts/install-deps.sh installs clang)" >&2; exit 1; }

# -Wno-ignored-attributes: PostgreSQL's headers, configured for gcc, say gnu_printf
cflags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-Wall -Wno-ignored-attributes ${ZS_WERROR:-} -DFRONTEND -Isrc -Itest/fuzz
	-I"$("$pg_config" --includedir-server)" -I"$("$pg_config" --includedir)")
libs=(-L"$("$pg_config" --pkglibdir)" -lpgcommon -lpgport -lcrypto -lm)

mkdir -p "$build/logs" "$build/artifacts"
start=$(date +%s)

chosen=()
for t in "${targets[@]}"; do
	read -r name _ <<<"$t"
	if [ ${#selected[@]} -eq 0 ] || [[ " ${selected[*]} " == *" $name "* ]]; then
		chosen+=("$t")
	fi
done
[ ${#chosen[@]} -gt 0 ] || { echo "fuzz: no such target: ${selected[*]}" >&2; exit 2; }

# ---- build (in parallel; a target is rebuilt when anything it uses is newer)
jobs=$(nproc 2>/dev/null || echo 2)
pids=()
names=()
for t in "${chosen[@]}"; do
	read -r name _ deps <<<"$t"
	srcs=$(printf '%s\n' $deps | grep -v '^-' | tr '\n' ' ')
	extra_libs=$(printf '%s\n' $deps | grep '^-' | tr '\n' ' ' || true)
	bin="$build/$name"
	if [ -x "$bin" ] && [ -z "$(find "test/fuzz/$name.c" $srcs src/*/*.h test/fuzz/fuzz.h test/fuzz/run.sh \
			-newer "$bin" 2>/dev/null)" ]; then
		continue
	fi
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
	# shellcheck disable=SC2086
	"$cc" "${cflags[@]}" -o "$bin" "test/fuzz/$name.c" $srcs "${libs[@]}" $extra_libs \
		>"$build/logs/$name.build.log" 2>&1 &
	pids+=($!)
	names+=("$name")
done
failed_build=()
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		failed_build+=("${names[$i]}")
		cat "$build/logs/${names[$i]}.build.log" >&2
	fi
done
if [ ${#failed_build[@]} -gt 0 ]; then
	echo "fuzz: build failed: ${failed_build[*]}" >&2
	exit 1
fi
echo "fuzz: built ${#chosen[@]} targets in $(($(date +%s) - start))s ($build)"
$build_only && exit 0

# ---- run
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if ! command -v llvm-symbolizer >/dev/null; then
	symbolizer=$("$cc" -print-prog-name=llvm-symbolizer)
	[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
fi
# one target: its log, and its exit status and seconds in $build/logs/<name>.rc
run_one() {
	local name=$1 max_len=$2 t0 rc=0
	local corpus="$build/corpus/$name"
	local dict=()

	mkdir -p "$corpus"
	[ -f "test/fuzz/$name.dict" ] && dict=(-dict="test/fuzz/$name.dict")
	touch "$build/logs/$name.started"
	t0=$(date +%s)
	# new inputs go to the first corpus directory, never to the seeds
	"$build/$name" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" \
		"${dict[@]}" "$corpus" "test/fuzz/corpus/$name" >"$build/logs/$name.log" 2>&1 || rc=$?
	echo "$rc $(($(date +%s) - t0))" >"$build/logs/$name.rc"
}

# as many at a time as there are CPUs (ZS_FUZZ_JOBS), then the reports in order
run_jobs=${ZS_FUZZ_JOBS:-$jobs}
# each round of run_jobs targets gets an equal share of the budget
rounds=$(((${#chosen[@]} + run_jobs - 1) / run_jobs))
seconds=${ZS_FUZZ_SECONDS:-$((budget / rounds))}
[ "$seconds" -ge 1 ] || seconds=1
echo "fuzz: running ${#chosen[@]} targets, ${seconds}s each, $run_jobs at a time"
for t in "${chosen[@]}"; do
	read -r name max_len _ <<<"$t"
	rm -f "$build/logs/$name.rc"
	while [ "$(jobs -rp | wc -l)" -ge "$run_jobs" ]; do sleep 0.2; done
	run_one "$name" "$max_len" &
done
wait

status=0
total_execs=0
# the coverage of the last stats line (DONE, or where a failure stopped it)
printf '%-22s %7s %10s %8s %6s %7s %6s  %s\n' target seconds execs exec/s cov ft corpus result
for t in "${chosen[@]}"; do
	read -r name _ <<<"$t"
	log="$build/logs/$name.log"
	read -r rc secs <"$build/logs/$name.rc" || { rc=1; secs=-; }
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	stats=$(grep -E '^#[0-9]+[[:space:]].*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$stats")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$stats")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$stats")
	if [ "$rc" -eq 0 ]; then
		result=ok
	else
		result="FAILED (exit $rc)"
		status=1
	fi
	total_execs=$((total_execs + ${execs:-0}))
	printf '%-22s %7s %10s %8s %6s %7s %6s  %s\n' "$name" "$secs" "${execs:--}" "${rate:--}" \
		"${cov:--}" "${ft:--}" "${corp:--}" "$result"
done
printf '%-22s %7s %10s\n' "all" "" "$total_execs"
for t in "${chosen[@]}"; do
	read -r name _ <<<"$t"
	log="$build/logs/$name.log"
	read -r rc _ <"$build/logs/$name.rc" || rc=1
	[ "$rc" -ne 0 ] || continue
	# the report from its first line on (the progress lines before it are noise)
	first=$(grep -n -m1 -E '^==[0-9]+==|fuzz check failed|runtime error:|^ERROR: libFuzzer' \
		"$log" | cut -d: -f1 || true)
	echo "---- $name: $log"
	if [ -n "$first" ]; then
		tail -n +"$first" "$log" | head -n 150
	else
		tail -n 60 "$log"
	fi
	for f in $(find "$build/artifacts" -name "$name-*" -newer "$build/logs/$name.started"); do
		echo "---- reproducer: $f ($(wc -c <"$f") bytes), base64:"
		base64 -w 76 "$f"
		echo "---- rerun it: $build/$name $f"
		echo "     (test/fuzz/run.sh --build-only $name builds it; elsewhere, decode the"
		echo "     base64 above with base64 -d >repro and run $build/$name repro)"
	done
	echo "----"
done
echo "fuzz: $(($(date +%s) - start))s in all, ${seconds}s per target, $run_jobs at a time"
[ $status -eq 0 ] || echo "fuzz: FAILED" >&2
exit $status
