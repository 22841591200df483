/*-------------------------------------------------------------------------
 * replica_test_rows.c
 *	  Unit tests of the replica library's row changes (src/replica/
 *	  replica_apply.c): the tables an initial copy creates, inserts, updates
 *	  and deletes of every identity and value kind, truncate, tables and
 *	  columns made from rows, transaction and stream-message errors, rows of
 *	  keyless REPLICA IDENTITY FULL tables, names holding quotes, and rows of
 *	  one table in different shapes, and runs of rows written as multi-row
 *	  statements.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "replica_test.h"

void
test_schema(void)
{
	ZsReplica  *r = rt_new_replica(0);
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];

	CHECK(zs_replica_read_state(r, rv, sv), "read state: %s", zs_replica_error(r));
	CHECK_STR(rv, "0a");
	CHECK_STR(sv, "0a");
	CHECK_STR(rt_query(r, "SELECT sql FROM sqlite_master WHERE name = 't'"),
			  "CREATE TABLE \"t\" (\n\"id\" \"int8|NOT_NULL\",\n\"big\" \"text\",\n\"n\" \"int4\",\n"
			  "\"f\" \"float8\",\n\"tags\" \"text[]|TEXT_ARRAY\",\n\"mood\" \"mood|TEXT_ENUM\",\n"
			  "\"c\" \"bpchar\",\n\"_0_version\" \"text\" DEFAULT '0a'\n)");
	CHECK_STR(rt_query(r, "SELECT sql FROM sqlite_master WHERE name = 'app.idx_ident_key'"),
			  "CREATE UNIQUE INDEX \"app.idx_ident_key\" ON \"app.idx_ident\" (\"code\" ASC,\"region\" ASC)");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.column_metadata\""), "13");
	CHECK_STR(rt_query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'c'"), "5");
	CHECK_STR(rt_query(r, "SELECT schemaVersion FROM \"_zero.versionHistory\""), "13");
	zs_replica_close(r);
}

void
test_changes(void)
{
	ZsReplica  *r = rt_new_replica(ZS_REPLICA_LOG_CHANGES);

	/* insert every kind of value */
	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":9223372036854775807,"
				"\"big\":\"nul\\u0000 \\\"q\\\" \\u2028 \xe2\x82\xac \xf0\x9f\x98\x80\",\"n\":9007199254740993,\"f\":1.5,"
				"\"tags\":[\"a\",null,\"b c\"],\"mood\":\"happy\",\"c\":\"ab   \"}}"),
		  "insert: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":2,\"big\":\"x\",\"n\":1,"
				"\"f\":1e300,\"tags\":{\"type\":\"Buffer\",\"data\":[0,255]},\"mood\":null,\"c\":true}}"),
		  "insert 2: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b"), "commit: %s", zs_replica_error(r));
	CHECK(zs_replica_flush(r), "flush: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT id FROM t WHERE n = 9007199254740993"), "9223372036854775807");
	CHECK_STR(rt_query(r, "SELECT typeof(n) || ' ' || typeof(f) || ' ' || typeof(big) FROM t WHERE id = 2"),
			  "integer real text");
	CHECK_STR(rt_query(r, "SELECT length(CAST(big AS BLOB)) FROM t WHERE n = 9007199254740993"), "21");
	CHECK_STR(rt_query(r, "SELECT hex(substr(CAST(big AS BLOB), 10, 3)) FROM t WHERE n = 9007199254740993"), "E280A8");
	CHECK_STR(rt_query(r, "SELECT tags FROM t WHERE id > 2"), "[\"a\",null,\"b c\"]");
	CHECK_STR(rt_query(r, "SELECT tags || ' ' || c FROM t WHERE id = 2"), "{\"type\":\"Buffer\",\"data\":[0,255]} 1");
	CHECK_STR(rt_query(r, "SELECT f FROM t WHERE id = 2"), "1.0e+300");
	CHECK_STR(rt_query(r, "SELECT group_concat(_0_version) FROM t"), "0b,0b");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0b");
	CHECK_STR(rt_query(r, "SELECT group_concat(rowKey || op, ' ') FROM \"_zero.changeLog2\""),
			  "{\"id\":9223372036854775807}s {\"id\":2}s");

	/* update without the TOAST column keeps it; delete; rollback */
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":null,\"old\":null,"
				"\"new\":{\"id\":2,\"n\":5,\"f\":-0.25,\"tags\":null,\"mood\":\"sad\",\"c\":false}}"),
		  "partial update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c"), "commit");
	CHECK(zs_replica_begin(r, "0d"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"delete\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":{\"id\":9223372036854775807},\"old\":null}"),
		  "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback");
	CHECK(zs_replica_flush(r), "flush");
	CHECK_STR(rt_query(r, "SELECT big || n || f || coalesce(tags, '-') || mood || c || _0_version FROM t WHERE id = 2"),
			  "x5-0.25-sad00c");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM t"), "2");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0c");

	/* update of a missing row inserts it; delete by key */
	CHECK(zs_replica_begin(r, "0e"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":null,\"old\":null,\"new\":{\"id\":7,\"n\":7}}"),
		  "upsert: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"delete\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":{\"id\":9223372036854775807},\"old\":null}"),
		  "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0e") && zs_replica_flush(r), "commit");
	CHECK_STR(rt_query(r, "SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)"), "2,7");
	CHECK_STR(rt_query(r, "SELECT op FROM \"_zero.changeLog2\" WHERE rowKey = '{\"id\":9223372036854775807}'"), "d");

	/* FULL identity: the key holds every column, NULLs included */
	CHECK(zs_replica_begin(r, "0f"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"new\":{\"id\":1,\"label\":\"one\",\"amount\":null}}"), "full insert");
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"key\":{\"id\":1,\"label\":\"one\",\"amount\":null},"
				"\"old\":{\"id\":1,\"label\":\"one\",\"amount\":null},\"new\":{\"id\":3,\"label\":\"uno\",\"amount\":1.1}}"),
		  "full update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0f") && zs_replica_flush(r), "commit");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || label || amount) FROM full_ident"), "3uno1.1");
	CHECK_STR(rt_query(r, "SELECT group_concat(rowKey || op, ' ') FROM \"_zero.changeLog2\" WHERE \"table\" = 'full_ident' ORDER BY pos"),
			  "{\"id\":1}d {\"id\":3}s");
	CHECK(zs_replica_begin(r, "0g"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"delete\"," RT_REL("full_ident", "[\"id\",\"label\",\"amount\"]", "full") ",\"key\":{\"id\":3,\"label\":\"uno\",\"amount\":1.1},\"old\":null}"), "full delete");
	CHECK(zs_replica_commit(r, "0g") && zs_replica_flush(r), "commit");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM full_ident"), "0");

	/* INDEX identity in another schema, with a key change */
	CHECK(zs_replica_begin(r, "0h"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"insert\",\"relation\":{\"schema\":\"app\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],\"type\":\"index\"}},"
				"\"new\":{\"code\":\"b\",\"region\":2,\"val\":\"v\"}}"), "idx insert: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"update\",\"relation\":{\"schema\":\"app\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],\"type\":\"index\"}},"
				"\"key\":{\"code\":\"b\",\"region\":2},\"old\":null,\"new\":{\"code\":\"c\",\"region\":2,\"val\":null}}"), "idx update: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0h") && zs_replica_flush(r), "commit");
	CHECK_STR(rt_query(r, "SELECT group_concat(code || region || coalesce(val, '-')) FROM \"app.idx_ident\""), "c2-");

	/* truncate, and a table the replica did not have */
	CHECK(zs_replica_begin(r, "0i"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("later", "[\"k\"]", "default") ",\"new\":{\"k\":\"a\",\"v\":1}}"), "new table: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("later", "[\"k\"]", "default") ",\"new\":{\"k\":\"a\",\"v\":2,\"w\":3}}"), "new column: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"truncate\",\"cascade\":false,\"restartIdentity\":false,\"relations\":[{\"tag\":\"relation\",\"schema\":\"public\",\"name\":\"t\",\"rowKey\":{\"columns\":[\"id\"]}}]}"),
		  "truncate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0i") && zs_replica_flush(r), "commit");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM t"), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(k || v || w) FROM later"), "a23");
	CHECK_STR(rt_query(r, "SELECT group_concat(pos || rowKey || op) FROM \"_zero.changeLog2\" WHERE \"table\" = 't'"), "-10it");

	/* errors */
	CHECK(zs_replica_begin(r, "0j"), "begin");
	CHECK(!zs_replica_begin(r, "0k"), "nested begin refused");
	CHECK(!rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") "}"), "insert without new refused");
	CHECK(strstr(zs_replica_error(r), "new") != NULL, "error says why: %s", zs_replica_error(r));
	CHECK(!rt_apply(r, "{\"tag\":\"create-table\"}"), "create-table without a spec refused");
	CHECK(!rt_apply(r, "{\"tag\":\"delete\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":null}"), "delete without key refused");
	CHECK(!zs_replica_commit(r, "0k"), "mismatched commit refused");
	CHECK(strstr(zs_replica_error(r), "does not match") != NULL, "%s", zs_replica_error(r));
	CHECK(!zs_replica_flush(r), "flush inside a transaction refused");
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK(!rt_apply(r, "{\"tag\":\"insert\"}"), "change outside a transaction refused");
	CHECK_STR(zs_replica_state_version(r), "0i");

	/* stream messages, as the server frames them */
	{
		const char *msgs[] = {
			"[\"begin\",{\"tag\":\"begin\"},{\"commitWatermark\":\"0m\"}]",
			"[\"data\",{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":42,\"n\":1}}]",
			"[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"0m\"}]",
		};

		for (int i = 0; i < 3; i++)
		{
			CHECK(zs_json_parse(&rt_doc, msgs[i], strlen(msgs[i])), "parse message %d", i);
			CHECK(zs_replica_apply_message(r, &rt_doc, 0) == ZS_REPLICA_MESSAGE_APPLIED,
				  "message %d applied: %s", i, zs_replica_error(r));
			CHECK(zs_replica_in_transaction(r) == (i < 2), "in a transaction after message %d", i);
		}
		CHECK(zs_replica_flush(r), "flush");
		CHECK_STR(rt_query(r, "SELECT n || _0_version FROM t WHERE id = 42"), "10m");
		CHECK(zs_json_parse(&rt_doc, "[\"status\",{\"tag\":\"status\"}]", 27), "parse status");
		CHECK(zs_replica_apply_message(r, &rt_doc, 0) == ZS_REPLICA_MESSAGE_NOT_MINE,
			  "status is left to the caller");
		CHECK(zs_json_parse(&rt_doc, "[\"begin\",{\"tag\":\"begin\"},{}]", 28), "parse bad begin");
		CHECK(zs_replica_apply_message(r, &rt_doc, 0) == ZS_REPLICA_MESSAGE_FAILED &&
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
	"{\"tag\":\"" tag "\"," RT_REL("dups", "[\"a\",\"b\",\"big\"]", "full") "," rest "}"

void
test_keyless(void)
{
	ZsReplica  *r = rt_open_memory_replica(0, "0a", "[\"pub\"]");
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
		CHECK(rt_apply(r, DUPS("insert", "\"new\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"}")),
			  "insert duplicate %d: %s", i, zs_replica_error(r));
		CHECK(rt_apply(r, DUPS("insert", "\"new\":{\"a\":2,\"b\":null,\"big\":null}")),
			  "insert NULL duplicate %d: %s", i, zs_replica_error(r));
	}
	CHECK(rt_apply(r, DUPS("insert", "\"new\":{\"a\":3,\"b\":\"z\",\"big\":null}")), "insert 3");
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups"), "5");

	/* update one of two identical rows: exactly one changes */
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(rt_apply(r, DUPS("update", "\"key\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},"
						"\"old\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},\"new\":{\"a\":1,\"b\":\"y\",\"big\":\"toast\"}")),
		  "update one duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups WHERE a = 1 AND b = 'y'"), "1");
	CHECK_STR(rt_query(r, "SELECT group_concat(b || big || _0_version) FROM (SELECT * FROM dups WHERE a = 1 AND b = 'x')"),
			  "xtoast0b");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups WHERE a = 1"), "2");

	/* the second update (of the other row, TOAST column absent) changes it, inserts nothing */
	CHECK(zs_replica_begin(r, "0d"), "begin");
	CHECK(rt_apply(r, DUPS("update", "\"key\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},"
						"\"old\":{\"a\":1,\"b\":\"x\",\"big\":\"toast\"},\"new\":{\"a\":1,\"b\":\"y\"}")),
		  "update the other duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0d") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups WHERE a = 1"), "2");
	CHECK_STR(rt_query(r, "SELECT group_concat(b || big || _0_version, ' ') FROM (SELECT * FROM dups WHERE a = 1 ORDER BY _0_version)"),
			  "ytoast0c ytoast0d");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups"), "5");

	/* delete one of two identical rows, NULL columns included */
	CHECK(zs_replica_begin(r, "0e"), "begin");
	CHECK(rt_apply(r, DUPS("delete", "\"key\":{\"a\":1,\"b\":\"y\",\"big\":\"toast\"},\"old\":null")),
		  "delete one duplicate: %s", zs_replica_error(r));
	CHECK(rt_apply(r, DUPS("delete", "\"key\":{\"a\":2,\"b\":null,\"big\":null},\"old\":null")),
		  "delete one NULL duplicate: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0e") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups WHERE a = 1 AND b = 'y' AND big = 'toast'"), "1");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups WHERE a = 2 AND b IS NULL AND big IS NULL"), "1");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM dups"), "3");

	/* an update of a NULL row; one matching nothing inserts the new row, once */
	CHECK(zs_replica_begin(r, "0f"), "begin");
	CHECK(rt_apply(r, DUPS("update", "\"key\":{\"a\":2,\"b\":null,\"big\":null},"
						"\"old\":{\"a\":2,\"b\":null,\"big\":null},\"new\":{\"a\":2,\"b\":\"w\",\"big\":null}")),
		  "update a NULL row: %s", zs_replica_error(r));
	CHECK(rt_apply(r, DUPS("update", "\"key\":{\"a\":9,\"b\":\"gone\",\"big\":null},"
						"\"old\":{\"a\":9,\"b\":\"gone\",\"big\":null},\"new\":{\"a\":3,\"b\":\"z\",\"big\":null}")),
		  "update of a missing row: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0f") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(a || coalesce(b, '-'), ' ') FROM (SELECT * FROM dups ORDER BY a, b)"),
			  "1y 2w 3z 3z");

	/* a column named like the rowid hides it; another alias is used */
	CHECK(zs_replica_begin(r, "0g"), "begin");
	for (int i = 0; i < 2; i++)
		CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("shadow", "[\"RowId\",\"v\"]", "full") ",\"new\":{\"RowId\":7,\"v\":\"s\"}}"),
			  "insert shadow: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("shadow", "[\"RowId\",\"v\"]", "full") ",\"key\":{\"RowId\":7,\"v\":\"s\"},"
				"\"old\":{\"RowId\":7,\"v\":\"s\"},\"new\":{\"RowId\":7,\"v\":\"t\"}}"),
		  "update shadow: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0g") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(RowId || v, ' ') FROM (SELECT * FROM shadow ORDER BY v)"), "7s 7t");
	CHECK(zs_replica_begin(r, "0h"), "begin");
	CHECK(!rt_apply(r, "{\"tag\":\"delete\"," RT_REL("hidden", "[\"rowid\",\"_rowid_\",\"OID\"]", "full") ",\"key\":{\"rowid\":1,\"_rowid_\":2,\"OID\":3}}"),
		  "a table whose columns hide every rowid alias is refused");
	CHECK(strstr(zs_replica_error(r), "cannot be addressed") != NULL, "%s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback");

	/* a FULL table published after the copy keeps identical rows apart too */
	CHECK(zs_replica_begin(r, "0i"), "begin");
	for (int i = 0; i < 2; i++)
		CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("late", "[\"k\",\"v\"]", "full") ",\"new\":{\"k\":1,\"v\":\"a\"}}"),
			  "insert late %d: %s", i, zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("late", "[\"k\",\"v\"]", "full") ",\"key\":{\"k\":1,\"v\":\"a\"},"
				"\"old\":{\"k\":1,\"v\":\"a\"},\"new\":{\"k\":1,\"v\":\"b\"}}"),
		  "update late: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0i") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(k || v, ' ') FROM (SELECT * FROM late ORDER BY v)"), "1a 1b");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM pragma_index_list('late')"), "0");
	zs_replica_close(r);
}

