/*-------------------------------------------------------------------------
 * fuzz_replica.c
 *	  libFuzzer target for the replica's message applier
 *	  (src/replica/replica_apply.c, replica_ddl.c, replica_schema.c,
 *	  replica_sqlite.c), compiled as frontend code as test/unit/test_replica
 *	  compiles it, against an in-memory SQLite replica made the way that
 *	  test makes one.
 *
 * Input: one options byte, then change messages, one per line:
 *   bit 0  a serving replica (ZS_REPLICA_LOG_CHANGES: changeLog2 kept);
 *   bit 1  the replica starts with the tables of an initial copy (t,
 *          full_ident, app.idx_ident, items), else with none;
 *   bit 2  after a failed message, roll back and go on (a client that
 *          reconnects), else stop there, as the replicator and
 *          zero-stream-replica do;
 *   bit 3  flush after every commit, else only at the end;
 *   bit 4  a change is parsed as the replicator parses stored changes,
 *          its relation deferred (zs_json_parse_deferring), and a message
 *          as zero-stream-replica parses frames, the relation of the
 *          change in it deferred (zs_json_parse_deferring_at, depth 2).
 * A line is either a change as the change log stores it ({"tag":...}:
 * begin, commit and rollback go to zs_replica_begin/commit/rollback, with a
 * "watermark" member if the line has one, else a generated increasing
 * one; every other tag to zs_replica_apply_change) or a downstream message
 * (["begin",{...},{"commitWatermark":w}], ["data",{...}], ...) for
 * zs_replica_apply_message. Lines that are not JSON are skipped.
 *
 * Checks: nothing crashes or leaks (the sanitizers); every refusal returns
 * false (or -1) with a message; after every message SQLite's
 * PRAGMA integrity_check says ok; a success leaves the transaction state
 * the message implies, a commit the state version it names; only
 * create-table, drop-table and row changes (a table made from a row) add
 * or remove tables, one at most; a rollback
 * (a message's, or after a failure) leaves the database, schema and rows,
 * exactly as it was before the transaction's begin; the final flush
 * succeeds and the file's stateVersion is the last commit's.
 *
 * A custom mutator keeps the inputs mostly valid: besides libFuzzer's own
 * byte mutations (of the whole input or of one line) it deletes,
 * duplicates and swaps lines, inserts messages of real shapes (from the
 * golden change log and zero-cache's transcript) and replaces a JSON
 * string or number in a line with one of the names and values that
 * matter (tags, tables, columns, types, defaults, watermarks, int64
 * limits). With ZS_FUZZ_VERBOSE set, each message's outcome is printed.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sqlite3.h>

#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "fuzz.h"
#include "../unit/replica_fixture.h"

#define OPT_LOG_CHANGES	0x01
#define OPT_TABLES		0x02
#define OPT_CONTINUE	0x04
#define OPT_FLUSH		0x08
#define OPT_DEFER		0x10	/* changes parsed as the replicator does, relation deferred */

static ZsJsonDoc doc;
static bool ready = false;
static bool verbose = false;	/* ZS_FUZZ_VERBOSE: each message's outcome */

/* ---------------------------------------------------------------- the replica */

static ZsReplica *
new_replica(int options)
{
	char		err[256];
	ZsReplica  *r = zs_replica_open(":memory:", ZS_REPLICA_CREATE |
									((options & OPT_LOG_CHANGES) ? ZS_REPLICA_LOG_CHANGES : 0),
									err, sizeof(err));

	FUZZ_CHECK(r != NULL, err);
	FUZZ_CHECK(zs_replica_init(r, "0a", "[\"pub\"]", "{}"), zs_replica_error(r));
	if (options & OPT_TABLES)
	{
		FUZZ_CHECK(zs_fixture_create_tables(r, true), zs_replica_error(r));
	}
	return r;
}

