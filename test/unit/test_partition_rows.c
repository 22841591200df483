/*
 * Unit tests for the rows of a partition that joined or left a root
 * (decoding/partition_rows.c): the DDL capture's JSON message read back as
 * the root's relation message and one insert or delete per row, and
 * malformed or truncated messages, which must be reported and never read
 * out of bounds. Every open is closed, a failed one too, so the tests run
 * clean under valgrind or ASan.
 */
#include "postgres_fe.h"

#include "decoding/partition_rows.h"
#include "unit.h"

/* ZsTuple holds ZS_MAX_COLUMNS columns: too big for the stack */
static ZsTuple old_tuple;
static ZsTuple new_tuple;

#define EV_RELATION(identity) \
	"\"relation\": {\"schema\": \"public\", \"name\": \"ev\", \"replicaIdentity\": \"" identity "\", " \
	"\"columns\": [{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1, \"key\": true}, " \
	"{\"name\": \"v\", \"typeOID\": 25, \"typmod\": -1, \"key\": false}]}"

static const char *const insert_message =
"{\"root\": 16384, \"op\": \"insert\", " EV_RELATION("d") ", "
"\"rows\": [[\"1\", \"a\"], [\"2\", null]]}";

static void
init_msg(ZsPgoutputMsg *msg)
{
	memset(msg, 0, sizeof(*msg));
	memset(&old_tuple, 0x7f, sizeof(old_tuple));
	memset(&new_tuple, 0x7f, sizeof(new_tuple));
	msg->old_tuple = &old_tuple;
	msg->new_tuple = &new_tuple;
}

/* A text column that holds exactly len bytes of s */
static bool
col_is(const ZsTupleColumn *col, const char *s, int len)
{
	return col->kind == ZS_PGO_COL_TEXT && col->len == len && col->data != NULL &&
		memcmp(col->data, s, len) == 0;
}

static bool
col_is_text(const ZsTupleColumn *col, const char *s)
{
	return col_is(col, s, (int) strlen(s));
}

static bool
col_is_null(const ZsTupleColumn *col)
{
	return col->kind == ZS_PGO_COL_NULL;
}

/* open must fail with the error expected; closed either way */
static void
check_open_fails(const char *json, const char *expected, const char *what)
{
	ZsPartitionRows rows;
	const char *error = zs_partition_rows_open(&rows, json, (int) strlen(json));

	CHECK(error != NULL, "%s: open accepted it", what);
	if (error != NULL)
		CHECK(strcmp(error, expected) == 0, "%s: got <%s>, expected <%s>", what, error, expected);
	zs_partition_rows_close(&rows);
}

/*
 * open succeeds, and the first row fails with the error expected; after
 * that, the rows that follow (if any) are not this test's concern
 */
static void
check_row_fails(const char *json, const char *expected, const char *what)
{
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error = zs_partition_rows_open(&rows, json, (int) strlen(json));

	CHECK(error == NULL, "%s: open failed: %s", what, error ? error : "");
	if (error == NULL)
	{
		init_msg(&msg);
		error = NULL;
		CHECK(!zs_partition_rows_next(&rows, &msg, &error), "%s: the row was accepted", what);
		CHECK(error != NULL && strcmp(error, expected) == 0, "%s: got <%s>, expected <%s>",
			  what, error ? error : "(none)", expected);
	}
	zs_partition_rows_close(&rows);
}

