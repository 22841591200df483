/*-------------------------------------------------------------------------
 * test_replica.c
 *	  Unit tests of the JSON reader and the SQLite replica library, against
 *	  an in-memory SQLite database.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sqlite3.h>
#include <unistd.h>

#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "unit.h"

static ZsJsonDoc doc;

/* the text of one query's single value ("NULL" for SQL NULL, "<none>" for no row) */
static char result[4096];

static const char *
query(ZsReplica *r, const char *sql)
{
	sqlite3_stmt *stmt;

	if (sqlite3_prepare_v2(zs_replica_db(r), sql, -1, &stmt, NULL) != SQLITE_OK)
	{
		snprintf(result, sizeof(result), "<error %s>", sqlite3_errmsg(zs_replica_db(r)));
		return result;
	}
	if (sqlite3_step(stmt) != SQLITE_ROW)
		strcpy(result, "<none>");
	else if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
		strcpy(result, "NULL");
	else
		snprintf(result, sizeof(result), "%s", (const char *) sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	return result;
}

static bool
apply(ZsReplica *r, const char *json)
{
	if (!zs_json_parse(&doc, json, strlen(json)))
	{
		fprintf(stderr, "bad test JSON: %s\n", doc.error);
		return false;
	}
	return zs_replica_apply_change(r, &doc, 0);
}

static void
test_json_reader(void)
{
	int64		v;
	int			n;
	const char *bad[] = {"", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", "-", "1e", "tru",
		"\"\\x\"", "\"a\nb\"", "[1] x", "\"abc", "{1:2}", NULL};

	const char *text = " {\"a\" : [1, -0.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\":{}} ";

	CHECK(zs_json_parse(&doc, text, strlen(text)), "parse: %s", doc.error);
	n = zs_json_get(&doc, 0, "a");
	CHECK(n > 0 && doc.nodes[n].count == 6, "array count");
	CHECK_STR(zs_json_str(&doc, zs_json_at(&doc, n, 5)), "x\xc3\xa9\xf0\x9f\x98\x80\n");
	CHECK(doc.nodes[zs_json_at(&doc, n, 1)].raw_len == 6, "raw number text");
	CHECK(zs_json_double(&doc, zs_json_at(&doc, n, 1)) == -500.0, "double");
	CHECK(zs_json_get(&doc, 0, "c") == -1, "missing key");
	CHECK(doc.nodes[zs_json_get(&doc, 0, "b")].type == ZS_JSON_OBJECT, "empty object");

	CHECK(zs_json_parse(&doc, "[9223372036854775807,-9223372036854775808,9223372036854775808,9007199254740993,1.0]", 83), "ints");
	CHECK(zs_json_int64(&doc, zs_json_at(&doc, 0, 0), &v) && v == INT64_MAX, "int64 max");
	CHECK(zs_json_int64(&doc, zs_json_at(&doc, 0, 1), &v) && v == INT64_MIN, "int64 min");
	CHECK(!zs_json_int64(&doc, zs_json_at(&doc, 0, 2), &v), "beyond int64 is not an integer");
	CHECK(zs_json_int64(&doc, zs_json_at(&doc, 0, 3), &v) && v == 9007199254740993LL, "2^53+1 exact");
	CHECK(!zs_json_int64(&doc, zs_json_at(&doc, 0, 4), &v), "1.0 is not read as an integer");

	for (int i = 0; bad[i]; i++)
		CHECK(!zs_json_parse(&doc, bad[i], strlen(bad[i])) && doc.error[0], "rejects <%s>", bad[i]);
	{
		/* any depth is read without recursion; unterminated is an error */
		int			depth = 200000;
		char	   *deep = malloc(2 * depth + 1);

		memset(deep, '[', depth);
		memset(deep + depth, ']', depth);
		CHECK(zs_json_parse(&doc, deep, 2 * depth), "nesting %d deep: %s", depth, doc.error);
		CHECK(doc.nnodes == depth && doc.nodes[depth - 1].raw_len == 2, "deep nodes");
		CHECK(!zs_json_parse(&doc, deep, 2 * depth - 1), "unterminated deep array rejected");
		CHECK(strstr(doc.error, "unterminated array") != NULL, "error: %s", doc.error);
		free(deep);
	}
	/* unpaired surrogates, which PostgreSQL's json accepts, decode to WTF-8 */
	CHECK(zs_json_parse(&doc, "[\"\\ud800x\",\"\\udc00\"]", 20), "lone surrogates: %s", doc.error);
	CHECK_STR(zs_json_str(&doc, zs_json_at(&doc, 0, 0)), "\xed\xa0\x80x");
	CHECK_STR(zs_json_str(&doc, zs_json_at(&doc, 0, 1)), "\xed\xb0\x80");
}

#define REL(name, cols, type) \
	"\"relation\":{\"tag\":\"relation\",\"relationOid\":1,\"schema\":\"public\",\"name\":\"" name "\"," \
	"\"rowKey\":{\"columns\":" cols ",\"type\":\"" type "\"}}"

static ZsReplica *
new_replica(int flags)
{
	char		err[256];
	ZsReplica  *r = zs_replica_open(":memory:", ZS_REPLICA_CREATE | flags, err, sizeof(err));
	ZsReplicaColumn cols[] = {
		{"id", "int8", true, false, false, -1},
		{"big", "text", false, false, false, -1},
		{"n", "int4", false, false, false, -1},
		{"f", "float8", false, false, false, -1},
		{"tags", "text[]", false, false, true, -1},
		{"mood", "mood", false, true, false, -1},
		{"c", "bpchar", false, false, false, 5},
	};
	const char *keys[] = {"id"};
	ZsReplicaTable t = {"public", "t", 7, cols, "t_pkey", 1, keys};
	ZsReplicaColumn fcols[] = {
		{"id", "int4", true, false, false, -1},
		{"label", "text", false, false, false, -1},
		{"amount", "numeric", false, false, false, -1},
	};
	ZsReplicaTable full = {"public", "full_ident", 3, fcols, "full_ident_pkey", 1, keys};
	ZsReplicaColumn icols[] = {
		{"code", "text", true, false, false, -1},
		{"region", "int4", true, false, false, -1},
		{"val", "text", false, false, false, -1},
	};
	const char *ikeys[] = {"code", "region"};
	ZsReplicaTable idx = {"app", "idx_ident", 3, icols, "idx_ident_key", 2, ikeys};

	if (r == NULL)
	{
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	CHECK(zs_replica_init(r, "0a", "[\"pub\"]", "{}"), "init: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &t), "create t: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &full), "create full: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &idx), "create idx: %s", zs_replica_error(r));
	return r;
}

static void
test_schema(void)
{
	ZsReplica  *r = new_replica(0);
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];

	CHECK(zs_replica_read_state(r, rv, sv), "read state: %s", zs_replica_error(r));
	CHECK_STR(rv, "0a");
	CHECK_STR(sv, "0a");
	CHECK_STR(query(r, "SELECT sql FROM sqlite_master WHERE name = 't'"),
			  "CREATE TABLE \"t\" (\n\"id\" \"int8|NOT_NULL\",\n\"big\" \"text\",\n\"n\" \"int4\",\n"
			  "\"f\" \"float8\",\n\"tags\" \"text[]|TEXT_ARRAY\",\n\"mood\" \"mood|TEXT_ENUM\",\n"
			  "\"c\" \"bpchar\",\n\"_0_version\" \"text\" DEFAULT '0a'\n)");
	CHECK_STR(query(r, "SELECT sql FROM sqlite_master WHERE name = 'app.idx_ident_key'"),
			  "CREATE UNIQUE INDEX \"app.idx_ident_key\" ON \"app.idx_ident\" (\"code\" ASC,\"region\" ASC)");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.column_metadata\""), "13");
	CHECK_STR(query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'c'"), "5");
	CHECK_STR(query(r, "SELECT schemaVersion FROM \"_zero.versionHistory\""), "13");
	zs_replica_close(r);
}

