/*-------------------------------------------------------------------------
 * replica_test_bad_input.c
 *	  Unit tests of what the replica library refuses: malformed or
 *	  impossible schema changes and backfills (each refused with an error
 *	  naming it, the replica left as it was), rows lacking a new table's
 *	  key, a table with a unique index on an expression, and files that
 *	  are no replica.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sqlite3.h>
#include <unistd.h>

#include "replica_test.h"

/* Bad input is refused with an error that names it, and leaves the replica as it was. */
void
test_schema_change_errors(void)
{
	ZsReplica  *r = rt_golden_replica(0);
	static const struct
	{
		const char *change;
		const char *error;
	}			bad[] = {
		{RT_ADD_COLUMN("nosuch", "c", RT_SPEC("int4", "")), "add-column: unknown table \"nosuch\""},
		{RT_ADD_COLUMN("full_ident", "c", "{\"pos\":1}"), "column \"c\" has no valid dataType"},
		{RT_ADD_COLUMN("full_ident", "c", RT_SPEC("int4|NOT_NULL", "")), "has no valid dataType"},
		{RT_ADD_COLUMN("full_ident", "c", "null"), "column \"c\" has no spec"},
		{RT_ADD_COLUMN("full_ident", "c", RT_SPEC("text", ",\"dflt\":\"now()\"")), "Unsupported default value for full_ident.c: now()"},
		{RT_ADD_COLUMN("full_ident", "c", RT_SPEC("varchar", ",\"dflt\":\"'x'::character varying\"")), "Unsupported default"},
		/* a quoted default is one literal, never SQL of its own (found by fuzz_replica) */
		{RT_ADD_COLUMN("full_ident", "c", RT_SPEC("text", ",\"dflt\":\"'x'; DROP TABLE full_ident; SELECT 'y'::text\"")),
		"Unsupported default value for full_ident.c: 'x'; DROP TABLE"},
		{RT_ADD_COLUMN("full_ident", "c", RT_SPEC("text", ",\"dflt\":\"'x''::text\"")), "Unsupported default"},
		{RT_ADD_COLUMN("full_ident", "label", RT_SPEC("text", "")), "duplicate column name"},
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
			RT_SPEC("int4", "") "},\"new\":{\"name\":\"nosuch\",\"spec\":" RT_SPEC("int8", "") "}}", "table \"full_ident\" has no column \"nosuch\""},
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
	char	   *before = strdup(rt_query(r, schema));

	for (int i = 0; i < (int) lengthof(bad); i++)
	{
		CHECK(zs_replica_begin(r, "7z"), "begin");
		CHECK(!rt_apply(r, bad[i].change), "bad change %d refused", i);
		CHECK(strstr(zs_replica_error(r), bad[i].error) != NULL, "bad change %d: error <%s>, expected <%s>",
			  i, zs_replica_error(r), bad[i].error);
		CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	}
	CHECK_STR(rt_query(r, schema), before);
	CHECK_STR(rt_query(r, "SELECT count(*) FROM full_ident"), "2");
	free(before);
	zs_replica_close(r);
}

/*
 * A table made from a row whose key columns it lacks, and a unique index on
 * an expression (found by fuzz_replica: SQLite indexed the missing column's
 * quoted name as a constant, and reading that index back crashed).
 */
void
test_bad_row_keys(void)
{
	ZsReplica  *r = rt_new_replica(0);

	CHECK(zs_replica_begin(r, "0b"), "begin");
	CHECK(!rt_apply(r, "{\"tag\":\"insert\"," RT_REL("nokey", "[\"id\"]", "default") ",\"new\":{\"a\":1}}"),
		  "a new table's row without its key column is refused");
	CHECK(strstr(zs_replica_error(r), "a row of the new table \"nokey\" has no key column \"id\"") != NULL,
		  "error: %s", zs_replica_error(r));
	CHECK(zs_replica_rollback(r) && zs_replica_flush(r), "rollback");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM sqlite_master WHERE tbl_name = 'nokey'"), "0");

	CHECK(sqlite3_exec(zs_replica_db(r), "CREATE TABLE e (a, \"_0_version\"); CREATE UNIQUE INDEX e_key ON e (\"k\")",
					   NULL, NULL, NULL) == SQLITE_OK, "expression index");
	CHECK(zs_replica_begin(r, "0c"), "begin");
	CHECK(rt_apply(r, "{\"tag\":\"insert\"," RT_REL("e", "[\"a\"]", "default") ",\"new\":{\"a\":1}}") &&
		  rt_apply(r, "{\"tag\":\"delete\"," RT_REL("e", "[\"a\"]", "default") ",\"key\":{\"a\":1}}"),
		  "a table with an expression index: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "0c") && zs_replica_flush(r), "commit: %s", zs_replica_error(r));
	CHECK_STR(rt_query(r, "SELECT count(*) FROM e"), "0");
	zs_replica_close(r);
}

void
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

RT_COUNTS(rt_bad_input_counts)
