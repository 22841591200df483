/*-------------------------------------------------------------------------
 * replica_test_schema_changes.c
 *	  Unit tests of the replica library's schema changes and backfills
 *	  beyond the golden workload (src/replica/replica_ddl.c,
 *	  replica_column_ddl.c, replica_backfill.c): a backfill racing row
 *	  changes newer than its snapshot, defaults zero keeps, NOT NULL
 *	  changes, indexed columns, tables of other schemas, and a rolled-back
 *	  schema change.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "replica_test.h"

#define FULL_REL(cols) \
	"\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":" cols ",\"type\":\"default\"}}"

/*
 * A backfill of a column that replicated changes wrote after the backfill's
 * snapshot: those values stay, deleted rows stay deleted (a backup replica,
 * which logs row changes only while the table has columns being backfilled).
 */
void
test_backfill_newer_changes(void)
{
	ZsReplica  *r = rt_golden_replica(0);

	CHECK(rt_apply1(r, "61aiu000", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":11,\"label\":\"eleven\"}}") &&
		  rt_apply1(r, "61aiu001", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":12,\"label\":\"twelve\"}}"),
		  "rows 11, 12: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\""), "0");
	rt_golden_skip_to("T58");
	rt_apply_golden(r, "T58");		/* add-column created_at with a backfill */

	/* before the snapshot (61aiul74): row 11's value is older than the backfill's */
	CHECK(rt_apply1(r, "61aiuk00", "{\"tag\":\"update\"," FULL_REL("[\"id\"]") ",\"key\":null,"
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

		CHECK(rt_apply_tx(r, "61aium00", changes), "newer changes: %s", zs_replica_error(r));
	}
	CHECK_STR(rt_query(r, "SELECT group_concat(stateVersion || rowKey || op || backfillingColumnVersions, ' ') "
					"FROM (SELECT * FROM \"_zero.changeLog2\" ORDER BY stateVersion, pos)"),
			  "61aiuk00{\"id\":11}s{\"created_at\":\"61aiuk00\"} 61aium00{\"id\":10}s{\"created_at\":\"61aium00\"} "
			  "61aium00{\"id\":3}s{} 61aium00{\"id\":12}d{} 61aium00{\"id\":13}s{\"created_at\":\"61aium00\"}");

	/* the backfill, at the snapshot 61aiul74, in a transaction of its own */
	CHECK(rt_apply1(r, "61aium00.01", "{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
				 "\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
				 "\"rowValues\":[[3,100],[10,100],[11,100],[12,100],[14,100]],\"status\":{\"rows\":5,\"totalRows\":5}}"),
		  "backfill: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(id || ':' || coalesce(label, '-') || ':' || coalesce(created_at, '-') || ':' || _0_version, ' ') "
					"FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "3:three:100:61aium00 10:newer:999:61aium00 11:eleven:100:61aiuk00 13:new:1313:61aium00 14:-:100:61aiul74");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "61aium00.01");

	/* completed: no longer backfilling, versions bumped, row changes no longer logged */
	CHECK(rt_apply1(r, "61aiun00", "{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
				 "\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\"}"),
		  "backfill-completed: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT coalesce(backfill, 'NULL') FROM \"_zero.column_metadata\" WHERE column_name = 'created_at'"), "NULL");
	CHECK_STR(rt_query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'full_ident'"), "61aiun00");
	CHECK(rt_apply1(r, "61aiun01", "{\"tag\":\"insert\"," FULL_REL("[\"id\"]") ",\"new\":{\"id\":15,\"created_at\":1}}"),
		  "insert after: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion >= '61aiun00'"), "0");
	zs_replica_close(r);
}

