/*-------------------------------------------------------------------------
 * subscription.c
 *	  Serving the change log to one subscriber.
 *
 * Catch-up and live streaming are one code path: the subscriber's position
 * is a (watermark, pos) key, and every page is the next rows after it in
 * the committed change log. Only whole transactions are ever committed to
 * the log, so the subscriber sees every transaction after its watermark
 * exactly once, in commit order, with no hand-off between modes. Pages are
 * paced by acks: a page is read only while fewer than a page of messages
 * is unacknowledged, so a stalled subscriber holds at most two pages.
 *
 * The stored change text is the exact JSON that was serialized once by the
 * decoder; the message is rebuilt around it by concatenation (§3.6).
 *
 * Which pages are read and when is flow_control.c's; what the subscriber
 * sends (acks, v7 upstream messages) is parsed by upstream.c.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "codec/json_out.h"
#include "codec/websocket.h"
#include "codec/zero_errors.h"
#include "guc.h"
#include "server/subscription.h"
#include "shmem.h"

/* most messages in one {"id":n,"batch":[...]} frame, as zero-cache's maxBatchSize */
#define MAX_BATCH 64

/* buffers larger than these are given back once the subscriber is live */
#define BATCH_BUFFER_KEEP	(64 * 1024)
#define PENDING_KEEP		256		/* frames */

/* a frame sent but not yet acknowledged */
typedef struct PendingFrame
{
	int64		id;
	int			nmessages;
	char		commit_watermark[ZS_WATERMARK_MAXLEN];	/* last commit in it, or "" */
} PendingFrame;

struct ZsSubscriber
{
	char	   *id;
	char	   *task_id;
	int			protocol;
	bool		backup_mode;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];	/* last commit sent (or requested) */

	/* keyset position in the log */
	char		cursor_watermark[ZS_WATERMARK_MAXLEN];
	int64		cursor_pos;
	bool		validated;		/* first page checked, status sent */
	bool		found;			/* requested watermark seen in the log */
	char	   *malformed_watermark;	/* not a watermark: too old for any log */
	bool		last_page_full;	/* more rows may follow without a new commit */
	bool		reached_head;	/* has been live at least once */
	bool		mid_transaction;	/* the last row read is not a transaction's end */
	int64		error_id;		/* id of the error message that ends it, or 0 */

	bool		batched;		/* {"id":n,"batch":[...]} frames (v7 wsBatched) */
	int64		next_id;		/* id of the next frame */
	int64		acked_id;		/* last acknowledged frame id */
	int64		messages_sent;
	int64		messages_acked;
	char		acked_watermark[ZS_WATERMARK_MAXLEN];
	PendingFrame *pending;		/* ring buffer: npending frames from pending_head */
	int			pending_head;
	int			npending;
	int			pending_capacity;

	/* the batch being filled */
	StringInfoData batch;
	int			batch_count;
	char		batch_commit[ZS_WATERMARK_MAXLEN];
};

static const char status_message[] = "[\"status\",{\"tag\":\"status\"}]";

/* the latest lag report (a lagReport object), "" if none: set by the server */
static char lag_report[ZS_LAG_REPORT_LEN];

static bool
missing(const char *value)
{
	return value == NULL || value[0] == '\0';
}

