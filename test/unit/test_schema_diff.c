/*
 * Unit tests for the schema diff (decoding/schema_diff.c): two published
 * schemas in, zero-cache's schema-change messages out, in its order, with
 * its fields. The golden change log (TAP 008) checks the same code against
 * zero-cache's own output for every kind of change.
 */
#include "postgres_fe.h"

#include "decoding/schema_backfill.h"
#include "decoding/schema_diff.h"
#include "unit.h"

#define COL(name, pos, type, notnull, dflt) \
	"\"" name "\":{\"pos\":" #pos ",\"dflt\":" dflt ",\"notNull\":" notnull ",\"typeOID\":23," \
	"\"dataType\":\"" type "\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}"

#define TABLE(oid, name, cols) \
	"{\"oid\":" #oid ",\"schema\":\"public\",\"schemaOID\":2200,\"name\":\"" name "\",\"replicaIdentity\":\"d\"," \
	"\"columns\":{" cols "},\"primaryKey\":[\"id\"],\"publications\":{\"p\":{\"rowFilter\":null}}}"

#define PKEY(table) \
	"{\"schema\":\"public\",\"tableName\":\"" table "\",\"name\":\"" table "_pkey\",\"unique\":true," \
	"\"isPrimaryKey\":true,\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}"

static char **changes;

static int
diff_with_leaves(const char *prev, const char *next, const char *empty_leaves,
				 const char *emptied_leaves, const char *tag)
{
	static const char *const own[] = {"zero_0/cdc", "zero_stream"};
	const char *error = NULL;
	int			n = zs_schema_diff(prev, (int) strlen(prev), next, (int) strlen(next),
								   empty_leaves, empty_leaves ? (int) strlen(empty_leaves) : 0,
								   emptied_leaves, emptied_leaves ? (int) strlen(emptied_leaves) : 0,
								   tag, own, 2, &changes, &error);

	CHECK(n >= 0, "diff failed: %s", error ? error : "?");
	return n;
}

static int
diff_with_empty(const char *prev, const char *next, const char *empty_leaves, const char *tag)
{
	return diff_with_leaves(prev, next, empty_leaves, NULL, tag);
}

static int
diff(const char *prev, const char *next, const char *tag)
{
	return diff_with_empty(prev, next, NULL, tag);
}

static void
test_tables(void)
{
	const char *empty = "{\"tables\":[],\"indexes\":[]}";
	const char *one = "{\"tables\":[" TABLE(100, "t", COL("id", 1, "int4", "true", "null")) "],"
		"\"indexes\":[" PKEY("t") "]}";
	int			n;

	n = diff(empty, one, "CREATE TABLE");
	CHECK(n == 2, "create: %d changes", n);
	if (n == 2)
	{
		CHECK_STR(changes[0], "{\"tag\":\"create-table\",\"spec\":{\"oid\":100,\"schema\":\"public\","
				  "\"schemaOID\":2200,\"name\":\"t\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,"
				  "\"dflt\":null,\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
				  "\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
				  "\"publications\":{\"p\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
				  "\"metadata\":{\"schemaOID\":2200,\"relationOID\":100,\"rowKey\":{\"id\":{\"attNum\":1}}}}");
		CHECK_STR(changes[1], "{\"tag\":\"create-index\",\"spec\":" PKEY("t") "}");
	}

	/* a table that appears other than by CREATE is backfilled */
	n = diff(empty, one, "ALTER PUBLICATION");
	CHECK(n == 2 && strstr(changes[0], ",\"backfill\":{\"id\":{\"attNum\":1}}}") != NULL,
		  "published by ALTER PUBLICATION: backfill");

	/* drop: the index first, then the table */
	n = diff(one, empty, "DROP TABLE");
	CHECK(n == 2, "drop: %d changes", n);
	if (n == 2)
	{
		CHECK_STR(changes[0], "{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"t_pkey\"}}");
		CHECK_STR(changes[1], "{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"t\"}}");
	}

	/* rename: same oid, new name; the index keeps its name */
	{
		const char *renamed = "{\"tables\":[" TABLE(100, "u", COL("id", 1, "int4", "true", "null")) "],"
			"\"indexes\":[{\"schema\":\"public\",\"tableName\":\"u\",\"name\":\"t_pkey\",\"unique\":true,"
			"\"isPrimaryKey\":true,\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}]}";

		n = diff(one, renamed, "ALTER TABLE");
		CHECK(n == 1, "rename: %d changes", n);
		if (n == 1)
			CHECK_STR(changes[0], "{\"tag\":\"rename-table\",\"old\":{\"schema\":\"public\",\"name\":\"t\"},"
					  "\"new\":{\"schema\":\"public\",\"name\":\"u\"}}");
	}

	/* our own schemas never appear */
	{
		const char *own = "{\"tables\":[{\"oid\":7,\"schema\":\"zero_stream\",\"schemaOID\":1,\"name\":\"x\","
			"\"replicaIdentity\":\"d\",\"columns\":{},\"primaryKey\":[],\"publications\":{}}],\"indexes\":[]}";

		CHECK(diff(empty, own, "CREATE TABLE") == 0, "own schema ignored");
	}
}