/* Defaults zero keeps, NOT NULL changes, indexed columns, other schemas, rollback. */
void
test_schema_change_details(void)
{
	ZsReplica  *r = rt_golden_replica(ZS_REPLICA_LOG_CHANGES);
	const char *adds[] = {
		RT_ADD_COLUMN("idx_ident", "n", RT_SPEC("numeric", ",\"dflt\":\"-1.5\"")),
		RT_ADD_COLUMN("idx_ident", "b", RT_SPEC("bool", ",\"dflt\":\"true\",\"notNull\":true")),
		RT_ADD_COLUMN("idx_ident", "q", RT_SPEC("text", ",\"dflt\":\"'it''s'::text\"")),
		RT_ADD_COLUMN("idx_ident", "ea", "{\"pos\":9,\"dataType\":\"int4[]\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":\"b\","
				   "\"dflt\":\"ARRAY[]::integer[]\"}"),
		RT_ADD_COLUMN("idx_ident", "el", "{\"pos\":9,\"dataType\":\"mood[]\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":\"e\","
				   "\"dflt\":\"'{}'::mood[]\"}"),
		RT_ADD_COLUMN("idx_ident", "vc", RT_SPEC("varchar", ",\"characterMaximumLength\":7")),
		"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"idx_ident\",\"name\":\"idx_q\","
		"\"unique\":false,\"columns\":{\"q\":\"ASC\",\"val\":\"DESC\"}}}",
		NULL
	};

	CHECK(rt_apply1(r, "61b00001", "{\"tag\":\"insert\"," RT_REL("idx_ident", "[\"code\",\"region\"]", "index")
				 ",\"new\":{\"code\":\"a\",\"region\":1,\"val\":\"v\"}}"), "row: %s", zs_replica_error(r));
	CHECK(rt_apply_tx(r, "61b00002", adds), "add columns: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(name || '=' || coalesce(dflt_value, '-'), ' ') FROM pragma_table_info('idx_ident')"),
			  "code=- region=- val=- _0_version='61ai84s8' n=-1.5 b=1 q='it''s' ea='[]' el='[]' vc=-");
	CHECK_STR(rt_query(r, "SELECT group_concat(type, ' ') FROM pragma_table_info('idx_ident') WHERE cid > 3"),
			  "numeric bool|NOT_NULL TEXT int4[]|TEXT_ARRAY mood[]|TEXT_ENUM|TEXT_ARRAY varchar");
	CHECK_STR(rt_query(r, "SELECT n || b || q || ea || el FROM idx_ident"), "-1.51it's[][]");
	CHECK_STR(rt_query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'vc'"), "7");

	/* NOT NULL dropped from q: a new declared type, so the table is built again with its indexes */
	CHECK(rt_apply1(r, "61b00003", "{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},"
				 "\"old\":{\"name\":\"q\",\"spec\":" RT_SPEC("text", ",\"notNull\":false") "},"
				 "\"new\":{\"name\":\"q2\",\"spec\":" RT_SPEC("text", ",\"notNull\":true") "}}"),
		  "update-column: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('idx_ident') WHERE name LIKE 'q%' OR name = 'n'"),
			  "n numeric, q2 text|NOT_NULL");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("idx_q")), "CREATE INDEX \"idx_q\" ON \"idx_ident\" (\"q2\" ASC,\"val\" DESC)");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("idx_ident_key")), "CREATE UNIQUE INDEX \"idx_ident_key\" ON \"idx_ident\" (\"code\" ASC,\"region\" ASC)");
	CHECK_STR(rt_query(r, "SELECT q2 || _0_version FROM idx_ident"), "it's61b00001");
	CHECK_STR(rt_query(r, "SELECT column_name || is_not_null FROM \"_zero.column_metadata\" WHERE column_name LIKE 'q%'"), "q21");
	/* a new default only: metadata, no version bump */
	CHECK(rt_apply1(r, "61b00004", "{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},"
				 "\"old\":{\"name\":\"vc\",\"spec\":" RT_SPEC("varchar", ",\"characterMaximumLength\":7") "},"
				 "\"new\":{\"name\":\"vc\",\"spec\":" RT_SPEC("varchar", ",\"characterMaximumLength\":9,\"dflt\":\"'x'::text\"") "}}"),
		  "update-column metadata: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT character_max_length FROM \"_zero.column_metadata\" WHERE column_name = 'vc'"), "9");
	CHECK_STR(rt_query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'idx_ident'"), "61b00003");

	/* dropping an indexed column drops its index first */
	CHECK(rt_apply1(r, "61b00005", "{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"idx_ident\"},\"column\":\"q2\"}"),
		  "drop indexed column: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT group_concat(name) FROM pragma_index_list('idx_ident')"), "idx_ident_key");

	/* another schema: "schema.name" for the table and its index */
	CHECK(rt_apply1(r, "61b00006", "{\"tag\":\"create-table\",\"spec\":{\"schema\":\"app\",\"name\":\"t2\",\"columns\":{"
				 "\"k\":{\"pos\":1,\"dataType\":\"uuid\",\"pgTypeClass\":\"b\",\"notNull\":true}}},"
				 "\"backfill\":{\"k\":{\"attNum\":1}}}") &&
		  rt_apply1(r, "61b00007", "{\"tag\":\"create-index\",\"spec\":{\"schema\":\"app\",\"tableName\":\"t2\",\"name\":\"t2_pkey\","
				 "\"unique\":true,\"columns\":{\"k\":\"ASC\"}}}"),
		  "app.t2: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, RT_INDEX_SQL("app.t2_pkey")), "CREATE UNIQUE INDEX \"app.t2_pkey\" ON \"app.t2\" (\"k\" ASC)");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("app.t2")), "k:uuid100-{\"attNum\":1}");
	/* every column backfilled: neither create-table nor create-index resets the table */
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE \"table\" = 'app.t2'"), "0");
	CHECK(rt_apply1(r, "61b00008", "{\"tag\":\"rename-table\",\"old\":{\"schema\":\"app\",\"name\":\"t2\"},"
				 "\"new\":{\"schema\":\"app\",\"name\":\"t3\"}}") &&
		  rt_apply1(r, "61b00009", "{\"tag\":\"update-table-metadata\",\"table\":{\"schema\":\"app\",\"name\":\"t3\"},"
				 "\"old\":{\"rowKey\":{}},\"new\":{ \"rowKey\" : {\"k\": {\"attNum\":1}} }}"),
		  "rename, metadata: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("t3")), "app.t3 61b00008 {\"rowKey\":{\"k\":{\"attNum\":1}}} NULL");
	CHECK_STR(rt_query(r, "SELECT group_concat(table_name) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'app.%'"), "app.t3");

	/* a rolled-back schema change leaves nothing, and the caches follow */
	CHECK(zs_replica_begin(r, "61b0000a"), "begin");
	CHECK(rt_apply(r, RT_ADD_COLUMN("idx_ident", "gone", RT_SPEC("int4", ""))), "add: %s", zs_replica_error(r));
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("idx_ident", "[\"code\",\"region\"]", "index")
				",\"new\":{\"code\":\"b\",\"region\":1,\"gone\":1}}"), "insert: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM pragma_table_info('idx_ident') WHERE name = 'gone'"), "0");
	CHECK(rt_apply1(r, "61b0000b", "{\"tag\":\"insert\"," RT_REL("idx_ident", "[\"code\",\"region\"]", "index")
				 ",\"new\":{\"code\":\"c\",\"region\":1,\"val\":\"after rollback\"}}"), "insert after rollback: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM idx_ident"), "2");
	zs_replica_close(r);
}

RT_COUNTS(rt_schema_changes_counts)