ZsSubscriber *
zs_subscriber_start(const ZsSubscribeParams *p, int protocol, char **error)
{
	ZsSubscriber *sub;
	uint64		ignored;
	/* taskID is optional, as zero-cache has it */
	const char *name = missing(p->id) ? "id"
		: missing(p->replica_version) ? "replicaVersion"
		: missing(p->watermark) ? "watermark" : NULL;
	bool		malformed;

	if (name != NULL)
	{
		*error = psprintf("invalid querystring - missing %s", name);
		return NULL;
	}
	/*
	 * A watermark that is not one cannot be found in any log: zero-cache
	 * answers it as a watermark too old (error type 2), not with a close.
	 */
	malformed = strlen(p->watermark) >= ZS_WATERMARK_MAXLEN ||
		!zs_watermark_decode(p->watermark, &ignored);
	sub = palloc0(sizeof(ZsSubscriber));
	sub->protocol = protocol;
	sub->id = pstrdup(p->id);
	sub->task_id = pstrdup(p->task_id ? p->task_id : "");
	if (malformed)
		sub->malformed_watermark = pstrdup(p->watermark);
	strlcpy(sub->replica_version, p->replica_version, sizeof(sub->replica_version));
	strlcpy(sub->watermark, p->watermark, sizeof(sub->watermark));
	/* it has everything up to where it starts: the purge floor counts that */
	if (!malformed)
		strlcpy(sub->acked_watermark, p->watermark, sizeof(sub->acked_watermark));
	sub->backup_mode = p->mode != NULL && strcmp(p->mode, "backup") == 0;
	sub->batched = p->batched;
	strlcpy(sub->cursor_watermark, sub->watermark, sizeof(sub->cursor_watermark));
	sub->cursor_pos = -1;
	/* frame ids continue after those sent before the subscription */
	sub->next_id = p->frames_sent + 1;
	sub->acked_id = p->frames_acked;
	sub->pending_capacity = 64;
	sub->pending = palloc(sizeof(PendingFrame) * sub->pending_capacity);
	initStringInfo(&sub->batch);
	return sub;
}

bool
zs_subscriber_ack(ZsSubscriber *sub, int64 id, char **error)
{
	if (id != sub->acked_id + 1 || id >= sub->next_id)
	{
		*error = psprintf("Unexpected ack for " INT64_FORMAT ": " INT64_FORMAT,
						  sub->acked_id + 1, id);
		return false;
	}
	sub->acked_id = id;
	while (sub->npending > 0 && sub->pending[sub->pending_head].id <= id)
	{
		PendingFrame *f = &sub->pending[sub->pending_head];

		sub->messages_acked += f->nmessages;
		if (f->commit_watermark[0] != '\0')
			strlcpy(sub->acked_watermark, f->commit_watermark, ZS_WATERMARK_MAXLEN);
		sub->pending_head = (sub->pending_head + 1) % sub->pending_capacity;
		sub->npending--;
	}
	return true;
}

const char *
zs_subscriber_id(const ZsSubscriber *sub)
{
	return sub->id;
}

const char *
zs_subscriber_task(const ZsSubscriber *sub)
{
	return sub->task_id;
}

void
zs_subscriber_describe(const ZsSubscriber *sub, const char *head, ZsSubscriberInfo *info)
{
	info->id = sub->id;
	info->replica_version = sub->replica_version;
	info->backup_mode = sub->backup_mode;
	info->protocol = sub->protocol;
	info->watermark_sent = sub->watermark;
	info->watermark_acked = sub->acked_watermark;
	info->messages_sent = sub->messages_sent;
	info->messages_acked = sub->messages_acked;
	if (sub->error_id != 0)
		info->state = ZS_SUB_FAILED;
	else if (!sub->validated || sub->last_page_full || strcmp(sub->cursor_watermark, head) < 0)
		info->state = ZS_SUB_CATCHING_UP;
	else
		info->state = ZS_SUB_LIVE;
}

bool
zs_subscriber_wants_rows(const ZsSubscriber *sub, const char *head, int64 head_pos)
{
	int			cmp;

	if (sub->error_id != 0 || sub->messages_sent - sub->messages_acked >= zs_catchup_page_rows)
		return false;
	if (!sub->validated || sub->last_page_full)
		return true;
	/*
	 * After a short page, rows can only follow once the head moves on: to a
	 * later transaction, or within the one the subscriber is in the middle
	 * of (a transaction larger than the live buffer, published in parts,
	 * then stored).
	 */
	cmp = strcmp(sub->cursor_watermark, head);
	return cmp < 0 || (cmp == 0 && sub->mid_transaction && sub->cursor_pos < head_pos);
}