static void
test_changes(void)
{
	ZsReplica  *r = new_replica(ZS_REPLICA_LOG_CHANGES);

	/* insert every kind of value */
	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":9223372036854775807,"
				"\"big\":\"nul\\u0000 \\\"q\\\" \\u2028 \xe2\x82\xac \xf0\x9f\x98\x80\",\"n\":9007199254740993,\"f\":1.5,"
				"\"tags\":[\"a\",null,\"b c\"],\"mood\":\"happy\",\"c\":\"ab   \"}}"),
		  "insert: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":2,\"big\":\"x\",\"n\":1,"
				"\"f\":1e300,\"tags\":{\"type\":\"Buffer\",\"data\":[0,255]},\"mood\":null,\"c\":true}}"),
		  "insert 2: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b"), "commit: %s", zs_replica_error(r));
	CHECK(zs_replica_flush(r), "flush: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT id FROM t WHERE n = 9007199254740993"), "9223372036854775807");
	CHECK_STR(query(r, "SELECT typeof(n) || ' ' || typeof(f) || ' ' || typeof(big) FROM t WHERE id = 2"),
			  "integer real text");
	CHECK_STR(query(r, "SELECT length(CAST(big AS BLOB)) FROM t WHERE n = 9007199254740993"), "21");
	CHECK_STR(query(r, "SELECT hex(substr(CAST(big AS BLOB), 10, 3)) FROM t WHERE n = 9007199254740993"), "E280A8");
	CHECK_STR(query(r, "SELECT tags FROM t WHERE id > 2"), "[\"a\",null,\"b c\"]");
	CHECK_STR(query(r, "SELECT tags || ' ' || c FROM t WHERE id = 2"), "{\"type\":\"Buffer\",\"data\":[0,255]} 1");
	CHECK_STR(query(r, "SELECT f FROM t WHERE id = 2"), "1.0e+300");
	CHECK_STR(query(r, "SELECT group_concat(_0_version) FROM t"), "0b,0b");
	CHECK_STR(query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0b");
	CHECK_STR(query(r, "SELECT group_concat(rowKey || op, ' ') FROM \"_zero.changeLog2\""),
			  "{\"id\":9223372036854775807}s {\"id\":2}s");

	/* update without the TOAST column keeps it; delete; rollback */
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(apply(r, "{\"tag\":\"update\"," REL("t", "[\"id\"]", "default") ",\"key\":null,\"old\":null,"
				"\"new\":{\"id\":2,\"n\":5,\"f\":-0.25,\"tags\":null,\"mood\":\"sad\",\"c\":false}}"),
		  "partial update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c"), "commit");
	CHECK(zs_replica_begin(r, "0d"), "begin");
	CHECK(apply(r, "{\"tag\":\"delete\"," REL("t", "[\"id\"]", "default") ",\"key\":{\"id\":9223372036854775807},\"old\":null}"),
		  "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback");
	CHECK(zs_replica_flush(r), "flush");
	CHECK_STR(query(r, "SELECT big || n || f || coalesce(tags, '-') || mood || c || _0_version FROM t WHERE id = 2"),
			  "x5-0.25-sad00c");
	CHECK_STR(query(r, "SELECT count(*) FROM t"), "2");
	CHECK_STR(query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0c");

	/* update of a missing row inserts it; delete by key */
	CHECK(zs_replica_begin(r, "0e"), "begin");
	CHECK(apply(r, "{\"tag\":\"update\"," REL("t", "[\"id\"]", "default") ",\"key\":null,\"old\":null,\"new\":{\"id\":7,\"n\":7}}"),
		  "upsert: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"delete\"," REL("t", "[\"id\"]", "default") ",\"key\":{\"id\":9223372036854775807},\"old\":null}"),
		  "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0e") && zs_replica_flush(r), "commit");
	CHECK_STR(query(r, "SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)"), "2,7");
	CHECK_STR(query(r, "SELECT op FROM \"_zero.changeLog2\" WHERE rowKey = '{\"id\":9223372036854775807}'"), "d");

	/* FULL identity: the key holds every column, NULLs included */
	CHECK(zs_replica_begin(r, "0f"), "begin");
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"new\":{\"id\":1,\"label\":\"one\",\"amount\":null}}"), "full insert");
	CHECK(apply(r, "{\"tag\":\"update\"," REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"key\":{\"id\":1,\"label\":\"one\",\"amount\":null},"
				"\"old\":{\"id\":1,\"label\":\"one\",\"amount\":null},\"new\":{\"id\":3,\"label\":\"uno\",\"amount\":1.1}}"),
		  "full update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0f") && zs_replica_flush(r), "commit");
	CHECK_STR(query(r, "SELECT group_concat(id || label || amount) FROM full_ident"), "3uno1.1");
	CHECK_STR(query(r, "SELECT group_concat(rowKey || op, ' ') FROM \"_zero.changeLog2\" WHERE \"table\" = 'full_ident' ORDER BY pos"),
			  "{\"id\":1}d {\"id\":3}s");
	CHECK(zs_replica_begin(r, "0g"), "begin");
	CHECK(apply(r, "{\"tag\":\"delete\"," REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"key\":{\"id\":3,\"label\":\"uno\",\"amount\":1.1},\"old\":null}"), "full delete");
	CHECK(zs_replica_commit(r, "0g") && zs_replica_flush(r), "commit");
	CHECK_STR(query(r, "SELECT count(*) FROM full_ident"), "0");

	/* INDEX identity in another schema, with a key change */
	CHECK(zs_replica_begin(r, "0h"), "begin");
	CHECK(apply(r, "{\"tag\":\"insert\",\"relation\":{\"schema\":\"app\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],\"type\":\"index\"}},"
				"\"new\":{\"code\":\"b\",\"region\":2,\"val\":\"v\"}}"), "idx insert: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"update\",\"relation\":{\"schema\":\"app\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],\"type\":\"index\"}},"
				"\"key\":{\"code\":\"b\",\"region\":2},\"old\":null,\"new\":{\"code\":\"c\",\"region\":2,\"val\":null}}"), "idx update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0h") && zs_replica_flush(r), "commit");
	CHECK_STR(query(r, "SELECT group_concat(code || region || coalesce(val, '-')) FROM \"app.idx_ident\""), "c2-");

	/* truncate, and a table the replica did not have */
	CHECK(zs_replica_begin(r, "0i"), "begin");
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("later", "[\"k\"]", "default") ",\"new\":{\"k\":\"a\",\"v\":1}}"), "new table: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("later", "[\"k\"]", "default") ",\"new\":{\"k\":\"a\",\"v\":2,\"w\":3}}"), "new column: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"truncate\",\"cascade\":false,\"restartIdentity\":false,\"relations\":[{\"tag\":\"relation\",\"schema\":\"public\",\"name\":\"t\",\"rowKey\":{\"columns\":[\"id\"]}}]}"),
		  "truncate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0i") && zs_replica_flush(r), "commit");
	CHECK_STR(query(r, "SELECT count(*) FROM t"), "0");
	CHECK_STR(query(r, "SELECT group_concat(k || v || w) FROM later"), "a23");
	CHECK_STR(query(r, "SELECT group_concat(pos || rowKey || op) FROM \"_zero.changeLog2\" WHERE \"table\" = 't'"), "-10it");

	/* errors */
	CHECK(zs_replica_begin(r, "0j"), "begin");
	CHECK(!zs_replica_begin(r, "0k"), "nested begin refused");
	CHECK(!apply(r, "{\"tag\":\"insert\"," REL("t", "[\"id\"]", "default") "}"), "insert without new refused");
	CHECK(strstr(zs_replica_error(r), "new") != NULL, "error says why: %s", zs_replica_error(r));
	CHECK(!apply(r, "{\"tag\":\"create-table\"}"), "unsupported change refused");
	CHECK(!apply(r, "{\"tag\":\"delete\"," REL("t", "[\"id\"]", "default") ",\"key\":null}"), "delete without key refused");
	CHECK(!zs_replica_commit(r, "0k"), "mismatched commit refused");
	CHECK(strstr(zs_replica_error(r), "does not match") != NULL, "%s", zs_replica_error(r));
	CHECK(!zs_replica_flush(r), "flush inside a transaction refused");
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK(!apply(r, "{\"tag\":\"insert\"}"), "change outside a transaction refused");
	CHECK_STR(zs_replica_state_version(r), "0i");

	/* stream messages, as the server frames them */
	{
		const char *msgs[] = {
			"[\"begin\",{\"tag\":\"begin\"},{\"commitWatermark\":\"0m\"}]",
			"[\"data\",{\"tag\":\"insert\"," REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":42,\"n\":1}}]",
			"[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"0m\"}]",
		};

		for (int i = 0; i < 3; i++)
		{
			CHECK(zs_json_parse(&doc, msgs[i], strlen(msgs[i])), "parse message %d", i);
			CHECK(zs_replica_apply_message(r, &doc, 0) == 1, "message %d applied: %s", i, zs_replica_error(r));
			CHECK(zs_replica_in_transaction(r) == (i < 2), "in a transaction after message %d", i);
		}
		CHECK(zs_replica_flush(r), "flush");
		CHECK_STR(query(r, "SELECT n || _0_version FROM t WHERE id = 42"), "10m");
		CHECK(zs_json_parse(&doc, "[\"status\",{\"tag\":\"status\"}]", 27), "parse status");
		CHECK(zs_replica_apply_message(r, &doc, 0) == 0, "status is left to the caller");
		CHECK(zs_json_parse(&doc, "[\"begin\",{\"tag\":\"begin\"},{}]", 28), "parse bad begin");
		CHECK(zs_replica_apply_message(r, &doc, 0) == -1 &&
			  strstr(zs_replica_error(r), "commitWatermark") != NULL,
			  "begin without commitWatermark refused: %s", zs_replica_error(r));
	}
	zs_replica_close(r);
}

