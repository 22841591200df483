/*-------------------------------------------------------------------------
 * replica_frame.c
 *	  zero-stream-replica: one downstream frame applied to the replica
 *	  (replica_frame.h), and the report of a message that could not be.
 *
 * A change's relation, the same in every row of a table, is not parsed
 * with the frame: the replica reads it once per table (and the parser
 * steps over the same text again by comparing it). Where the changes are
 * depends on the frame's kind, read first from its envelope.
 *
 * A message that cannot be applied is reported as the replicator worker's
 * errcontext reports a change: where it is (the frame's id, the
 * transaction's watermark, the change's table as schema.name), then the
 * replica's error. Only that failing path reads a deferred relation.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/stream_frame.h"
#include "codec/zero_errors.h"
#include "client/replica_cli.h"
#include "client/replica_frame.h"

/* "schema.name" of obj: {"schema":..,"name":..} (or "tableName", an index's table) */
static char *
object_table(const ZsJsonDoc *doc, int obj)
{
	const char *schema = zs_json_get_string(doc, obj, "schema");
	const char *name = zs_json_get_string(doc, obj, "tableName");

	if (name == NULL)
		name = zs_json_get_string(doc, obj, "name");
	if (name == NULL)
		return NULL;
	return psprintf("%s.%s", schema ? schema : "?", name);
}

/*
 * The table a change names, for error reports: its relation's (a deferred
 * one parsed here), else its "table", "old" (rename-table), "spec"
 * (create-table, create-index) or "id" (drop-table; a drop-index's names
 * the index); NULL if none.
 */
static char *
change_table(const ZsJsonDoc *doc, int change)
{
	static const char *const members[] = {"relation", "table", "old", "spec", "id"};
	int			tag = zs_json_get(doc, change, "tag");

	for (int i = 0; i < (int) lengthof(members); i++)
	{
		int			obj = zs_json_get(doc, change, members[i]);
		char	   *table;

		if (obj < 0 || (strcmp(members[i], "id") == 0 && zs_json_str_eq(doc, tag, "drop-index")))
			continue;
		if (doc->nodes[obj].deferred)
		{
			ZsJsonDoc	deferred;

			zs_json_doc_init(&deferred);
			table = zs_json_parse(&deferred, zs_json_raw(doc, obj), doc->nodes[obj].raw_len)
				? object_table(&deferred, 0) : NULL;
			zs_json_doc_free(&deferred);
		}
		else
			table = object_table(doc, obj);
		if (table != NULL)
			return table;
	}
	return NULL;
}

/* Message m of frame frame_id could not be applied: where, and why; exits 3. */
static void
applying_failed(const ZsJsonDoc *doc, ZsReplica *r, int64 frame_id, int m) zs_noreturn;

static void
applying_failed(const ZsJsonDoc *doc, ZsReplica *r, int64 frame_id, int m)
{
	int			type = zs_json_at(doc, m, 0);
	const char *watermark = NULL;
	char	   *table = NULL;
	StringInfoData where;

	/* begin and commit name their own; a change is of the open transaction */
	if (zs_json_str_eq(doc, type, "begin"))
		watermark = zs_json_get_string(doc, zs_json_at(doc, m, 2), "commitWatermark");
	else if (zs_json_str_eq(doc, type, "commit"))
		watermark = zs_json_get_string(doc, zs_json_at(doc, m, 2), "watermark");
	if (watermark == NULL)
		watermark = zs_replica_transaction_watermark(r);
	if (zs_json_str_eq(doc, type, "data"))
		table = change_table(doc, zs_json_at(doc, m, 1));

	initStringInfo(&where);
	appendStringInfo(&where, "frame " INT64_FORMAT, frame_id);
	if (watermark != NULL || table != NULL)
	{
		appendStringInfoString(&where, " (");
		if (watermark != NULL)
			appendStringInfo(&where, "watermark %s", watermark);
		if (table != NULL)
			appendStringInfo(&where, "%stable %s", watermark != NULL ? ", " : "", table);
		appendStringInfoChar(&where, ')');
	}
	zs_replica_cli_die(3, "applying %s: %s", where.data, zs_replica_error(r));
}

ZsReplicaFrameResult
zs_replica_frame_apply(ZsSubscribeConn *conn, ZsReplica *r)
{
	ZsJsonDoc  *doc = &conn->doc;
	int			id,
				batch,
				single;
	int64		frame_id;
	ZsStreamFrame frame;
	bool		parsed;

	if (zs_stream_frame_parse(conn->msg.payload.data, conn->msg.payload.len, &frame) &&
		frame.kind != ZS_FRAME_ACK)
		parsed = zs_json_parse_deferring_at(doc, conn->msg.payload.data, conn->msg.payload.len,
											"relation", frame.kind == ZS_FRAME_BATCH ? 4 : 3);
	else
		parsed = zs_json_parse(doc, conn->msg.payload.data, conn->msg.payload.len);
	if (!parsed)
		zs_replica_cli_die(2, "invalid JSON from the server: %s", doc->error);
	if (zs_json_get(doc, 0, "ack") >= 0)
		return ZS_REPLICA_FRAME_APPLIED;
	id = zs_json_get(doc, 0, "id");
	batch = zs_json_get(doc, 0, "batch");
	single = zs_json_get(doc, 0, "msg");
	if (id < 0 || (batch < 0 && single < 0))
		zs_replica_cli_die(2, "unexpected frame from the server: %.200s", conn->msg.payload.data);
	frame_id = (int64) zs_json_double(doc, id);

	for (int m = batch >= 0 ? doc->nodes[batch].first_child : single; m >= 0;
		 m = batch >= 0 ? doc->nodes[m].next : -1)
	{
		ZsReplicaMessageResult rc = zs_replica_apply_message(r, doc, m);
		int			type = zs_json_at(doc, m, 0);

		if (rc == ZS_REPLICA_MESSAGE_FAILED)
			applying_failed(doc, r, frame_id, m);
		if (rc == ZS_REPLICA_MESSAGE_NOT_MINE && zs_json_str_eq(doc, type, "error"))
		{
			int			body = zs_json_at(doc, m, 1);
			int			etype = zs_json_get(doc, body, "type");
			const char *message = zs_json_get_string(doc, body, "message");
			int64		t = -1;

			if (etype >= 0)
				(void) zs_json_int64(doc, etype, &t);
			zs_replica_cli_note("the server ended the subscription: error type " INT64_FORMAT ": %s",
								t, message ? message : "(no message)");
			conn->last_frame = frame_id;
			(void) zs_subscribe_send_acks(conn);
			if (t == ZS_ERR_WRONG_REPLICA_VERSION || t == ZS_ERR_WATERMARK_TOO_OLD)
				return ZS_REPLICA_FRAME_RESTORE;
			return ZS_REPLICA_FRAME_RECONNECT;
		}
		/* status messages carry nothing to apply */
	}
	conn->last_frame = frame_id;
	return ZS_REPLICA_FRAME_APPLIED;
}
