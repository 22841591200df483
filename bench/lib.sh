# Shared by the benchmarks (sourced after scripts/common.sh): the throwaway
# cluster's place and ports, and small helpers.
DIR=${ZS_BENCH_DIR:-/tmp/zero_stream-bench-$(id -un)}
PORT=${ZS_BENCH_PORT:-54339}
SPORT=${ZS_BENCH_SERVER_PORT:-54340}
sql() { run "$BIN/psql" -X -q -At -h "$DIR" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
# the database the decoder streams (a database without the extension holds it back)
set_database() {
	sed -i "/^zero_stream.database/d" "$DIR/data/postgresql.conf"
	echo "zero_stream.database = '$1'" >> "$DIR/data/postgresql.conf"
}
restart() { run "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w restart -m fast >/dev/null; }
# rate ROWS T0 T1: "<seconds> s  <rows/s> rows/s"
rate() { python3 -c "import sys; n, t0, t1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); print(f'{t1 - t0:7.2f} s  {n / (t1 - t0):10.0f} rows/s')" "$@"; }