/*
 * REPLICA IDENTITY FULL without a key: identical rows are each changed
 * exactly as upstream changed one of them.
 */
#define DUPS(tag, rest) \
	"{\"tag\":\"" tag "\"," REL("dups", "[\"a\",\"b\",\"big\"]", "full") "," rest "}"

static void
test_keyless(void)
{
	char		err[256];
	ZsReplica  *r = zs_replica_open(":memory:", ZS_REPLICA_CREATE, err, sizeof(err));
	ZsReplicaColumn dcols[] = {
		{"a", "int4", false, false, false, -1},
		{"b", "text", false, false, false, -1},
		{"big", "text", false, false, false, -1},
	};
	ZsReplicaTable dups = {"public", "dups", 3, dcols, NULL, 0, NULL};
	ZsReplicaColumn scols[] = {
		{"RowId", "int4", false, false, false, -1},
		{"v", "text", false, false, false, -1},
	};
	ZsReplicaTable shadow = {"public", "shadow", 2, scols, NULL, 0, NULL};
	ZsReplicaColumn ocols[] = {
		{"rowid", "int4", false, false, false, -1},
		{"_rowid_", "int4", false, false, false, -1},
		{"OID", "int4", false, false, false, -1},
	};
	ZsReplicaTable hidden = {"public", "hidden", 3, ocols, NULL, 0, NULL};

	if (r == NULL)
	{
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	CHECK(zs_replica_init(r, "0a", "[\"pub\"]", "{}"), "init: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &dups), "create dups: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &shadow), "create shadow: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &hidden), "create hidden: %s", zs_replica_error(r));

	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	for (int i = 0; i < 2; i++)
	{
		CHECK(apply(r, DUPS("insert", "\"new\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"}")),
			  "insert duplicate %d: %s", i, zs_replica_error(r));
		CHECK(apply(r, DUPS("insert", "\"new\":{\"a\":2,\"b\":null,\"big\":null}")),
			  "insert NULL duplicate %d: %s", i, zs_replica_error(r));
	}
	CHECK(apply(r, DUPS("insert", "\"new\":{\"a\":3,\"b\":\"z\",\"big\":null}")), "insert 3");
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM dups"), "5");

	/* update one of two identical rows: exactly one changes */
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(apply(r, DUPS("update", "\"key\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},"
						"\"old\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},\"new\":{\"a\":1,\"b\":\"y\",\"big\":\"toast\"}")),
		  "update one duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM dups WHERE a = 1 AND b = 'y'"), "1");
	CHECK_STR(query(r, "SELECT group_concat(b || big || _0_version) FROM (SELECT * FROM dups WHERE a = 1 AND b = 'x')"),
			  "xtoast0b");
	CHECK_STR(query(r, "SELECT count(*) FROM dups WHERE a = 1"), "2");

	/* the second update (of the other row, TOAST column absent) changes it, inserts nothing */
	CHECK(zs_replica_begin(r, "0d"), "begin");
	CHECK(apply(r, DUPS("update", "\"key\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},"
						"\"old\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},\"new\":{\"a\":1,\"b\":\"y\"}")),
		  "update the other duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0d") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM dups WHERE a = 1"), "2");
	CHECK_STR(query(r, "SELECT group_concat(b || big || _0_version, ' ') FROM (SELECT * FROM dups WHERE a = 1 ORDER BY _0_version)"),
			  "ytoast0c ytoast0d");
	CHECK_STR(query(r, "SELECT count(*) FROM dups"), "5");

	/* delete one of two identical rows, NULL columns included */
	CHECK(zs_replica_begin(r, "0e"), "begin");
	CHECK(apply(r, DUPS("delete", "\"key\":{\"a\":1,\"b\":\"y\",\"big\":\"toast\"},\"old\":null")),
		  "delete one duplicate: %s", zs_replica_error(r));
	CHECK(apply(r, DUPS("delete", "\"key\":{\"a\":2,\"b\":null,\"big\":null},\"old\":null")),
		  "delete one NULL duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0e") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM dups WHERE a = 1 AND b = 'y' AND big = 'toast'"), "1");
	CHECK_STR(query(r, "SELECT count(*) FROM dups WHERE a = 2 AND b IS NULL AND big IS NULL"), "1");
	CHECK_STR(query(r, "SELECT count(*) FROM dups"), "3");

	/* an update of a NULL row; one matching nothing inserts the new row, once */
	CHECK(zs_replica_begin(r, "0f"), "begin");
	CHECK(apply(r, DUPS("update", "\"key\":{\"a\":2,\"b\":null,\"big\":null},"
						"\"old\":{\"a\":2,\"b\":null,\"big\":null},\"new\":{\"a\":2,\"b\":\"w\",\"big\":null}")),
		  "update a NULL row: %s", zs_replica_error(r));
	CHECK(apply(r, DUPS("update", "\"key\":{\"a\":9,\"b\":\"gone\",\"big\":null},"
						"\"old\":{\"a\":9,\"b\":\"gone\",\"big\":null},\"new\":{\"a\":3,\"b\":\"z\",\"big\":null}")),
		  "update of a missing row: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0f") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(a || coalesce(b, '-'), ' ') FROM (SELECT * FROM dups ORDER BY a, b)"),
			  "1y 2w 3z 3z");

	/* a column named like the rowid hides it; another alias is used */
	CHECK(zs_replica_begin(r, "0g"), "begin");
	for (int i = 0; i < 2; i++)
		CHECK(apply(r, "{\"tag\":\"insert\"," REL("shadow", "[\"RowId\",\"v\"]", "full") ",\"new\":{\"RowId\":7,\"v\":\"s\"}}"),
			  "insert shadow: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"update\"," REL("shadow", "[\"RowId\",\"v\"]", "full") ",\"key\":{\"RowId\":7,\"v\":\"s\"},"
				"\"old\":{\"RowId\":7,\"v\":\"s\"},\"new\":{\"RowId\":7,\"v\":\"t\"}}"),
		  "update shadow: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0g") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(RowId || v, ' ') FROM (SELECT * FROM shadow ORDER BY v)"), "7s 7t");
	CHECK(zs_replica_begin(r, "0h"), "begin");
	CHECK(!apply(r, "{\"tag\":\"delete\"," REL("hidden", "[\"rowid\",\"_rowid_\",\"OID\"]", "full") ",\"key\":{\"rowid\":1,\"_rowid_\":2,\"OID\":3}}"),
		  "a table whose columns hide every rowid alias is refused");
	CHECK(strstr(zs_replica_error(r), "cannot be addressed") != NULL, "%s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback");

	/* a FULL table published after the copy keeps identical rows apart too */
	CHECK(zs_replica_begin(r, "0i"), "begin");
	for (int i = 0; i < 2; i++)
		CHECK(apply(r, "{\"tag\":\"insert\"," REL("late", "[\"k\",\"v\"]", "full") ",\"new\":{\"k\":1,\"v\":\"a\"}}"),
			  "insert late %d: %s", i, zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"update\"," REL("late", "[\"k\",\"v\"]", "full") ",\"key\":{\"k\":1,\"v\":\"a\"},"
				"\"old\":{\"k\":1,\"v\":\"a\"},\"new\":{\"k\":1,\"v\":\"b\"}}"),
		  "update late: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0i") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(k || v, ' ') FROM (SELECT * FROM late ORDER BY v)"), "1a 1b");
	CHECK_STR(query(r, "SELECT count(*) FROM pragma_index_list('late')"), "0");
	zs_replica_close(r);
}

