/*-------------------------------------------------------------------------
 * schema_backfill.c
 *	  A backfill request checked against the published schema.
 *
 * zero-cache's BackfillRequest names a table (with its relation and schema
 * OIDs and row key, as its replica knows them) and the columns to fill
 * (by attnum). Before a backfill reads anything, the request must still
 * hold in the published schema: the same table under the same OIDs, the
 * same row key, every column at its attnum. The result lists the columns
 * the backfill reads: the row key's first, then the requested ones.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_out.h"
#include "codec/json_read.h"
#include "decoding/schema_backfill.h"
#include "decoding/schema_snapshot.h"

/* ---------------------------------------------------------------- backfill */

static char *
backfill_mismatch(const char *schema, const char *name, const char *why)
{
	return psprintf("cannot backfill \"%s\".\"%s\": %s", schema, name, why);
}

char *
zs_schema_backfill_table(const char *schema, int schema_len, const char *request,
						 int request_len, ZsBackfillTable *out)
{
	ZsSchemaSnapshot	s;
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
	if (!zs_schema_snapshot_read(&s, schema, schema_len, &error))
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
	t = zs_schema_snapshot_table_by_name(&s, tschema, tname);
	if (t < 0)
	{
		result = backfill_mismatch(tschema, tname, "the table has been renamed, dropped or unpublished");
		goto done;
	}
	if (zs_schema_snapshot_int(&s.doc, t, "schemaOID") != zs_schema_snapshot_int(&req, metadata, "schemaOID"))
	{
		result = backfill_mismatch(tschema, tname, "the schema no longer corresponds to the original schema");
		goto done;
	}
	if (zs_schema_snapshot_int(&s.doc, t, "oid") != zs_schema_snapshot_int(&req, metadata, "relationOID"))
	{
		result = backfill_mismatch(tschema, tname, "the table no longer corresponds to the original table");
		goto done;
	}
	/* the same set of row-key columns */
	zs_schema_snapshot_append_identity(&identity, &s, t);
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
	out->relid = (unsigned int) zs_schema_snapshot_int(&s.doc, t, "oid");
	out->row_filter = zs_schema_snapshot_table_row_filter(&s.doc, t);
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
			spec = zs_schema_snapshot_column_by_name(&s.doc, t, col);
			if (spec < 0)
			{
				result = backfill_mismatch(tschema, tname,
										   psprintf("column \"%s\" has been renamed or dropped", col));
				goto done;
			}
			if (zs_schema_snapshot_int(&s.doc, spec, "pos") != zs_schema_snapshot_int(&req, c, "attNum"))
			{
				result = backfill_mismatch(tschema, tname,
										   psprintf("column \"%s\" no longer corresponds to the original column", col));
				goto done;
			}
			out->names[n] = pstrdup(col);
			out->typids[n] = (unsigned int) zs_schema_snapshot_int(&s.doc, spec, "typeOID");
			out->attnums[n] = (int) zs_schema_snapshot_int(&s.doc, spec, "pos");
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