/*
 * Names holding quote characters: every statement built from a row's
 * member names (insert, update, delete) quotes them, a quote doubled.
 */
void
test_quoted_names(void)
{
	ZsReplica  *r = rt_open_memory_replica(0, "0a", "[\"pub\"]");
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
	CHECK(rt_apply(r, QT("insert", "\"new\":{\"i\\\"d\":1,\"\\\"v'al\\\"\\\"\":\"o'ne\",\"plain\":\"p\"}")),
		  "insert: %s", zs_replica_error(r));
	CHECK(rt_apply(r, QT("insert", "\"new\":{\"i\\\"d\":2,\"\\\"v'al\\\"\\\"\":\"two\",\"plain\":null}")),
		  "insert 2: %s", zs_replica_error(r));
	CHECK(rt_apply(r, QT("update", "\"key\":null,\"new\":{\"i\\\"d\":1,\"\\\"v'al\\\"\\\"\":\"uno\",\"plain\":\"q\"}")),
		  "update: %s", zs_replica_error(r));
	CHECK(rt_apply(r, QT("delete", "\"key\":{\"i\\\"d\":2}")), "delete: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(\"i\"\"d\" || \"\"\"v'al\"\"\"\"\" || plain || _0_version) FROM \"q\"\"t\""),
			  "1unoq0b");
