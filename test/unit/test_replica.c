/*-------------------------------------------------------------------------
 * test_replica.c
 *	  Unit tests of the JSON reader and the SQLite replica library, against
 *	  an in-memory SQLite database: row changes, and every schema change and
 *	  backfill as zero-cache 1.9.0 sent them in the golden workload
 *	  (test/golden), checked against the replica zero-cache made of them.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sqlite3.h>
#include <unistd.h>

#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "replica_fixture.h"
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

/*
 * How the apply tests parse changes: whole, as a subscriber did (first
 * pass); as the replicator reads stored changes, the relation deferred and
 * read once (second pass); as zero-stream-replica reads frames, the
 * relation of each change in a frame deferred (third pass).
 */
typedef enum
{
	PARSE_WHOLE,
	PARSE_STORED,
	PARSE_FRAMES
} ParseMode;

static ParseMode parse_mode = PARSE_WHOLE;
static bool defer_relation = false;	/* PARSE_STORED */

static bool
parse_change(const char *json)
{
	return defer_relation ? zs_json_parse_deferring(&doc, json, strlen(json), "relation") :
		zs_json_parse(&doc, json, strlen(json));
}

/* a frame's text, in a buffer grown as needed */
static char *frame_text = NULL;
static size_t frame_size = 0;

static const char *
frame_of(const char *prefix, const char *const *messages, int n, const char *suffix)
{
	size_t		need = strlen(prefix) + strlen(suffix) + 1;
	char	   *p;

	for (int i = 0; i < n; i++)
		need += strlen(messages[i]) + 1;
	if (need > frame_size)
	{
		frame_size = need * 2;
		frame_text = realloc(frame_text, frame_size);
	}
	p = frame_text + sprintf(frame_text, "%s", prefix);
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i > 0 ? "," : "", messages[i]);
	strcpy(p, suffix);
	return frame_text;
}

/*
 * Parse a frame as zero-stream-replica does; the node of its message, or
 * of its batch. Every data message's relation object is deferred, and
 * nothing else is.
 */
static int
parse_frame(const char *text, bool batch)
{
	int			node;
	int			deferred = 0;
	int			relations = 0;

	if (!zs_json_parse_deferring_at(&doc, text, strlen(text), "relation", batch ? 4 : 3))
	{
		fprintf(stderr, "bad test frame: %s\n", doc.error);
		return -1;
	}
	node = zs_json_get(&doc, 0, batch ? "batch" : "msg");
	for (int i = 0; i < doc.nnodes; i++)
		deferred += doc.nodes[i].deferred;
	for (int m = batch ? doc.nodes[node].first_child : node; m >= 0; m = batch ? doc.nodes[m].next : -1)
	{
		int			change = zs_json_at(&doc, m, 1);
		int			rel = zs_json_get(&doc, change, "relation");

		if (rel >= 0 && doc.nodes[rel].type == ZS_JSON_OBJECT)
		{
			CHECK(doc.nodes[rel].deferred, "a framed change's relation is deferred");
			relations++;
		}
	}
	CHECK(deferred == relations, "only the changes' relations are deferred (%d of %d)",
		  deferred, relations);
	return node;
}

static bool
apply(ZsReplica *r, const char *json)
{
	if (parse_mode == PARSE_FRAMES)
	{
		char	   *data = psprintf("[\"data\",%s]", json);
		int			msg;
		bool		ok;

		msg = parse_frame(frame_of("{\"id\":7,\"msg\":", (const char *const *) &data, 1, "}"), false);
		pfree(data);
		ok = msg >= 0 && zs_replica_apply_message(r, &doc, msg) == ZS_REPLICA_MESSAGE_APPLIED;
		return ok;
	}
	if (!parse_change(json))
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
	{
		/* a deferred member: its whole text, strings with brackets and quotes in it included */
		const char *change = "{\"tag\":\"x\",\"relation\":{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]},"
			"\"new\":{\"relation\":{\"z\":1}}}";
		int			rel,
					row;

		CHECK(zs_json_parse_deferring(&doc, change, strlen(change), "relation"), "deferring: %s", doc.error);
		rel = zs_json_get(&doc, 0, "relation");
		CHECK(rel > 0 && doc.nodes[rel].deferred && doc.nodes[rel].count == 0, "relation deferred");
		CHECK(doc.nodes[rel].raw_len == (int) strlen("{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]}") && strncmp(zs_json_raw(&doc, rel), "{\"s\":\"a\\\"}]\",\"n\":[1,{\"q\":2}]}", doc.nodes[rel].raw_len) == 0,
			  "deferred text <%.*s>", doc.nodes[rel].raw_len, zs_json_raw(&doc, rel));
		row = zs_json_get(&doc, 0, "new");
		CHECK(row > 0 && !doc.nodes[zs_json_get(&doc, row, "relation")].deferred, "only the root's member is deferred");
		CHECK(!zs_json_parse_deferring(&doc, change, 30, "relation") && strstr(doc.error, "unterminated") != NULL,
			  "an unterminated deferred member: %s", doc.error);
	}
	{
		/*
		 * The doc keeps the last deferred text and steps over the same
		 * bytes by comparing them: the same relation again, one that starts
		 * alike and goes on, one cut inside the kept text, one that ends
		 * right after it, and a row that is no object.
		 */
		const char *rel1 = "{\"s\":\"a}\",\"n\":[1]}";
		const char *cases[][2] = {
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":1}}", "{\"s\":\"a}\",\"n\":[1]}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":2}}", "{\"s\":\"a}\",\"n\":[1]}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1],\"m\":{\"k\":[]}},\"new\":{\"id\":3}}", "{\"s\":\"a}\",\"n\":[1],\"m\":{\"k\":[]}}"},
			{"{\"relation\":{\"s\":\"a}\",\"n\":[1]},\"new\":{\"id\":4}}", "{\"s\":\"a}\",\"n\":[1]}"},
		};

		for (int i = 0; i < (int) lengthof(cases); i++)
		{
			int			rel;

			CHECK(zs_json_parse_deferring(&doc, cases[i][0], strlen(cases[i][0]), "relation"),
				  "case %d: %s", i, doc.error);
			rel = zs_json_get(&doc, 0, "relation");
			CHECK(rel > 0 && doc.nodes[rel].deferred &&
				  doc.nodes[rel].raw_len == (int) strlen(cases[i][1]) &&
				  strncmp(zs_json_raw(&doc, rel), cases[i][1], doc.nodes[rel].raw_len) == 0,
				  "case %d: deferred text <%.*s>", i, rel > 0 ? doc.nodes[rel].raw_len : 0,
				  rel > 0 ? zs_json_raw(&doc, rel) : "");
			CHECK(zs_json_get(&doc, zs_json_get(&doc, 0, "new"), "id") > 0, "case %d: the row after it", i);
		}
		/* rel1 is kept: cut inside it, and cut right after it */
		CHECK(!zs_json_parse_deferring(&doc, cases[0][0], 20, "relation") &&
			  strstr(doc.error, "unterminated") != NULL && strstr(doc.error, "offset ") != NULL &&
			  atoi(strstr(doc.error, "offset ") + 7) <= 20,
			  "cut inside the kept text: %s", doc.error);
		CHECK(!zs_json_parse_deferring(&doc, cases[0][0], 12 + strlen(rel1), "relation") &&
			  strstr(doc.error, "unterminated object") != NULL, "cut after the kept text: %s", doc.error);
		CHECK(zs_json_parse_deferring(&doc, "{\"relation\":[1],\"x\":2}", 22, "relation") &&
			  !doc.nodes[zs_json_get(&doc, 0, "relation")].deferred, "an array is read, not deferred");
	}
	/* unpaired surrogates, which PostgreSQL's json accepts, decode to WTF-8 */
	CHECK(zs_json_parse(&doc, "[\"\\ud800x\",\"\\udc00\"]", 20), "lone surrogates: %s", doc.error);
	CHECK_STR(zs_json_str(&doc, zs_json_at(&doc, 0, 0)), "\xed\xa0\x80x");
	CHECK_STR(zs_json_str(&doc, zs_json_at(&doc, 0, 1)), "\xed\xb0\x80");
}

