/*-------------------------------------------------------------------------
 * schema_diff.c
 *	  Zero's schema-change messages from two snapshots of the published
 *	  schema, as zero-cache's PostgreSQL change source computes them.
 *
 * A snapshot is what zero_stream.published_schema() returns (zero-cache's
 * publishedSchemaQuery): {"tables":[…],"indexes":[…],"identities":[…]}
 * (see schema_snapshot.c). Tables are matched
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
 * quoted literal with a one-word cast or an empty array; a stored generated
 * column's is its expression), every new identity column (PostgreSQL
 * numbers the existing rows, and the stream never carries those values),
 * every new column added by a command other than ALTER TABLE, and every
 * table that appears other than by CREATE (ALTER PUBLICATION) get
 * zero-cache's "backfill" marker, and such a column's default is dropped.
 * A partitioned table published through its root whose rows changed with
 * its partitions (one attached with rows, one detached or dropped:
 * partition_diff.c) is dropped and created again, with its indexes and a
 * backfill of every column.
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
#include "decoding/partition_diff.h"
#include "decoding/schema_diff.h"
#include "decoding/schema_snapshot.h"

typedef struct Diff
{
	ZsSchemaSnapshot	prev;
	ZsSchemaSnapshot	next;
	const char *tag;
	const char *const *own;
	int			n_own;
	char	  **changes;
	int			nchanges;
	int			maxchanges;
	StringInfoData buf;
	ZsJsonDoc	accounted_doc;	/* the DDL capture's "accountedLeaves" */
	ZsJsonDoc	emptied_doc;	/* leaves emptied by a TRUNCATE not carried */
	int64	   *reset_roots;	/* sorted oids of the tables reset */
	int			nreset;
} Diff;

/* ---------------------------------------------------------------- access */

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

/* ---------------------------------------------------------------- writing */

static void
append_value(StringInfo out, const ZsJsonDoc *doc, int node)
{
	(void) zs_json_append_js_reparsed(out, zs_json_raw(doc, node), doc->nodes[node].raw_len);
}

/*
 * A table in both snapshots whose rows changed with its partitions (one
 * attached with rows, one detached or dropped): it is dropped and created
 * again with a backfill of every column (partition_diff.c).
 */
static bool
is_reset(const Diff *d, int64 oid)
{
	return zs_partition_root_listed(d->reset_roots, d->nreset, oid) &&
		zs_schema_snapshot_table_by_oid(&d->prev, oid) >= 0 &&
		zs_schema_snapshot_table_by_oid(&d->next, oid) >= 0;
}

/* Is an index of the snapshot s on a table that is reset? */
static bool
index_of_reset(const Diff *d, const ZsSchemaSnapshot *s, int index)
{
	int			table = zs_schema_snapshot_table_by_name(s, zs_schema_snapshot_str(&s->doc, index, "schema"),
														 zs_schema_snapshot_str(&s->doc, index, "tableName"));

	return table >= 0 && is_reset(d, zs_schema_snapshot_int(&s->doc, table, "oid"));
}

/* {"schema":…,"name":…} of a table */
static void
append_table_id(StringInfo out, const ZsJsonDoc *doc, int table)
{
	appendStringInfoString(out, "{\"schema\":");
	zs_json_append_cstring(out, zs_schema_snapshot_str(doc, table, "schema"));
	appendStringInfoString(out, ",\"name\":");
	zs_json_append_cstring(out, zs_schema_snapshot_str(doc, table, "name"));
	appendStringInfoChar(out, '}');
}

