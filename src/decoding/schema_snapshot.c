/*-------------------------------------------------------------------------
 * schema_snapshot.c
 *	  Reading a snapshot of the published schema: its tables, columns and
 *	  indexes, a table's replica-identity columns and row filter.
 *
 * A snapshot is what zero_stream.published_schema() returns (zero-cache's
 * publishedSchemaQuery): {"tables":[…],"indexes":[…]}, each table with
 * "oid", "schema", "name", "columns" (an object: name -> {"pos", ...}),
 * "replicaIdentity", "primaryKey" and "publications". Beyond zero-cache's
 * fields, "identities" ([{"oid","pos"},…]) lists the published identity
 * columns (GENERATED … AS IDENTITY), which have no default to show (a
 * snapshot without the member has none). The schema diff and the backfill check read snapshots
 * through these. Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_out.h"
#include "codec/json_read.h"
#include "decoding/schema_snapshot.h"

bool
zs_schema_snapshot_read(ZsSchemaSnapshot *s, const char *text, int len, const char **error)
{
	if (!zs_json_parse(&s->doc, text, len) || s->doc.nodes[0].type != ZS_JSON_OBJECT)
	{
		*error = "a published schema is not a JSON object";
		return false;
	}
	s->tables = zs_json_get(&s->doc, 0, "tables");
	s->indexes = zs_json_get(&s->doc, 0, "indexes");
	if (s->tables < 0 || s->indexes < 0 ||
		s->doc.nodes[s->tables].type != ZS_JSON_ARRAY ||
		s->doc.nodes[s->indexes].type != ZS_JSON_ARRAY)
	{
		*error = "a published schema has no \"tables\" or \"indexes\" array";
		return false;
	}
	s->identities = zs_json_get(&s->doc, 0, "identities");
	if (s->identities >= 0 && s->doc.nodes[s->identities].type != ZS_JSON_ARRAY)
	{
		*error = "a published schema's \"identities\" is not an array";
		return false;
	}
	for (int t = s->doc.nodes[s->tables].first_child; t >= 0; t = s->doc.nodes[t].next)
	{
		int			columns = zs_json_get(&s->doc, t, "columns");

		if (s->doc.nodes[t].type != ZS_JSON_OBJECT || columns < 0 ||
			s->doc.nodes[columns].type != ZS_JSON_OBJECT ||
			zs_json_get_string(&s->doc, t, "schema") == NULL ||
			zs_json_get_string(&s->doc, t, "name") == NULL)
		{
			*error = "a published table has no schema, name or columns";
			return false;
		}
	}
	return true;
}

const char *
zs_schema_snapshot_str(const ZsJsonDoc *doc, int node, const char *key)
{
	const char *s = zs_json_get_string(doc, node, key);

	return s ? s : "";
}

int64
zs_schema_snapshot_int(const ZsJsonDoc *doc, int node, const char *key)
{
	int64		v = 0;
	int			n = zs_json_get(doc, node, key);

	if (n >= 0)
		(void) zs_json_int64(doc, n, &v);
	return v;
}

/* The table of a snapshot with this oid, or -1. */
int
zs_schema_snapshot_table_by_oid(const ZsSchemaSnapshot *s, int64 oid)
{
	for (int t = s->doc.nodes[s->tables].first_child; t >= 0; t = s->doc.nodes[t].next)
		if (zs_schema_snapshot_int(&s->doc, t, "oid") == oid)
			return t;
	return -1;
}

int
zs_schema_snapshot_table_by_name(const ZsSchemaSnapshot *s, const char *schema, const char *name)
{
	for (int t = s->doc.nodes[s->tables].first_child; t >= 0; t = s->doc.nodes[t].next)
		if (strcmp(zs_schema_snapshot_str(&s->doc, t, "schema"), schema) == 0 &&
			strcmp(zs_schema_snapshot_str(&s->doc, t, "name"), name) == 0)
			return t;
	return -1;
}

int
zs_schema_snapshot_index_by_id(const ZsSchemaSnapshot *s, const char *schema, const char *name)
{
	for (int i = s->doc.nodes[s->indexes].first_child; i >= 0; i = s->doc.nodes[i].next)
		if (strcmp(zs_schema_snapshot_str(&s->doc, i, "schema"), schema) == 0 &&
			strcmp(zs_schema_snapshot_str(&s->doc, i, "name"), name) == 0)
			return i;
	return -1;
}