static void
test_insert(void)
{
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const ZsPgoutputMsg *rel = &rows.relation;
	const char *error;

	error = zs_partition_rows_open(&rows, insert_message, (int) strlen(insert_message));
	CHECK(error == NULL, "insert message opens: %s", error ? error : "");
	CHECK(rel->type == ZS_PGO_RELATION, "relation type %c", rel->type);
	CHECK(rel->relid == 16384, "relid %u", rel->relid);
	CHECK(rel->nspname != NULL && strcmp(rel->nspname, "public") == 0, "nspname");
	CHECK(rel->relname != NULL && strcmp(rel->relname, "ev") == 0, "relname");
	CHECK(rel->replident == 'd', "replident %c", rel->replident);
	CHECK(rel->natts == 2, "natts %d", rel->natts);
	CHECK(rel->attrs != NULL, "attrs");
	if (rel->attrs != NULL && rel->natts == 2)
	{
		CHECK_STR(rel->attrs[0].name, "id");
		CHECK(rel->attrs[0].typid == 23 && rel->attrs[0].typmod == -1 && rel->attrs[0].is_key,
			  "id: typid %u typmod %d key %d", rel->attrs[0].typid, rel->attrs[0].typmod,
			  rel->attrs[0].is_key);
		CHECK_STR(rel->attrs[1].name, "v");
		CHECK(rel->attrs[1].typid == 25 && rel->attrs[1].typmod == -1 && !rel->attrs[1].is_key,
			  "v: typid %u typmod %d key %d", rel->attrs[1].typid, rel->attrs[1].typmod,
			  rel->attrs[1].is_key);
	}
	CHECK(!rows.is_delete, "an insert");

	init_msg(&msg);
	error = "unset";
	CHECK(zs_partition_rows_next(&rows, &msg, &error), "first row");
	CHECK(error == NULL, "first row: no error");
	CHECK(msg.type == ZS_PGO_INSERT && msg.relid == 16384 && msg.old_kind == 0,
		  "first row: insert into 16384 (type %c relid %u old_kind %d)", msg.type, msg.relid,
		  msg.old_kind);
	CHECK(new_tuple.natts == 2, "first row: natts %d", new_tuple.natts);
	CHECK(col_is_text(&new_tuple.cols[0], "1"), "first row: id is '1'");
	CHECK(col_is_text(&new_tuple.cols[1], "a"), "first row: v is 'a'");

	error = "unset";
	CHECK(zs_partition_rows_next(&rows, &msg, &error), "second row");
	CHECK(error == NULL, "second row: no error");
	CHECK(msg.type == ZS_PGO_INSERT && msg.relid == 16384, "second row: insert");
	CHECK(new_tuple.natts == 2, "second row: natts %d", new_tuple.natts);
	CHECK(col_is_text(&new_tuple.cols[0], "2"), "second row: id is '2'");
	CHECK(col_is_null(&new_tuple.cols[1]) && new_tuple.cols[1].data == NULL &&
		  new_tuple.cols[1].len == 0, "second row: v is null");

	error = "unset";
	CHECK(!zs_partition_rows_next(&rows, &msg, &error), "no third row");
	CHECK(error == NULL, "the end is no error: %s", error ? error : "");
	error = "unset";
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL,
		  "still at the end when asked again");
	zs_partition_rows_close(&rows);
	CHECK(rows.relation.attrs == NULL, "close frees the attributes");
}