static void
test_foreign_file(void)
{
	char		err[256];
	char		path[] = "/tmp/zs_replica_test_XXXXXX";
	int			fd = mkstemp(path);
	ZsReplica  *r;
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];

	CHECK(write(fd, "this is not a database, just some text that is long enough to be read\n", 71) == 71, "write");
	close(fd);
	r = zs_replica_open(path, 0, err, sizeof(err));
	CHECK(r == NULL && strstr(err, "not a database") != NULL, "corrupt file refused: %s", err);
	unlink(path);

	r = zs_replica_open(path, ZS_REPLICA_CREATE, err, sizeof(err));
	CHECK(r != NULL, "empty file opens: %s", err);
	CHECK(!zs_replica_read_state(r, rv, sv), "an empty SQLite file is not a replica");
	CHECK(strstr(zs_replica_error(r), "not a Zero replica") != NULL, "%s", zs_replica_error(r));
	zs_replica_close(r);
	unlink(path);
	r = zs_replica_open("/nonexistent/dir/x.db", ZS_REPLICA_CREATE, err, sizeof(err));
	CHECK(r == NULL && strstr(err, "could not open") != NULL, "unopenable path: %s", err);
}

int
main(void)
{
	zs_json_doc_init(&doc);
	test_json_reader();
	test_schema();
	test_changes();
	test_keyless();
	test_foreign_file();
	zs_json_doc_free(&doc);
	return unit_report("replica");
}