static void
check_integrity(ZsReplica *r)
{
	sqlite3_stmt *stmt;
	const char *result;

	FUZZ_CHECK(sqlite3_prepare_v2(zs_replica_db(r), "PRAGMA integrity_check", -1, &stmt, NULL) == SQLITE_OK,
			   sqlite3_errmsg(zs_replica_db(r)));
	FUZZ_CHECK(sqlite3_step(stmt) == SQLITE_ROW, "integrity_check returns a row");
	result = (const char *) sqlite3_column_text(stmt, 0);
	if (result == NULL || strcmp(result, "ok") != 0)
		fprintf(stderr, "integrity_check: %s\n", result ? result : "(null)");
	FUZZ_CHECK(result != NULL && strcmp(result, "ok") == 0, "PRAGMA integrity_check is ok");
	FUZZ_CHECK(sqlite3_step(stmt) == SQLITE_DONE, "integrity_check returns one row");
	sqlite3_finalize(stmt);
}

static uint64
hash_bytes(uint64 h, const void *p, int n)
{
	const unsigned char *s = p;

	for (int i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

/*
 * The database's schema and rows: sqlite_master in order, and each table's
 * rows as a sum of row hashes (so independent of their order).
 */
static uint64
digest(ZsReplica *r)
{
	sqlite3    *db = zs_replica_db(r);
	sqlite3_stmt *tables;
	uint64		h = 14695981039346656037ULL;

	FUZZ_CHECK(sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
								  -1, &tables, NULL) == SQLITE_OK, sqlite3_errmsg(db));
	while (sqlite3_step(tables) == SQLITE_ROW)
	{
		const char *type = (const char *) sqlite3_column_text(tables, 0);
		const char *name = (const char *) sqlite3_column_text(tables, 1);
		uint64		rows = 0;

		for (int c = 0; c < 4; c++)
			h = hash_bytes(h, sqlite3_column_blob(tables, c), sqlite3_column_bytes(tables, c)) + c;
		if (type != NULL && strcmp(type, "table") == 0 && name != NULL)
		{
			char	   *sql = sqlite3_mprintf("SELECT * FROM \"%w\"", name);
			sqlite3_stmt *stmt;

			FUZZ_CHECK(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK, sqlite3_errmsg(db));
			while (sqlite3_step(stmt) == SQLITE_ROW)
			{
				uint64		row = 14695981039346656037ULL;

				for (int c = 0; c < sqlite3_column_count(stmt); c++)
				{
					int			t = sqlite3_column_type(stmt, c);

					row = hash_bytes(row, &t, sizeof(t));
					row = hash_bytes(row, sqlite3_column_blob(stmt, c), sqlite3_column_bytes(stmt, c));
				}
				rows += row;
			}
			sqlite3_finalize(stmt);
			sqlite3_free(sql);
		}
		h = hash_bytes(h, &rows, sizeof(rows));
	}
	sqlite3_finalize(tables);
	return h;
}

/* ---------------------------------------------------------------- one input */

typedef struct Run
{
	ZsReplica  *r;
	int			options;
	int			next_version;
	char		watermark[64];	/* of the open transaction, as begun */
	uint64		before_begin;	/* digest before the open transaction */
	bool		have_before;
} Run;

static void
check_refusal(bool ok, ZsReplica *r)
{
	if (!ok)
		FUZZ_CHECK(zs_replica_error(r)[0] != '\0', "a refusal comes with a message");
}

static void
before_begin(Run *run)
{
	if (!zs_replica_in_transaction(run->r))
	{
		run->before_begin = digest(run->r);
		run->have_before = true;
	}
}

static void
after_rollback(Run *run)
{
	FUZZ_CHECK(!zs_replica_in_transaction(run->r), "no transaction after a rollback");
	if (run->have_before)
		FUZZ_CHECK(digest(run->r) == run->before_begin,
				   "a rollback leaves the database as it was before begin");
	run->have_before = false;
}

static void
after_commit(Run *run, const char *watermark)
{
	FUZZ_CHECK(!zs_replica_in_transaction(run->r), "no transaction after a commit");
	FUZZ_CHECK(strcmp(zs_replica_state_version(run->r), watermark) == 0,
			   "a commit sets the state version");
	run->have_before = false;
	if (run->options & OPT_FLUSH)
		FUZZ_CHECK(zs_replica_flush(run->r), zs_replica_error(run->r));
}

static int
table_count(ZsReplica *r)
{
	sqlite3_stmt *stmt;
	int			n;

	FUZZ_CHECK(sqlite3_prepare_v2(zs_replica_db(r), "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
								  -1, &stmt, NULL) == SQLITE_OK, sqlite3_errmsg(zs_replica_db(r)));
	FUZZ_CHECK(sqlite3_step(stmt) == SQLITE_ROW, "count(*) returns a row");
	n = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

/* Does the line hold a message (an array), not a change? */
static bool
line_is_message(const char *line, size_t len)
{
	size_t		i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	return i < len && line[i] == '[';
}

/*
 * A change applied (zs_replica_apply_change, or zs_replica_apply_message
 * for the "data" message holding it), and the tables it may add or
 * remove: create-table one more, drop-table at most one less, a row change
 * at most one more (a table made from the row), anything else none.
 */
static bool
apply_one_change(ZsReplica *r, int change, int message)
{
	int			tag = zs_json_get(&doc, change, "tag");
	int			before = table_count(r);
	int			after;
	bool		ok = message >= 0 ?
		zs_replica_apply_message(r, &doc, message) == ZS_REPLICA_MESSAGE_APPLIED :
		zs_replica_apply_change(r, &doc, change);

	if (!ok)
		return false;
	after = table_count(r);
	if (zs_json_str_eq(&doc, tag, "create-table"))
		FUZZ_CHECK(after == before + 1, "create-table adds a table");
	else if (zs_json_str_eq(&doc, tag, "drop-table"))
		FUZZ_CHECK(after == before || after == before - 1, "drop-table drops at most its table");
	else if (zs_json_str_eq(&doc, tag, "insert") || zs_json_str_eq(&doc, tag, "update"))
		FUZZ_CHECK(after == before || after == before + 1, "a row change adds at most its table");
	else
		FUZZ_CHECK(after == before, "this change neither adds nor drops tables");
	FUZZ_CHECK(zs_replica_in_transaction(r), "a change applies within a transaction");
	return true;
}

/* A change as the change log stores it; false if it failed. */
static bool
apply_change(Run *run, int root)
{
	ZsReplica  *r = run->r;
	int			tag = zs_json_get(&doc, root, "tag");
	const char *watermark = zs_json_get_string(&doc, root, "watermark");
	bool		ok;

	if (zs_json_str_eq(&doc, tag, "begin"))
	{
		char		generated[32];

		if (watermark == NULL)
		{
			snprintf(generated, sizeof(generated), "61b%05d", run->next_version++);
			watermark = generated;
		}
		before_begin(run);
		ok = zs_replica_begin(r, watermark);
		if (ok)
		{
			FUZZ_CHECK(zs_replica_in_transaction(r), "a transaction after begin");
			strlcpy(run->watermark, watermark, sizeof(run->watermark));
		}
	}
	else if (zs_json_str_eq(&doc, tag, "commit"))
	{
		if (watermark == NULL)
			watermark = run->watermark;
		ok = zs_replica_commit(r, watermark);
		if (ok)
			after_commit(run, watermark);
	}
	else if (zs_json_str_eq(&doc, tag, "rollback"))
	{
		ok = zs_replica_rollback(r);
		FUZZ_CHECK(ok, zs_replica_error(r));
		after_rollback(run);
	}
	else
	{
		ok = apply_one_change(r, root, -1);
	}
	check_refusal(ok, r);
	return ok;
}

/* A downstream message; false if it failed. */
static bool
apply_message(Run *run, int root)
{
	ZsReplica  *r = run->r;
	int			type = zs_json_at(&doc, root, 0);
	ZsReplicaMessageResult rc;

	if (zs_json_str_eq(&doc, type, "data"))
	{
		/* with the checks of a change */
		bool		ok = apply_one_change(r, zs_json_at(&doc, root, 1), root);

		check_refusal(ok, r);
		return ok;
	}
	if (zs_json_str_eq(&doc, type, "begin"))
		before_begin(run);
	rc = zs_replica_apply_message(r, &doc, root);
	if (rc == ZS_REPLICA_MESSAGE_APPLIED && zs_json_str_eq(&doc, type, "begin"))
		strlcpy(run->watermark, zs_json_get_string(&doc, zs_json_at(&doc, root, 2), "commitWatermark"),
				sizeof(run->watermark));
	FUZZ_CHECK(rc == ZS_REPLICA_MESSAGE_APPLIED || rc == ZS_REPLICA_MESSAGE_NOT_MINE ||
			   rc == ZS_REPLICA_MESSAGE_FAILED, "apply_message returns one of its results");
	check_refusal(rc != ZS_REPLICA_MESSAGE_FAILED, r);
	if (rc == ZS_REPLICA_MESSAGE_APPLIED)
	{
		if (zs_json_str_eq(&doc, type, "begin") || zs_json_str_eq(&doc, type, "data"))
			FUZZ_CHECK(zs_replica_in_transaction(r), "a transaction after begin or data");
		else if (zs_json_str_eq(&doc, type, "commit"))
			after_commit(run, zs_json_get_string(&doc, zs_json_at(&doc, root, 2), "watermark"));
		else if (zs_json_str_eq(&doc, type, "rollback"))
			after_rollback(run);
		else
			FUZZ_CHECK(false, "only begin, data, commit and rollback are applied");
	}
	else if (rc == ZS_REPLICA_MESSAGE_NOT_MINE)
		FUZZ_CHECK(!zs_json_str_eq(&doc, type, "begin") && !zs_json_str_eq(&doc, type, "data") &&
				   !zs_json_str_eq(&doc, type, "commit") && !zs_json_str_eq(&doc, type, "rollback"),
				   "begin, data, commit and rollback are never another type");
	return rc != ZS_REPLICA_MESSAGE_FAILED;
}

static bool
contains(const uint8_t *data, size_t size, const char *word)
{
	size_t		len = strlen(word);

	for (size_t i = 0; i + len <= size; i++)
		if (memcmp(data + i, word, len) == 0)
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Run			run;
	const char *text = (const char *) data;
	size_t		pos;
	bool		stopped = false;
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];

	if (size < 1)
		return 0;
	if (!ready)
	{
		zs_json_doc_init(&doc);
		verbose = getenv("ZS_FUZZ_VERBOSE") != NULL;
		ready = true;
	}
	memset(&run, 0, sizeof(run));
	run.options = data[0];
	run.r = new_replica(run.options);
	strlcpy(run.watermark, "0a", sizeof(run.watermark));

	for (pos = 1; pos < size && !stopped;)
	{
		const char *nl = memchr(text + pos, '\n', size - pos);
		size_t		len = nl ? (size_t) (nl - (text + pos)) : size - pos;
		const char *line = text + pos;
		bool		ok;

		pos += len + 1;
		if (!((run.options & OPT_DEFER) ?
			  zs_json_parse_deferring_at(&doc, line, (int) len, "relation",
										 line_is_message(line, len) ? 2 : 1) :
			  zs_json_parse(&doc, line, (int) len)))
			continue;
		if (doc.nodes[0].type == ZS_JSON_ARRAY)
			ok = apply_message(&run, 0);
		else
			ok = apply_change(&run, 0);
		check_integrity(run.r);
		if (verbose)
			fprintf(stderr, "fuzz_replica: %.*s%s: %s\n", (int) Min(len, 60), line, len > 60 ? "..." : "",
					ok ? "ok" : zs_replica_error(run.r));
		if (ok)
			continue;
		if (!(run.options & OPT_CONTINUE))
			stopped = true;
		else if (zs_replica_in_transaction(run.r))
		{
			/* the caller's recovery: the failed transaction goes */
			FUZZ_CHECK(zs_replica_rollback(run.r), zs_replica_error(run.r));
			after_rollback(&run);
			check_integrity(run.r);
		}
	}

	if (!stopped)
	{
		if (zs_replica_in_transaction(run.r))
		{
			FUZZ_CHECK(zs_replica_rollback(run.r), zs_replica_error(run.r));
			after_rollback(&run);
		}
		FUZZ_CHECK(zs_replica_flush(run.r), zs_replica_error(run.r));
		check_integrity(run.r);
		/* unless the changes wrote to "_zero.*" tables themselves (schema _zero) */
		if (!contains(data, size, "_zero"))
		{
			FUZZ_CHECK(zs_replica_read_state(run.r, rv, sv), zs_replica_error(run.r));
			FUZZ_CHECK(strcmp(rv, "0a") == 0, "the replica version stays");
			FUZZ_CHECK(strcmp(sv, zs_replica_state_version(run.r)) == 0,
					   "the file's stateVersion is the last commit's");
		}
	}
	zs_replica_close(run.r);
	return 0;
}

/* ---------------------------------------------------------------- the mutator */

extern size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
extern size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
									  unsigned int seed);

