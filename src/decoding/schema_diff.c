/*-------------------------------------------------------------------------
 * schema_diff.c
 *	  Zero's schema-change messages from two snapshots of the published
 *	  schema, as zero-cache's PostgreSQL change source computes them.
 *
 * A snapshot is what zero_stream.published_schema() returns (zero-cache's
 * publishedSchemaQuery): {"tables":[…],"indexes":[…]}. Tables are matched
 * by oid, columns by attnum ("pos"), indexes by schema-qualified name, and
 * the changes come in zero-cache's order, which SQLite needs:
 *
 *	 drop-index, drop-table, per kept table (rename-table,
 *	 update-table-metadata, drop-column, update-column, add-column),
 *	 create-table, create-index
 *
 * Field names, their order and values are zero-cache's (the golden change
 * log in test/golden holds real examples): a table spec is the snapshot's
 * table with "replicaIdentityColumns" appended, metadata is
 * {"schemaOID","relationOID","rowKey":{col:{"attNum":n}}}, and every value
 * taken from the snapshot is written as JavaScript re-writes it. A new
 * column whose default SQLite cannot take (anything but a number, boolean,
 * quoted literal with a one-word cast or an empty array), every new column
 * added by a command other than ALTER TABLE, and every table that appears
 * other than by CREATE (ALTER PUBLICATION) get zero-cache's "backfill"
 * marker, and such a column's default is dropped.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_js.h"
#include "codec/json_out.h"
#include "codec/json_read.h"
#include "decoding/schema_diff.h"

typedef struct Snapshot
{
	ZsJsonDoc	doc;
	int			tables;			/* array node */
	int			indexes;		/* array node */
} Snapshot;

typedef struct Diff
{
	Snapshot	prev;
	Snapshot	next;
	const char *tag;
	const char *const *own;
	int			n_own;
	char	  **changes;
	int			nchanges;
	int			maxchanges;
	StringInfoData buf;
} Diff;

/* ---------------------------------------------------------------- access */

static const char *
member_str(const ZsJsonDoc *doc, int node, const char *key)
{
	const char *s = zs_json_get_string(doc, node, key);

	return s ? s : "";
}

static int64
member_int(const ZsJsonDoc *doc, int node, const char *key)
{
	int64		v = 0;
	int			n = zs_json_get(doc, node, key);

	if (n >= 0)
		(void) zs_json_int64(doc, n, &v);
	return v;
}

/* the raw text of a member, for comparisons ("" if absent) */
static bool
members_equal(const ZsJsonDoc *a, int an, const ZsJsonDoc *b, int bn, const char *key)
{
	int			x = zs_json_get(a, an, key);
	int			y = zs_json_get(b, bn, key);

	if (x < 0 || y < 0)
		return x == y;
	return a->nodes[x].raw_len == b->nodes[y].raw_len &&
		memcmp(zs_json_raw(a, x), zs_json_raw(b, y), a->nodes[x].raw_len) == 0;
}

static bool
is_own(const Diff *d, const char *schema)
{
	for (int i = 0; i < d->n_own; i++)
		if (strcmp(d->own[i], schema) == 0)
			return true;
	return false;
}

/* The table of a snapshot with this oid, or -1. */
static int
table_by_oid(const Snapshot *s, int64 oid)
{
	for (int t = s->doc.nodes[s->tables].first_child; t >= 0; t = s->doc.nodes[t].next)
		if (member_int(&s->doc, t, "oid") == oid)
			return t;
	return -1;
}

static int
table_by_name(const Snapshot *s, const char *schema, const char *name)
{
	for (int t = s->doc.nodes[s->tables].first_child; t >= 0; t = s->doc.nodes[t].next)
		if (strcmp(member_str(&s->doc, t, "schema"), schema) == 0 &&
			strcmp(member_str(&s->doc, t, "name"), name) == 0)
			return t;
	return -1;
}

static int
index_by_id(const Snapshot *s, const char *schema, const char *name)
{
	for (int i = s->doc.nodes[s->indexes].first_child; i >= 0; i = s->doc.nodes[i].next)
		if (strcmp(member_str(&s->doc, i, "schema"), schema) == 0 &&
			strcmp(member_str(&s->doc, i, "name"), name) == 0)
			return i;
	return -1;
}