#define REL(name, cols, type) \
	"\"relation\":{\"tag\":\"relation\",\"relationOid\":1,\"schema\":\"public\",\"name\":\"" name "\"," \
	"\"rowKey\":{\"columns\":" cols ",\"type\":\"" type "\"}}"

/* A new in-memory replica of that replicaVersion and publications, no tables yet. */
static ZsReplica *
open_memory_replica(int flags, const char *replica_version, const char *publications)
{
	char		err[256];
	ZsReplica  *r = zs_replica_open(":memory:", ZS_REPLICA_CREATE | flags, err, sizeof(err));

	if (r == NULL)
	{
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	CHECK(zs_replica_init(r, replica_version, publications, "{}"), "init: %s", zs_replica_error(r));
	return r;
}

static ZsReplica *
new_replica(int flags)
{
	ZsReplica  *r = open_memory_replica(flags, "0a", "[\"pub\"]");

	CHECK(zs_fixture_create_tables(r, false), "create the fixture tables: %s", zs_replica_error(r));
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
	CHECK(!apply(r, "{\"tag\":\"create-table\"}"), "create-table without a spec refused");
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
			CHECK(zs_replica_apply_message(r, &doc, 0) == ZS_REPLICA_MESSAGE_APPLIED,
				  "message %d applied: %s", i, zs_replica_error(r));
			CHECK(zs_replica_in_transaction(r) == (i < 2), "in a transaction after message %d", i);
		}
		CHECK(zs_replica_flush(r), "flush");
		CHECK_STR(query(r, "SELECT n || _0_version FROM t WHERE id = 42"), "10m");
		CHECK(zs_json_parse(&doc, "[\"status\",{\"tag\":\"status\"}]", 27), "parse status");
		CHECK(zs_replica_apply_message(r, &doc, 0) == ZS_REPLICA_MESSAGE_NOT_MINE,
			  "status is left to the caller");
		CHECK(zs_json_parse(&doc, "[\"begin\",{\"tag\":\"begin\"},{}]", 28), "parse bad begin");
		CHECK(zs_replica_apply_message(r, &doc, 0) == ZS_REPLICA_MESSAGE_FAILED &&
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
	ZsReplica  *r = open_memory_replica(0, "0a", "[\"pub\"]");
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

/* ---------------------------------------------------------------- schema changes */

/*
 * zero-cache 1.9.0's own messages for T37-T59, T61 and T62 of the golden
 * workload (test/golden/changelog.jsonl; labels in changelog.labels.tsv),
 * each transaction's changes between its begin and commit.
 */
typedef struct GoldenTx
{
	const char *label;
	const char *watermark;
	const char *changes[8];
} GoldenTx;

static const GoldenTx golden[] = {
	{"T37", "61aidd8g", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25936,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"ddl_t\",\"replicaIdentity\":\"d\",\"columns\":{\"a\":{\"pos\":2,"
			"\"dflt\":\"'x'::text\",\"notNull\":true,\"typeOID\":25,\"dataType\":\"text\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null},"
			"\"b\":{\"pos\":3,\"dflt\":null,\"notNull\":false,\"typeOID\":23,\"dataType\":\"int4\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null},"
			"\"c_mood\":{\"pos\":5,\"dflt\":null,\"notNull\":false,\"typeOID\":25738,"
			"\"dataType\":\"mood\",\"pgTypeClass\":\"e\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null},\"c_ts\":{\"pos\":4,"
			"\"dflt\":\"'2000-01-01 00:00:00+00'::timestamp with time zone\",\"notNull\":false,"
			"\"typeOID\":1184,\"dataType\":\"timestamptz\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"id\":{\"pos\":1,\"dflt\":null,"
			"\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_t\","
			"\"name\":\"ddl_t_pkey\",\"unique\":true,\"isPrimaryKey\":true,\"isReplicaIdentity\":false,"
			"\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
		NULL}},
	{"T38", "61aidels", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"a\":\"one\",\"b\":1,\"c_ts\":946684800000,\"c_mood\":\"ok\"}}",
		NULL}},
	{"T39", "61aigca8", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":{\"name\":\"c\",\"spec\":{\"pos\":6,\"dflt\":\"'dflt'::text\",\"notNull\":false,"
			"\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
		NULL}},
	{"T40", "61aigclc", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"a\":\"two\",\"b\":2,\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\"}}",
		NULL}},
	{"T41", "61aihjk0", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":{\"name\":\"d\",\"spec\":{\"pos\":7,\"dflt\":\"42\",\"notNull\":true,"
			"\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
		NULL}},
	{"T42", "61aihjvc", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":3,\"a\":\"three\",\"b\":3,\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":43}}",
		NULL}},
	{"T43", "61aiipo0", {
			"{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":\"b\"}",
		NULL}},
	{"T44", "61aiipvs", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":4,\"a\":\"four\",\"c_ts\":946684800000,\"c_mood\":null,\"c\":\"dflt\","
			"\"d\":42}}",
		NULL}},
	{"T45", "61aijv0g", {
			"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"old\":{\"name\":\"a\",\"spec\":{\"pos\":2,\"dflt\":\"'x'::text\",\"notNull\":true,"
			"\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"new\":{\"name\":\"a_renamed\",\"spec\":{\"pos\":2,"
			"\"dflt\":\"'x'::text\",\"notNull\":true,\"typeOID\":25,\"dataType\":\"text\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}}}",
		NULL}},
	{"T46", "61aijv7c", {
			"{\"tag\":\"update\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},\"key\":null,"
			"\"old\":null,\"new\":{\"id\":1,\"a_renamed\":\"one (renamed column)\",\"c_ts\":946684800000,"
			"\"c_mood\":\"ok\",\"c\":\"dflt\",\"d\":42}}",
		NULL}},
	{"T47", "61ail1mo", {
			"{\"tag\":\"rename-table\",\"old\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"new\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"}}",
		NULL}},
	{"T48", "61ail1x4", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":5,\"a_renamed\":\"five\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":42}}",
		NULL}},
	{"T49", "61aim9p4", {
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_renamed\","
			"\"name\":\"ddl_renamed_c_d_idx\",\"unique\":false,\"isPrimaryKey\":false,"
			"\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"c\":\"DESC\","
			"\"d\":\"ASC\"}}}",
		NULL}},
	{"T50", "61aima40", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":6,\"a_renamed\":\"six\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"indexed\",\"d\":42}}",
		NULL}},
	{"T51", "61aing3s", {
			"{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_renamed_c_d_idx\"}}",
		NULL}},
	{"T52", "61aingcg", {
			"{\"tag\":\"delete\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"key\":{\"id\":6},\"old\":null}",
		NULL}},
	{"T53", "61aipg2o", {
			"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"},"
			"\"old\":{\"name\":\"d\",\"spec\":{\"pos\":7,\"dflt\":\"42\",\"notNull\":true,\"typeOID\":23,"
			"\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"new\":{\"name\":\"d\",\"spec\":{\"pos\":7,"
			"\"dflt\":\"42\",\"notNull\":true,\"typeOID\":20,\"dataType\":\"int8\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}}}",
		NULL}},
	{"T54", "61aipim0", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":7,\"a_renamed\":\"seven\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":9007199254740993}}",
		NULL}},
	{"T55", "61aiqtxs", {
			"{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_t_pkey\"}}",
			"{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"}}",
		NULL}},
	{"T56", "61aiqvco", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25762,"
			"\"schema\":\"public\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],"
			"\"type\":\"index\"},\"keyColumns\":[\"code\",\"region\"],\"replicaIdentity\":\"index\"},"
			"\"new\":{\"code\":\"after-drop\",\"region\":1,\"val\":\"dml after DROP TABLE\"}}",
		NULL}},
	{"T57", "61aitbxk", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25969,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"ddl_tx\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,\"dflt\":null,"
			"\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"v\":{\"pos\":2,\"dflt\":null,"
			"\"notNull\":false,\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_tx\","
			"\"name\":\"ddl_tx_pkey\",\"unique\":true,\"isPrimaryKey\":true,\"isReplicaIdentity\":false,"
			"\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"v\":\"a\"}}",
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_tx\"},"
			"\"column\":{\"name\":\"w\",\"spec\":{\"pos\":3,\"dflt\":null,\"notNull\":false,"
			"\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"v\":\"b\",\"w\":2}}",
			"{\"tag\":\"update\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},\"key\":null,"
			"\"old\":null,\"new\":{\"id\":1,\"v\":\"a\",\"w\":1}}",
		NULL}},
	{"T58", "61aiujf4", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"},"
			"\"column\":{\"name\":\"created_at\",\"spec\":{\"pos\":5,\"dflt\":null,\"notNull\":false,"
			"\"typeOID\":1184,\"dataType\":\"timestamptz\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},"
			"\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":25755,"
			"\"rowKey\":{\"id\":{\"attNum\":1}}},\"backfill\":{\"attNum\":5}}",
		NULL}},
	{"BACKFILL", "61aiujf4.01", {
			"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
			"\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
			"\"rowValues\":[[3,1795991645610.779],[10,1795991645610.779]],\"status\":{\"rows\":2,"
			"\"totalRows\":2,\"totalBytes\":24}}",
		NULL}},
	{"BACKFILL", "61aiul74", {
			"{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
			"\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
			"\"status\":{\"rows\":2,\"totalRows\":2,\"totalBytes\":24}}",
		NULL}},
	{"T59", "61aiun0w", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25755,"
			"\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"id\",\"label\","
			"\"amount\",\"tags\",\"created_at\"],\"type\":\"full\"},\"keyColumns\":[\"id\",\"label\","
			"\"amount\",\"tags\",\"created_at\"],\"replicaIdentity\":\"full\"},\"new\":{\"id\":20,"
			"\"label\":\"after volatile default\",\"amount\":null,\"tags\":null,"
			"\"created_at\":1795991650656.714}}",
		NULL}},
	{"T61", "61aivz88", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25977,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"geo_point\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,"
			"\"dflt\":null,\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"p\":{\"pos\":2,\"dflt\":null,"
			"\"notNull\":false,\"typeOID\":600,\"dataType\":\"point\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":\"b\",\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25977,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"geo_point\","
			"\"name\":\"geo_point_pkey\",\"unique\":true,\"isPrimaryKey\":true,"
			"\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
		NULL}},
	{"T62", "61aiw06w", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"p\":\"(1.5,-2)\"}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"p\":\"(-1e+300,1e-300)\"}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":3,\"p\":null}}",
		NULL}},
};