#define REL_ITEMS "\"relation\":{\"tag\":\"relation\",\"relationOid\":20700,\"schema\":\"public\",\"name\":\"items\"," \
	"\"rowKey\":{\"columns\":[\"id\"],\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"}"
#define REL_FULL "\"relation\":{\"tag\":\"relation\",\"relationOid\":25800,\"schema\":\"public\",\"name\":\"full_ident\"," \
	"\"rowKey\":{\"columns\":[\"id\",\"label\",\"amount\"],\"type\":\"full\"},\"keyColumns\":[],\"replicaIdentity\":\"full\"}"
#define REL_IDX "\"relation\":{\"tag\":\"relation\",\"relationOid\":25810,\"schema\":\"app\",\"name\":\"idx_ident\"," \
	"\"rowKey\":{\"columns\":[\"code\",\"region\"],\"type\":\"index\"},\"keyColumns\":[\"code\",\"region\"],\"replicaIdentity\":\"index\"}"
#define SPEC_TEXT "{\"pos\":6,\"dflt\":\"'x'::text\",\"notNull\":false,\"typeOID\":25,\"dataType\":\"text\"," \
	"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}"
#define SPEC_INT4 "{\"pos\":3,\"dflt\":null,\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\"," \
	"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}"

/* Messages of the shapes zero-cache 1.9.0 sends (test/golden, the transcript). */
static const char *const templates[] = {
	"{\"tag\":\"begin\",\"commitLsn\":\"00000000/2AD2C2C8\",\"commitTime\":1795989459757033,\"xid\":75121,\"json\":\"s\"}",
	"{\"tag\":\"commit\",\"flags\":0,\"commitLsn\":\"00000000/2AD2C2C8\",\"commitEndLsn\":\"00000000/2AD2C2F8\",\"commitTime\":1795989459757033,\"commitTimeMs\":1795989459757}",
	"{\"tag\":\"rollback\"}",
	"{\"tag\":\"insert\"," REL_ITEMS ",\"new\":{\"id\":10,\"title\":\"live insert\",\"n\":42,\"ts\":1795953600000.001,\"payload\":\"{\\\"a\\\": [1, 2, {\\\"b\\\": null}], \\\"big\\\": 9007199254740993}\"}}",
	"{\"tag\":\"update\"," REL_ITEMS ",\"key\":null,\"old\":null,\"new\":{\"id\":1,\"title\":\"updated\",\"n\":101,\"ts\":1767225600123.456,\"payload\":\"{\\\"g\\\": 1}\"}}",
	"{\"tag\":\"update\"," REL_ITEMS ",\"key\":{\"id\":10},\"old\":null,\"new\":{\"id\":11,\"title\":\"moved\"}}",
	"{\"tag\":\"delete\"," REL_ITEMS ",\"key\":{\"id\":2},\"old\":null}",
	"{\"tag\":\"insert\"," REL_FULL ",\"new\":{\"id\":3,\"label\":\"same\",\"amount\":1.5}}",
	"{\"tag\":\"update\"," REL_FULL ",\"key\":{\"id\":3,\"label\":\"same\",\"amount\":1.5},\"old\":null,\"new\":{\"id\":3,\"label\":\"other\",\"amount\":2}}",
	"{\"tag\":\"delete\"," REL_FULL ",\"key\":{\"id\":3,\"label\":\"same\",\"amount\":1.5},\"old\":null}",
	"{\"tag\":\"insert\"," REL_IDX ",\"new\":{\"code\":\"a\",\"region\":1,\"val\":\"x\"}}",
	"{\"tag\":\"delete\"," REL_IDX ",\"key\":{\"code\":\"a\",\"region\":1},\"old\":null}",
	"{\"tag\":\"truncate\",\"cascade\":false,\"restartIdentity\":false,\"relations\":[{\"tag\":\"relation\",\"relationOid\":20700,\"schema\":\"public\",\"name\":\"items\",\"rowKey\":{\"columns\":[\"id\"],\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"}]}",
	"{\"tag\":\"create-table\",\"spec\":{\"oid\":25936,\"schema\":\"public\",\"schemaOID\":2200,\"name\":\"ddl_t\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,\"dflt\":null,\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"a\":" SPEC_TEXT ",\"tags\":{\"pos\":3,\"dflt\":null,\"notNull\":false,\"typeOID\":1009,\"dataType\":\"text[]\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":\"b\",\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"]},\"metadata\":{\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}},\"backfill\":{\"a\":{\"attNum\":2}}}",
	"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_t\",\"name\":\"ddl_t_pkey\",\"unique\":true,\"isPrimaryKey\":true,\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
	"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"items\",\"name\":\"items_n_title\",\"unique\":false,\"columns\":{\"n\":\"DESC\",\"title\":\"ASC\"}}}",
	"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"column\":{\"name\":\"extra\",\"spec\":" SPEC_TEXT "},\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":20700,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
	"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"column\":{\"name\":\"late\",\"spec\":" SPEC_INT4 "},\"backfill\":{\"attNum\":7}}",
	"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"old\":{\"name\":\"n\",\"spec\":" SPEC_INT4 "},\"new\":{\"name\":\"n\",\"spec\":{\"pos\":3,\"dflt\":null,\"notNull\":false,\"typeOID\":20,\"dataType\":\"int8\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}}}",
	"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"old\":{\"name\":\"title\",\"spec\":" SPEC_TEXT "},\"new\":{\"name\":\"title_renamed\",\"spec\":" SPEC_TEXT "}}",
	"{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"column\":\"n\"}",
	"{\"tag\":\"rename-table\",\"old\":{\"schema\":\"public\",\"name\":\"items\"},\"new\":{\"schema\":\"public\",\"name\":\"items_renamed\"}}",
	"{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"items\"}}",
	"{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"items_n_title\"}}",
	"{\"tag\":\"update-table-metadata\",\"table\":{\"schema\":\"public\",\"name\":\"items\"},\"old\":{\"rowKey\":{}},\"new\":{\"rowKey\":{\"id\":{\"attNum\":1}}}}",
	"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"items\",\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"title\"],\"watermark\":\"61b00002\",\"rowValues\":[[3,\"b3\"],[10,\"b10\"]],\"status\":{\"rows\":2,\"totalRows\":2,\"totalBytes\":24}}",
	"{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"items\",\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"title\"],\"watermark\":\"61b00002\",\"status\":{\"rows\":2,\"totalRows\":2,\"totalBytes\":24}}",
	"[\"begin\",{\"tag\":\"begin\",\"commitLsn\":\"00000000/2AD2C3C0\",\"json\":\"s\"},{\"commitWatermark\":\"5bvr000\"}]",
	"[\"data\",{\"tag\":\"delete\"," REL_ITEMS ",\"key\":{\"id\":1},\"old\":null}]",
	"[\"commit\",{\"tag\":\"commit\",\"flags\":0},{\"watermark\":\"5bvr000\"}]",
	"[\"rollback\",{\"tag\":\"rollback\"}]",
	"[\"status\",{\"tag\":\"status\"}]",
};