#undef QT
	zs_replica_close(r);
}

/*
 * Rows of one table in different shapes: the cached INSERT OR REPLACE of
 * the last shape must not be used for members in another order, a subset,
 * a new column, or after a rollback that undid a column it added.
 */
void
test_row_shapes(void)
{
	ZsReplica  *r = rt_open_memory_replica(0, "0a", "[\"pub\"]");
	const char *rows[] = {
		"\"new\":{\"k\":1,\"a\":\"x\"}",
		"\"new\":{\"a\":\"y\",\"k\":2}",
		"\"new\":{\"k\":3,\"a\":\"z\",\"b\":7}",
		"\"new\":{\"k\":4,\"a\":\"w\"}",
		"\"new\":{\"k\":5,\"b\":8}",
		"\"new\":{\"k\":6,\"a\":\"v\",\"b\":1}",
		"\"new\":{\"k\":8,\"a\":\"u\",\"b\":2}",
	};

#define SH(tag, rest) "{\"tag\":\"" tag "\"," RT_REL("shapes", "[\"k\"]", "default") "," rest "}"
	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	for (int i = 0; i < (int) lengthof(rows); i++)
	{
		char		change[512];

		snprintf(change, sizeof(change), SH("insert", "%s"), rows[i]);
		CHECK(rt_apply(r, change), "insert %d: %s", i, zs_replica_error(r));
	}
	CHECK(rt_apply(r, SH("update", "\"key\":null,\"new\":{\"k\":1,\"a\":\"x2\",\"b\":9}")),
		  "update: %s", zs_replica_error(r));
	CHECK(rt_apply(r, SH("update", "\"key\":null,\"new\":{\"b\":3,\"k\":8}")),
		  "update in another order: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(k || ':' || ifnull(a, '-') || ':' || ifnull(b, '-'), ',') "
					"FROM (SELECT * FROM shapes ORDER BY k)"),
			  "1:x2:9,2:y:-,3:z:7,4:w:-,5:-:8,6:v:1,8:u:3");

	/* a rolled-back transaction added column c; the next one adds it again */
	CHECK(zs_replica_begin(r, "0c"), "begin: %s", zs_replica_error(r));
	CHECK(rt_apply(r, SH("insert", "\"new\":{\"k\":7,\"a\":\"r\",\"c\":1}")), "insert with c: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r), "rollback: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM pragma_table_info('shapes') WHERE name = 'c'"), "0");
	CHECK(zs_replica_begin(r, "0d"), "begin: %s", zs_replica_error(r));
	CHECK(rt_apply(r, SH("insert", "\"new\":{\"k\":7,\"a\":\"r\",\"c\":1}")), "insert with c again: %s", zs_replica_error(r));
	CHECK(rt_apply(r, SH("insert", "\"new\":{\"k\":9,\"a\":\"s\",\"c\":2}")), "same shape: %s", zs_replica_error(r));
	/* another table's new column drops every prepared statement, the cached one too */
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("other", "[\"id\"]", "default") ",\"new\":{\"id\":1}}"),
		  "other table: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("other", "[\"id\"]", "default") ",\"new\":{\"id\":2,\"x\":1}}"),
		  "other table's new column: %s", zs_replica_error(r));
	CHECK(rt_apply(r, SH("insert", "\"new\":{\"k\":10,\"a\":\"t\",\"c\":3}")), "same shape after: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0d") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(k || ':' || c || ':' || _0_version, ',') FROM shapes WHERE c IS NOT NULL"),
			  "7:1:0d,9:2:0d,10:3:0d");