static void
test_columns(void)
{
	const char *before = "{\"tables\":[" TABLE(5, "t", COL("a", 2, "text", "false", "null") ","
											   COL("id", 1, "int4", "true", "null")) "],\"indexes\":[]}";
	const char *added = "{\"tables\":[" TABLE(5, "t", COL("a", 2, "text", "false", "null") ","
											  COL("c", 3, "text", "false", "\"'x'::text\"") ","
											  COL("d", 4, "timestamptz", "false", "\"now()\"") ","
											  COL("id", 1, "int4", "true", "null")) "],\"indexes\":[]}";
	const char *changed = "{\"tables\":[" TABLE(5, "t", COL("b", 2, "int8", "false", "null") ","
												COL("id", 1, "int4", "true", "null")) "],\"indexes\":[]}";
	int			n;

	n = diff(before, added, "ALTER TABLE");
	CHECK(n == 2, "add: %d changes", n);
	if (n == 2)
	{
		/* a constant default stays; now() is backfilled, its default dropped */
		CHECK(strstr(changes[0], "\"name\":\"c\",\"spec\":{\"pos\":3,\"dflt\":\"'x'::text\"") != NULL &&
			  strstr(changes[0], "backfill") == NULL, "constant default kept: %s", changes[0]);
		CHECK(strstr(changes[1], "\"name\":\"d\",\"spec\":{\"pos\":4,\"dflt\":null") != NULL &&
			  strstr(changes[1], ",\"backfill\":{\"attNum\":4}}") != NULL, "now() backfilled: %s", changes[1]);
		CHECK(strstr(changes[1], "\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":5,"
					 "\"rowKey\":{\"id\":{\"attNum\":1}}}") != NULL, "table metadata");
	}

	/*
	 * an identity column has no default but numbers the existing rows: the
	 * snapshot's "identities" mark it for a backfill; a stored generated
	 * column's default is its expression, backfilled as any other
	 */
	{
		const char *identity = "{\"tables\":[" TABLE(5, "t", COL("a", 2, "text", "false", "null") ","
													 COL("g", 4, "int4", "false", "\"(id * 2)\"") ","
													 COL("id", 1, "int4", "true", "null") ","
													 COL("n", 3, "int4", "true", "null")) "],\"indexes\":[],"
			"\"identities\":[{\"oid\":4,\"pos\":3},{\"oid\":5,\"pos\":3}]}";
		const char *other_table = "{\"tables\":[" TABLE(5, "t", COL("a", 2, "text", "false", "null") ","
														COL("id", 1, "int4", "true", "null") ","
														COL("n", 3, "int4", "true", "null")) "],\"indexes\":[],"
			"\"identities\":[{\"oid\":4,\"pos\":3},{\"oid\":5,\"pos\":1}]}";

		n = diff(before, identity, "ALTER TABLE");
		CHECK(n == 2, "add identity: %d changes", n);
		if (n == 2)
		{
			CHECK_STR(changes[0], "{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"t\"},"
					  "\"column\":{\"name\":\"g\",\"spec\":{\"pos\":4,\"dflt\":null,\"notNull\":false,"
					  "\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
					  "\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":5,"
					  "\"rowKey\":{\"id\":{\"attNum\":1}}},\"backfill\":{\"attNum\":4}}");
			CHECK_STR(changes[1], "{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"t\"},"
					  "\"column\":{\"name\":\"n\",\"spec\":{\"pos\":3,\"dflt\":null,\"notNull\":true,"
					  "\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
					  "\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":5,"
					  "\"rowKey\":{\"id\":{\"attNum\":1}}},\"backfill\":{\"attNum\":3}}");
		}
		/* another table's identity, or another column's, is no reason */
		n = diff(before, other_table, "ALTER TABLE");
		CHECK(n == 1 && strstr(changes[0], "backfill") == NULL, "identity elsewhere: %s", n > 0 ? changes[0] : "none");
		/* nor is an identity column that was there before */
		n = diff(identity, identity, "ALTER TABLE");
		CHECK(n == 0, "an unchanged identity column: %d changes", n);
	}

	/* a column added by another command is always backfilled */
	n = diff(before, added, "CREATE TABLE");
	CHECK(n == 2 && strstr(changes[0], "backfill") != NULL, "add by another command: backfill");

	/* rename + type change: one update-column with old and new */
	n = diff(before, changed, "ALTER TABLE");
	{
		const char *expected = "{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\","
			"\"name\":\"t\"},\"old\":{\"name\":\"a\",\"spec\":{\"pos\":2,";

		CHECK(n == 1 && strncmp(changes[0], expected, strlen(expected)) == 0 &&
			  strstr(changes[0], "\"new\":{\"name\":\"b\",\"spec\":{\"pos\":2,") != NULL &&
			  strstr(changes[0], "\"dataType\":\"int8\"") != NULL,
			  "update-column: %s", n > 0 ? changes[0] : "none");
	}

	/* drop */
	n = diff(added, before, "ALTER TABLE");
	CHECK(n == 2 && strcmp(changes[0], "{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\","
						   "\"name\":\"t\"},\"column\":\"c\"}") == 0, "drop-column");
}