/* Strings and numbers that matter to the applier. */
static const char *const strings[] = {
	"begin", "commit", "rollback", "insert", "update", "delete", "truncate", "create-table",
	"add-column", "update-column", "drop-column", "rename-table", "drop-table", "create-index",
	"drop-index", "update-table-metadata", "backfill", "backfill-completed",
	"public", "app", "_zero", "items", "t", "full_ident", "idx_ident", "ddl_t", "changeLog2",
	"replicationState", "sqlite_master", "id", "title", "n", "ts", "payload", "rowid", "_rowid_",
	"oid", "_0_version", "code", "region", "label", "amount", "x\"y", "a b", "",
	"default", "full", "index", "nothing", "ASC", "DESC", "int4", "int8", "text", "text[]",
	"mood", "mood[]", "int4|NOT_NULL", "b", "e", "'x'::text", "'{}'::text[]", "ARRAY[]::integer[]",
	"'a''b'::text", "now()", "true", "-1.5", "0a", "61b00001", "61b00002", "61b99999", "zzzzzzzzzz",
	"\\u0000", "\\ud800",
};
static const char *const numbers[] = {
	"0", "-1", "1", "2", "3", "10", "9007199254740993", "9223372036854775807",
	"-9223372036854775808", "9223372036854775808", "1e308", "-0", "1.5", "true", "false",
	"null", "{}", "[]", "[1]", "{\"id\":1}", "\"s\"",
};