/* Apply one transaction as the stream carries it: begin, ["data", change]..., commit. */
static bool
apply_tx(ZsReplica *r, const char *watermark, const char *const *changes)
{
	char		msg[8192];

	if (parse_mode == PARSE_FRAMES)
	{
		/* one batch frame: begin, ["data", change]..., commit */
		int			n = 0,
					batch;
		char	  **messages;
		bool		ok = true;

		while (changes[n] != NULL)
			n++;
		messages = malloc(sizeof(char *) * (n + 2));
		messages[0] = psprintf("[\"begin\",{\"tag\":\"begin\",\"json\":\"s\"},{\"commitWatermark\":\"%s\"}]",
							   watermark);
		for (int i = 0; i < n; i++)
			messages[i + 1] = psprintf("[\"data\",%s]", changes[i]);
		messages[n + 1] = psprintf("[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"%s\"}]", watermark);
		batch = parse_frame(frame_of("{\"id\":9,\"batch\":[", (const char *const *) messages, n + 2, "]}"),
							true);
		ok = batch >= 0;
		for (int m = ok ? doc.nodes[batch].first_child : -1; ok && m >= 0; m = doc.nodes[m].next)
			ok = zs_replica_apply_message(r, &doc, m) == ZS_REPLICA_MESSAGE_APPLIED;
		for (int i = 0; i < n + 2; i++)
			pfree(messages[i]);
		free(messages);
		if (!ok)
		{
			if (zs_replica_in_transaction(r))
				(void) zs_replica_rollback(r);
			return false;
		}
		return zs_replica_flush(r);
	}
	if (defer_relation)
	{
		/* as the replicator applies stored changes */
		if (!zs_replica_begin(r, watermark))
			return false;
		for (int i = 0; changes[i] != NULL; i++)
			if (!parse_change(changes[i]) || !zs_replica_apply_change(r, &doc, 0))
			{
				(void) zs_replica_rollback(r);
				return false;
			}
		return zs_replica_commit(r, watermark) && zs_replica_flush(r);
	}
	snprintf(msg, sizeof(msg), "[\"begin\",{\"tag\":\"begin\",\"json\":\"s\"},{\"commitWatermark\":\"%s\"}]", watermark);
	if (!zs_json_parse(&doc, msg, strlen(msg)) ||
		zs_replica_apply_message(r, &doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		return false;
	for (int i = 0; changes[i] != NULL; i++)
	{
		snprintf(msg, sizeof(msg), "[\"data\",%s]", changes[i]);
		if (!zs_json_parse(&doc, msg, strlen(msg)))
		{
			fprintf(stderr, "bad test JSON: %s\n", doc.error);
			return false;
		}
		if (zs_replica_apply_message(r, &doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		{
			(void) zs_replica_rollback(r);
			return false;
		}
	}
	snprintf(msg, sizeof(msg), "[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"%s\"}]", watermark);
	if (!zs_json_parse(&doc, msg, strlen(msg)) ||
		zs_replica_apply_message(r, &doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		return false;
	return zs_replica_flush(r);
}

/* Apply the golden transactions after the last one applied, through label. */
static int	golden_next;

static void
apply_golden(ZsReplica *r, const char *label)
{
	for (; golden_next < (int) lengthof(golden); golden_next++)
	{
		const GoldenTx *tx = &golden[golden_next];

		CHECK(apply_tx(r, tx->watermark, tx->changes), "golden %s (%s): %s",
			  tx->label, tx->watermark, zs_replica_error(r));
		if (strcmp(tx->label, label) == 0)
		{
			golden_next++;
			return;
		}
	}
	CHECK(false, "no golden transaction %s", label);
}

/* A transaction of one change, or several, as the stream carries it */
static bool
apply1(ZsReplica *r, const char *watermark, const char *change)
{
	const char *changes[] = {change, NULL};

	return apply_tx(r, watermark, changes);
}

/* The replica zero-cache started from (replica-initial-dump.txt), in part. */
static ZsReplica *
golden_replica(int flags)
{
	ZsReplica  *r = open_memory_replica(flags, "61ai84s8", "[\"zc_pub\"]");
	ZsReplicaColumn fcols[] = {
		{"id", "int4", true, false, false, -1},
		{"label", "text", false, false, false, -1},
		{"amount", "numeric", false, false, false, -1},
		{"tags", "text[]", false, false, true, -1},
	};
	const char *fkeys[] = {"id"};
	ZsReplicaTable full = {"public", "full_ident", 4, fcols, "full_ident_pkey", 1, fkeys};
	ZsReplicaColumn icols[] = {
		{"code", "text", true, false, false, -1},
		{"region", "int4", true, false, false, -1},
		{"val", "text", false, false, false, -1},
	};
	const char *ikeys[] = {"code", "region"};
	ZsReplicaTable idx = {"public", "idx_ident", 3, icols, "idx_ident_key", 2, ikeys};

	CHECK(zs_replica_begin(r, "61ai84s8"), "begin copy");
	CHECK(zs_replica_create_table(r, &full), "create full_ident: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &idx), "create idx_ident: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "61ai84s8") && zs_replica_flush(r), "commit copy");
	/* the two full_ident rows zero backfills in the golden run */
	CHECK(apply1(r, "61ai8tnk", "{\"tag\":\"insert\"," REL("full_ident", "[\"id\"]", "default")
				 ",\"new\":{\"id\":3,\"label\":\"two\",\"amount\":null,\"tags\":[]}}"), "row 3: %s", zs_replica_error(r));
	CHECK(apply1(r, "61ai9gfs", "{\"tag\":\"insert\"," REL("full_ident", "[\"id\"]", "default")
				 ",\"new\":{\"id\":10,\"label\":\"multi\",\"amount\":0.5,\"tags\":[\"x\"]}}"), "row 10: %s", zs_replica_error(r));
	return r;
}

#define TABLE_SQL(name) "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '" name "'"
#define INDEX_SQL(name) "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = '" name "'"
#define COLUMN_METADATA(table) \
	"SELECT group_concat(column_name || ':' || upstream_type || is_not_null || is_enum || is_array || " \
	"coalesce(character_max_length, '-') || coalesce(backfill, '-'), ' ') FROM " \
	"(SELECT * FROM \"_zero.column_metadata\" WHERE table_name = '" table "' ORDER BY rowid)"
#define TABLE_METADATA(table) \
	"SELECT \"schema\" || '.' || \"table\" || ' ' || minRowVersion || ' ' || coalesce(upstreamMetadata, 'NULL') " \
	"|| ' ' || coalesce(metadata, 'NULL') FROM \"_zero.tableMetadata\" WHERE \"table\" = '" table "'"
#define COLUMNS(table) "SELECT group_concat(name) FROM pragma_table_info('" table "')"

/* T37-T47: create-table, create-index, add-column, drop-column, update-column (rename), rename-table */
static void
test_golden_tables(ZsReplica *r)
{
	apply_golden(r, "T37");
	CHECK_STR(query(r, TABLE_SQL("ddl_t")),
			  "CREATE TABLE \"ddl_t\" (\n\"id\" \"int4|NOT_NULL\",\n\"a\" \"text|NOT_NULL\",\n\"b\" \"int4\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"text\"\n)");
	CHECK_STR(query(r, INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_t\" (\"id\" ASC)");
	CHECK_STR(query(r, COLUMN_METADATA("ddl_t")),
			  "a:text100-- b:int4000-- c_mood:mood010-- c_ts:timestamptz000-- id:int4100--");
	CHECK_STR(query(r, TABLE_METADATA("ddl_t")),
			  "public.ddl_t 00 {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(query(r, "SELECT group_concat(pos || \"table\" || rowKey || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aidd8g'"),
			  "-1ddl_t61aidd8gr");

	/* ADD COLUMN with a constant default, then NOT NULL with a numeric one */
	apply_golden(r, "T41");
	CHECK_STR(query(r, TABLE_SQL("ddl_t")),
			  "CREATE TABLE \"ddl_t\" (\n\"id\" \"int4|NOT_NULL\",\n\"a\" \"text|NOT_NULL\",\n\"b\" \"int4\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"text\"\n"
			  ", \"c\" \"text\" DEFAULT 'dflt', \"d\" \"int4|NOT_NULL\" DEFAULT 42)");
	CHECK_STR(query(r, "SELECT group_concat(id || c || d || _0_version, ' ') FROM (SELECT * FROM ddl_t ORDER BY id)"),
			  "1dflt4261aidels 2dflt4261aigclc");
	CHECK_STR(query(r, COLUMN_METADATA("ddl_t")),
			  "a:text100-- b:int4000-- c_mood:mood010-- c_ts:timestamptz000-- id:int4100-- c:text000-- d:int4100--");
	CHECK_STR(query(r, TABLE_METADATA("ddl_t")),
			  "public.ddl_t 61aihjk0 {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");

	apply_golden(r, "T43");		/* DROP COLUMN b */
	CHECK_STR(query(r, COLUMNS("ddl_t")), "id,a,c_ts,c_mood,_0_version,c,d");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE table_name = 'ddl_t' AND column_name = 'b'"), "0");
	CHECK_STR(query(r, "SELECT group_concat(id || '/' || d) FROM (SELECT * FROM ddl_t ORDER BY id)"), "1/42,2/42,3/43");

	apply_golden(r, "T46");		/* RENAME COLUMN a, then an update using the new name */
	CHECK_STR(query(r, COLUMNS("ddl_t")), "id,a_renamed,c_ts,c_mood,_0_version,c,d");
	CHECK_STR(query(r, "SELECT column_name || upstream_type || is_not_null FROM \"_zero.column_metadata\" "
					"WHERE table_name = 'ddl_t' AND column_name LIKE 'a%'"), "a_renamedtext1");
	CHECK_STR(query(r, "SELECT a_renamed FROM ddl_t WHERE id = 1"), "one (renamed column)");
	CHECK_STR(query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'ddl_t'"), "61aijv0g");

	apply_golden(r, "T48");		/* RENAME TABLE: the metadata follows, the index stays */
	CHECK_STR(query(r, "SELECT group_concat(name) FROM sqlite_master WHERE name LIKE 'ddl%'"), "ddl_renamed,ddl_t_pkey");
	CHECK_STR(query(r, INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_renamed\" (\"id\" ASC)");
	CHECK_STR(query(r, TABLE_METADATA("ddl_renamed")),
			  "public.ddl_renamed 61ail1mo {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(query(r, "SELECT group_concat(DISTINCT table_name) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'ddl%'"),
			  "ddl_renamed");
	/* zero logs the reset of the new name, then of the old one in its place */
	CHECK_STR(query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61ail1mo'"),
			  "ddl_tr");
	CHECK_STR(query(r, "SELECT count(*) FROM ddl_renamed"), "5");
}

/* T49-T56: create-index (DESC), drop-index, ALTER COLUMN TYPE, drop-table */
static void
test_golden_indexes(ZsReplica *r)
{
	apply_golden(r, "T49");
	CHECK_STR(query(r, INDEX_SQL("ddl_renamed_c_d_idx")),
			  "CREATE INDEX \"ddl_renamed_c_d_idx\" ON \"ddl_renamed\" (\"c\" DESC,\"d\" ASC)");
	CHECK_STR(query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aim9p4'"),
			  "ddl_renamedr");
	apply_golden(r, "T51");
	CHECK_STR(query(r, "SELECT count(*) FROM sqlite_master WHERE name = 'ddl_renamed_c_d_idx'"), "0");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aing3s'"), "0");

	/*
	 * int4 -> int8: the table is built again, defaults kept but the changed
	 * column's, the other columns declared as SQLite reports them (a declared
	 * "text" as "TEXT"), as zero's rebuild declares them
	 */
	apply_golden(r, "T53");
	CHECK_STR(query(r, TABLE_SQL("ddl_renamed")),
			  "CREATE TABLE \"ddl_renamed\" (\n\"id\" \"int4|NOT_NULL\",\n\"a_renamed\" \"text|NOT_NULL\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"TEXT\",\n"
			  "\"c\" \"TEXT\" DEFAULT 'dflt',\n\"d\" \"int8|NOT_NULL\"\n)");
	CHECK_STR(query(r, INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_renamed\" (\"id\" ASC)");
	CHECK_STR(query(r, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'tmp.%'"), "0");
	CHECK_STR(query(r, "SELECT group_concat(id || a_renamed || d || _0_version, ' ') FROM (SELECT * FROM ddl_renamed ORDER BY id)"),
			  "1one (renamed column)4261aijv7c 2two4261aigclc 3three4361aihjvc 4four4261aiipvs 5five4261ail1x4");
	CHECK_STR(query(r, "SELECT upstream_type || is_not_null FROM \"_zero.column_metadata\" WHERE table_name = 'ddl_renamed' AND column_name = 'd'"),
			  "int81");
	CHECK_STR(query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'ddl_renamed'"), "61aipg2o");
	apply_golden(r, "T54");
	CHECK_STR(query(r, "SELECT d || typeof(d) FROM ddl_renamed WHERE id = 7"), "9007199254740993integer");

	apply_golden(r, "T56");		/* drop-index, drop-table */
	CHECK_STR(query(r, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'ddl%'"), "0");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'ddl%'"), "0");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.tableMetadata\" WHERE \"table\" LIKE 'ddl%'"), "0");
	CHECK_STR(query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aiqtxs'"),
			  "ddl_renamedr");
}

/* T57-T62: DDL and DML in one transaction, a backfill, a point column */
static void
test_golden_backfill(ZsReplica *r)
{
	apply_golden(r, "T57");
	CHECK_STR(query(r, TABLE_SQL("ddl_tx")),
			  "CREATE TABLE \"ddl_tx\" (\n\"id\" \"int4|NOT_NULL\",\n\"v\" \"text\",\n\"_0_version\" \"text\"\n, \"w\" \"int4\")");
	CHECK_STR(query(r, INDEX_SQL("ddl_tx_pkey")), "CREATE UNIQUE INDEX \"ddl_tx_pkey\" ON \"ddl_tx\" (\"id\" ASC)");
	CHECK_STR(query(r, "SELECT group_concat(id || v || w || _0_version, ' ') FROM (SELECT * FROM ddl_tx ORDER BY id)"),
			  "1a161aitbxk 2b261aitbxk");
	CHECK_STR(query(r, COLUMN_METADATA("ddl_tx")), "id:int4100-- v:text000-- w:int4000--");

	/* ADD COLUMN ... DEFAULT now(): typed, backfilling, no version bump yet */
	apply_golden(r, "T58");
	CHECK_STR(query(r, TABLE_SQL("full_ident")),
			  "CREATE TABLE \"full_ident\" (\n\"id\" \"int4|NOT_NULL\",\n\"label\" \"text\",\n\"amount\" \"numeric\",\n"
			  "\"tags\" \"text[]|TEXT_ARRAY\",\n\"_0_version\" \"text\" DEFAULT '61ai84s8'\n, \"created_at\" \"timestamptz\")");
	CHECK_STR(query(r, COLUMN_METADATA("full_ident")),
			  "id:int4100-- label:text000-- amount:numeric000-- tags:text[]001-- created_at:timestamptz000-{\"attNum\":5}");
	CHECK_STR(query(r, TABLE_METADATA("full_ident")),
			  "public.full_ident 00 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aiujf4'"), "0");

	apply_golden(r, "BACKFILL");
	CHECK_STR(query(r, "SELECT group_concat(id || ' ' || created_at || ' ' || typeof(created_at) || ' ' || _0_version, ', ') "
					"FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "3 1795991645610.78 real 61ai8tnk, 10 1795991645610.78 real 61ai9gfs");
	CHECK_STR(query(r, "SELECT count(*) FROM full_ident WHERE created_at = 1795991645610.779"), "2");
	apply_golden(r, "BACKFILL");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE backfill IS NOT NULL"), "0");
	CHECK_STR(query(r, TABLE_METADATA("full_ident")),
			  "public.full_ident 61aiul74 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	apply_golden(r, "T59");
	CHECK_STR(query(r, "SELECT label || _0_version FROM full_ident WHERE id = 20 AND created_at = 1795991650656.714"),
			  "after volatile default61aiun0w");

	/* zero's replica-dump.txt: the changeLog2 rows of T37-T59 and both tableMetadata rows */
	CHECK_STR(query(r, "SELECT group_concat(stateVersion || ' ' || pos || ' ' || \"table\" || ' ' || "
					"CASE WHEN op IN ('r', 't') THEN '-' ELSE rowKey END || ' ' || op || backfillingColumnVersions, '|') "
					"FROM (SELECT * FROM \"_zero.changeLog2\" WHERE stateVersion >= '61aidd8g' ORDER BY stateVersion, pos)"),
			  "61aidd8g -1 ddl_t - r{}|61aigca8 -1 ddl_t - r{}|61aigclc 0 ddl_t {\"id\":2} s{}|"
			  "61aihjk0 -1 ddl_t - r{}|61aihjvc 0 ddl_t {\"id\":3} s{}|61aiipo0 -1 ddl_t - r{}|"
			  "61aiipvs 0 ddl_t {\"id\":4} s{}|61aijv0g -1 ddl_t - r{}|61aijv7c 0 ddl_t {\"id\":1} s{}|"
			  "61ail1mo -1 ddl_t - r{}|61ail1x4 0 ddl_renamed {\"id\":5} s{}|61aim9p4 -1 ddl_renamed - r{}|"
			  "61aingcg 0 ddl_renamed {\"id\":6} d{}|61aipg2o -1 ddl_renamed - r{}|"
			  "61aipim0 0 ddl_renamed {\"id\":7} s{}|61aiqtxs -1 ddl_renamed - r{}|"
			  "61aiqvco 0 idx_ident {\"code\":\"after-drop\",\"region\":1} s{}|61aitbxk -1 ddl_tx - r{}|"
			  "61aitbxk 1 ddl_tx {\"id\":2} s{}|61aitbxk 2 ddl_tx {\"id\":1} s{}|"
			  "61aiul74 -1 full_ident - r{}|61aiun0w 0 full_ident {\"id\":20} s{}");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE op = 'r' AND rowKey <> stateVersion"), "0");
	CHECK_STR(query(r, "SELECT group_concat(\"schema\" || '.' || \"table\" || ' ' || minRowVersion || ' ' || upstreamMetadata, '|') "
					"FROM (SELECT * FROM \"_zero.tableMetadata\" ORDER BY \"table\")"),
			  "public.ddl_tx 61aitbxk {\"schemaOID\":2200,\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}|"
			  "public.full_ident 61aiul74 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}}");
	CHECK_STR(query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "61aiun0w");

	/* a scalar point (its type has an element type): declared "point", not an array */
	apply_golden(r, "T62");
	CHECK_STR(query(r, TABLE_SQL("geo_point")),
			  "CREATE TABLE \"geo_point\" (\n\"id\" \"int4|NOT_NULL\",\n\"p\" \"point\",\n\"_0_version\" \"text\"\n)");
	CHECK_STR(query(r, COLUMN_METADATA("geo_point")), "id:int4100-- p:point000--");
	CHECK_STR(query(r, "SELECT group_concat(id || coalesce(p, '-'), ' ') FROM (SELECT * FROM geo_point ORDER BY id)"),
			  "1(1.5,-2) 2(-1e+300,1e-300) 3-");
}

static void
test_golden_schema_changes(void)
{
	ZsReplica  *r = golden_replica(ZS_REPLICA_LOG_CHANGES);

	golden_next = 0;
	test_golden_tables(r);
	test_golden_indexes(r);
	test_golden_backfill(r);
	CHECK(golden_next == (int) lengthof(golden), "every golden transaction applied");
	zs_replica_close(r);

	/* a backup replica (no change log) gets the same tables, and no changeLog2 rows */
	r = golden_replica(0);
	golden_next = 0;
	apply_golden(r, "T62");
	CHECK_STR(query(r, TABLE_SQL("ddl_tx")),
			  "CREATE TABLE \"ddl_tx\" (\n\"id\" \"int4|NOT_NULL\",\n\"v\" \"text\",\n\"_0_version\" \"text\"\n, \"w\" \"int4\")");
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\""), "0");
	CHECK_STR(query(r, "SELECT group_concat(id || created_at, ' ') FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "31795991645610.78 101795991645610.78 201795991650656.71");
	CHECK_STR(query(r, "SELECT group_concat(\"table\" || minRowVersion) FROM \"_zero.tableMetadata\""),
			  "ddl_tx61aitbxk,full_ident61aiul74,geo_point00");
	zs_replica_close(r);
}

#define FULL_REL(cols) \
	"\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":" cols ",\"type\":\"default\"}}"

/*
 * A backfill of a column that replicated changes wrote after the backfill's
 * snapshot: those values stay, deleted rows stay deleted (a backup replica,
 * which logs row changes only while the table has columns being backfilled).
 */
static void
test_backfill_newer_changes(void)
{
	ZsReplica  *r = golden_replica(0);

	CHECK(apply1(r, "61aiu000", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":11,\"label\":\"eleven\"}}") &&
		  apply1(r, "61aiu001", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":12,\"label\":\"twelve\"}}"),
		  "rows 11, 12: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\""), "0");
	golden_next = 0;
	while (strcmp(golden[golden_next].label, "T58") != 0)
		golden_next++;
	apply_golden(r, "T58");		/* add-column created_at with a backfill */

	/* before the snapshot (61aiul74): row 11's value is older than the backfill's */
	CHECK(apply1(r, "61aiuk00", "{\"tag\":\"update\"," FULL_REL("[\"id\"]") ",\"key\":null,"
				 "\"new\":{\"id\":11,\"label\":\"eleven\",\"created_at\":111}}"), "update 11: %s", zs_replica_error(r));
	/* after it: row 10's value, row 3 without the column (unchanged TOAST), row 12 deleted, row 13 new */
	{
		const char *changes[] = {
			"{\"tag\":\"update\"," FULL_REL("[\"id\"]") ",\"key\":null,\"new\":{\"id\":10,\"label\":\"newer\",\"created_at\":999}}",
			"{\"tag\":\"update\"," FULL_REL("[\"id\"]") ",\"key\":null,\"new\":{\"id\":3,\"label\":\"three\"}}",
			"{\"tag\":\"delete\"," FULL_REL("[\"id\"]") ",\"key\":{\"id\":12}}",
			"{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":13,\"label\":\"new\",\"created_at\":1313}}",
			NULL
		};

		CHECK(apply_tx(r, "61aium00", changes), "newer changes: %s", zs_replica_error(r));
	}
	CHECK_STR(query(r, "SELECT group_concat(stateVersion || rowKey || op || backfillingColumnVersions, ' ') "
					"FROM (SELECT * FROM \"_zero.changeLog2\" ORDER BY stateVersion, pos)"),
			  "61aiuk00{\"id\":11}s{\"created_at\":\"61aiuk00\"} 61aium00{\"id\":10}s{\"created_at\":\"61aium00\"} "
			  "61aium00{\"id\":3}s{} 61aium00{\"id\":12}d{} 61aium00{\"id\":13}s{\"created_at\":\"61aium00\"}");

	/* the backfill, at the snapshot 61aiul74, in a transaction of its own */
	CHECK(apply1(r, "61aium00.01", "{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
				 "\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
				 "\"rowValues\":[[3,100],[10,100],[11,100],[12,100],[14,100]],\"status\":{\"rows\":5,\"totalRows\":5}}"),
		  "backfill: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(id || ':' || coalesce(label, '-') || ':' || coalesce(created_at, '-') || ':' || _0_version, ' ') "
					"FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "3:three:100:61aium00 10:newer:999:61aium00 11:eleven:100:61aiuk00 13:new:1313:61aium00 14:-:100:61aiul74");
	CHECK_STR(query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "61aium00.01");

	/* completed: no longer backfilling, versions bumped, row changes no longer logged */
	CHECK(apply1(r, "61aiun00", "{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
				 "\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\"}"),
		  "backfill-completed: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT coalesce(backfill, 'NULL') FROM \"_zero.column_metadata\" WHERE column_name = 'created_at'"), "NULL");
	CHECK_STR(query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'full_ident'"), "61aiun00");
	CHECK(apply1(r, "61aiun01", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":15,\"created_at\":1}}"),
		  "insert after: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion >= '61aiun00'"), "0");
	zs_replica_close(r);
}

#define ADD_COLUMN(table, col, spec) \
	"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"" table "\"}," \
	"\"column\":{\"name\":\"" col "\",\"spec\":" spec "}}"
#define SPEC(type, extra) "{\"pos\":9,\"dataType\":\"" type "\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null" extra "}"

/* Defaults zero keeps, NOT NULL changes, indexed columns, other schemas, rollback. */
static void
test_schema_change_details(void)
{
	ZsReplica  *r = golden_replica(ZS_REPLICA_LOG_CHANGES);
	const char *adds[] = {
		ADD_COLUMN("idx_ident", "n", SPEC("numeric", ",\"dflt\":\"-1.5\"")),
		ADD_COLUMN("idx_ident", "b", SPEC("bool", ",\"dflt\":\"true\",\"notNull\":true")),
		ADD_COLUMN("idx_ident", "q", SPEC("text", ",\"dflt\":\"'it''s'::text\"")),
		ADD_COLUMN("idx_ident", "ea", "{\"pos\":9,\"dataType\":\"int4[]\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":\"b\","
				   "\"dflt\":\"ARRAY[]::integer[]\"}"),
		ADD_COLUMN("idx_ident", "el", "{\"pos\":9,\"dataType\":\"mood[]\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":\"e\","
				   "\"dflt\":\"'{}'::mood[]\"}"),
		ADD_COLUMN("idx_ident", "vc", SPEC("varchar", ",\"characterMaximumLength\":7")),
		"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"idx_ident\",\"name\":\"idx_q\","
		"\"unique\":false,\"columns\":{\"q\":\"ASC\",\"val\":\"DESC\"}}}",
		NULL
	};

	CHECK(apply1(r, "61b00001", "{\"tag\":\"insert\"," REL("idx_ident", "[\"code\",\"region\"]", "index")
				 ",\"new\":{\"code\":\"a\",\"region\":1,\"val\":\"v\"}}"), "row: %s", zs_replica_error(r));
	CHECK(apply_tx(r, "61b00002", adds), "add columns: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(name || '=' || coalesce(dflt_value, '-'), ' ') FROM pragma_table_info('idx_ident')"),
			  "code=- region=- val=- _0_version='61ai84s8' n=-1.5 b=1 q='it''s' ea='[]' el='[]' vc=-");
	CHECK_STR(query(r, "SELECT group_concat(type, ' ') FROM pragma_table_info('idx_ident') WHERE cid > 3"),
			  "numeric bool|NOT_NULL TEXT int4[]|TEXT_ARRAY mood[]|TEXT_ENUM|TEXT_ARRAY varchar");
	CHECK_STR(query(r, "SELECT n || b || q || ea || el FROM idx_ident"), "-1.51it's[][]");
	CHECK_STR(query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'vc'"), "7");

	/* NOT NULL dropped from q: a new declared type, so the table is built again with its indexes */
	CHECK(apply1(r, "61b00003", "{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},"
				 "\"old\":{\"name\":\"q\",\"spec\":" SPEC("text", ",\"notNull\":false") "},"
				 "\"new\":{\"name\":\"q2\",\"spec\":" SPEC("text", ",\"notNull\":true") "}}"),
		  "update-column: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('idx_ident') WHERE name LIKE 'q%' OR name = 'n'"),
			  "n numeric, q2 text|NOT_NULL");
	CHECK_STR(query(r, INDEX_SQL("idx_q")), "CREATE INDEX \"idx_q\" ON \"idx_ident\" (\"q2\" ASC,\"val\" DESC)");
	CHECK_STR(query(r, INDEX_SQL("idx_ident_key")), "CREATE UNIQUE INDEX \"idx_ident_key\" ON \"idx_ident\" (\"code\" ASC,\"region\" ASC)");
	CHECK_STR(query(r, "SELECT q2 || _0_version FROM idx_ident"), "it's61b00001");
	CHECK_STR(query(r, "SELECT column_name || is_not_null FROM \"_zero.column_metadata\" WHERE column_name LIKE 'q%'"), "q21");
	/* a new default only: metadata, no version bump */
	CHECK(apply1(r, "61b00004", "{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},"
				 "\"old\":{\"name\":\"vc\",\"spec\":" SPEC("varchar", ",\"characterMaximumLength\":7") "},"
				 "\"new\":{\"name\":\"vc\",\"spec\":" SPEC("varchar", ",\"characterMaximumLength\":9,\"dflt\":\"'x'::text\"") "}}"),
		  "update-column metadata: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'vc'"), "9");
	CHECK_STR(query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'idx_ident'"), "61b00003");

	/* dropping an indexed column drops its index first */
	CHECK(apply1(r, "61b00005", "{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},\"column\":\"q2\"}"),
		  "drop indexed column: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(name) FROM pragma_index_list('idx_ident')"), "idx_ident_key");

	/* another schema: "schema.name" for the table and its index */
	CHECK(apply1(r, "61b00006", "{\"tag\":\"create-table\",\"spec\":{\"schema\":\"app\",\"name\":\"t2\",\"columns\":{"
				 "\"k\":{\"pos\":1,\"dataType\":\"uuid\",\"pgTypeClass\":\"b\",\"notNull\":true}}},"
				 "\"backfill\":{\"k\":{\"attNum\":1}}}") &&
		  apply1(r, "61b00007", "{\"tag\":\"create-index\",\"spec\":{\"schema\":\"app\",\"tableName\":\"t2\",\"name\":\"t2_pkey\","
				 "\"unique\":true,\"columns\":{\"k\":\"ASC\"}}}"),
		  "app.t2: %s", zs_replica_error(r));
	CHECK_STR(query(r, INDEX_SQL("app.t2_pkey")), "CREATE UNIQUE INDEX \"app.t2_pkey\" ON \"app.t2\" (\"k\" ASC)");
	CHECK_STR(query(r, COLUMN_METADATA("app.t2")), "k:uuid100-{\"attNum\":1}");
	/* every column backfilled: neither create-table nor create-index resets the table */
	CHECK_STR(query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE \"table\" = 'app.t2'"), "0");
	CHECK(apply1(r, "61b00008", "{\"tag\":\"rename-table\",\"old\":{\"schema\":\"app\",\"name\":\"t2\"},"
				 "\"new\":{\"schema\":\"app\",\"name\":\"t3\"}}") &&
		  apply1(r, "61b00009", "{\"tag\":\"update-table-metadata\",\"table\":{\"schema\":\"app\",\"name\":\"t3\"},"
				 "\"old\":{\"rowKey\":{}},\"new\":{ \"rowKey\" : {\"k\": {\"attNum\":1}} }}"),
		  "rename, metadata: %s", zs_replica_error(r));
	CHECK_STR(query(r, TABLE_METADATA("t3")), "app.t3 61b00008 {\"rowKey\":{\"k\":{\"attNum\":1}}} NULL");
	CHECK_STR(query(r, "SELECT group_concat(table_name) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'app.%'"), "app.t3");

	/* a rolled-back schema change leaves nothing, and the caches follow */
	CHECK(zs_replica_begin(r, "61b0000a"), "begin");
	CHECK(apply(r, ADD_COLUMN("idx_ident", "gone", SPEC("int4", ""))), "add: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("idx_ident", "[\"code\",\"region\"]", "index")
				",\"new\":{\"code\":\"b\",\"region\":1,\"gone\":1}}"), "insert: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK_STR(query(r, "SELECT count(*) FROM pragma_table_info('idx_ident') WHERE name = 'gone'"), "0");
	CHECK(apply1(r, "61b0000b", "{\"tag\":\"insert\"," REL("idx_ident", "[\"code\",\"region\"]", "index")
				 ",\"new\":{\"code\":\"c\",\"region\":1,\"val\":\"after rollback\"}}"), "insert after rollback: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM idx_ident"), "2");
	zs_replica_close(r);
}

/* Bad input is refused with an error that names it, and leaves the replica as it was. */
static void
test_schema_change_errors(void)
{
	ZsReplica  *r = golden_replica(0);
	static const struct
	{
		const char *change;
		const char *error;
	}			bad[] = {
		{ADD_COLUMN("nosuch", "c", SPEC("int4", "")), "add-column: unknown table \"nosuch\""},
		{ADD_COLUMN("full_ident", "c", "{\"pos\":1}"), "column \"c\" has no valid dataType"},
		{ADD_COLUMN("full_ident", "c", SPEC("int4|NOT_NULL", "")), "has no valid dataType"},
		{ADD_COLUMN("full_ident", "c", "null"), "column \"c\" has no spec"},
		{ADD_COLUMN("full_ident", "c", SPEC("text", ",\"dflt\":\"now()\"")), "Unsupported default value for full_ident.c: now()"},
		{ADD_COLUMN("full_ident", "c", SPEC("varchar", ",\"dflt\":\"'x'::character varying\"")), "Unsupported default"},
		/* a quoted default is one literal, never SQL of its own (found by fuzz_replica) */
		{ADD_COLUMN("full_ident", "c", SPEC("text", ",\"dflt\":\"'x'; DROP TABLE full_ident; SELECT 'y'::text\"")),
		"Unsupported default value for full_ident.c: 'x'; DROP TABLE"},
		{ADD_COLUMN("full_ident", "c", SPEC("text", ",\"dflt\":\"'x''::text\"")), "Unsupported default"},
		{ADD_COLUMN("full_ident", "label", SPEC("text", "")), "duplicate column name"},
		{"{\"tag\":\"add-column\",\"table\":{\"name\":\"full_ident\"}}", "add-column table without a schema and name"},
		{"{\"tag\":\"create-table\"}", "create-table spec without a schema and name"},
		{"{\"tag\":\"create-table\",\"spec\":{\"schema\":\"public\",\"name\":\"x\",\"columns\":{}}}", "the spec has no columns"},
		{"{\"tag\":\"create-table\",\"spec\":{\"schema\":\"public\",\"name\":\"x\",\"columns\":{\"a\":{\"dataType\":\"int4\"}}}}",
		"column \"a\" has no pos"},
		{"{\"tag\":\"create-table\",\"spec\":{\"schema\":\"public\",\"name\":\"full_ident\",\"columns\":{\"a\":"
			"{\"pos\":1,\"dataType\":\"int4\"}}}}", "table \"full_ident\" already exists"},
		{"{\"tag\":\"rename-table\",\"old\":{\"schema\":\"public\",\"name\":\"nosuch\"},\"new\":{\"schema\":\"public\",\"name\":\"x\"}}",
		"rename-table: unknown table \"nosuch\""},
		{"{\"tag\":\"update-table-metadata\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"}}", "without a \"new\" object"},
		{"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"},\"old\":{\"name\":\"nosuch\",\"spec\":"
			SPEC("int4", "") "},\"new\":{\"name\":\"nosuch\",\"spec\":" SPEC("int8", "") "}}", "table \"full_ident\" has no column \"nosuch\""},
		{"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"},\"old\":{\"name\":\"label\"}}",
		"update-column old: column \"label\" has no spec"},
		{"{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"},\"column\":\"nosuch\"}",
		"drop-column: table \"full_ident\" has no column \"nosuch\""},
		{"{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"nosuch\"},\"column\":\"a\"}", "drop-column: unknown table"},
		{"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"nosuch\",\"name\":\"i\",\"columns\":{\"a\":\"ASC\"}}}",
		"create-index: unknown table \"nosuch\""},
		{"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"full_ident\",\"name\":\"i\",\"columns\":{\"label\":\"ASC; DROP TABLE x\"}}}",
		"neither ASC nor DESC"},
		{"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"full_ident\",\"name\":\"i\",\"columns\":{}}}",
		"the spec has no columns"},
		{"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"full_ident\",\"name\":\"i\",\"columns\":{\"nosuch\":\"ASC\"}}}",
		"create-index \"i\": table \"full_ident\" has no column \"nosuch\""},
		{"{\"tag\":\"drop-table\"}", "drop-table id without a schema and name"},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"nosuch\",\"rowKey\":{\"columns\":[\"id\"]}},"
			"\"columns\":[\"a\"],\"watermark\":\"01\",\"rowValues\":[[1,2]]}", "backfill: unknown table \"nosuch\""},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[]}},"
			"\"columns\":[\"label\"],\"watermark\":\"01\",\"rowValues\":[[1]]}", "without rowKey columns"},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"id\"]}},"
			"\"columns\":[\"label\"],\"watermark\":\"01\",\"rowValues\":[[1,\"x\"],[2]]}", "a row of rowValues does not have 2 values"},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"id\"]}},"
			"\"columns\":[\"label\"],\"rowValues\":[]}", "without a watermark"},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"id\"]}},"
			"\"columns\":[7],\"watermark\":\"01\",\"rowValues\":[]}", "a column name that is not a string"},
		{"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"label\"]}},"
			"\"columns\":[\"amount\"],\"watermark\":\"01\",\"rowValues\":[[\"x\",1]]}", "ON CONFLICT"},
		{"{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"nosuch\",\"rowKey\":{\"columns\":[\"id\"]}},"
			"\"columns\":[]}", "backfill-completed: unknown table \"nosuch\""},
		{"{\"tag\":\"no-such-change\"}", "unsupported change \"no-such-change\""},
	};
	const char *schema = "SELECT group_concat(sql, ';') || (SELECT group_concat(table_name || column_name) FROM \"_zero.column_metadata\") "
		"|| (SELECT count(*) FROM \"_zero.tableMetadata\") FROM sqlite_master";
	char	   *before = strdup(query(r, schema));

	for (int i = 0; i < (int) lengthof(bad); i++)
	{
		CHECK(zs_replica_begin(r, "7z"), "begin");
		CHECK(!apply(r, bad[i].change), "bad change %d refused", i);
		CHECK(strstr(zs_replica_error(r), bad[i].error) != NULL, "bad change %d: error <%s>, expected <%s>",
			  i, zs_replica_error(r), bad[i].error);
		CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	}
	CHECK_STR(query(r, schema), before);
	CHECK_STR(query(r, "SELECT count(*) FROM full_ident"), "2");
	free(before);
	zs_replica_close(r);
}