/* A table's column (a member of "columns") with this attnum, or -1. */
int
zs_schema_snapshot_column_by_pos(const ZsJsonDoc *doc, int table, int64 pos)
{
	int			columns = zs_json_get(doc, table, "columns");

	for (int c = columns >= 0 ? doc->nodes[columns].first_child : -1; c >= 0; c = doc->nodes[c].next)
		if (zs_schema_snapshot_int(doc, c, "pos") == pos)
			return c;
	return -1;
}

int
zs_schema_snapshot_column_by_name(const ZsJsonDoc *doc, int table, const char *name)
{
	return zs_json_get(doc, zs_json_get(doc, table, "columns"), name);
}

bool
zs_schema_snapshot_is_identity_column(const ZsSchemaSnapshot *s, int64 oid, int64 pos)
{
	if (s->identities < 0)
		return false;
	for (int i = s->doc.nodes[s->identities].first_child; i >= 0; i = s->doc.nodes[i].next)
		if (zs_schema_snapshot_int(&s->doc, i, "oid") == oid &&
			zs_schema_snapshot_int(&s->doc, i, "pos") == pos)
			return true;
	return false;
}

/*
 * Can ZQL carry a column of this published type (zero-cache's
 * liteTypeToZqlValueType on the column's lite type)? Arrays (a type with
 * an element type, as "name" has, or a "[]" type) and enums (the element's
 * type class if any, else the column's) always; otherwise the numeric, date
 * and time, string-like, boolean and JSON types by name.
 */
static bool
zql_visible(const ZsJsonDoc *doc, int column)
{
	static const char *const types[] = {
		"smallint", "integer", "int", "int2", "int4", "int8", "bigint", "smallserial",
		"serial", "serial2", "serial4", "serial8", "bigserial", "decimal", "numeric",
		"real", "double precision", "float", "float4", "float8",
		"date", "time", "timetz", "time with time zone", "time without time zone",
		"timestamp", "timestamptz", "timestamp with time zone", "timestamp without time zone",
		"bpchar", "character", "character varying", "text", "varchar",
		"cidr", "ean13", "inet", "isbn", "isbn13", "ismn", "ismn13", "issn", "issn13",
		"macaddr", "macaddr8", "pg_lsn", "upc", "uuid",
		"bool", "boolean", "json", "jsonb"
	};
	const char *type = zs_schema_snapshot_str(doc, column, "dataType");
	const char *elem = zs_json_get_string(doc, column, "elemPgTypeClass");
	const char *class = elem ? elem : zs_schema_snapshot_str(doc, column, "pgTypeClass");
	size_t		len = strcspn(type, "(");
	char		lower[64];

	if (elem != NULL || strstr(type, "[]") != NULL || strcmp(class, "e") == 0)
		return true;
	if (len >= sizeof(lower))
		return false;
	for (size_t i = 0; i < len; i++)
		lower[i] = pg_tolower((unsigned char) type[i]);
	lower[len] = '\0';
	for (int i = 0; i < (int) lengthof(types); i++)
		if (strcmp(lower, types[i]) == 0)
			return true;
	return false;
}

/*
 * Order two keys (their "columns" objects) as zero-cache's keyCmp does:
 * fewer columns first, then by the names, column by column.
 */
static int
key_cmp(const ZsJsonDoc *doc, int a, int b)
{
	int			x,
				y;

	if (doc->nodes[a].count != doc->nodes[b].count)
		return doc->nodes[a].count - doc->nodes[b].count;
	for (x = doc->nodes[a].first_child, y = doc->nodes[b].first_child; x >= 0 && y >= 0;
		 x = doc->nodes[x].next, y = doc->nodes[y].next)
	{
		int			c = strcmp(zs_json_key(doc, x), zs_json_key(doc, y));

		if (c != 0)
			return c;
	}
	return 0;
}

/*
 * The row key zero-cache gives a REPLICA IDENTITY FULL table: the key its
 * replica will use (computeZqlSpecs), the shortest unique index whose
 * columns are all NOT NULL and of a type ZQL carries, ties broken by the
 * column names; none if there is no such index. Returns the index's
 * "columns" node, or -1.
 */