static void
test_defaults(void)
{
	static const char *const supported[] = {"1", "-2.5", "true", "'x'::text", "'a''b'::character",
	"ARRAY[]::integer[]", "'{}'::text[]"};
	static const char *const backfilled[] = {"now()", "nextval('s'::regclass)",
		"'2000-01-01 00:00:00+00'::timestamp with time zone", "1e5", "gen_random_uuid()"};
	char		before[1024];
	char		after[1024];

	snprintf(before, sizeof(before), "{\"tables\":[" TABLE(9, "t", COL("id", 1, "int4", "true", "null")) "],\"indexes\":[]}");
	for (int i = 0; i < (int) (lengthof(supported) + lengthof(backfilled)); i++)
	{
		bool		is_supported = i < (int) lengthof(supported);
		const char *dflt = is_supported ? supported[i] : backfilled[i - lengthof(supported)];
		char		quoted[256];
		int			n;

		snprintf(quoted, sizeof(quoted), "\"%s\"", dflt);
		snprintf(after, sizeof(after),
				 "{\"tables\":[" TABLE(9, "t", COL("id", 1, "int4", "true", "null") ","
										 COL("x", 2, "text", "false", "%s")) "],\"indexes\":[]}",
				 quoted);
		n = diff(before, after, "ALTER TABLE");
		CHECK(n == 1 && (strstr(changes[0], "backfill") == NULL) == is_supported,
			  "default <%s>: %s", dflt, is_supported ? "kept" : "backfilled");
	}
}

static void
test_bad_input(void)
{
	const char *error = NULL;
	char	  **out;

	CHECK(zs_schema_diff("[]", 2, "{}", 2, NULL, 0, NULL, 0, "X", NULL, 0, &out, &error) < 0 && error, "not objects");
	CHECK(zs_schema_diff("{\"tables\":[{}],\"indexes\":[]}", 27, "{\"tables\":[],\"indexes\":[]}", 26, NULL, 0,
						 NULL, 0, "X", NULL, 0, &out, &error) < 0 && error, "table without a name");
	CHECK(zs_schema_diff("{\"tables\":[", 11, "{\"tables\":[],\"indexes\":[]}", 26, NULL, 0,
						 NULL, 0, "X", NULL, 0, &out, &error) < 0 && error, "truncated");
}