/* A table's column (a member of "columns") with this attnum, or -1. */
static int
column_by_pos(const ZsJsonDoc *doc, int table, int64 pos)
{
	int			columns = zs_json_get(doc, table, "columns");

	for (int c = columns >= 0 ? doc->nodes[columns].first_child : -1; c >= 0; c = doc->nodes[c].next)
		if (member_int(doc, c, "pos") == pos)
			return c;
	return -1;
}

static int
column_by_name(const ZsJsonDoc *doc, int table, const char *name)
{
	return zs_json_get(doc, zs_json_get(doc, table, "columns"), name);
}

/*
 * The replica-identity columns: the primary key under DEFAULT identity,
 * the identity index's columns under INDEX, and under FULL the primary key
 * if there is one (zero-cache picks the key its replica will use).
 */
static void
append_identity_columns(StringInfo out, const Snapshot *s, int table)
{
	const ZsJsonDoc *doc = &s->doc;
	const char *ident = member_str(doc, table, "replicaIdentity");
	int			list = -1;
	bool		first = true;

	if (strcmp(ident, "d") == 0 || strcmp(ident, "f") == 0)
		list = zs_json_get(doc, table, "primaryKey");
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
	else if (strcmp(ident, "i") == 0)
	{
		for (int i = doc->nodes[s->indexes].first_child; i >= 0; i = doc->nodes[i].next)
		{
			int			columns;

			if (strcmp(member_str(doc, i, "schema"), member_str(doc, table, "schema")) != 0 ||
				strcmp(member_str(doc, i, "tableName"), member_str(doc, table, "name")) != 0 ||
				doc->nodes[zs_json_get(doc, i, "isReplicaIdentity")].type != ZS_JSON_TRUE)
				continue;
			columns = zs_json_get(doc, i, "columns");
			for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next)
			{
				if (!first)
					appendStringInfoChar(out, ',');
				first = false;
				zs_json_append_cstring(out, zs_json_key(doc, c));
			}
			break;
		}
	}
	appendStringInfoChar(out, ']');
}

/* ---------------------------------------------------------------- writing */

static void
append_value(StringInfo out, const ZsJsonDoc *doc, int node)
{
	(void) zs_json_append_js_reparsed(out, zs_json_raw(doc, node), doc->nodes[node].raw_len);
}

/* {"schema":…,"name":…} of a table */
static void
append_table_id(StringInfo out, const ZsJsonDoc *doc, int table)
{
	appendStringInfoString(out, "{\"schema\":");
	zs_json_append_cstring(out, member_str(doc, table, "schema"));
	appendStringInfoString(out, ",\"name\":");
	zs_json_append_cstring(out, member_str(doc, table, "name"));
	appendStringInfoChar(out, '}');
}

/* {"schemaOID":n,"relationOID":n,"rowKey":{col:{"attNum":n},…}} */
static void
append_metadata(StringInfo out, const Snapshot *s, int table)
{
	const ZsJsonDoc *doc = &s->doc;
	StringInfoData cols;
	ZsJsonDoc	list;
	bool		first = true;

	appendStringInfo(out, "{\"schemaOID\":" INT64_FORMAT ",\"relationOID\":" INT64_FORMAT ",\"rowKey\":{",
					 member_int(doc, table, "schemaOID"), member_int(doc, table, "oid"));
	initStringInfo(&cols);
	append_identity_columns(&cols, s, table);
	zs_json_doc_init(&list);
	if (zs_json_parse(&list, cols.data, cols.len))
	{
		for (int k = list.nodes[0].first_child; k >= 0; k = list.nodes[k].next)
		{
			int			col = column_by_name(doc, table, zs_json_str(&list, k));

			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			zs_json_append_cstring(out, zs_json_str(&list, k));
			appendStringInfo(out, ":{\"attNum\":" INT64_FORMAT "}",
							 col >= 0 ? member_int(doc, col, "pos") : 0);
		}
	}
	zs_json_doc_free(&list);
	pfree(cols.data);
	appendStringInfoString(out, "}}");
}