static int
full_identity_key(const ZsSchemaSnapshot *s, int table)
{
	const ZsJsonDoc *doc = &s->doc;
	int			best = -1;

	for (int i = doc->nodes[s->indexes].first_child; i >= 0; i = doc->nodes[i].next)
	{
		int			columns = zs_json_get(doc, i, "columns");
		bool		usable;

		if (strcmp(zs_schema_snapshot_str(doc, i, "schema"), zs_schema_snapshot_str(doc, table, "schema")) != 0 ||
			strcmp(zs_schema_snapshot_str(doc, i, "tableName"), zs_schema_snapshot_str(doc, table, "name")) != 0 ||
			zs_json_get(doc, i, "unique") < 0 ||
			doc->nodes[zs_json_get(doc, i, "unique")].type != ZS_JSON_TRUE ||
			columns < 0 || doc->nodes[columns].type != ZS_JSON_OBJECT || doc->nodes[columns].count == 0)
			continue;
		usable = true;
		for (int c = doc->nodes[columns].first_child; c >= 0 && usable; c = doc->nodes[c].next)
		{
			int			col = zs_schema_snapshot_column_by_name(doc, table, zs_json_key(doc, c));
			int			not_null = col >= 0 ? zs_json_get(doc, col, "notNull") : -1;

			usable = not_null >= 0 && doc->nodes[not_null].type == ZS_JSON_TRUE && zql_visible(doc, col);
		}
		if (usable && (best < 0 || key_cmp(doc, columns, best) < 0))
			best = columns;
	}
	return best;
}

/*
 * The replica-identity columns, as zero-cache's replicaIdentityColumns:
 * the primary key under DEFAULT identity, the identity index's columns
 * under INDEX, and under FULL the key zero-cache's replica will use
 * (full_identity_key), which need not be the primary key.
 */
void
zs_schema_snapshot_append_identity(StringInfo out, const ZsSchemaSnapshot *s, int table)
{
	const ZsJsonDoc *doc = &s->doc;
	const char *ident = zs_schema_snapshot_str(doc, table, "replicaIdentity");
	int			list = -1;
	int			columns = -1;
	bool		first = true;

	if (strcmp(ident, "d") == 0)
		list = zs_json_get(doc, table, "primaryKey");
	else if (strcmp(ident, "f") == 0)
		columns = full_identity_key(s, table);
	else if (strcmp(ident, "i") == 0)
	{
		for (int i = doc->nodes[s->indexes].first_child; i >= 0; i = doc->nodes[i].next)
		{
			if (strcmp(zs_schema_snapshot_str(doc, i, "schema"), zs_schema_snapshot_str(doc, table, "schema")) == 0 &&
				strcmp(zs_schema_snapshot_str(doc, i, "tableName"), zs_schema_snapshot_str(doc, table, "name")) == 0 &&
				doc->nodes[zs_json_get(doc, i, "isReplicaIdentity")].type == ZS_JSON_TRUE)
			{
				columns = zs_json_get(doc, i, "columns");
				break;
			}
		}
	}
	appendStringInfoChar(out, '[');
	if (list >= 0)
	{
		for (int k = doc->nodes[list].first_child; k >= 0; k = doc->nodes[k].next)
		{
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			zs_json_append_cstring(out, zs_json_str(doc, k));
		}
	}
	else if (columns >= 0)
	{
		for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next)
		{
			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			zs_json_append_cstring(out, zs_json_key(doc, c));
		}
	}
	appendStringInfoChar(out, ']');
}

/*
 * The rows of a table its publications publish: NULL if one of them has no
 * row filter, else "(f1) OR (f2) ...", as zero-cache's initial sync and
 * backfill select them.
 */
char *
zs_schema_snapshot_table_row_filter(const ZsJsonDoc *doc, int table)
{
	int			pubs = zs_json_get(doc, table, "publications");
	StringInfoData where;

	if (pubs < 0 || doc->nodes[pubs].type != ZS_JSON_OBJECT || doc->nodes[pubs].count == 0)
		return NULL;
	initStringInfo(&where);
	for (int p = doc->nodes[pubs].first_child; p >= 0; p = doc->nodes[p].next)
	{
		const char *filter = zs_json_get_string(doc, p, "rowFilter");

		if (filter == NULL || filter[0] == '\0')
		{
			pfree(where.data);
			return NULL;
		}
		appendStringInfo(&where, "%s(%s)", where.len > 0 ? " OR " : "", filter);
	}
	return where.data;
}

char *
zs_schema_snapshot_row_filter(const char *schema, int schema_len, const char *table_schema,
					 const char *table_name)
{
	ZsSchemaSnapshot	s;
	const char *error;
	char	   *filter = NULL;
	int			t;

	zs_json_doc_init(&s.doc);
	if (zs_schema_snapshot_read(&s, schema, schema_len, &error) &&
		(t = zs_schema_snapshot_table_by_name(&s, table_schema, table_name)) >= 0)
		filter = zs_schema_snapshot_table_row_filter(&s.doc, t);
	zs_json_doc_free(&s.doc);
	return filter;
}