/*
 * Partitions of a table published through its root: a leaf that joins
 * with rows, or leaves, resets the root (dropped, created again with its
 * index and a backfill of every column); a leaf known to join empty does
 * not, and a table without "partitions" (an older snapshot) never is.
 */
static void
test_partitions(void)
{
#define PARTED(leaves) \
	"{\"tables\":[" TABLE(100, "p", COL("id", 1, "int4", "true", "null") "," COL("v", 2, "text", "false", "null")) "," \
	TABLE(200, "other", COL("id", 1, "int4", "true", "null")) "]," \
	"\"indexes\":[" PKEY("p") "," PKEY("other") "],\"identities\":[]," \
	"\"partitions\":[{\"oid\":100,\"leaves\":[" leaves "]}]}"
	const char *two = PARTED("101,102");
	const char *three = PARTED("101,102,103");
	const char *one = PARTED("101");
	int			n;

	/* attached, with rows or perhaps: reset */
	n = diff_with_empty(two, three, "[]", "ALTER TABLE");
	CHECK(n == 4, "attach: %d changes", n);
	if (n == 4)
	{
		CHECK_STR(changes[0], "{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"p_pkey\"}}");
		CHECK_STR(changes[1], "{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"p\"}}");
		CHECK(strncmp(changes[2], "{\"tag\":\"create-table\",\"spec\":{\"oid\":100,", 40) == 0 &&
			  strstr(changes[2], ",\"backfill\":{\"id\":{\"attNum\":1},\"v\":{\"attNum\":2}}}") != NULL,
			  "attach: created again with a backfill of every column: %s", changes[2]);
		CHECK_STR(changes[3], "{\"tag\":\"create-index\",\"spec\":" PKEY("p") "}");
	}
	n = diff_with_empty(two, three, NULL, "ALTER TABLE");
	CHECK(n == 4, "attach without the capture's list: reset (%d changes)", n);

	/* created as a partition, or attached empty: nothing */
	CHECK(diff_with_empty(two, three, "[103]", "CREATE TABLE") == 0, "a partition that joined empty");
	CHECK(diff_with_empty(two, three, "[101,103]", "ALTER TABLE") == 0, "attached empty");

	/* detached or dropped without the capture's account of it: reset */
	n = diff_with_empty(two, one, "[103]", "ALTER TABLE");
	CHECK(n == 4 && strstr(changes[1], "\"drop-table\"") != NULL && strstr(changes[2], "\"backfill\"") != NULL,
		  "detach: reset (%d changes)", n);
	/* the other table is left alone */
	for (int i = 0; i < n; i++)
		CHECK(strstr(changes[i], "\"other\"") == NULL, "detach: the other table untouched");

	/* the capture carried the rows: nothing (its inserts and deletes are in the stream) */
	CHECK(diff_with_empty(two, one, "[102]", "ALTER TABLE") == 0, "detached, its rows' deletes carried");
	CHECK(diff_with_empty(one, three, "[102,103]", "ALTER TABLE") == 0, "two attached, their rows carried");
	n = diff_with_empty(one, three, "[103]", "ALTER TABLE");
	CHECK(n == 4, "one of two attached not carried: reset (%d changes)", n);
	n = diff_with_empty(two, PARTED("101,103"), "[103]", "ALTER TABLE");
	CHECK(n == 4, "one joined carried, one left not: reset (%d changes)", n);
	CHECK(diff_with_empty(two, PARTED("101,103"), "[102,103]", "ALTER TABLE") == 0,
		  "one joined and one left, both carried");

	/* and so are snapshots without partitions */
	{
		const char *old = "{\"tables\":[" TABLE(100, "p", COL("id", 1, "int4", "true", "null") ","
											 COL("v", 2, "text", "false", "null")) ","
			TABLE(200, "other", COL("id", 1, "int4", "true", "null")) "],"
			"\"indexes\":[" PKEY("p") "," PKEY("other") "]}";

		CHECK(diff_with_empty(old, three, "[]", "ALTER TABLE") == 0, "an older snapshot: no reset");
	}

	/* the list must be an array */
	{
		const char *error = NULL;
		char	  **out;

		CHECK(zs_schema_diff(two, (int) strlen(two), three, (int) strlen(three), "{}", 2, NULL, 0,
							 "ALTER TABLE", NULL, 0, &out, &error) < 0 && error, "accountedLeaves not an array");
		CHECK(zs_schema_diff(two, (int) strlen(two), two, (int) strlen(two), "[]", 2, "{\"a\":1}", 7,
							 "TRUNCATE", NULL, 0, &out, &error) < 0 && error &&
			  strstr(error, "emptied") != NULL, "emptied leaves not an array: %s", error ? error : "");
		CHECK(zs_schema_diff(two, (int) strlen(two), two, (int) strlen(two), "[]", 2, "[", 1,
							 "TRUNCATE", NULL, 0, &out, &error) < 0 && error, "emptied leaves truncated");
	}

	/*
	 * a TRUNCATE of a leaf the capture did not carry (same schema on both
	 * sides): its root is reset; one of another table's, or of no
	 * partitioned table, resets nothing; an empty list nothing
	 */
	n = diff_with_leaves(two, two, NULL, "[102]", "TRUNCATE");
	CHECK(n == 4 && strstr(changes[1], "{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"p\"}}") != NULL &&
		  strstr(changes[2], "\"backfill\"") != NULL, "emptied leaf: its root reset (%d changes)", n);
	for (int i = 0; i < n; i++)
		CHECK(strstr(changes[i], "\"other\"") == NULL, "emptied leaf: the other table untouched");
	CHECK(diff_with_leaves(two, two, NULL, "[103, 999]", "TRUNCATE") == 0, "a leaf not of the root: nothing");
	CHECK(diff_with_leaves(two, two, "[]", "[]", "TRUNCATE") == 0, "no emptied leaf: nothing");
	/* emptied and detached in one: one reset */
	n = diff_with_leaves(two, one, "[102]", "[101]", "ALTER TABLE");
	CHECK(n == 4, "emptied one, carried the other's leaving: one reset (%d changes)", n);
	/* a leaf that left is not in the root any more: emptying it changes nothing */
	CHECK(diff_with_leaves(two, one, "[102]", "[102]", "ALTER TABLE") == 0, "an emptied leaf that left: nothing");
#undef PARTED
}

