/*-------------------------------------------------------------------------
 * partition_rows.c
 *	  The rows of a leaf partition that joined or left a table published
 *	  through its root, read back as the pgoutput messages the decoder
 *	  encodes.
 *
 * With publish_via_partition_root, a partition attached with rows or
 * detached changes its root's rows with no change in the stream. The DDL
 * capture, in the DDL's own transaction and under the command's lock on
 * the partition, writes its rows as transactional logical messages (prefix
 * "zero_stream/rows"), each a JSON object:
 *
 *	 {"root": oid, "op": "insert" | "delete",
 *	  "relation": {"schema": s, "name": n, "replicaIdentity": "d"|"i"|"f"|"n",
 *				   "columns": [{"name": c, "typeOID": t, "typmod": m,
 *								"key": bool}, ...]},
 *	  "rows": [[text or null, ...], ...]}
 *
 * The relation is the root as pgoutput describes it at that point (its
 * published columns in order, the replica identity's columns flagged), and
 * each row has one value per column, as the type's output function writes
 * it (pgoutput's text format). An insert carries the published values of a
 * row that joined (the publications' row filters applied); a delete the
 * key of one that left (null elsewhere, every value with REPLICA IDENTITY
 * FULL). The decoder encodes them as the root's changes at the message's
 * place, so what the rest of the transaction and later ones do to those
 * rows applies on top (decoder/stage.c). Compiles as backend or frontend
 * code.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "decoding/partition_rows.h"

/* A string member without an embedded NUL (names, flags), or NULL */
static const char *
get_name(const ZsJsonDoc *doc, int node, const char *key)
{
	int			member = zs_json_get(doc, node, key);

	if (member < 0 || doc->nodes[member].type != ZS_JSON_STRING ||
		strlen(zs_json_str(doc, member)) != (size_t) doc->nodes[member].str_len)
		return NULL;
	return zs_json_str(doc, member);
}

const char *
zs_partition_rows_open(ZsPartitionRows *rows, const char *content, int len)
{
	ZsJsonDoc  *doc = &rows->doc;
	ZsPgoutputMsg *rel = &rows->relation;
	int			relation;
	int			columns;
	int			root;
	int			rowlist;
	int64		oid;
	const char *op;
	const char *identity;
	int			i = 0;

	memset(rows, 0, sizeof(*rows));
	rows->next_row = -1;
	zs_json_doc_init(doc);
	if (!zs_json_parse(doc, content, len) || doc->nodes[0].type != ZS_JSON_OBJECT)
		return "not a JSON object";
	root = zs_json_get(doc, 0, "root");
	if (root < 0 || !zs_json_int64(doc, root, &oid) || oid <= 0 || oid > PG_UINT32_MAX)
		return "no root oid";
	op = get_name(doc, 0, "op");
	if (op == NULL || (strcmp(op, "insert") != 0 && strcmp(op, "delete") != 0))
		return "op is neither insert nor delete";
	rows->is_delete = (op[0] == 'd');
	relation = zs_json_get(doc, 0, "relation");
	if (relation < 0 || doc->nodes[relation].type != ZS_JSON_OBJECT)
		return "no relation";
	columns = zs_json_get(doc, relation, "columns");
	if (columns < 0 || doc->nodes[columns].type != ZS_JSON_ARRAY ||
		doc->nodes[columns].count > ZS_MAX_COLUMNS)
		return "the relation's columns are not an array of at most 1664";
	identity = get_name(doc, relation, "replicaIdentity");
	if (identity == NULL || strlen(identity) != 1 || strchr("difn", identity[0]) == NULL)
		return "the relation's replica identity is not d, i, f or n";

	rel->type = ZS_PGO_RELATION;
	rel->relid = (uint32_t) oid;
	rel->nspname = get_name(doc, relation, "schema");
	rel->relname = get_name(doc, relation, "name");
	if (rel->nspname == NULL || rel->relname == NULL)
		return "the relation has no schema or name";
	rel->replident = identity[0];
	rel->natts = doc->nodes[columns].count;
	rel->attrs = palloc0(sizeof(ZsRelationAttr) * (rel->natts + 1));
	for (int c = doc->nodes[columns].first_child; c >= 0; c = doc->nodes[c].next, i++)
	{
		ZsRelationAttr *a = &rel->attrs[i];
		int			key = zs_json_get(doc, c, "key");
		int			type = zs_json_get(doc, c, "typeOID");
		int			typmod = zs_json_get(doc, c, "typmod");
		int64		v;

		a->name = get_name(doc, c, "name");
		if (a->name == NULL || key < 0 ||
			(doc->nodes[key].type != ZS_JSON_TRUE && doc->nodes[key].type != ZS_JSON_FALSE))
			return "a column has no name or key flag";
		a->is_key = doc->nodes[key].type == ZS_JSON_TRUE;
		if (type < 0 || !zs_json_int64(doc, type, &v) || v <= 0 || v > PG_UINT32_MAX)
			return "a column has no type oid";
		a->typid = (uint32_t) v;
		if (typmod < 0 || !zs_json_int64(doc, typmod, &v) || v < PG_INT32_MIN || v > PG_INT32_MAX)
			return "a column has no type modifier";
		a->typmod = (int32_t) v;
	}

	rowlist = zs_json_get(doc, 0, "rows");
	if (rowlist < 0 || doc->nodes[rowlist].type != ZS_JSON_ARRAY)
		return "no rows";
	rows->next_row = doc->nodes[rowlist].first_child;
	return NULL;
}