/* A column's spec: its members in order, the default dropped if asked. */
static void
append_column_spec(StringInfo out, const ZsJsonDoc *doc, int column, bool drop_default)
{
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (int m = doc->nodes[column].first_child; m >= 0; m = doc->nodes[m].next)
	{
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		zs_json_append_cstring(out, zs_json_key(doc, m));
		appendStringInfoChar(out, ':');
		if (drop_default && strcmp(zs_json_key(doc, m), "dflt") == 0)
			appendStringInfoString(out, "null");
		else
			append_value(out, doc, m);
	}
	appendStringInfoChar(out, '}');
}

/* {"name":…,"spec":{…}} */
static void
append_column(StringInfo out, const ZsJsonDoc *doc, int column, bool drop_default)
{
	appendStringInfoString(out, "{\"name\":");
	zs_json_append_cstring(out, zs_json_key(doc, column));
	appendStringInfoString(out, ",\"spec\":");
	append_column_spec(out, doc, column, drop_default);
	appendStringInfoChar(out, '}');
}

static void
emit(Diff *d)
{
	if (d->nchanges == d->maxchanges)
	{
		d->maxchanges = Max(8, d->maxchanges * 2);
		d->changes = d->changes ? repalloc(d->changes, sizeof(char *) * d->maxchanges)
			: palloc(sizeof(char *) * d->maxchanges);
	}
	d->changes[d->nchanges++] = pstrdup(d->buf.data);
	resetStringInfo(&d->buf);
}

/* ---------------------------------------------------------------- defaults */

static bool
is_word(const char *s, const char *end)
{
	if (s >= end)
		return false;
	for (; s < end; s++)
		if (!isalnum((unsigned char) *s) && *s != '_')
			return false;
	return true;
}

/*
 * Can zero-cache's replica take this column default (mapPostgresToLiteDefault)?
 * A number, true/false, 'literal'::type with a one-word type, or an empty
 * array; anything else (now(), nextval(…), a multi-word cast) is backfilled.
 */