#undef SH
	zs_replica_close(r);
}

RT_COUNTS(rt_rows_counts)

/* Rows first .. last - 1 of t, each with big and the same other values. */
static void
insert_rows(ZsReplica *r, int first, int last, const char *big)
{
	char		change[512];

	for (int i = first; i < last; i++)
	{
		snprintf(change, sizeof(change),
				 "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default")
				 ",\"new\":{\"id\":%d,\"big\":\"%s\",\"n\":1,\"f\":1,\"tags\":null}}", i, big);
		CHECK(rt_apply(r, change), "insert %d (%s)", i, big);
	}
}

/*
 * Runs of rows (replica_sqlite.c): a replica that keeps no changeLog2
 * writes consecutive inserts of one table and shape as multi-row
 * statements. Whatever comes between (an update, another table or shape,
 * a read, the commit) sees the rows before it; a rollback drops them.
 */
void
test_row_runs(void)
{
	ZsReplica  *r = rt_new_replica(0);
	char		change[512];

	CHECK(zs_replica_begin(r, "0b"), "begin: %s", zs_replica_error(r));
	/* 100 rows: three full runs and a partial one, every kind of value */
	for (int i = 1; i <= 100; i++)
	{
		snprintf(change, sizeof(change),
				 "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default")
				 ",\"new\":{\"id\":%d,\"big\":\"row \\\"%d\\\"\",\"n\":%s,\"f\":%d.5,\"tags\":[\"a\",%d]}}",
				 i, i, i % 10 == 0 ? "null" : "7", i, i);
		CHECK(rt_apply(r, change), "insert %d: %s", i, zs_replica_error(r));
	}
	/* a read sees them, within the transaction */
	CHECK_STR(rt_query(r, "SELECT count(*) || ' ' || sum(n IS NULL) || ' ' || sum(f) FROM t WHERE id <= 100"),
			  "100 10 5100.0");
	CHECK_STR(rt_query(r, "SELECT big || ' ' || tags || ' ' || _0_version FROM t WHERE id = 42"),
			  "row \"42\" [\"a\",42] 0b");
	/* the same key twice in a run: the later row; an update after a run: the update */
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":200,\"big\":\"first\",\"n\":1,\"f\":1,\"tags\":null}}"),
		  "insert 200");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":200,\"big\":\"second\",\"n\":2,\"f\":2,\"tags\":null}}"),
		  "insert 200 again");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":201,\"big\":\"x\",\"n\":1,\"f\":1,\"tags\":null}}"),
		  "insert 201");
	CHECK(rt_apply(r, "{\"tag\":\"update\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":null,\"old\":null,\"new\":{\"id\":201,\"big\":\"updated\"}}"),
		  "update 201: %s", zs_replica_error(r));
	/* another shape of the table, then another table, then the first shape again */
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":202,\"n\":3}}"), "insert 202");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("later", "[\"k\"]", "default") ",\"new\":{\"k\":\"a\",\"v\":1}}"),
		  "insert into later: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("t", "[\"id\"]", "default") ",\"new\":{\"id\":203,\"big\":\"y\",\"n\":1,\"f\":1,\"tags\":null}}"),
		  "insert 203");
	CHECK(rt_apply(r, "{\"tag\":\"delete\"," RT_REL("t", "[\"id\"]", "default") ",\"key\":{\"id\":203},\"old\":null}"),
		  "delete 203");
	CHECK(zs_replica_commit(r, "0b") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(id || '=' || coalesce(big, '-'), ' ') FROM (SELECT * FROM t WHERE id >= 200 ORDER BY id)"),
			  "200=second 201=updated 202=-");
	CHECK_STR(rt_query(r, "SELECT v FROM later WHERE k = 'a'"), "1");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0b");

	/* a rollback drops a pending run */
	CHECK(zs_replica_begin(r, "0c"), "begin 0c");
	insert_rows(r, 300, 310, "gone");
	CHECK(zs_replica_rollback(r), "rollback: %s", zs_replica_error(r));
	CHECK(zs_replica_begin(r, "0d") && zs_replica_commit(r, "0d") && zs_replica_flush(r),
		  "an empty transaction after the rollback: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM t WHERE id >= 300"), "0");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0d");

	/*
	 * A run that fails, when a read writes it: the transaction's later
	 * statements and its commit fail with its error, until the rollback
	 */
	rt_query(r, "CREATE TRIGGER refuse BEFORE INSERT ON t WHEN NEW.id = 405 BEGIN SELECT RAISE(ABORT, 'refused'); END");
	CHECK(zs_replica_begin(r, "0e"), "begin 0e");
	insert_rows(r, 400, 410, "refused");
	rt_query(r, "SELECT 1");
	CHECK(!rt_apply(r, "{\"tag\":\"delete\"," RT_REL("later", "[\"k\"]", "default") ",\"key\":{\"k\":\"a\"},\"old\":null}"),
		  "a later change of the transaction fails too");
	CHECK(strstr(zs_replica_error(r), "refused (in: INSERT OR REPLACE INTO \"t\"") != NULL,
		  "with the run's error: %s", zs_replica_error(r));
	CHECK(!zs_replica_commit(r, "0e"), "so does its commit");
	CHECK(zs_replica_rollback(r), "rollback 0e: %s", zs_replica_error(r));
	CHECK(zs_replica_begin(r, "0f") && zs_replica_commit(r, "0f") && zs_replica_flush(r),
		  "the next transaction: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM t WHERE id >= 400"), "0");
	CHECK_STR(rt_query(r, "SELECT v FROM later WHERE k = 'a'"), "1");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "0f");

	zs_replica_close(r);
}