/*
 * A table made from a row whose key columns it lacks, and a unique index on
 * an expression (found by fuzz_replica: SQLite indexed the missing column's
 * quoted name as a constant, and reading that index back crashed).
 */
static void
test_bad_row_keys(void)
{
	ZsReplica  *r = new_replica(0);

	CHECK(zs_replica_begin(r, "0b"), "begin");
	CHECK(!apply(r, "{\"tag\":\"insert\"," REL("nokey", "[\"id\"]", "default") ",\"new\":{\"a\":1}}"),
		  "a new table's row without its key column is refused");
	CHECK(strstr(zs_replica_error(r), "a row of the new table \"nokey\" has no key column \"id\"") != NULL,
		  "error: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK_STR(query(r, "SELECT count(*) FROM sqlite_master WHERE tbl_name = 'nokey'"), "0");

	CHECK(sqlite3_exec(zs_replica_db(r), "CREATE TABLE e (a, \"_0_version\"); CREATE UNIQUE INDEX e_key ON e (\"k\")",
					   NULL, NULL, NULL) == SQLITE_OK, "expression index");
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("e", "[\"a\"]", "default") ",\"new\":{\"a\":1}}") &&
		  apply(r, "{\"tag\":\"delete\"," REL("e", "[\"a\"]", "default") ",\"key\":{\"a\":1}}"),
		  "a table with an expression index: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM e"), "0");
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