static void
test_delete(void)
{
	static const char *const key_delete =
	"{\"root\": 16384, \"op\": \"delete\", " EV_RELATION("d") ", "
	"\"rows\": [[\"1\", null], [\"2\", null]]}";
	static const char *const full_delete =
	"{\"root\": 16384, \"op\": \"delete\", " EV_RELATION("f") ", "
	"\"rows\": [[\"1\", \"a\"], [\"2\", null]]}";
	static const char *const index_delete =
	"{\"root\": 99, \"op\": \"delete\", " EV_RELATION("i") ", \"rows\": [[\"7\", null]]}";
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error;

	/* the replica identity's key */
	error = zs_partition_rows_open(&rows, key_delete, (int) strlen(key_delete));
	CHECK(error == NULL, "key delete opens: %s", error ? error : "");
	CHECK(rows.is_delete && rows.relation.replident == 'd', "a delete, identity d");
	init_msg(&msg);
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "first key row");
	CHECK(msg.type == ZS_PGO_DELETE && msg.relid == 16384 && msg.old_kind == ZS_PGO_TUPLE_KEY,
		  "first key row: delete with K (type %c old_kind %c)", msg.type, msg.old_kind);
	CHECK(old_tuple.natts == 2, "first key row: natts %d", old_tuple.natts);
	CHECK(col_is_text(&old_tuple.cols[0], "1") && col_is_null(&old_tuple.cols[1]),
		  "first key row: ('1', null)");
	CHECK(new_tuple.natts == 0x7f7f7f7f, "a delete leaves the new tuple alone");
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "second key row");
	CHECK(msg.type == ZS_PGO_DELETE && msg.old_kind == ZS_PGO_TUPLE_KEY, "second key row: K");
	CHECK(col_is_text(&old_tuple.cols[0], "2") && col_is_null(&old_tuple.cols[1]),
		  "second key row: ('2', null)");
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "key delete ends");
	zs_partition_rows_close(&rows);

	/* REPLICA IDENTITY FULL: the whole old row */
	error = zs_partition_rows_open(&rows, full_delete, (int) strlen(full_delete));
	CHECK(error == NULL, "full delete opens: %s", error ? error : "");
	CHECK(rows.is_delete && rows.relation.replident == 'f', "a delete, identity f");
	init_msg(&msg);
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "first full row");
	CHECK(msg.type == ZS_PGO_DELETE && msg.relid == 16384 && msg.old_kind == ZS_PGO_TUPLE_OLD,
		  "first full row: delete with O (type %c old_kind %c)", msg.type, msg.old_kind);
	CHECK(old_tuple.natts == 2 && col_is_text(&old_tuple.cols[0], "1") &&
		  col_is_text(&old_tuple.cols[1], "a"), "first full row: ('1', 'a')");
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "second full row");
	CHECK(msg.old_kind == ZS_PGO_TUPLE_OLD && col_is_text(&old_tuple.cols[0], "2") &&
		  col_is_null(&old_tuple.cols[1]), "second full row: ('2', null) with O");
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "full delete ends");
	zs_partition_rows_close(&rows);

	/* REPLICA IDENTITY USING INDEX: a key, as with the default */
	error = zs_partition_rows_open(&rows, index_delete, (int) strlen(index_delete));
	CHECK(error == NULL, "index delete opens: %s", error ? error : "");
	CHECK(rows.relation.replident == 'i' && rows.relation.relid == 99, "identity i, relid 99");
	init_msg(&msg);
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "index row");
	CHECK(msg.type == ZS_PGO_DELETE && msg.relid == 99 && msg.old_kind == ZS_PGO_TUPLE_KEY &&
		  col_is_text(&old_tuple.cols[0], "7"), "index row: delete with K");
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "index delete ends");
	zs_partition_rows_close(&rows);

	/* with FULL a null in a key column is a value like any other */
	{
		static const char *const full_null_key =
		"{\"root\": 16384, \"op\": \"delete\", " EV_RELATION("f") ", \"rows\": [[null, \"a\"]]}";

		error = zs_partition_rows_open(&rows, full_null_key, (int) strlen(full_null_key));
		CHECK(error == NULL, "full delete, null key opens");
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL,
			  "full delete takes a null in a key column: %s", error ? error : "");
		CHECK(col_is_null(&old_tuple.cols[0]) && col_is_text(&old_tuple.cols[1], "a"),
			  "full delete, null key: (null, 'a')");
		zs_partition_rows_close(&rows);
	}
	/* an insert's null key is no concern of this reader */
	{
		static const char *const insert_null_key =
		"{\"root\": 16384, \"op\": \"insert\", " EV_RELATION("d") ", \"rows\": [[null, null]]}";

		error = zs_partition_rows_open(&rows, insert_null_key, (int) strlen(insert_null_key));
		CHECK(error == NULL, "insert, null key opens");
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL &&
			  col_is_null(&new_tuple.cols[0]) && col_is_null(&new_tuple.cols[1]),
			  "insert takes nulls");
		zs_partition_rows_close(&rows);
	}
}

static void
test_escapes(void)
{
	/* a"b\n<e-acute>, with a backslash and an n, not a newline */
	static const char *const message =
	"{\"root\": 1, \"op\": \"insert\", " EV_RELATION("d") ", "
	"\"rows\": [[\"a\\\"b\\\\n\\u00e9\", \"tab\\there\\nnew\\/\\ud83d\\ude00\"], "
	"[\"\", \"\\u0041\\u00DF\\u20ac\"]]}";
	static const char expect0[] = {'a', '"', 'b', '\\', 'n', (char) 0xC3, (char) 0xA9};
	static const char expect1[] = "tab\there\nnew/\xF0\x9F\x98\x80";
	static const char expect3[] = "A\xC3\x9F\xE2\x82\xAC";
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error;

	error = zs_partition_rows_open(&rows, message, (int) strlen(message));
	CHECK(error == NULL, "escapes: opens: %s", error ? error : "");
	init_msg(&msg);
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "escapes: first row");
	CHECK(col_is(&new_tuple.cols[0], expect0, (int) sizeof(expect0)),
		  "escapes: a\\\"b\\\\n\\u00e9 decodes to 7 bytes (len %d)", new_tuple.cols[0].len);
	CHECK(col_is(&new_tuple.cols[1], expect1, (int) strlen(expect1)),
		  "escapes: \\t \\n \\/ and a surrogate pair (len %d)", new_tuple.cols[1].len);
	CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "escapes: second row");
	CHECK(new_tuple.cols[0].kind == ZS_PGO_COL_TEXT && new_tuple.cols[0].len == 0 &&
		  new_tuple.cols[0].data != NULL, "escapes: an empty string is text, not null");
	CHECK(col_is(&new_tuple.cols[1], expect3, (int) strlen(expect3)),
		  "escapes: \\u0041\\u00DF\\u20ac (len %d)", new_tuple.cols[1].len);
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "escapes: end");
	zs_partition_rows_close(&rows);

	/* names are decoded too */
	{
		static const char *const names =
		"{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"my \\\"s\\\"\", "
		"\"name\": \"t\\u00e9\", \"replicaIdentity\": \"n\", \"columns\": [{\"name\": \"c\\\\d\", "
		"\"typeOID\": 1043, \"typmod\": 14, \"key\": false}]}, \"rows\": [[\"x\"]]}";

		error = zs_partition_rows_open(&rows, names, (int) strlen(names));
		CHECK(error == NULL, "escaped names: opens: %s", error ? error : "");
		if (error == NULL)
		{
			CHECK_STR(rows.relation.nspname, "my \"s\"");
			CHECK_STR(rows.relation.relname, "t\xC3\xA9");
			CHECK_STR(rows.relation.attrs[0].name, "c\\d");
			CHECK(rows.relation.attrs[0].typid == 1043 && rows.relation.attrs[0].typmod == 14,
				  "varchar(10): typid %u typmod %d", rows.relation.attrs[0].typid,
				  rows.relation.attrs[0].typmod);
			CHECK(rows.relation.replident == 'n', "identity n");
		}
		zs_partition_rows_close(&rows);
	}
}

