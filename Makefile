# zero_stream: PGXS build
MODULE_big = zero_stream
OBJS = \
	src/zero_stream.o \
	src/capture_leaving.o \
	src/capture_truncate.o \
	src/guc.o \
	src/ownership.o \
	src/shmem.o \
	src/sql_functions.o \
	src/spi_xact.o \
	src/slot_health.o \
	src/standby_slots.o \
	src/standby_hold.o \
	src/extension_version.o \
	src/codec/watermark.o \
	src/codec/json_out.o \
	src/codec/json_read.o \
	src/codec/json_js.o \
	src/codec/http.o \
	src/codec/websocket.o \
	src/codec/change_message.o \
	src/codec/stream_frame.o \
	src/codec/changelog_chunk.o \
	src/decoder/decoder_worker.o \
	src/decoder/startup.o \
	src/decoder/standby_follow.o \
	src/decoder/claim.o \
	src/decoder/stage.o \
	src/decoder/capture_key.o \
	src/decoder/round.o \
	src/decoder/store.o \
	src/decoder/resync.o \
	src/decoder/lineage.o \
	src/decoding/output_plugin.o \
	src/decoding/pgoutput_read.o \
	src/decoder/spool.o \
	src/decoding/change_encode.o \
	src/decoding/value_encode.o \
	src/decoding/schema_diff.o \
	src/decoding/partition_diff.o \
	src/decoding/partition_rows.o \
	src/decoding/capture_message.o \
	src/decoding/schema_snapshot.o \
	src/decoding/schema_backfill.o \
	src/decoding/relcache.o \
	src/decoding/snapshot.o \
	src/backfill/backfill.o \
	src/backfill/backfill_worker.o \
	src/decoder/shard_setup.o \
	src/purge/purge.o \
	src/purge/purge_floor.o \
	src/purge/purge_request.o \
	src/decoder/subscriber_positions.o \
	src/decoder/lag_report.o \
	src/changelog/changelog.o \
	src/changelog/changelog_schema.o \
	src/changelog/changelog_state.o \
	src/changelog/changelog_read.o \
	src/changelog/changelog_rows.o \
	src/changelog/changelog_insert.o \
	src/changelog/changelog_writer.o \
	src/live/live_round.o \
	src/purge/purge_batch.o \
	src/server/server_worker.o \
	src/server/listener.o \
	src/server/admission.o \
	src/server/connection.o \
	src/server/peer_log.o \
	src/server/routes.o \
	src/server/metrics.o \
	src/server/upstream.o \
	src/server/subscription.o \
	src/server/flow_control.o \
	src/server/flow_schedule.o \
	src/server/reservations.o \
	src/server/subscriber_slots.o \
	src/server/tls.o \
	src/server/reservation_offer.o \
	src/server/standby_snapshot.o \
	src/replica/replica_apply.o \
	src/replica/replica_ddl.o \
	src/replica/replica_schema.o \
	src/replica/replica_sqlite.o \
	src/replica/replica_column_ddl.o \
	src/replica/replica_backfill.o \
	src/replicator/replicator_worker.o \
	src/replicator/standby_restore.o \
	src/decoder/initial_copy.o \
	src/replica/backup_copy.o \
	src/replica/backup_file.o

EXTENSION = zero_stream
DATA = sql/zero_stream--0.1.0.sql sql/zero_stream--0.2.0.sql sql/zero_stream--0.3.0.sql sql/zero_stream--0.1.0--0.2.0.sql sql/zero_stream--0.2.0--0.3.0.sql sql/zero_stream--0.4.0.sql sql/zero_stream--0.3.0--0.4.0.sql sql/zero_stream--0.4.1.sql sql/zero_stream--0.4.0--0.4.1.sql sql/zero_stream--0.5.0.sql sql/zero_stream--0.4.1--0.5.0.sql sql/zero_stream--0.5.1.sql sql/zero_stream--0.5.0--0.5.1.sql
# OpenSSL is the one PostgreSQL itself links (TLS of the subscriber server)
# lz4 as the server uses it: linked only where PostgreSQL was built with it
ZS_LZ4_LIB = $(filter -llz4,$(shell $(PG_CONFIG) --libs))
SHLIB_LINK = -lcjson -lsqlite3 -lssl -lcrypto $(ZS_LZ4_LIB)
PGFILEDESC = "zero_stream - in-server Zero change streamer"

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src
# Warnings are errors only where asked (CI sets ZS_WERROR=-Werror), so a
# packager's newer compiler does not break the build.
ZS_WERROR ?=
PG_CFLAGS = -Wall -Wmissing-prototypes $(ZS_WERROR)