/*
 * Names holding quote characters: every statement built from a row's
 * member names (insert, update, delete) quotes them, a quote doubled.
 */
static void
test_quoted_names(void)
{
	ZsReplica  *r = open_memory_replica(0, "0a", "[\"pub\"]");
	ZsReplicaColumn cols[] = {
		{"i\"d", "int4", true, false, false, -1},
		{"\"v'al\"\"", "text", false, false, false, -1},
		{"plain", "text", false, false, false, -1},
	};
	const char *keys[] = {"i\"d"};
	ZsReplicaTable t = {"public", "q\"t", 3, cols, "q\"t_pkey", 1, keys};

#define QT(tag, rest) "{\"tag\":\"" tag "\",\"relation\":{\"tag\":\"relation\",\"relationOid\":7," \
	"\"schema\":\"public\",\"name\":\"q\\\"t\",\"rowKey\":{\"columns\":[\"i\\\"d\"],\"type\":\"default\"}}," rest "}"

	CHECK(zs_replica_create_table(r, &t), "create q\"t: %s", zs_replica_error(r));
	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	CHECK(apply(r, QT("insert", "\"new\":{\"i\\\"d\":1,\"\\\"v'al\\\"\\\"\":\"o'ne\",\"plain\":\"p\"}")),
		  "insert: %s", zs_replica_error(r));
	CHECK(apply(r, QT("insert", "\"new\":{\"i\\\"d\":2,\"\\\"v'al\\\"\\\"\":\"two\",\"plain\":null}")),
		  "insert 2: %s", zs_replica_error(r));
	CHECK(apply(r, QT("update", "\"key\":null,\"new\":{\"i\\\"d\":1,\"\\\"v'al\\\"\\\"\":\"uno\",\"plain\":\"q\"}")),
		  "update: %s", zs_replica_error(r));
	CHECK(apply(r, QT("delete", "\"key\":{\"i\\\"d\":2}")), "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(\"i\"\"d\" || \"\"\"v'al\"\"\"\"\" || plain || _0_version) FROM \"q\"\"t\""),
			  "1unoq0b");