static void
test_zero_rows(void)
{
	static const char *const message =
	"{\"root\": 16384, \"op\": \"delete\", " EV_RELATION("d") ", \"rows\": []}";
	static const char *const no_columns =
	"{\"root\": 5, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", \"name\": \"t\", "
	"\"replicaIdentity\": \"d\", \"columns\": []}, \"rows\": [[], []]}";
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error;

	error = zs_partition_rows_open(&rows, message, (int) strlen(message));
	CHECK(error == NULL, "zero rows: opens: %s", error ? error : "");
	CHECK(rows.relation.natts == 2, "zero rows: the relation is still read");
	init_msg(&msg);
	error = "unset";
	CHECK(!zs_partition_rows_next(&rows, &msg, &error), "zero rows: no row");
	CHECK(error == NULL, "zero rows: no error");
	zs_partition_rows_close(&rows);

	/* a table with no published column: empty rows */
	error = zs_partition_rows_open(&rows, no_columns, (int) strlen(no_columns));
	CHECK(error == NULL, "no columns: opens: %s", error ? error : "");
	CHECK(rows.relation.natts == 0, "no columns: natts 0");
	init_msg(&msg);
	for (int i = 0; i < 2; i++)
	{
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL,
			  "no columns: row %d", i);
		CHECK(new_tuple.natts == 0, "no columns: row %d has no value", i);
	}
	CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "no columns: end");
	zs_partition_rows_close(&rows);
}

/* a message whose relation has n int columns, the first a key, and one row */
static char *
wide_message(int n)
{
	size_t		size = 200 + (size_t) n * 80;
	char	   *buf = malloc(size);
	size_t		off = 0;

	off += snprintf(buf + off, size - off,
					"{\"root\": 7, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					"\"name\": \"w\", \"replicaIdentity\": \"d\", \"columns\": [");
	for (int i = 0; i < n; i++)
		off += snprintf(buf + off, size - off,
						"%s{\"name\": \"c%d\", \"typeOID\": 23, \"typmod\": -1, \"key\": %s}",
						i ? "," : "", i, i == 0 ? "true" : "false");
	off += snprintf(buf + off, size - off, "]}, \"rows\": [[");
	for (int i = 0; i < n; i++)
		off += snprintf(buf + off, size - off, "%s\"%d\"", i ? "," : "", i);
	off += snprintf(buf + off, size - off, "]]}");
	return buf;
}

static void
test_columns_limit(void)
{
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error;
	char	   *json;
	char		expect[16];

	json = wide_message(ZS_MAX_COLUMNS);
	error = zs_partition_rows_open(&rows, json, (int) strlen(json));
	CHECK(error == NULL, "1664 columns open: %s", error ? error : "");
	CHECK(rows.relation.natts == ZS_MAX_COLUMNS, "1664 columns: natts %d", rows.relation.natts);
	if (error == NULL)
	{
		CHECK_STR(rows.relation.attrs[ZS_MAX_COLUMNS - 1].name, "c1663");
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "1664 values");
		snprintf(expect, sizeof(expect), "%d", ZS_MAX_COLUMNS - 1);
		CHECK(new_tuple.natts == ZS_MAX_COLUMNS &&
			  col_is_text(&new_tuple.cols[ZS_MAX_COLUMNS - 1], expect),
			  "1664 values: the last one");
		CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error == NULL, "1664: end");
	}
	zs_partition_rows_close(&rows);
	free(json);

	json = wide_message(ZS_MAX_COLUMNS + 1);
	check_open_fails(json, "the relation's columns are not an array of at most 1664",
					 "1665 columns");
	free(json);
}

