/*-------------------------------------------------------------------------
 * change_encode.c
 *	  Build the Zero change JSON for each pgoutput message.
 *
 * Field names and their order follow what zero-cache's PostgreSQL change
 * source stores (test/golden/changelog.jsonl): begin carries
 * commitLsn/commitTime/xid/json, commit carries flags/commitLsn/
 * commitEndLsn/commitTime/commitTimeMs, relations keep tag and relationOid
 * plus the deprecated keyColumns/replicaIdentity next to rowKey.
 *
 * Per relation, everything that does not depend on the row is computed
 * once when pgoutput sends its 'R' message: the relation object's JSON,
 * each column's escaped "name": prefix and its value encoder.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_class.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "decoding/change_encode.h"
#include "decoding/relcache.h"
#include "decoding/value_encode.h"
#include "guc.h"
#include "codec/json_out.h"
#include "shmem.h"
#include "codec/watermark.h"

/* The transaction being encoded, for error reports. */
static TransactionId current_xid = InvalidTransactionId;
static XLogRecPtr current_commit_lsn = InvalidXLogRecPtr;

static void open_row_change(StringInfo out, const char *tag, const ZsRelation *rel);

static const char *
identity_name(char replident)
{
	switch (replident)
	{
		case REPLICA_IDENTITY_FULL:
			return "full";
		case REPLICA_IDENTITY_INDEX:
			return "index";
		case REPLICA_IDENTITY_NOTHING:
			return "nothing";
		default:
			return "default";
	}
}

static void
append_key_columns(StringInfo out, const ZsRelation *rel)
{
	bool		first = true;

	appendStringInfoChar(out, '[');
	for (int i = 0; i < rel->natts; i++)
	{
		if (!rel->columns[i].is_key)
			continue;
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		zs_json_append_cstring(out, rel->columns[i].name);
	}
	appendStringInfoChar(out, ']');
}

/*
 * What every change of a described relation shares, computed once: each
 * column's "name": key, the relation object's JSON, and an insert's JSON up
 * to its row's value.
 */
void
zs_encode_prepare(ZsRelation *rel)
{
	MemoryContext old = MemoryContextSwitchTo(rel->context);
	StringInfoData json;
	const char *identity = identity_name(rel->replident);

	for (int i = 0; i < rel->natts; i++)
	{
		ZsRelColumn *col = &rel->columns[i];
		StringInfoData key;

		initStringInfo(&key);
		zs_json_append_cstring(&key, col->name);
		appendStringInfoChar(&key, ':');
		col->json_key = key.data;
		col->json_key_len = key.len;
	}

	initStringInfo(&json);
	appendStringInfo(&json, "{\"tag\":\"relation\",\"relationOid\":%u,\"schema\":", rel->relid);
	zs_json_append_cstring(&json, rel->schema);
	appendStringInfoString(&json, ",\"name\":");
	zs_json_append_cstring(&json, rel->name);
	appendStringInfoString(&json, ",\"rowKey\":{\"columns\":");
	append_key_columns(&json, rel);
	appendStringInfo(&json, ",\"type\":\"%s\"},\"keyColumns\":", identity);
	append_key_columns(&json, rel);
	appendStringInfo(&json, ",\"replicaIdentity\":\"%s\"}", identity);
	rel->json = json.data;
	rel->json_len = json.len;
	/* the same for every insert: '{"tag":"insert","relation":{...},"new":' */
	initStringInfo(&json);
	open_row_change(&json, "insert", rel);
	appendStringInfoString(&json, ",\"new\":");
	rel->insert_open = json.data;
	rel->insert_open_len = json.len;

	MemoryContextSwitchTo(old);
}

static void
append_lsn(StringInfo out, uint64 lsn)
{
	char		buf[32];

	zs_lsn_format(lsn, buf);
	appendStringInfoChar(out, '"');
	appendStringInfoString(out, buf);
	appendStringInfoChar(out, '"');
}

void
zs_encode_begin(StringInfo out, const ZsPgoutputMsg *msg)
{
	current_xid = msg->xid;
	current_commit_lsn = msg->final_lsn;
	appendStringInfoString(out, "{\"tag\":\"begin\",\"commitLsn\":");
	append_lsn(out, msg->final_lsn);
	appendStringInfoString(out, ",\"commitTime\":");
	zs_json_append_int64(out, (int64) msg->commit_time + ZS_UNIX_EPOCH_OFFSET_US);
	appendStringInfoString(out, ",\"xid\":");
	zs_json_append_int64(out, msg->xid);
	appendStringInfoString(out, ",\"json\":\"s\"}");
}