static bool
default_is_supported(const char *dflt)
{
	const char *p = dflt;
	size_t		len = strlen(dflt);
	const char *end = dflt + len;

	/* -?\d+(\.\d+)? */
	if (*p == '-')
		p++;
	if (isdigit((unsigned char) *p))
	{
		while (isdigit((unsigned char) *p))
			p++;
		if (*p == '.' && isdigit((unsigned char) p[1]))
			for (p++; isdigit((unsigned char) *p); p++)
				;
		if (p == end)
			return true;
	}
	if (strcmp(dflt, "true") == 0 || strcmp(dflt, "false") == 0)
		return true;
	/* ^('.*')::(\w+)$, '.' not matching line breaks */
	if (dflt[0] == '\'')
	{
		for (const char *q = end - 1; q > dflt; q--)
		{
			if (q[0] == '\'' && q + 3 <= end && q[1] == ':' && q[2] == ':' && is_word(q + 3, end))
			{
				if (strpbrk(dflt, "\n\r") == NULL || strpbrk(dflt, "\n\r") > q)
					return true;
				break;
			}
		}
	}
	/* ARRAY[]::type[] or '{}'::type[] */
	if (len > 4 && strcmp(end - 2, "[]") == 0)
	{
		const char *cast = NULL;

		if (pg_strncasecmp(dflt, "ARRAY", 5) == 0)
		{
			p = dflt + 5;
			while (isspace((unsigned char) *p))
				p++;
			if (*p++ == '[')
			{
				while (isspace((unsigned char) *p))
					p++;
				if (*p == ']')
					cast = p + 1;
			}
		}
		else if (strncmp(dflt, "'{}'", 4) == 0)
			cast = dflt + 4;
		if (cast != NULL && strncmp(cast, "::", 2) == 0 && is_word(cast + 2, end - 2))
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- indexes */

/* The same columns (by attnum) in the same directions, the same flags? */
static bool
index_structurally_changed(Diff *d, int prev, int next)
{
	const ZsJsonDoc *pd = &d->prev.doc;
	const ZsJsonDoc *nd = &d->next.doc;
	static const char *const flags[] = {"unique", "isPrimaryKey", "isReplicaIdentity", "isImmediate"};
	int			ptable,
				ntable,
				pcols,
				ncols;

	for (int f = 0; f < (int) lengthof(flags); f++)
		if (!members_equal(pd, prev, nd, next, flags[f]))
			return true;
	ptable = table_by_name(&d->prev, member_str(pd, prev, "schema"), member_str(pd, prev, "tableName"));
	ntable = table_by_name(&d->next, member_str(nd, next, "schema"), member_str(nd, next, "tableName"));
	if (ptable < 0 || ntable < 0)
		return true;
	pcols = zs_json_get(pd, prev, "columns");
	ncols = zs_json_get(nd, next, "columns");
	if (pd->nodes[pcols].count != nd->nodes[ncols].count)
		return true;
	for (int c = pd->nodes[pcols].first_child; c >= 0; c = pd->nodes[c].next)
	{
		int			pcol = column_by_name(pd, ptable, zs_json_key(pd, c));
		int64		attnum;
		int			ncol = -1;

		if (pcol < 0)
			return true;
		attnum = member_int(pd, pcol, "pos");
		for (int n = nd->nodes[ncols].first_child; n >= 0; n = nd->nodes[n].next)
		{
			int			col = column_by_name(nd, ntable, zs_json_key(nd, n));

			if (col >= 0 && member_int(nd, col, "pos") == attnum)
				ncol = n;
		}
		if (ncol < 0 || strcmp(zs_json_str(pd, c), zs_json_str(nd, ncol)) != 0)
			return true;
	}
	return false;
}

static void
emit_index(Diff *d, bool dropping, const ZsJsonDoc *doc, int index)
{
	if (dropping)
	{
		appendStringInfoString(&d->buf, "{\"tag\":\"drop-index\",\"id\":{\"schema\":");
		zs_json_append_cstring(&d->buf, member_str(doc, index, "schema"));
		appendStringInfoString(&d->buf, ",\"name\":");
		zs_json_append_cstring(&d->buf, member_str(doc, index, "name"));
		appendStringInfoString(&d->buf, "}}");
	}
	else
	{
		appendStringInfoString(&d->buf, "{\"tag\":\"create-index\",\"spec\":");
		append_value(&d->buf, doc, index);
		appendStringInfoChar(&d->buf, '}');
	}
	emit(d);
}

/*
 * Dropped (or created) indexes: first those only in the old (new)
 * snapshot, in its order, then kept ones whose structure changed, in the
 * old snapshot's order; a structural change is a drop and a create.
 */
static void
diff_indexes(Diff *d, bool dropping)
{
	const Snapshot *from = dropping ? &d->prev : &d->next;
	const Snapshot *other = dropping ? &d->next : &d->prev;
	const ZsJsonDoc *pd = &d->prev.doc;

	for (int i = from->doc.nodes[from->indexes].first_child; i >= 0; i = from->doc.nodes[i].next)
	{
		if (is_own(d, member_str(&from->doc, i, "schema")) ||
			index_by_id(other, member_str(&from->doc, i, "schema"),
						member_str(&from->doc, i, "name")) >= 0)
			continue;
		emit_index(d, dropping, &from->doc, i);
	}
	for (int i = pd->nodes[d->prev.indexes].first_child; i >= 0; i = pd->nodes[i].next)
	{
		int			n;

		if (is_own(d, member_str(pd, i, "schema")))
			continue;
		n = index_by_id(&d->next, member_str(pd, i, "schema"), member_str(pd, i, "name"));
		if (n < 0 || !index_structurally_changed(d, i, n))
			continue;
		if (dropping)
			emit_index(d, true, pd, i);
		else
			emit_index(d, false, &d->next.doc, n);
	}
}

/* ---------------------------------------------------------------- tables */

static void
diff_kept_table(Diff *d, int prev, int next)
{
	const ZsJsonDoc *pd = &d->prev.doc;
	const ZsJsonDoc *nd = &d->next.doc;
	StringInfoData a,
				b;
	int			pcols = zs_json_get(pd, prev, "columns");
	int			ncols = zs_json_get(nd, next, "columns");
	bool		always_backfill = strcmp(d->tag, "ALTER TABLE") != 0;

	if (!members_equal(pd, prev, nd, next, "schema") || !members_equal(pd, prev, nd, next, "name"))
	{
		appendStringInfoString(&d->buf, "{\"tag\":\"rename-table\",\"old\":");
		append_table_id(&d->buf, pd, prev);
		appendStringInfoString(&d->buf, ",\"new\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}

	initStringInfo(&a);
	initStringInfo(&b);
	append_metadata(&a, &d->prev, prev);
	append_metadata(&b, &d->next, next);
	if (strcmp(a.data, b.data) != 0)
	{
		appendStringInfoString(&d->buf, "{\"tag\":\"update-table-metadata\",\"table\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfo(&d->buf, ",\"old\":%s,\"new\":%s}", a.data, b.data);
		emit(d);
	}

	/* dropped columns, in the old table's order */
	for (int c = pd->nodes[pcols].first_child; c >= 0; c = pd->nodes[c].next)
	{
		if (column_by_pos(nd, next, member_int(pd, c, "pos")) >= 0)
			continue;
		appendStringInfoString(&d->buf, "{\"tag\":\"drop-column\",\"table\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfoString(&d->buf, ",\"column\":");
		zs_json_append_cstring(&d->buf, zs_json_key(pd, c));
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}

	/* renamed columns and changed types or nullability */
	for (int c = pd->nodes[pcols].first_child; c >= 0; c = pd->nodes[c].next)
	{
		int			n = column_by_pos(nd, next, member_int(pd, c, "pos"));

		if (n < 0)
			continue;
		if (strcmp(zs_json_key(pd, c), zs_json_key(nd, n)) == 0 &&
			members_equal(pd, c, nd, n, "dataType") && members_equal(pd, c, nd, n, "notNull"))
			continue;
		appendStringInfoString(&d->buf, "{\"tag\":\"update-column\",\"table\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfoString(&d->buf, ",\"old\":");
		append_column(&d->buf, pd, c, false);
		appendStringInfoString(&d->buf, ",\"new\":");
		append_column(&d->buf, nd, n, false);
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}

	/* new columns, in the new table's order */
	for (int n = nd->nodes[ncols].first_child; n >= 0; n = nd->nodes[n].next)
	{
		int			dflt = zs_json_get(nd, n, "dflt");
		bool		backfill;

		if (column_by_pos(pd, prev, member_int(nd, n, "pos")) >= 0)
			continue;
		backfill = always_backfill ||
			(dflt >= 0 && nd->nodes[dflt].type == ZS_JSON_STRING &&
			 !default_is_supported(zs_json_str(nd, dflt)));
		appendStringInfoString(&d->buf, "{\"tag\":\"add-column\",\"table\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfoString(&d->buf, ",\"column\":");
		append_column(&d->buf, nd, n, backfill);
		appendStringInfoString(&d->buf, ",\"tableMetadata\":");
		append_metadata(&d->buf, &d->next, next);
		if (backfill)
			appendStringInfo(&d->buf, ",\"backfill\":{\"attNum\":" INT64_FORMAT "}",
							 member_int(nd, n, "pos"));
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}
	pfree(a.data);
	pfree(b.data);
}

static void
create_table(Diff *d, int table)
{
	const ZsJsonDoc *doc = &d->next.doc;
	int			columns = zs_json_get(doc, table, "columns");

	appendStringInfoString(&d->buf, "{\"tag\":\"create-table\",\"spec\":{");
	for (int m = doc->nodes[table].first_child; m >= 0; m = doc->nodes[m].next)
	{
		zs_json_append_cstring(&d->buf, zs_json_key(doc, m));
		appendStringInfoChar(&d->buf, ':');
		append_value(&d->buf, doc, m);
		appendStringInfoChar(&d->buf, ',');
	}
	appendStringInfoString(&d->buf, "\"replicaIdentityColumns\":");
	append_identity_columns(&d->buf, &d->next, table);
	appendStringInfoString(&d->buf, "},\"metadata\":");
	append_metadata(&d->buf, &d->next, table);
	/* a table published other than by CREATE has rows to copy */
	if (strncmp(d->tag, "CREATE", 6) != 0)
	{
		bool		first = true;

		appendStringInfoString(&d->buf, ",\"backfill\":{");
		for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next)
		{
			if (!first)
				appendStringInfoChar(&d->buf, ',');
			first = false;
			zs_json_append_cstring(&d->buf, zs_json_key(doc, c));
			appendStringInfo(&d->buf, ":{\"attNum\":" INT64_FORMAT "}", member_int(doc, c, "pos"));
		}
		appendStringInfoChar(&d->buf, '}');
	}
	appendStringInfoChar(&d->buf, '}');
	emit(d);
}

static void
diff_tables(Diff *d)
{
	const ZsJsonDoc *pd = &d->prev.doc;
	const ZsJsonDoc *nd = &d->next.doc;

	for (int t = pd->nodes[d->prev.tables].first_child; t >= 0; t = pd->nodes[t].next)
	{
		if (is_own(d, member_str(pd, t, "schema")) ||
			table_by_oid(&d->next, member_int(pd, t, "oid")) >= 0)
			continue;
		appendStringInfoString(&d->buf, "{\"tag\":\"drop-table\",\"id\":");
		append_table_id(&d->buf, pd, t);
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}
	for (int t = pd->nodes[d->prev.tables].first_child; t >= 0; t = pd->nodes[t].next)
	{
		int			n = table_by_oid(&d->next, member_int(pd, t, "oid"));

		if (n >= 0 && !is_own(d, member_str(nd, n, "schema")))
			diff_kept_table(d, t, n);
	}
	for (int t = nd->nodes[d->next.tables].first_child; t >= 0; t = nd->nodes[t].next)
	{
		if (is_own(d, member_str(nd, t, "schema")) ||
			table_by_oid(&d->prev, member_int(nd, t, "oid")) >= 0)
			continue;
		create_table(d, t);
	}
}

/* ---------------------------------------------------------------- entry */

static bool
read_snapshot(Snapshot *s, const char *text, int len, const char **error)
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

int
zs_schema_diff(const char *prev, int prev_len, const char *next, int next_len,
			   const char *tag, const char *const *own_schemas, int n_own,
			   char ***changes, const char **error)
{
	Diff		d;
	bool		ok;

	memset(&d, 0, sizeof(d));
	d.tag = tag ? tag : "UNKNOWN";
	d.own = own_schemas;
	d.n_own = n_own;
	*error = NULL;
	zs_json_doc_init(&d.prev.doc);
	zs_json_doc_init(&d.next.doc);
	ok = read_snapshot(&d.prev, prev, prev_len, error) &&
		read_snapshot(&d.next, next, next_len, error);
	if (ok)
	{
		initStringInfo(&d.buf);
		diff_indexes(&d, true);
		diff_tables(&d);
		diff_indexes(&d, false);
		pfree(d.buf.data);
	}
	zs_json_doc_free(&d.prev.doc);
	zs_json_doc_free(&d.next.doc);
	if (!ok)
		return -1;
	*changes = d.changes;
	return d.nchanges;
}

/* ---------------------------------------------------------------- backfill */

/*
 * The rows of a table its publications publish: NULL if one of them has no
 * row filter, else "(f1) OR (f2) ...", as zero-cache's initial sync and
 * backfill select them.
 */
static char *
table_row_filter(const ZsJsonDoc *doc, int table)
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
zs_schema_row_filter(const char *schema, int schema_len, const char *table_schema,
					 const char *table_name)
{
	Snapshot	s;
	const char *error;
	char	   *filter = NULL;
	int			t;

	zs_json_doc_init(&s.doc);
	if (read_snapshot(&s, schema, schema_len, &error) &&
		(t = table_by_name(&s, table_schema, table_name)) >= 0)
		filter = table_row_filter(&s.doc, t);
	zs_json_doc_free(&s.doc);
	return filter;
}

static char *
backfill_mismatch(const char *schema, const char *name, const char *why)
{
	return psprintf("cannot backfill \"%s\".\"%s\": %s", schema, name, why);
}

char *
zs_schema_backfill_table(const char *schema, int schema_len, const char *request,
						 int request_len, ZsBackfillTable *out)
{
	Snapshot	s;
	ZsJsonDoc	req;
	ZsJsonDoc	ids;
	StringInfoData identity;
	const char *error = NULL;
	char	   *result = NULL;
	int			table,
				metadata,
				row_key,
				columns,
				t = -1;
	const char *tschema = NULL;
	const char *tname = NULL;
	int			n = 0;

	memset(out, 0, sizeof(*out));
	zs_json_doc_init(&s.doc);
	zs_json_doc_init(&req);
	zs_json_doc_init(&ids);
	initStringInfo(&identity);
	if (!read_snapshot(&s, schema, schema_len, &error))
	{
		result = pstrdup(error);
		goto done;
	}
	if (!zs_json_parse(&req, request, request_len) ||
		(table = zs_json_get(&req, 0, "table")) < 0 ||
		(tschema = zs_json_get_string(&req, table, "schema")) == NULL ||
		(tname = zs_json_get_string(&req, table, "name")) == NULL ||
		(columns = zs_json_get(&req, 0, "columns")) < 0 ||
		req.nodes[columns].type != ZS_JSON_OBJECT)
	{
		result = pstrdup("a backfill request has no table or columns");
		goto done;
	}
	metadata = zs_json_get(&req, table, "metadata");
	row_key = metadata >= 0 ? zs_json_get(&req, metadata, "rowKey") : -1;
	if (row_key < 0 || req.nodes[row_key].type != ZS_JSON_OBJECT)
	{
		result = backfill_mismatch(tschema, tname, "its table metadata has no row key");
		goto done;
	}
	t = table_by_name(&s, tschema, tname);
	if (t < 0)
	{
		result = backfill_mismatch(tschema, tname, "the table has been renamed, dropped or unpublished");
		goto done;
	}
	if (member_int(&s.doc, t, "schemaOID") != member_int(&req, metadata, "schemaOID"))
	{
		result = backfill_mismatch(tschema, tname, "the schema no longer corresponds to the original schema");
		goto done;
	}
	if (member_int(&s.doc, t, "oid") != member_int(&req, metadata, "relationOID"))
	{
		result = backfill_mismatch(tschema, tname, "the table no longer corresponds to the original table");
		goto done;
	}
	/* the same set of row-key columns */
	append_identity_columns(&identity, &s, t);
	if (!zs_json_parse(&ids, identity.data, identity.len) ||
		ids.nodes[0].count != req.nodes[row_key].count)
	{
		result = backfill_mismatch(tschema, tname, "the row key (PRIMARY KEY or replica identity) has changed");
		goto done;
	}
	for (int k = ids.nodes[0].first_child; k >= 0; k = ids.nodes[k].next)
		if (zs_json_get(&req, row_key, zs_json_str(&ids, k)) < 0)
		{
			result = backfill_mismatch(tschema, tname, "the row key (PRIMARY KEY or replica identity) has changed");
			goto done;
		}

	out->schema = pstrdup(tschema);
	out->name = pstrdup(tname);
	out->relid = (unsigned int) member_int(&s.doc, t, "oid");
	out->row_filter = table_row_filter(&s.doc, t);
	out->names = palloc(sizeof(char *) * (req.nodes[row_key].count + req.nodes[columns].count + 1));
	out->typids = palloc(sizeof(unsigned int) * (req.nodes[row_key].count + req.nodes[columns].count + 1));
	out->attnums = palloc(sizeof(int) * (req.nodes[row_key].count + req.nodes[columns].count + 1));
	for (int pass = 0; pass < 2; pass++)
	{
		int			list = pass == 0 ? row_key : columns;

		for (int c = req.nodes[list].first_child; c >= 0; c = req.nodes[c].next)
		{
			const char *col = zs_json_key(&req, c);
			int			spec;
			bool		dup = false;

			for (int i = 0; i < n; i++)
				dup |= strcmp(out->names[i], col) == 0;
			if (dup)
				continue;		/* a key column is not backfilled twice */
			spec = column_by_name(&s.doc, t, col);
			if (spec < 0)
			{
				result = backfill_mismatch(tschema, tname,
										   psprintf("column \"%s\" has been renamed or dropped", col));
				goto done;
			}
			if (member_int(&s.doc, spec, "pos") != member_int(&req, c, "attNum"))
			{
				result = backfill_mismatch(tschema, tname,
										   psprintf("column \"%s\" no longer corresponds to the original column", col));
				goto done;
			}
			out->names[n] = pstrdup(col);
			out->typids[n] = (unsigned int) member_int(&s.doc, spec, "typeOID");
			out->attnums[n] = (int) member_int(&s.doc, spec, "pos");
			n++;
		}
		if (pass == 0)
			out->nkeys = n;
	}
	out->ncolumns = n;

done:
	zs_json_doc_free(&s.doc);
	zs_json_doc_free(&req);
	zs_json_doc_free(&ids);
	pfree(identity.data);
	return result;
}