static void
test_bad_messages(void)
{
#define REL_D EV_RELATION("d")
#define ROWS ", \"rows\": [[\"1\", \"a\"]]}"
#define COLS_REL(cols) \
	"\"relation\": {\"schema\": \"public\", \"name\": \"ev\", \"replicaIdentity\": \"d\", " \
	"\"columns\": [" cols "]}"
	static const char *const not_object = "not a JSON object";
	static const char *const no_root = "no root oid";
	static const char *const bad_op = "op is neither insert nor delete";
	static const char *const no_rel = "no relation";
	static const char *const bad_cols = "the relation's columns are not an array of at most 1664";
	static const char *const bad_ident = "the relation's replica identity is not d, i, f or n";
	static const char *const no_name = "the relation has no schema or name";
	static const char *const col_name = "a column has no name or key flag";
	static const char *const col_type = "a column has no type oid";
	static const char *const col_typmod = "a column has no type modifier";
	static const char *const no_rows = "no rows";
	static const char *const row_width = "a row does not have one value per column";
	static const char *const bad_value = "a value is neither text (without NUL) nor null";
	static const char *const null_key = "a deleted row has no value for a key column";

	/* not JSON, or not an object */
	check_open_fails("", not_object, "empty");
	check_open_fails("   ", not_object, "blanks");
	check_open_fails("not json", not_object, "not JSON");
	check_open_fails("{\"root\": 1,}", not_object, "trailing comma");
	check_open_fails("{\"root\": 1} x", not_object, "trailing garbage");
	check_open_fails("{\"root\": 1}{}", not_object, "two documents");
	check_open_fails("[1, 2]", not_object, "an array");
	check_open_fails("\"{}\"", not_object, "a string");
	check_open_fails("null", not_object, "null");
	check_open_fails("16384", not_object, "a number");

	/* the root */
	check_open_fails("{\"op\": \"insert\", " REL_D ROWS, no_root, "no root");
	check_open_fails("{\"root\": 0, \"op\": \"insert\", " REL_D ROWS, no_root, "root 0");
	check_open_fails("{\"root\": -5, \"op\": \"insert\", " REL_D ROWS, no_root, "root -5");
	check_open_fails("{\"root\": 4294967296, \"op\": \"insert\", " REL_D ROWS, no_root,
					 "root 2^32");
	check_open_fails("{\"root\": 99999999999999999999999, \"op\": \"insert\", " REL_D ROWS,
					 no_root, "root beyond int64");
	check_open_fails("{\"root\": 1.5, \"op\": \"insert\", " REL_D ROWS, no_root, "root 1.5");
	check_open_fails("{\"root\": 1e3, \"op\": \"insert\", " REL_D ROWS, no_root, "root 1e3");
	check_open_fails("{\"root\": \"16384\", \"op\": \"insert\", " REL_D ROWS, no_root,
					 "root a string");
	check_open_fails("{\"root\": null, \"op\": \"insert\", " REL_D ROWS, no_root, "root null");
	{
		/* the largest oid is one */
		static const char *const max_root =
		"{\"root\": 4294967295, \"op\": \"insert\", " REL_D ROWS;
		ZsPartitionRows rows;
		const char *error = zs_partition_rows_open(&rows, max_root, (int) strlen(max_root));

		CHECK(error == NULL && rows.relation.relid == 4294967295U, "root 2^32-1 is an oid: %s",
			  error ? error : "");
		zs_partition_rows_close(&rows);
	}

	/* the op */
	check_open_fails("{\"root\": 1, " REL_D ROWS, bad_op, "no op");
	check_open_fails("{\"root\": 1, \"op\": \"update\", " REL_D ROWS, bad_op, "op update");
	check_open_fails("{\"root\": 1, \"op\": \"INSERT\", " REL_D ROWS, bad_op, "op INSERT");
	check_open_fails("{\"root\": 1, \"op\": \"\", " REL_D ROWS, bad_op, "op empty");
	check_open_fails("{\"root\": 1, \"op\": \"insertx\", " REL_D ROWS, bad_op, "op insertx");
	check_open_fails("{\"root\": 1, \"op\": \"del\", " REL_D ROWS, bad_op, "op del");
	check_open_fails("{\"root\": 1, \"op\": 1, " REL_D ROWS, bad_op, "op a number");
	check_open_fails("{\"root\": 1, \"op\": [\"insert\"], " REL_D ROWS, bad_op, "op an array");
	check_open_fails("{\"root\": 1, \"op\": \"insert\\u0000x\", " REL_D ROWS, bad_op, "op with a NUL");

	/* the relation */
	check_open_fails("{\"root\": 1, \"op\": \"insert\"" ROWS, no_rel, "no relation");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": null" ROWS, no_rel,
					 "relation null");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": [1]" ROWS, no_rel,
					 "relation an array");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": \"ev\"" ROWS, no_rel,
					 "relation a string");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"name\": \"t\", \"replicaIdentity\": \"d\"}" ROWS, bad_cols,
					 "no columns");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"name\": \"t\", \"replicaIdentity\": \"d\", \"columns\": {}}" ROWS,
					 bad_cols, "columns an object");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"name\": \"t\", \"replicaIdentity\": \"d\", \"columns\": \"id\"}" ROWS,
					 bad_cols, "columns a string");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"name\": \"t\", \"replicaIdentity\": \"d\", \"columns\": null}" ROWS,
					 bad_cols, "columns null");

	/* the replica identity */