bool
zs_partition_rows_next(ZsPartitionRows *rows, ZsPgoutputMsg *msg, const char **error)
{
	const ZsJsonDoc *doc = &rows->doc;
	const ZsPgoutputMsg *rel = &rows->relation;
	int			row = rows->next_row;
	ZsTuple    *tuple;
	int			i = 0;

	*error = NULL;
	if (row < 0)
		return false;
	rows->next_row = doc->nodes[row].next;
	if (doc->nodes[row].type != ZS_JSON_ARRAY || doc->nodes[row].count != rel->natts)
	{
		*error = "a row does not have one value per column";
		return false;
	}
	msg->relid = rel->relid;
	if (rows->is_delete)
	{
		msg->type = ZS_PGO_DELETE;
		msg->old_kind = rel->replident == 'f' ? ZS_PGO_TUPLE_OLD : ZS_PGO_TUPLE_KEY;
		tuple = msg->old_tuple;
	}
	else
	{
		msg->type = ZS_PGO_INSERT;
		msg->old_kind = 0;
		tuple = msg->new_tuple;
	}
	tuple->natts = rel->natts;
	for (int v = doc->nodes[row].first_child; v >= 0; v = doc->nodes[v].next, i++)
	{
		ZsTupleColumn *col = &tuple->cols[i];

		if (doc->nodes[v].type == ZS_JSON_NULL)
		{
			col->kind = ZS_PGO_COL_NULL;
			col->data = NULL;
			col->len = 0;
		}
		else if (doc->nodes[v].type == ZS_JSON_STRING &&
				 strlen(zs_json_str(doc, v)) == (size_t) doc->nodes[v].str_len)
		{
			col->kind = ZS_PGO_COL_TEXT;
			col->data = zs_json_str(doc, v);
			col->len = doc->nodes[v].str_len;
		}
		else
		{
			*error = "a value is neither text (without NUL) nor null";
			return false;
		}
		/* a key carries every key value, as pgoutput's 'K' tuple */
		if (rows->is_delete && msg->old_kind == ZS_PGO_TUPLE_KEY && rel->attrs[i].is_key &&
			col->kind == ZS_PGO_COL_NULL)
		{
			*error = "a deleted row has no value for a key column";
			return false;
		}
	}
	return true;
}

void
zs_partition_rows_close(ZsPartitionRows *rows)
{
	if (rows->relation.attrs != NULL)
		pfree(rows->relation.attrs);
	rows->relation.attrs = NULL;
	zs_json_doc_free(&rows->doc);
}