# pg_regress: sql/<test>.sql against expected/<test>.out, the PGXS layout
# (sql/ also holds the install script, which is not a test). "make
# installcheck" runs them against an installed server whose configuration
# has the lines of test/regress.conf; "make regresscheck" starts a
# temporary one with that configuration.
REGRESS = install types dml identity ddl changelog_shape ddl_transactions
REGRESS_OPTS = --inputdir=$(srcdir)

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies; the headers are few, so every object
# depends on all of them (a changed struct must never leave a stale object)
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# ---------------------------------------------------------------- client
CLIENT = zero-stream-tail
# USE_PRIVATE_ENCODING_FUNCS: libpgcommon's encoding functions under the
# names PostgreSQL 17+ gives them (pg_utf_mblen_private); no effect before
CLIENT_CFLAGS = -O2 -g -Wall $(ZS_WERROR) -DFRONTEND -DUSE_PRIVATE_ENCODING_FUNCS -I$(srcdir)/src \
	-I$(shell $(PG_CONFIG) --includedir-server) -I$(shell $(PG_CONFIG) --includedir)
CLIENT_LIBS = -L$(shell $(PG_CONFIG) --pkglibdir) -lpgcommon -lpgport -lssl -lcrypto -lm

CLIENT_SRCS = src/client/zero_stream_tail.c src/client/cli_options.c src/client/ws_client.c \
	src/codec/websocket.c src/codec/http.c src/codec/json_out.c

$(CLIENT): $(CLIENT_SRCS) $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(CLIENT_CFLAGS) -o $@ $(CLIENT_SRCS) $(CLIENT_LIBS)

REPLICA_CLIENT = zero-stream-replica
REPLICA_CLIENT_SRCS = src/client/zero_stream_replica.c src/client/replica_cli.c src/client/replica_sync.c \
	src/client/replica_frame.c src/client/subscribe_connection.c src/client/replica_download.c \
	src/client/litestream_restore.c src/client/cli_options.c src/client/ws_client.c src/codec/websocket.c \
	src/codec/json_out.c src/codec/json_read.c src/codec/stream_frame.c src/replica/replica_apply.c \
	src/replica/replica_ddl.c src/replica/replica_column_ddl.c src/replica/replica_backfill.c \
	src/replica/replica_schema.c src/replica/replica_sqlite.c

$(REPLICA_CLIENT): $(REPLICA_CLIENT_SRCS) $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(CLIENT_CFLAGS) -o $@ $(REPLICA_CLIENT_SRCS) $(CLIENT_LIBS) -lsqlite3

# N subscriptions in one process (benchmarks, TAP 027); not installed
FANOUT_CLIENT = zero-stream-fanout
FANOUT_CLIENT_SRCS = src/client/zero_stream_fanout.c src/client/cli_options.c src/client/ws_client.c \
	src/codec/websocket.c src/codec/stream_frame.c

$(FANOUT_CLIENT): $(FANOUT_CLIENT_SRCS) $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(CLIENT_CFLAGS) -o $@ $(FANOUT_CLIENT_SRCS) $(CLIENT_LIBS)

all: $(CLIENT) $(REPLICA_CLIENT) $(FANOUT_CLIENT)
install: install-client
install-client: $(CLIENT) $(REPLICA_CLIENT)
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	$(INSTALL_PROGRAM) $(CLIENT) '$(DESTDIR)$(bindir)/$(CLIENT)'
	$(INSTALL_PROGRAM) $(REPLICA_CLIENT) '$(DESTDIR)$(bindir)/$(REPLICA_CLIENT)'