#define IDENT_REL(ident) \
	"{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", \"name\": \"t\", " \
	ident "\"columns\": []}, \"rows\": []}"
	check_open_fails(IDENT_REL(""), bad_ident, "no replica identity");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"x\", "), bad_ident, "identity x");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"\", "), bad_ident, "identity empty");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"dd\", "), bad_ident, "identity dd");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"D\", "), bad_ident, "identity D");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"default\", "), bad_ident,
					 "identity default");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"\\u0000\", "), bad_ident,
					 "identity NUL");
	check_open_fails(IDENT_REL("\"replicaIdentity\": \"d\\u0000zz\", "), bad_ident,
					 "identity d and a NUL");
	check_open_fails(IDENT_REL("\"replicaIdentity\": 100, "), bad_ident, "identity a number");
	check_open_fails(IDENT_REL("\"replicaIdentity\": null, "), bad_ident, "identity null");

	/* schema and name */
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"name\": \"t\", "
					 "\"replicaIdentity\": \"d\", \"columns\": []}, \"rows\": []}", no_name,
					 "no schema");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"replicaIdentity\": \"d\", \"columns\": []}, \"rows\": []}", no_name,
					 "no name");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": null, "
					 "\"name\": \"t\", \"replicaIdentity\": \"d\", \"columns\": []}, \"rows\": []}",
					 no_name, "schema null");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", \"relation\": {\"schema\": \"s\", "
					 "\"name\": 5, \"replicaIdentity\": \"d\", \"columns\": []}, \"rows\": []}",
					 no_name, "name a number");

	/* the columns */