void
zs_encode_commit(StringInfo out, const ZsPgoutputMsg *msg)
{
	int64		unix_us = (int64) msg->commit_time + ZS_UNIX_EPOCH_OFFSET_US;

	appendStringInfoString(out, "{\"tag\":\"commit\",\"flags\":");
	zs_json_append_int64(out, msg->flags);
	appendStringInfoString(out, ",\"commitLsn\":");
	append_lsn(out, msg->final_lsn);
	appendStringInfoString(out, ",\"commitEndLsn\":");
	append_lsn(out, msg->end_lsn);
	appendStringInfoString(out, ",\"commitTime\":");
	zs_json_append_int64(out, unix_us);
	appendStringInfoString(out, ",\"commitTimeMs\":");
	zs_json_append_int64(out, unix_us / 1000);
	appendStringInfoChar(out, '}');
}

/*
 * A value the encoder could not read is stored as its text (a JSON string)
 * rather than stopping the decoder: no value that PostgreSQL accepted may
 * hold back its transaction or any later one. The incident is logged with
 * everything needed to find the row, and counted in zero_stream.status().
 */
static void
store_unencodable(StringInfo out, const ZsRelation *rel, const ZsRelColumn *col,
				  const ZsTupleColumn *value)
{
	char		message[ZS_ERROR_LEN];

	snprintf(message, sizeof(message),
			 "cannot encode a value of column %s.%s.%s (type %u) in transaction %u "
			 "(commit LSN %X/%X) as Zero JSON; it was stored as its text",
			 rel->schema, rel->name, col->name, col->typid, current_xid,
			 LSN_FORMAT_ARGS(current_commit_lsn));
	ereport(WARNING,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg_internal("%s", message),
			 errdetail("The value's text begins with \"%s\".",
					   pnstrdup(value->data, Min(value->len, 200))),
			 errhint("The transaction was stored and streamed with this value as a JSON string; "
					 "nothing is held back. Report the value's type and text to the zero_stream "
					 "developers; once fixed, an UPDATE of the row sends it again.")));
	zs_record_value_error(message);
	zs_json_append_string(out, value->data, value->len);
}

static void
encode_column_value(StringInfo out, const ZsRelation *rel, const ZsRelColumn *col,
					const ZsTupleColumn *value)
{
	int			start = out->len;
	bool		ok;

	if (value->kind == ZS_PGO_COL_NULL)
	{
		appendStringInfoString(out, "null");
		return;
	}
	if (value->kind != ZS_PGO_COL_TEXT)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected pgoutput column format '%c' for %s.%s.%s",
						value->kind, rel->schema, rel->name, col->name)));
	if (col->typid == (unsigned int) zs_test_unencodable_type)
		ok = false;
	else if (col->is_array)
		ok = zs_value_append_array(out, col->kind, col->delim, value->data, value->len);
	else
		ok = zs_value_append(out, col->kind, value->data, value->len);
	if (!ok)
	{
		out->len = start;
		out->data[start] = '\0';
		store_unencodable(out, rel, col, value);
	}
}

/*
 * Append a row object. Unchanged TOAST columns ('u') are taken from
 * fallback (the old row under REPLICA IDENTITY FULL) or omitted; with
 * keys_only, only replica-identity columns are written.
 */
static void
encode_row(StringInfo out, const ZsRelation *rel, const ZsTuple *tuple,
		   const ZsTuple *fallback, bool keys_only)
{
	bool		first = true;

	if (tuple->natts != rel->natts)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("pgoutput row of %s.%s has %d columns, its relation message had %d",
						rel->schema, rel->name, tuple->natts, rel->natts)));
	appendStringInfoChar(out, '{');
	for (int i = 0; i < rel->natts; i++)
	{
		const ZsRelColumn *col = &rel->columns[i];
		const ZsTupleColumn *value = &tuple->cols[i];

		if (keys_only && !col->is_key)
			continue;
		if (value->kind == ZS_PGO_COL_UNCHANGED)
		{
			if (fallback == NULL || fallback->natts != rel->natts ||
				fallback->cols[i].kind == ZS_PGO_COL_UNCHANGED)
				continue;
			value = &fallback->cols[i];
		}
		if (!first)
			appendStringInfoChar(out, ',');
		first = false;
		appendBinaryStringInfo(out, col->json_key, col->json_key_len);
		encode_column_value(out, rel, col, value);
	}
	appendStringInfoChar(out, '}');
}

/*
 * Whether an update changes any of the named columns (a row key): the old
 * row ('K' or 'O') holds them, and an unchanged TOAST value in the new row
 * is no change.
 */