# ---------------------------------------------------------------- tests
PG_BINDIR := $(shell $(PG_CONFIG) --bindir)
PG_LIBDIR := $(shell $(PG_CONFIG) --pkglibdir)
PG_INCLUDEDIR := $(shell $(PG_CONFIG) --includedir-server)
PG_REGRESS_BIN = $(dir $(PGXS))../../src/test/regress/pg_regress
PG_PERL_LIB = $(dir $(PGXS))../../src/test/perl

UNIT_TESTS = test/unit/test_watermark test/unit/test_json test/unit/test_pgoutput \
	test/unit/test_websocket test/unit/test_http test/unit/test_codec \
	test/unit/test_replica test/unit/test_schema_diff test/unit/test_stream_frame \
	test/unit/test_extension_version test/unit/test_chunk test/unit/test_partition_rows \
	test/unit/test_capture_message test/unit/test_flow_control
UNIT_CFLAGS = -O2 -g -Wall $(ZS_WERROR) -DFRONTEND -DUSE_PRIVATE_ENCODING_FUNCS -I$(srcdir)/src -I$(PG_INCLUDEDIR) \
	-I$(shell $(PG_CONFIG) --includedir)
UNIT_LIBS = -L$(PG_LIBDIR) -lpgcommon -lpgport -lcrypto -lm

test/unit/test_watermark: test/unit/test_watermark.c src/codec/watermark.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_watermark.c src/codec/watermark.c $(UNIT_LIBS)

test/unit/test_json: test/unit/test_json.c src/decoding/value_encode.c src/codec/json_out.c src/codec/json_js.c src/codec/json_read.c test/unit/js_reference.h test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_json.c src/decoding/value_encode.c src/codec/json_out.c src/codec/json_js.c src/codec/json_read.c $(UNIT_LIBS)

test/unit/test_pgoutput: test/unit/test_pgoutput.c src/decoding/pgoutput_read.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_pgoutput.c src/decoding/pgoutput_read.c $(UNIT_LIBS)

test/unit/test_websocket: test/unit/test_websocket.c src/codec/websocket.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_websocket.c src/codec/websocket.c $(UNIT_LIBS)

test/unit/test_http: test/unit/test_http.c src/codec/http.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_http.c src/codec/http.c $(UNIT_LIBS)

test/unit/test_codec: test/unit/test_codec.c src/codec/change_message.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_codec.c src/codec/change_message.c $(UNIT_LIBS)

test/unit/test_replica: test/unit/test_replica.c test/unit/replica_test_apply.c test/unit/replica_test_json_read.c test/unit/replica_test_rows.c test/unit/replica_test_golden.c test/unit/replica_test_schema_changes.c test/unit/replica_test_bad_input.c src/replica/replica_apply.c src/replica/replica_ddl.c src/replica/replica_column_ddl.c src/replica/replica_backfill.c src/replica/replica_schema.c src/replica/replica_sqlite.c src/codec/json_read.c src/codec/json_out.c test/unit/unit.h test/unit/replica_fixture.h test/unit/replica_test.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ $(filter %.c,$^) $(UNIT_LIBS) -lsqlite3

test/unit/test_schema_diff: test/unit/test_schema_diff.c src/decoding/schema_diff.c src/decoding/partition_diff.c src/decoding/schema_snapshot.c src/decoding/schema_backfill.c src/codec/json_read.c src/codec/json_out.c src/codec/json_js.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_schema_diff.c src/decoding/schema_diff.c src/decoding/partition_diff.c src/decoding/schema_snapshot.c src/decoding/schema_backfill.c src/codec/json_read.c src/codec/json_out.c src/codec/json_js.c $(UNIT_LIBS)

test/unit/test_partition_rows: test/unit/test_partition_rows.c src/decoding/partition_rows.c src/codec/json_read.c src/codec/json_out.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_partition_rows.c src/decoding/partition_rows.c src/codec/json_read.c src/codec/json_out.c $(UNIT_LIBS)

test/unit/test_capture_message: test/unit/test_capture_message.c src/decoding/capture_message.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_capture_message.c src/decoding/capture_message.c $(UNIT_LIBS)

test/unit/test_flow_control: test/unit/test_flow_control.c src/server/flow_schedule.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_flow_control.c src/server/flow_schedule.c $(UNIT_LIBS)