#define ONE_COL(col) "{\"root\": 1, \"op\": \"insert\", " COLS_REL(col) ", \"rows\": []}"
	check_open_fails(ONE_COL("{\"typeOID\": 23, \"typmod\": -1, \"key\": true}"), col_name,
					 "column without name");
	check_open_fails(ONE_COL("{\"name\": null, \"typeOID\": 23, \"typmod\": -1, \"key\": true}"),
					 col_name, "column name null");
	check_open_fails(ONE_COL("{\"name\": 3, \"typeOID\": 23, \"typmod\": -1, \"key\": true}"),
					 col_name, "column name a number");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1}"), col_name,
					 "column without key");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1, \"key\": 1}"),
					 col_name, "column key 1");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1, \"key\": \"true\"}"),
					 col_name, "column key a string");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1, \"key\": null}"),
					 col_name, "column key null");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typmod\": -1, \"key\": true}"), col_type,
					 "column without typeOID");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 0, \"typmod\": -1, \"key\": true}"),
					 col_type, "column typeOID 0");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": -23, \"typmod\": -1, \"key\": true}"),
					 col_type, "column typeOID negative");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 4294967296, \"typmod\": -1, \"key\": true}"),
					 col_type, "column typeOID 2^32");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": \"23\", \"typmod\": -1, \"key\": true}"),
					 col_type, "column typeOID a string");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23.5, \"typmod\": -1, \"key\": true}"),
					 col_type, "column typeOID 23.5");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"key\": true}"), col_typmod,
					 "column without typmod");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": null, \"key\": true}"),
					 col_typmod, "column typmod null");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": \"-1\", \"key\": true}"),
					 col_typmod, "column typmod a string");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": 2147483648, \"key\": true}"),
					 col_typmod, "column typmod 2^31");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -2147483649, \"key\": true}"),
					 col_typmod, "column typmod -2^31-1");
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": 0.5, \"key\": true}"),
					 col_typmod, "column typmod 0.5");
	check_open_fails(ONE_COL("\"id\""), col_name, "column a string");
	check_open_fails(ONE_COL("[\"id\", 23, -1, true]"), col_name, "column an array");
	check_open_fails(ONE_COL("null"), col_name, "column null");
	/* a bad column after good ones */
	check_open_fails(ONE_COL("{\"name\": \"id\", \"typeOID\": 23, \"typmod\": -1, \"key\": true}, "
							 "{\"name\": \"v\", \"typeOID\": 25, \"key\": false}"),
					 col_typmod, "second column without typmod");
	{
		/* typmod at int32's bounds and the largest oid are values */
		static const char *const bounds =
		"{\"root\": 1, \"op\": \"insert\", " COLS_REL(
			"{\"name\": \"a\", \"typeOID\": 4294967295, \"typmod\": 2147483647, \"key\": false}, "
			"{\"name\": \"b\", \"typeOID\": 1, \"typmod\": -2147483648, \"key\": false}")
		", \"rows\": []}";
		ZsPartitionRows rows;
		const char *error = zs_partition_rows_open(&rows, bounds, (int) strlen(bounds));

		CHECK(error == NULL, "bounds: opens: %s", error ? error : "");
		if (error == NULL)
			CHECK(rows.relation.attrs[0].typid == 4294967295U &&
				  rows.relation.attrs[0].typmod == PG_INT32_MAX &&
				  rows.relation.attrs[1].typid == 1 &&
				  rows.relation.attrs[1].typmod == PG_INT32_MIN, "bounds: values");
		zs_partition_rows_close(&rows);
	}

	/* the rows */
	check_open_fails("{\"root\": 1, \"op\": \"insert\", " REL_D "}", no_rows, "no rows");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", " REL_D ", \"rows\": {}}", no_rows,
					 "rows an object");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", " REL_D ", \"rows\": null}", no_rows,
					 "rows null");
	check_open_fails("{\"root\": 1, \"op\": \"insert\", " REL_D ", \"rows\": \"[]\"}", no_rows,
					 "rows a string");

	/* each row */
#define ROWS_OF(op, rows) "{\"root\": 1, \"op\": \"" op "\", " REL_D ", \"rows\": [" rows "]}"
	check_row_fails(ROWS_OF("insert", "[\"1\"]"), row_width, "one value short");
	check_row_fails(ROWS_OF("insert", "[\"1\", \"a\", \"x\"]"), row_width, "one value more");
	check_row_fails(ROWS_OF("insert", "[]"), row_width, "no value");
	check_row_fails(ROWS_OF("insert", "{\"id\": \"1\", \"v\": \"a\"}"), row_width,
					"a row that is an object");
	check_row_fails(ROWS_OF("insert", "\"1\""), row_width, "a row that is a string");
	check_row_fails(ROWS_OF("insert", "null"), row_width, "a row that is null");
	check_row_fails(ROWS_OF("insert", "[1, \"a\"]"), bad_value, "a number");
	check_row_fails(ROWS_OF("insert", "[\"1\", 2.5]"), bad_value, "a fraction");
	check_row_fails(ROWS_OF("insert", "[\"1\", {\"a\": 1}]"), bad_value, "an object");
	check_row_fails(ROWS_OF("insert", "[\"1\", [\"a\"]]"), bad_value, "an array");
	check_row_fails(ROWS_OF("insert", "[\"1\", true]"), bad_value, "a boolean");
	check_row_fails(ROWS_OF("insert", "[\"1\", \"a\\u0000b\"]"), bad_value, "a value with a NUL");
	check_row_fails(ROWS_OF("delete", "[null, null]"), null_key, "a delete with a null key");
	check_row_fails(ROWS_OF("delete", "[null, \"a\"]"), null_key,
					"a delete with a null key and a value");
	check_row_fails(ROWS_OF("delete", "[5, null]"), bad_value, "a delete with a number key");

	/* a bad row after a good one: the good one first, then the error */
	{
		static const char *const json = ROWS_OF("insert", "[\"1\", \"a\"], [\"2\"]");
		ZsPartitionRows rows;
		ZsPgoutputMsg msg;
		const char *error = zs_partition_rows_open(&rows, json, (int) strlen(json));

		CHECK(error == NULL, "good then bad: opens");
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL &&
			  col_is_text(&new_tuple.cols[0], "1"), "good then bad: the good row");
		CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error != NULL &&
			  strcmp(error, row_width) == 0, "good then bad: the bad row's error");
		zs_partition_rows_close(&rows);
	}
	/* a null key in a second key column */
	{
		static const char *const json =
		"{\"root\": 1, \"op\": \"delete\", " COLS_REL(
			"{\"name\": \"a\", \"typeOID\": 23, \"typmod\": -1, \"key\": true}, "
			"{\"name\": \"b\", \"typeOID\": 23, \"typmod\": -1, \"key\": true}, "
			"{\"name\": \"c\", \"typeOID\": 23, \"typmod\": -1, \"key\": false}")
		", \"rows\": [[\"1\", \"2\", null], [\"1\", null, null]]}";
		ZsPartitionRows rows;
		ZsPgoutputMsg msg;
		const char *error = zs_partition_rows_open(&rows, json, (int) strlen(json));

		CHECK(error == NULL, "two key columns: opens");
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL &&
			  msg.old_kind == ZS_PGO_TUPLE_KEY && col_is_text(&old_tuple.cols[0], "1") &&
			  col_is_text(&old_tuple.cols[1], "2") && col_is_null(&old_tuple.cols[2]),
			  "two key columns: a whole key");
		CHECK(!zs_partition_rows_next(&rows, &msg, &error) && error != NULL &&
			  strcmp(error, null_key) == 0, "two key columns: the second one null");
		zs_partition_rows_close(&rows);
	}
}