/* {"schemaOID":n,"relationOID":n,"rowKey":{col:{"attNum":n},…}} */
static void
append_metadata(StringInfo out, const ZsSchemaSnapshot *s, int table)
{
	const ZsJsonDoc *doc = &s->doc;
	StringInfoData cols;
	ZsJsonDoc	list;
	bool		first = true;

	appendStringInfo(out, "{\"schemaOID\":" INT64_FORMAT ",\"relationOID\":" INT64_FORMAT ",\"rowKey\":{",
					 zs_schema_snapshot_int(doc, table, "schemaOID"), zs_schema_snapshot_int(doc, table, "oid"));
	initStringInfo(&cols);
	zs_schema_snapshot_append_identity(&cols, s, table);
	zs_json_doc_init(&list);
	if (zs_json_parse(&list, cols.data, cols.len))
	{
		for (int k = list.nodes[0].first_child; k >= 0; k = list.nodes[k].next)
		{
			int			col = zs_schema_snapshot_column_by_name(doc, table, zs_json_str(&list, k));

			if (!first)
				appendStringInfoChar(out, ',');
			first = false;
			zs_json_append_cstring(out, zs_json_str(&list, k));
			appendStringInfo(out, ":{\"attNum\":" INT64_FORMAT "}",
							 col >= 0 ? zs_schema_snapshot_int(doc, col, "pos") : 0);
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
	ptable = zs_schema_snapshot_table_by_name(&d->prev, zs_schema_snapshot_str(pd, prev, "schema"), zs_schema_snapshot_str(pd, prev, "tableName"));
	ntable = zs_schema_snapshot_table_by_name(&d->next, zs_schema_snapshot_str(nd, next, "schema"), zs_schema_snapshot_str(nd, next, "tableName"));
	if (ptable < 0 || ntable < 0)
		return true;
	pcols = zs_json_get(pd, prev, "columns");
	ncols = zs_json_get(nd, next, "columns");
	if (pd->nodes[pcols].count != nd->nodes[ncols].count)
		return true;
	for (int c = pd->nodes[pcols].first_child; c >= 0; c = pd->nodes[c].next)
	{
		int			pcol = zs_schema_snapshot_column_by_name(pd, ptable, zs_json_key(pd, c));
		int64		attnum;
		int			ncol = -1;

		if (pcol < 0)
			return true;
		attnum = zs_schema_snapshot_int(pd, pcol, "pos");
		for (int n = nd->nodes[ncols].first_child; n >= 0; n = nd->nodes[n].next)
		{
			int			col = zs_schema_snapshot_column_by_name(nd, ntable, zs_json_key(nd, n));

			if (col >= 0 && zs_schema_snapshot_int(nd, col, "pos") == attnum)
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
		zs_json_append_cstring(&d->buf, zs_schema_snapshot_str(doc, index, "schema"));
		appendStringInfoString(&d->buf, ",\"name\":");
		zs_json_append_cstring(&d->buf, zs_schema_snapshot_str(doc, index, "name"));
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
	const ZsSchemaSnapshot *from = dropping ? &d->prev : &d->next;
	const ZsSchemaSnapshot *other = dropping ? &d->next : &d->prev;
	const ZsJsonDoc *pd = &d->prev.doc;

	for (int i = from->doc.nodes[from->indexes].first_child; i >= 0; i = from->doc.nodes[i].next)
	{
		if (is_own(d, zs_schema_snapshot_str(&from->doc, i, "schema")) ||
			(zs_schema_snapshot_index_by_id(other, zs_schema_snapshot_str(&from->doc, i, "schema"),
											zs_schema_snapshot_str(&from->doc, i, "name")) >= 0 &&
			 !index_of_reset(d, from, i)))
			continue;
		emit_index(d, dropping, &from->doc, i);
	}
	for (int i = pd->nodes[d->prev.indexes].first_child; i >= 0; i = pd->nodes[i].next)
	{
		int			n;

		if (is_own(d, zs_schema_snapshot_str(pd, i, "schema")))
			continue;
		n = zs_schema_snapshot_index_by_id(&d->next, zs_schema_snapshot_str(pd, i, "schema"), zs_schema_snapshot_str(pd, i, "name"));
		if (n < 0 || !index_structurally_changed(d, i, n) ||
			index_of_reset(d, &d->prev, i) || index_of_reset(d, &d->next, n))
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
		if (zs_schema_snapshot_column_by_pos(nd, next, zs_schema_snapshot_int(pd, c, "pos")) >= 0)
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
		int			n = zs_schema_snapshot_column_by_pos(nd, next, zs_schema_snapshot_int(pd, c, "pos"));

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

		if (zs_schema_snapshot_column_by_pos(pd, prev, zs_schema_snapshot_int(nd, n, "pos")) >= 0)
			continue;
		backfill = always_backfill ||
			(dflt >= 0 && nd->nodes[dflt].type == ZS_JSON_STRING &&
			 !default_is_supported(zs_json_str(nd, dflt))) ||
			zs_schema_snapshot_is_identity_column(&d->next, zs_schema_snapshot_int(nd, next, "oid"),
												  zs_schema_snapshot_int(nd, n, "pos"));
		appendStringInfoString(&d->buf, "{\"tag\":\"add-column\",\"table\":");
		append_table_id(&d->buf, nd, next);
		appendStringInfoString(&d->buf, ",\"column\":");
		append_column(&d->buf, nd, n, backfill);
		appendStringInfoString(&d->buf, ",\"tableMetadata\":");
		append_metadata(&d->buf, &d->next, next);
		if (backfill)
			appendStringInfo(&d->buf, ",\"backfill\":{\"attNum\":" INT64_FORMAT "}",
							 zs_schema_snapshot_int(nd, n, "pos"));
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}
	pfree(a.data);
	pfree(b.data);
}

static void
create_table(Diff *d, int table, bool reset)
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
	zs_schema_snapshot_append_identity(&d->buf, &d->next, table);
	appendStringInfoString(&d->buf, "},\"metadata\":");
	append_metadata(&d->buf, &d->next, table);
	/* a table published other than by CREATE, or reset, has rows to copy */
	if (reset || strncmp(d->tag, "CREATE", 6) != 0)
	{
		bool		first = true;

		appendStringInfoString(&d->buf, ",\"backfill\":{");
		for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next)
		{
			if (!first)
				appendStringInfoChar(&d->buf, ',');
			first = false;
			zs_json_append_cstring(&d->buf, zs_json_key(doc, c));
			appendStringInfo(&d->buf, ":{\"attNum\":" INT64_FORMAT "}", zs_schema_snapshot_int(doc, c, "pos"));
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
		int64		oid = zs_schema_snapshot_int(pd, t, "oid");

		if (is_own(d, zs_schema_snapshot_str(pd, t, "schema")) ||
			(zs_schema_snapshot_table_by_oid(&d->next, oid) >= 0 && !is_reset(d, oid)))
			continue;
		appendStringInfoString(&d->buf, "{\"tag\":\"drop-table\",\"id\":");
		append_table_id(&d->buf, pd, t);
		appendStringInfoChar(&d->buf, '}');
		emit(d);
	}
	for (int t = pd->nodes[d->prev.tables].first_child; t >= 0; t = pd->nodes[t].next)
	{
		int64		oid = zs_schema_snapshot_int(pd, t, "oid");
		int			n = zs_schema_snapshot_table_by_oid(&d->next, oid);

		if (n >= 0 && !is_own(d, zs_schema_snapshot_str(nd, n, "schema")) && !is_reset(d, oid))
			diff_kept_table(d, t, n);
	}
	for (int t = nd->nodes[d->next.tables].first_child; t >= 0; t = nd->nodes[t].next)
	{
		int64		oid = zs_schema_snapshot_int(nd, t, "oid");
		bool		reset = is_reset(d, oid);

		if (is_own(d, zs_schema_snapshot_str(nd, t, "schema")) ||
			(zs_schema_snapshot_table_by_oid(&d->prev, oid) >= 0 && !reset))
			continue;
		create_table(d, t, reset);
	}
}

/* ---------------------------------------------------------------- entry */

int
zs_schema_diff(const char *prev, int prev_len, const char *next, int next_len,
			   const char *accounted_leaves, int accounted_len,
			   const char *emptied_leaves, int emptied_len,
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
	zs_json_doc_init(&d.accounted_doc);
	zs_json_doc_init(&d.emptied_doc);
	ok = zs_schema_snapshot_read(&d.prev, prev, prev_len, error) &&
		zs_schema_snapshot_read(&d.next, next, next_len, error);
	if (ok)
	{
		ZsLeafList	accounted = {NULL, -1};
		ZsLeafList	emptied = {NULL, -1};

		if (accounted_leaves != NULL &&
			(!zs_json_parse(&d.accounted_doc, accounted_leaves, accounted_len) ||
			 d.accounted_doc.nodes[0].type != ZS_JSON_ARRAY))
		{
			*error = "the accounted leaf partitions are not a JSON array";
			ok = false;
		}
		else if (emptied_leaves != NULL &&
				 (!zs_json_parse(&d.emptied_doc, emptied_leaves, emptied_len) ||
				  d.emptied_doc.nodes[0].type != ZS_JSON_ARRAY))
		{
			*error = "the emptied leaf partitions are not a JSON array";
			ok = false;
		}
		else
		{
			if (accounted_leaves != NULL)
			{
				accounted.doc = &d.accounted_doc;
				accounted.node = 0;
			}
			if (emptied_leaves != NULL)
			{
				emptied.doc = &d.emptied_doc;
				emptied.node = 0;
			}
			d.nreset = zs_partition_changed_roots(&d.prev.doc, &d.next.doc, accounted, emptied,
												  &d.reset_roots);
		}
	}
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
	zs_json_doc_free(&d.accounted_doc);
	zs_json_doc_free(&d.emptied_doc);
	if (d.reset_roots)
		pfree(d.reset_roots);
	if (!ok)
		return -1;
	*changes = d.changes;
	return d.nchanges;
}
