# zero_stream: PGXS build
MODULE_big = zero_stream
OBJS = \
	src/zero_stream.o \
	src/guc.o \
	src/shared_state.o \
	src/status.o \
	src/output_plugin.o \
	src/worker_decoder.o \
	src/decoder_slot.o \
	src/changelog.o \
	src/spool.o \
	src/change_encode.o \
	src/change_json.o \
	src/json_out.o \
	src/json_js.o \
	src/pgoutput_parse.o \
	src/watermark.o \
	src/websocket.o \
	src/http.o \
	src/change_log_codec.o \
	src/subscriber.o \
	src/worker_server.o \
	src/json_read.o \
	src/replica.o \
	src/initial_copy.o \
	src/worker_replicator.o \
	src/snapshot.o \
	src/control.o

EXTENSION = zero_stream
DATA = sql/zero_stream--0.1.0.sql
SHLIB_LINK = -lcjson -lsqlite3
PGFILEDESC = "zero_stream - in-server Zero change streamer"

PG_CONFIG ?= pg_config
PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wmissing-prototypes -Werror

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies; the headers are few, so every object
# depends on all of them (a changed struct must never leave a stale object)
$(OBJS): $(wildcard $(srcdir)/src/*.h)

# ---------------------------------------------------------------- client
CLIENT = zero-stream-tail
CLIENT_CFLAGS = -O2 -g -Wall -Werror -DFRONTEND -I$(srcdir)/src -I$(srcdir)/src/client \
	-I$(shell $(PG_CONFIG) --includedir-server) -I$(shell $(PG_CONFIG) --includedir)
CLIENT_LIBS = -L$(shell $(PG_CONFIG) --pkglibdir) -lpgcommon -lpgport -lcrypto -lm

CLIENT_SRCS = src/client/zero_stream_tail.c src/client/ws_client.c src/websocket.c src/http.c src/json_out.c

$(CLIENT): $(CLIENT_SRCS) $(wildcard $(srcdir)/src/*.h $(srcdir)/src/client/*.h)
	$(CC) $(CLIENT_CFLAGS) -o $@ $(CLIENT_SRCS) $(CLIENT_LIBS)

REPLICA_CLIENT = zero-stream-replica
REPLICA_CLIENT_SRCS = src/client/zero_stream_replica.c src/client/ws_client.c src/websocket.c \
	src/json_out.c src/json_read.c src/replica.c

$(REPLICA_CLIENT): $(REPLICA_CLIENT_SRCS) $(wildcard $(srcdir)/src/*.h $(srcdir)/src/client/*.h)
	$(CC) $(CLIENT_CFLAGS) -o $@ $(REPLICA_CLIENT_SRCS) $(CLIENT_LIBS) -lsqlite3

all: $(CLIENT) $(REPLICA_CLIENT)
install: install-client
install-client: $(CLIENT) $(REPLICA_CLIENT)
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
	test/unit/test_replica
UNIT_CFLAGS = -O2 -g -Wall -Werror -DFRONTEND -I$(srcdir)/src -I$(PG_INCLUDEDIR) \
	-I$(shell $(PG_CONFIG) --includedir)
UNIT_LIBS = -L$(PG_LIBDIR) -lpgcommon -lpgport -lcrypto -lm

test/unit/test_watermark: test/unit/test_watermark.c src/watermark.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_watermark.c src/watermark.c $(UNIT_LIBS)

test/unit/test_json: test/unit/test_json.c test/unit/js_reference.h src/change_json.c src/json_out.c src/json_js.c src/json_read.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_json.c src/change_json.c src/json_out.c src/json_js.c src/json_read.c $(UNIT_LIBS)

test/unit/test_pgoutput: test/unit/test_pgoutput.c src/pgoutput_parse.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_pgoutput.c src/pgoutput_parse.c $(UNIT_LIBS)

test/unit/test_websocket: test/unit/test_websocket.c src/websocket.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_websocket.c src/websocket.c $(UNIT_LIBS)

test/unit/test_http: test/unit/test_http.c src/http.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_http.c src/http.c $(UNIT_LIBS)

test/unit/test_codec: test/unit/test_codec.c src/change_log_codec.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_codec.c src/change_log_codec.c $(UNIT_LIBS)

test/unit/test_replica: test/unit/test_replica.c src/replica.c src/json_read.c src/json_out.c test/unit/unit.h
	$(CC) $(UNIT_CFLAGS) -o $@ test/unit/test_replica.c src/replica.c src/json_read.c src/json_out.c $(UNIT_LIBS) -lsqlite3

.PHONY: unitcheck regresscheck tapcheck check-all
unitcheck: $(UNIT_TESTS) all
	@set -e; for t in $(UNIT_TESTS); do ./$$t; done
	@# a shared library links with undefined symbols; none may be our own
	@if nm -D --undefined-only $(MODULE_big)$(DLSUFFIX) | grep ' zs_'; then \
		echo "$(MODULE_big)$(DLSUFFIX) references undefined zero_stream functions" >&2; exit 1; fi

REGRESS_TESTS = install types dml identity
regresscheck:
	$(PG_REGRESS_BIN) --temp-instance=./tmp_check --temp-config=test/regress.conf \
	  --bindir=$(PG_BINDIR) --inputdir=test --outputdir=test \
	  --dbname=contrib_regression $(REGRESS_TESTS)

tapcheck:
	PATH="$(PG_BINDIR):$$PATH" PG_REGRESS='$(PG_REGRESS_BIN)' TESTDIR='$(CURDIR)/test' \
	  prove -I $(PG_PERL_LIB) -I test/t $(PROVE_FLAGS) $(if $(PROVE_TESTS),$(PROVE_TESTS),test/t/*.pl)

check-all: unitcheck regresscheck tapcheck

EXTRA_CLEAN = $(CLIENT) $(REPLICA_CLIENT) $(UNIT_TESTS) tmp_check test/results test/tmp_check test/log