/* where each line of data (after the options byte) starts; how many lines */
static int
line_starts(const uint8_t *data, size_t size, size_t *starts, int max)
{
	int			n = 0;

	if (size < 1)
		return 0;
	starts[n++] = 1;
	for (size_t i = 1; i < size && n < max; i++)
		if (data[i] == '\n')
			starts[n++] = i + 1;
	return n;
}

static size_t
line_end(const uint8_t *data, size_t size, size_t start)
{
	const uint8_t *nl = start < size ? memchr(data + start, '\n', size - start) : NULL;

	return nl ? (size_t) (nl - data) : size;
}

/* Replace data[from, to) with rep (len bytes); the new size, or size if it does not fit. */
static size_t
splice(uint8_t *data, size_t size, size_t max_size, size_t from, size_t to,
	   const void *rep, size_t len)
{
	if (size - (to - from) + len > max_size)
		return size;
	memmove(data + from + len, data + to, size - to);
	memcpy(data + from, rep, len);
	return size - (to - from) + len;
}

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint32_t	s = seed;
	size_t		starts[256];
	int			nlines;
	int			k;
	size_t		from,
				to;

	if (size == 0)
	{
		data[0] = 0x0f;
		size = 1;
	}
	nlines = line_starts(data, size, starts, lengthof(starts));
	k = (int) (fuzz_next(&s) % nlines);
	from = starts[k];
	to = line_end(data, size, from);

	switch (fuzz_next(&s) % 10)
	{
		case 0:					/* libFuzzer's own, on everything */
			return LLVMFuzzerMutate(data, size, max_size);
		case 1:					/* the options */
			data[0] = (uint8_t) fuzz_next(&s);
			return size;
		case 2:					/* libFuzzer's own, on one line */
			{
				size_t		len = to - from;
				size_t		room = max_size - (size - len);
				uint8_t    *copy;
				size_t		newlen;

				if (room == 0 || len == 0)
					return LLVMFuzzerMutate(data, size, max_size);
				copy = malloc(room);
				memcpy(copy, data + from, len);
				newlen = LLVMFuzzerMutate(copy, len, room);
				size = splice(data, size, max_size, from, to, copy, newlen);
				free(copy);
				return size;
			}
		case 3:					/* delete a line */
			if (nlines > 1)
				return splice(data, size, max_size, from, Min(to + 1, size), "", 0);
			return LLVMFuzzerMutate(data, size, max_size);
		case 4:					/* duplicate a line */
		case 5:					/* or move it elsewhere */
			{
				size_t		len = to - from;
				uint8_t    *copy = malloc(len + 1);
				int			k2 = (int) (fuzz_next(&s) % nlines);
				size_t		at;

				memcpy(copy, data + from, len);
				copy[len] = '\n';
				if ((fuzz_next(&s) & 1) && nlines > 1)
				{
					size = splice(data, size, max_size, from, Min(to + 1, size), "", 0);
					nlines = line_starts(data, size, starts, lengthof(starts));
					k2 %= nlines;
				}
				at = starts[k2];
				size = splice(data, size, max_size, at, at, copy, len + 1);
				free(copy);
				return size;
			}
		case 6:					/* insert a message of a real shape */
		case 7:
			{
				const char *t = templates[fuzz_next(&s) % lengthof(templates)];
				size_t		len = strlen(t);
				size_t		at = (fuzz_next(&s) & 1) ? from : Min(to + 1, size);
				char	   *copy = malloc(len + 2);

				memcpy(copy, t, len);
				copy[len] = '\n';
				if (at == size && size > 1 && data[size - 1] != '\n')
				{
					/* after a last line without its newline */
					memmove(copy + 1, copy, len);
					copy[0] = '\n';
				}
				size = splice(data, size, max_size, at, at, copy, len + 1);
				free(copy);
				return size;
			}
		default:				/* a string or number of the line replaced */
			{
				size_t		quotes[128];
				int			nquotes = 0;
				bool		in_string = false;

				for (size_t i = from; i < to && nquotes < (int) lengthof(quotes) - 1; i++)
				{
					if (in_string && data[i] == '\\')
						i++;
					else if (data[i] == '"')
					{
						quotes[nquotes++] = i;
						in_string = !in_string;
					}
				}
				if (nquotes >= 2 && (fuzz_next(&s) % 3) != 0)
				{
					/* the content of a string: from after an opening quote to its closing one */
					int			q = (int) (fuzz_next(&s) % (nquotes / 2)) * 2;
					const char *rep = strings[fuzz_next(&s) % lengthof(strings)];

					return splice(data, size, max_size, quotes[q] + 1, quotes[q + 1], rep, strlen(rep));
				}
				else
				{
					/* a value after a colon or in an array, up to , } or ] */
					size_t		cands[64];
					int			ncands = 0;
					const char *rep = numbers[fuzz_next(&s) % lengthof(numbers)];
					size_t		end;

					in_string = false;
					for (size_t i = from; i < to && ncands < (int) lengthof(cands); i++)
					{
						if (in_string && data[i] == '\\')
							i++;
						else if (data[i] == '"')
							in_string = !in_string;
						else if (!in_string && (data[i] == ':' || data[i] == '[' || data[i] == ','))
							cands[ncands++] = i + 1;
					}
					if (ncands == 0)
						return LLVMFuzzerMutate(data, size, max_size);
					from = cands[fuzz_next(&s) % ncands];
					/* only a scalar is replaced: up to , } or ] */
					for (end = from; end < to && data[end] != ',' && data[end] != '}' &&
						 data[end] != ']' && data[end] != '{' && data[end] != '['; end++)
						if (data[end] == '"')
						{
							for (end++; end < to && data[end] != '"'; end++)
								if (data[end] == '\\')
									end++;
						}
					return splice(data, size, max_size, from, Min(end, to), rep, strlen(rep));
				}
			}
	}
}