static void
remember_frame(ZsSubscriber *sub, int64 id, int nmessages, const char *commit_watermark)
{
	PendingFrame *f;

	if (sub->npending == sub->pending_capacity)
	{
		/*
		 * Grow, unrolling the ring so that it starts at 0 again; in the
		 * subscriber's own context, as this runs inside SPI.
		 */
		PendingFrame *grown = MemoryContextAlloc(GetMemoryChunkContext(sub->pending),
												 sizeof(PendingFrame) * sub->pending_capacity * 2);

		for (int i = 0; i < sub->npending; i++)
			grown[i] = sub->pending[(sub->pending_head + i) % sub->pending_capacity];
		pfree(sub->pending);
		sub->pending = grown;
		sub->pending_head = 0;
		sub->pending_capacity *= 2;
	}
	f = &sub->pending[(sub->pending_head + sub->npending) % sub->pending_capacity];
	sub->npending++;
	f->id = id;
	f->nmessages = nmessages;
	strlcpy(f->commit_watermark, commit_watermark, ZS_WATERMARK_MAXLEN);
	sub->messages_sent += nmessages;
}

/*
 * {"id":n,"msg":<msg>} as one text frame: the message bytes are shared,
 * only the id prefix is the subscriber's own.
 */
static void
send_frame(ZsSubscriber *sub, StringInfo out, const char *msg, int len,
		   const char *commit_watermark)
{
	char		prefix[48];
	int64		id = sub->next_id++;
	int			prefix_len = snprintf(prefix, sizeof(prefix), "{\"id\":" INT64_FORMAT ",\"msg\":", id);

	zs_ws_append_header(out, true, ZS_WS_OP_TEXT, (uint64) (prefix_len + len + 1), NULL);
	appendBinaryStringInfo(out, prefix, prefix_len);
	appendBinaryStringInfo(out, msg, len);
	appendStringInfoChar(out, '}');
	remember_frame(sub, id, 1, commit_watermark);
}

/* Send the batch being filled: {"id":n,"batch":[...]}, or a msg frame for one item. */
static void
flush_batch(ZsSubscriber *sub, StringInfo out)
{
	char		prefix[48];
	int64		id;
	int			prefix_len;

	if (sub->batch_count == 0)
		return;
	if (sub->batch_count == 1)
		send_frame(sub, out, sub->batch.data, sub->batch.len, sub->batch_commit);
	else
	{
		id = sub->next_id++;
		prefix_len = snprintf(prefix, sizeof(prefix), "{\"id\":" INT64_FORMAT ",\"batch\":[", id);
		zs_ws_append_header(out, true, ZS_WS_OP_TEXT,
							(uint64) (prefix_len + sub->batch.len + 2), NULL);
		appendBinaryStringInfo(out, prefix, prefix_len);
		appendBinaryStringInfo(out, sub->batch.data, sub->batch.len);
		appendStringInfoString(out, "]}");
		remember_frame(sub, id, sub->batch_count, sub->batch_commit);
	}
	resetStringInfo(&sub->batch);
	sub->batch_count = 0;
	sub->batch_commit[0] = '\0';
}

/* Queue one message: straight into a frame, or into the batch. */
static void
send_message(ZsSubscriber *sub, StringInfo out, const char *msg, int len,
			 const char *commit_watermark)
{
	if (!sub->batched)
	{
		send_frame(sub, out, msg, len, commit_watermark);
		return;
	}
	if (sub->batch_count > 0)
		appendStringInfoChar(&sub->batch, ',');
	appendBinaryStringInfo(&sub->batch, msg, len);
	if (commit_watermark[0] != '\0')
		strlcpy(sub->batch_commit, commit_watermark, sizeof(sub->batch_commit));
	if (++sub->batch_count == MAX_BATCH)
		flush_batch(sub, out);
}

static void
send_error(ZsSubscriber *sub, StringInfo out, ZsZeroErrorType type,
		   const char *message)
{
	StringInfoData msg;

	flush_batch(sub, out);
	sub->error_id = sub->next_id;
	initStringInfo(&msg);
	appendStringInfo(&msg, "[\"error\",{\"type\":%d,\"message\":", (int) type);
	zs_json_append_cstring(&msg, message);
	appendStringInfoString(&msg, "}]");
	send_frame(sub, out, msg.data, msg.len, "");
	pfree(msg.data);
}