/*
 * REPLICA IDENTITY FULL: zero-cache's row key is the key its replica uses,
 * the shortest unique index of NOT NULL columns ZQL carries, ties by name:
 * here the unique "a" (a < id), so DEFAULT -> FULL changes the metadata.
 */
static void
test_full_identity(void)
{
#define UTABLE(ident, a_notnull) \
	"{\"tables\":[{\"oid\":300,\"schema\":\"public\",\"schemaOID\":2200,\"name\":\"u\",\"replicaIdentity\":\"" ident "\"," \
	"\"columns\":{" COL("id", 1, "int4", "true", "null") "," COL("a", 2, "int4", a_notnull, "null") "}," \
	"\"primaryKey\":[\"id\"],\"publications\":{\"p\":{\"rowFilter\":null}}}]," \
	"\"indexes\":[" PKEY("u") ",{\"schema\":\"public\",\"tableName\":\"u\",\"name\":\"u_a_key\",\"unique\":true," \
	"\"isPrimaryKey\":false,\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"a\":\"ASC\"}}]}"
	int			n;

	n = diff(UTABLE("d", "true"), UTABLE("f", "true"), "ALTER TABLE");
	CHECK(n == 1, "DEFAULT -> FULL: %d changes", n);
	if (n == 1)
		CHECK_STR(changes[0], "{\"tag\":\"update-table-metadata\",\"table\":{\"schema\":\"public\",\"name\":\"u\"},"
				  "\"old\":{\"schemaOID\":2200,\"relationOID\":300,\"rowKey\":{\"id\":{\"attNum\":1}}},"
				  "\"new\":{\"schemaOID\":2200,\"relationOID\":300,\"rowKey\":{\"a\":{\"attNum\":2}}}}");
	/* a nullable "a" is no key: the primary key it is, nothing changes */
	CHECK(diff(UTABLE("d", "false"), UTABLE("f", "false"), "ALTER TABLE") == 0, "nullable unique column: no change");
#undef UTABLE
}