/*
 * Every prefix of a valid message (in a buffer of exactly its length, so a
 * read past the end is one a sanitizer sees) fails to open cleanly; a
 * message is one object, so no prefix is one.
 */
static void
test_truncated(void)
{
	static const char *const messages[] = {
		insert_message,
		"{\"root\": 16384, \"op\": \"delete\", " EV_RELATION("f") ", "
		"\"rows\": [[\"a\\\"b\\\\n\\u00e9\", null], [\"\\ud83d\\ude00\", \"x\"]]}",
	};
	int			failures = 0;
	int			opened = 0;

	for (int m = 0; m < (int) lengthof(messages); m++)
	{
		int			full = (int) strlen(messages[m]);

		for (int len = 0; len <= full; len++)
		{
			char	   *buf = malloc(len > 0 ? len : 1);
			ZsPartitionRows rows;
			ZsPgoutputMsg msg;
			const char *error;

			memcpy(buf, messages[m], len);
			error = zs_partition_rows_open(&rows, buf, len);
			if (error == NULL)
			{
				int			n = 0;

				opened++;
				init_msg(&msg);
				while (zs_partition_rows_next(&rows, &msg, &error))
					n++;
				if (len < full || error != NULL || n != 2)
					failures++;
			}
			else if (len == full || error[0] == '\0')
				failures++;
			zs_partition_rows_close(&rows);
			free(buf);
		}
	}
	CHECK(failures == 0, "%d prefixes misread", failures);
	CHECK(opened == (int) lengthof(messages), "only the whole messages open (%d did)", opened);
}

/* the same struct opened again after a failure and after a success */
static void
test_reuse(void)
{
	ZsPartitionRows rows;
	ZsPgoutputMsg msg;
	const char *error;

	error = zs_partition_rows_open(&rows, "{\"root\": 0}", 11);
	CHECK(error != NULL, "reuse: the first open fails");
	zs_partition_rows_close(&rows);
	for (int i = 0; i < 3; i++)
	{
		error = zs_partition_rows_open(&rows, insert_message, (int) strlen(insert_message));
		CHECK(error == NULL, "reuse %d: opens", i);
		init_msg(&msg);
		CHECK(zs_partition_rows_next(&rows, &msg, &error) && error == NULL &&
			  col_is_text(&new_tuple.cols[1], "a"), "reuse %d: first row", i);
		zs_partition_rows_close(&rows);
	}
	/* closed before its rows were read */
	error = zs_partition_rows_open(&rows, insert_message, (int) strlen(insert_message));
	CHECK(error == NULL, "closed early: opens");
	zs_partition_rows_close(&rows);
}

int
main(void)
{
	test_insert();
	test_delete();
	test_escapes();
	test_zero_rows();
	test_columns_limit();
	test_bad_messages();
	test_truncated();
	test_reuse();
	return unit_report("test_partition_rows");
}