bool
zs_subscriber_is_live(const ZsSubscriber *sub, const char *head)
{
	return sub->validated && sub->error_id == 0 && !sub->last_page_full &&
		strcmp(sub->cursor_watermark, head) >= 0;
}

bool
zs_subscriber_is_following(const ZsSubscriber *sub)
{
	return sub->validated && sub->error_id == 0 && !sub->last_page_full;
}

bool
zs_subscriber_is_lagging(ZsSubscriber *sub, const char *head)
{
	if (zs_subscriber_is_live(sub, head))
	{
		sub->reached_head = true;
		return false;
	}
	return sub->reached_head && sub->error_id == 0 &&
		sub->messages_sent - sub->messages_acked >= zs_catchup_page_rows;
}

void
zs_subscriber_fail_lagging(ZsSubscriber *sub, StringInfo out, int64 grace_ms, int64 lagging_ms)
{
	send_error(sub, out, ZS_ERR_STREAM_TOO_FAR_BEHIND,
			   psprintf("lagging for over " INT64_FORMAT "ms (" INT64_FORMAT "ms)",
						 grace_ms, lagging_ms));
}

bool
zs_subscriber_is_finished(const ZsSubscriber *sub)
{
	return sub->error_id != 0 && sub->acked_id >= sub->error_id;
}

void
zs_subscriber_position(const ZsSubscriber *sub, char *watermark, int64 *pos)
{
	strlcpy(watermark, sub->cursor_watermark, ZS_WATERMARK_MAXLEN);
	*pos = sub->cursor_pos;
}

/* ["status",{"tag":"status","lagReport":<report>}] */
static void
send_lag_status(ZsSubscriber *sub, StringInfo out)
{
	char	   *msg = psprintf("[\"status\",{\"tag\":\"status\",\"lagReport\":%s}]", lag_report);

	send_message(sub, out, msg, strlen(msg), "");
	pfree(msg);
}

/*
 * The subscription is accepted: its first message is the status (protocol
 * >= 2), with the latest lag report if there is one (zero-cache 1.9.0).
 */
static void
mark_validated(ZsSubscriber *sub, StringInfo out)
{
	sub->validated = true;
	if (sub->protocol < 2)
		return;
	if (lag_report[0] != '\0')
		send_lag_status(sub, out);
	else
		send_message(sub, out, status_message, sizeof(status_message) - 1, "");
}

void
zs_subscriber_set_lag_report(const char *report)
{
	strlcpy(lag_report, report, sizeof(lag_report));
}

bool
zs_subscriber_send_lag_report(ZsSubscriber *sub, StringInfo out)
{
	if (lag_report[0] == '\0' || sub->protocol < 2 || !sub->validated ||
		sub->error_id != 0 || sub->mid_transaction)
		return false;
	send_lag_status(sub, out);
	flush_batch(sub, out);
	return true;
}

/*
 * The subscriber reached the end of the log: give back what its catch-up
 * grew (the batch buffer, with large rows; the ring of unacknowledged
 * frames, a page or two of them), since a live subscriber's pages are a
 * few commits. Both live in the subscriber's own context.
 */
static void
shrink_after_catchup(ZsSubscriber *sub)
{
	if (sub->batch.maxlen > BATCH_BUFFER_KEEP)
	{
		MemoryContext context = GetMemoryChunkContext(sub->batch.data);

		pfree(sub->batch.data);
		sub->batch.data = MemoryContextAlloc(context, 1024);
		sub->batch.maxlen = 1024;
		resetStringInfo(&sub->batch);
	}
	if (sub->pending_capacity > PENDING_KEEP && sub->npending <= PENDING_KEEP / 2)
	{
		PendingFrame *small = MemoryContextAlloc(GetMemoryChunkContext(sub->pending),
												 sizeof(PendingFrame) * PENDING_KEEP);

		for (int i = 0; i < sub->npending; i++)
			small[i] = sub->pending[(sub->pending_head + i) % sub->pending_capacity];
		pfree(sub->pending);
		sub->pending = small;
		sub->pending_head = 0;
		sub->pending_capacity = PENDING_KEEP;
	}
}