/* zs_schema_backfill_table: a BackfillRequest checked against the published schema */
static void
test_backfill_requests(void)
{
	const char *schema = "{\"tables\":[" TABLE(5, "t", COL("id", 1, "int4", "true", "null") ","
											  COL("c", 3, "int4", "false", "null") ","
											  COL("d", 4, "int4", "false", "null"))
		"],\"indexes\":[" PKEY("t") "]}";
	ZsBackfillTable t;
	char	   *why;

#define REQUEST(schema_oid, rel_oid, rowkey, columns) \
	"{\"table\":{\"schema\":\"public\",\"name\":\"t\",\"metadata\":{\"schemaOID\":" #schema_oid \
	",\"relationOID\":" #rel_oid ",\"rowKey\":{" rowkey "}}},\"columns\":{" columns "}}"
#define CHECK_REQUEST(request, expect) \
	do { \
		why = zs_schema_backfill_table(schema, (int) strlen(schema), request, (int) strlen(request), &t); \
		CHECK((why == NULL && (expect) == NULL) || \
			  (why != NULL && (expect) != NULL && strstr(why, (expect) ? (expect) : "") != NULL), \
			  "%s -> %s", request, why ? why : "ok"); \
	} while (0)

	CHECK_REQUEST(REQUEST(2200, 5, "\"id\":{\"attNum\":1}", "\"d\":{\"attNum\":4},\"c\":{\"attNum\":3}"), NULL);
	CHECK(t.relid == 5 && t.nkeys == 1 && t.ncolumns == 3 && strcmp(t.names[0], "id") == 0 &&
		  strcmp(t.names[1], "d") == 0 && strcmp(t.names[2], "c") == 0 && t.typids[2] == 23,
		  "the row key, then the columns in the request's order");
	/* a key column also listed as backfilled (a table added to a publication) is read once */
	CHECK_REQUEST(REQUEST(2200, 5, "\"id\":{\"attNum\":1}", "\"id\":{\"attNum\":1},\"c\":{\"attNum\":3}"), NULL);
	CHECK(t.ncolumns == 2 && t.nkeys == 1, "a key column is not read twice");
	CHECK_REQUEST(REQUEST(2201, 5, "\"id\":{\"attNum\":1}", "\"c\":{\"attNum\":3}"), "original schema");
	CHECK_REQUEST(REQUEST(2200, 6, "\"id\":{\"attNum\":1}", "\"c\":{\"attNum\":3}"), "original table");
	CHECK_REQUEST(REQUEST(2200, 5, "\"c\":{\"attNum\":3}", "\"d\":{\"attNum\":4}"), "row key");
	CHECK_REQUEST(REQUEST(2200, 5, "\"id\":{\"attNum\":1}", "\"e\":{\"attNum\":5}"), "renamed or dropped");
	CHECK_REQUEST(REQUEST(2200, 5, "\"id\":{\"attNum\":1}", "\"c\":{\"attNum\":4}"), "original column");
	CHECK_REQUEST("{\"table\":{\"schema\":\"public\",\"name\":\"u\",\"metadata\":{\"rowKey\":{}}},\"columns\":{}}",
				  "renamed, dropped or unpublished");
	CHECK_REQUEST("{\"table\":{\"schema\":\"public\",\"name\":\"t\",\"metadata\":null},\"columns\":{}}",
				  "no row key");
	CHECK_REQUEST("{\"columns\":{}}", "no table");
	CHECK_REQUEST("not json", "no table");
#undef CHECK_REQUEST
#undef REQUEST
}

int
main(void)
{
	test_tables();
	test_columns();
	test_defaults();
	test_bad_input();
	test_partitions();
	test_full_identity();
	test_backfill_requests();
	return unit_report("test_schema_diff");
}