#undef QT
	zs_replica_close(r);
}

/*
 * Rows of one table in different shapes: the cached INSERT OR REPLACE of
 * the last shape must not be used for members in another order, a subset,
 * a new column, or after a rollback that undid a column it added.
 */
static void
test_row_shapes(void)
{
	ZsReplica  *r = open_memory_replica(0, "0a", "[\"pub\"]");
	const char *rows[] = {
		"\"new\":{\"k\":1,\"a\":\"x\"}",
		"\"new\":{\"a\":\"y\",\"k\":2}",
		"\"new\":{\"k\":3,\"a\":\"z\",\"b\":7}",
		"\"new\":{\"k\":4,\"a\":\"w\"}",
		"\"new\":{\"k\":5,\"b\":8}",
		"\"new\":{\"k\":6,\"a\":\"v\",\"b\":1}",
		"\"new\":{\"k\":8,\"a\":\"u\",\"b\":2}",
	};

#define SH(tag, rest) "{\"tag\":\"" tag "\"," REL("shapes", "[\"k\"]", "default") "," rest "}"
	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	for (int i = 0; i < (int) lengthof(rows); i++)
	{
		char		change[512];

		snprintf(change, sizeof(change), SH("insert", "%s"), rows[i]);
		CHECK(apply(r, change), "insert %d: %s", i, zs_replica_error(r));
	}
	CHECK(apply(r, SH("update", "\"key\":null,\"new\":{\"k\":1,\"a\":\"x2\",\"b\":9}")),
		  "update: %s", zs_replica_error(r));
	CHECK(apply(r, SH("update", "\"key\":null,\"new\":{\"b\":3,\"k\":8}")),
		  "update in another order: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(k || ':' || ifnull(a, '-') || ':' || ifnull(b, '-'), ',') "
					"FROM (SELECT * FROM shapes ORDER BY k)"),
			  "1:x2:9,2:y:-,3:z:7,4:w:-,5:-:8,6:v:1,8:u:3");

	/* a rolled-back transaction added column c; the next one adds it again */
	CHECK(zs_replica_begin(r, "0c"), "begin: %s", zs_replica_error(r));
	CHECK(apply(r, SH("insert", "\"new\":{\"k\":7,\"a\":\"r\",\"c\":1}")), "insert with c: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT count(*) FROM pragma_table_info('shapes') WHERE name = 'c'"), "0");
	CHECK(zs_replica_begin(r, "0d"), "begin: %s", zs_replica_error(r));
	CHECK(apply(r, SH("insert", "\"new\":{\"k\":7,\"a\":\"r\",\"c\":1}")), "insert with c again: %s", zs_replica_error(r));
	CHECK(apply(r, SH("insert", "\"new\":{\"k\":9,\"a\":\"s\",\"c\":2}")), "same shape: %s", zs_replica_error(r));
	/* another table's new column drops every prepared statement, the cached one too */
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("other", "[\"id\"]", "default") ",\"new\":{\"id\":1}}"),
		  "other table: %s", zs_replica_error(r));
	CHECK(apply(r, "{\"tag\":\"insert\"," REL("other", "[\"id\"]", "default") ",\"new\":{\"id\":2,\"x\":1}}"),
		  "other table's new column: %s", zs_replica_error(r));
	CHECK(apply(r, SH("insert", "\"new\":{\"k\":10,\"a\":\"t\",\"c\":3}")), "same shape after: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0d") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(query(r, "SELECT group_concat(k || ':' || c || ':' || _0_version, ',') FROM shapes WHERE c IS NOT NULL"),
			  "7:1:0d,9:2:0d,10:3:0d");
#undef SH
	zs_replica_close(r);
}

/* The tests that apply changes: run as a subscriber parses them, then as the replicator does. */
static void
test_applying(void)
{
	test_changes();
	test_keyless();
	test_golden_schema_changes();
	test_backfill_newer_changes();
	test_schema_change_details();
	test_schema_change_errors();
	test_bad_row_keys();
	test_quoted_names();
	test_row_shapes();
}

int
main(void)
{
	zs_json_doc_init(&doc);
	test_json_reader();
	test_schema();
	test_foreign_file();
	test_applying();
	/* again, with each change's relation deferred and cached */
	parse_mode = PARSE_STORED;
	defer_relation = true;
	test_applying();
	/* again, as zero-stream-replica reads frames */
	parse_mode = PARSE_FRAMES;
	defer_relation = false;
	test_applying();
	free(frame_text);
	zs_json_doc_free(&doc);
	return unit_report("replica");
}