bool
zs_subscriber_consume_page(ZsSubscriber *sub, const ZsChangeLogPage *page, const char *replica_version,
						   StringInfo out, Size room)
{
	int			start_len = out->len;

	/*
	 * Also after validation: a new lineage (the slot was lost and the log
	 * started again) must end every subscription of the old one, never
	 * continue it with the new log's transactions.
	 */
	if (strcmp(sub->replica_version, replica_version) != 0)
	{
		send_error(sub, out, ZS_ERR_WRONG_REPLICA_VERSION,
				   psprintf("current replica version is %s (requested %s)",
							 replica_version, sub->replica_version));
		return false;
	}
	if (sub->malformed_watermark != NULL)
	{
		/* the log starts at its replicaVersion's seed (nothing is purged yet) */
		send_error(sub, out, ZS_ERR_WATERMARK_TOO_OLD,
				   psprintf("earliest supported watermark is %s (requested %s)",
							replica_version, sub->malformed_watermark));
		return false;
	}
	Assert(strcmp(page->after_watermark, sub->cursor_watermark) == 0 &&
		   page->after_pos == sub->cursor_pos);
	sub->last_page_full = page->full;

	for (int i = 0; i < page->nrows; i++)
	{
		const ZsChangeLogRow *row = &page->rows[i];
		int			cmp;

		/* the backlog is full: continue from here once it drains */
		if ((Size) (out->len - start_len) + sub->batch.len >= room)
		{
			sub->last_page_full = true;
			break;
		}
		cmp = strcmp(row->watermark, sub->watermark);

		strlcpy(sub->cursor_watermark, row->watermark, sizeof(sub->cursor_watermark));
		sub->cursor_pos = row->pos;
		sub->mid_transaction = !row->is_commit &&
			strncmp(row->message, "[\"rollback\"", 11) != 0;

		if (!sub->validated)
		{
			/* the requested watermark must still be in the log (§6.7) */
			if (cmp == 0)
				sub->found = true;
			else if (cmp > 0 && !sub->found && strcmp(sub->watermark, replica_version) != 0)
			{
				/*
				 * A backup replica that fell behind the log cannot be served
				 * either; zero-cache tells it to reset (resync) with an
				 * AutoResetSignal, as error type Unknown.
				 */
				if (sub->backup_mode)
					send_error(sub, out, ZS_ERR_UNKNOWN,
							   psprintf("AutoResetSignal: backup replica at watermark %s is behind change db: earliest supported watermark is %s",
										sub->watermark, row->watermark));
				else
					send_error(sub, out, ZS_ERR_WATERMARK_TOO_OLD,
							   psprintf("earliest supported watermark is %s (requested %s)",
										 row->watermark, sub->watermark));
				return false;
			}
			mark_validated(sub, out);
		}
		/* the subscriber already has everything up to its watermark */
		if (cmp <= 0)
			continue;
		if (row->is_commit)
			strlcpy(sub->watermark, row->watermark, sizeof(sub->watermark));
		send_message(sub, out, row->message, row->message_len,
					 row->is_commit ? row->watermark : "");
	}

	/*
	 * The page ended at a chunk that cannot be read: the subscription ends
	 * there, once it has every row before it, and says why (nothing after
	 * the chunk may be sent over a gap).
	 */
	if (page->error != NULL && !sub->last_page_full)
	{
		send_error(sub, out, ZS_ERR_UNKNOWN, page->error);
		return true;
	}
	/* nothing at or after the watermark: the subscriber is at (or ahead of) the head */
	if (!sub->validated)
		mark_validated(sub, out);
	/* only what is already queued is batched: never hold messages back */
	flush_batch(sub, out);
	if (!sub->last_page_full)
		shrink_after_catchup(sub);
	return false;
}