bool
zs_encode_update_changes_columns(const ZsRelation *rel, const ZsPgoutputMsg *msg,
						  const char *const *names, int n)
{
	if (msg->type != ZS_PGO_UPDATE || msg->old_kind == 0)
		return false;
	for (int i = 0; i < rel->natts && i < msg->old_tuple->natts && i < msg->new_tuple->natts; i++)
	{
		const ZsTupleColumn *o = &msg->old_tuple->cols[i];
		const ZsTupleColumn *v = &msg->new_tuple->cols[i];
		bool		named = false;

		for (int k = 0; k < n && !named; k++)
			named = strcmp(rel->columns[i].name, names[k]) == 0;
		if (!named || v->kind == ZS_PGO_COL_UNCHANGED || o->kind == ZS_PGO_COL_UNCHANGED)
			continue;
		if (o->kind != v->kind || o->len != v->len ||
			(o->len > 0 && memcmp(o->data, v->data, o->len) != 0))
			return true;
	}
	return false;
}

/*
 * A row as a JSON array of its values in the relation's column order: a
 * row of a backfill message's "rowValues".
 */
void
zs_encode_row_values(StringInfo out, const ZsRelation *rel, const ZsTuple *tuple)
{
	if (tuple->natts != rel->natts)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("row of %s.%s has %d columns, its relation has %d",
								 rel->schema, rel->name, tuple->natts, rel->natts)));
	appendStringInfoChar(out, '[');
	for (int i = 0; i < rel->natts; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		encode_column_value(out, rel, &rel->columns[i], &tuple->cols[i]);
	}
	appendStringInfoChar(out, ']');
}

/* {"tag":"<tag>","relation":{...} */
static void
open_row_change(StringInfo out, const char *tag, const ZsRelation *rel)
{
	appendStringInfoString(out, "{\"tag\":\"");
	appendStringInfoString(out, tag);
	appendStringInfoString(out, "\",\"relation\":");
	appendBinaryStringInfo(out, rel->json, rel->json_len);
}

void
zs_encode_insert(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg)
{
	appendBinaryStringInfo(out, rel->insert_open, rel->insert_open_len);
	encode_row(out, rel, msg->new_tuple, NULL, false);
	appendStringInfoChar(out, '}');
}

/* "key" and "old" of an update or delete */
static void
encode_old(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg)
{
	appendStringInfoString(out, ",\"key\":");
	if (msg->old_kind == ZS_PGO_TUPLE_KEY)
		encode_row(out, rel, msg->old_tuple, NULL, true);
	else if (msg->old_kind == ZS_PGO_TUPLE_OLD)
		encode_row(out, rel, msg->old_tuple, NULL, false);
	else
		appendStringInfoString(out, "null");
	appendStringInfoString(out, ",\"old\":");
	if (msg->old_kind == ZS_PGO_TUPLE_OLD)
		encode_row(out, rel, msg->old_tuple, NULL, false);
	else
		appendStringInfoString(out, "null");
}

void
zs_encode_update(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg)
{
	open_row_change(out, "update", rel);
	encode_old(out, rel, msg);
	appendStringInfoString(out, ",\"new\":");
	encode_row(out, rel, msg->new_tuple,
			   msg->old_kind == ZS_PGO_TUPLE_OLD ? msg->old_tuple : NULL, false);
	appendStringInfoChar(out, '}');
}

void
zs_encode_delete(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg)
{
	open_row_change(out, "delete", rel);
	encode_old(out, rel, msg);
	appendStringInfoChar(out, '}');
}

bool
zs_encode_truncate(StringInfo out, const ZsPgoutputMsg *msg)
{
	int			start = out->len;
	bool		any = false;

	/* pgoutput's TRUNCATE flags: 1 = CASCADE, 2 = RESTART IDENTITY */
	appendStringInfo(out, "{\"tag\":\"truncate\",\"cascade\":%s,\"restartIdentity\":%s,\"relations\":[",
					 (msg->flags & 1) ? "true" : "false",
					 (msg->flags & 2) ? "true" : "false");
	for (int i = 0; i < msg->nrelids; i++)
	{
		ZsRelation *rel = zs_relcache_lookup(zs_pgoutput_relid_at(msg, i));

		if (rel->own)
			continue;
		if (any)
			appendStringInfoChar(out, ',');
		any = true;
		appendStringInfoString(out, rel->json);
	}
	appendStringInfoString(out, "]}");
	if (!any)
	{
		out->len = start;
		out->data[start] = '\0';
	}
	return any;
}