test/unit/test_extension_version: test/unit/test_extension_version.c src/extension_version.c test/unit/unit.h src/extension_version.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_extension_version.c src/extension_version.c $(UNIT_LIBS)

test/unit/test_chunk: test/unit/test_chunk.c src/codec/changelog_chunk.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_chunk.c src/codec/changelog_chunk.c $(UNIT_LIBS) $(ZS_LZ4_LIB)

test/unit/test_stream_frame: test/unit/test_stream_frame.c src/codec/stream_frame.c src/codec/change_message.c test/unit/unit.h $(wildcard $(srcdir)/src/*/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_stream_frame.c src/codec/stream_frame.c src/codec/change_message.c $(UNIT_LIBS)

.PHONY: unitcheck regresscheck tapcheck check-all layoutcheck metacheck dist distcheck

# ---------------------------------------------------------------- release
# The PGXN release archive of the committed tree: zero_stream-<version>.zip
# with one top folder zero_stream-<version>/ (git archive of HEAD, so
# nothing built or uncommitted gets in); META.json is checked against the
# PGXN Meta Spec first.
EXTVERSION := $(shell sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(srcdir)/zero_stream.control)
DISTNAME = $(EXTENSION)-$(EXTVERSION)
PYTHON ?= python3

metacheck:
	$(PYTHON) $(srcdir)/test/tools/check_meta.py
dist: metacheck
	@git -C $(srcdir) diff --quiet HEAD -- || echo "dist: uncommitted changes are not in $(DISTNAME).zip" >&2
	git -C $(srcdir) archive --format zip --prefix=$(DISTNAME)/ -o $(CURDIR)/$(DISTNAME).zip HEAD
	$(PYTHON) $(srcdir)/test/tools/check_meta.py --dist $(DISTNAME).zip
# "make dist" in a scratch folder, so a check leaves no archive behind (a
# tree that is not a git checkout, e.g. a release's, has no archive to make)
distcheck:
	@if ! git -C $(srcdir) rev-parse --git-dir >/dev/null 2>&1; then echo "dist: not a git checkout, no archive made"; exit 0; fi; \
	  d=$$(mktemp -d) && $(MAKE) -s -C $$d -f $(abspath $(srcdir))/Makefile srcdir=$(abspath $(srcdir)) dist; \
	  rc=$$?; rm -rf $$d; exit $$rc

# the source layout (docs/architecture.md) against the tree: layers, module cycles, file sizes
layoutcheck:
	python3 $(srcdir)/test/tools/check_layout.py
unitcheck: $(UNIT_TESTS) all layoutcheck metacheck distcheck
	@set -e; for t in $(UNIT_TESTS); do ./$$t; done
	@perl $(srcdir)/test/tools/check_sleeps.pl
	@# a shared library links with undefined symbols; none may be our own
	@if nm -D --undefined-only $(MODULE_big)$(DLSUFFIX) | grep ' zs_'; then \
		echo "$(MODULE_big)$(DLSUFFIX) references undefined zero_stream functions" >&2; exit 1; fi

regresscheck:
	$(PG_REGRESS_BIN) --temp-instance=./tmp_check --temp-config=test/regress.conf \
	  --bindir=$(PG_BINDIR) --inputdir=$(srcdir) --outputdir=test \
	  --dbname=contrib_regression $(REGRESS)

tapcheck:
	PATH="$(PG_BINDIR):$$PATH" PG_REGRESS='$(PG_REGRESS_BIN)' TESTDIR='$(CURDIR)/test' \
	  TESTDATADIR='$(CURDIR)/test/tmp_check' TESTLOGDIR='$(CURDIR)/test/tmp_check/log' \
	  prove -I $(PG_PERL_LIB) -I test/t $(PROVE_FLAGS) $(if $(PROVE_TESTS),$(PROVE_TESTS),test/t/*.pl)

check-all: unitcheck regresscheck tapcheck

EXTRA_CLEAN = $(DISTNAME).zip $(CLIENT) $(REPLICA_CLIENT) $(FANOUT_CLIENT) $(UNIT_TESTS) tmp_check test/results test/tmp_check test/log
