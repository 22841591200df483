/*-------------------------------------------------------------------------
 * lag_report.c
 *	  Replication lag reports, as zero-cache's change source makes them
 *	  (docs/zero-protocol.md §3.5; zero-cache's LagReporter).
 *
 * Every zero_stream.lag_report_interval the decoder writes a
 * non-transactional logical message with the prefix
 * "<app>/<shard>/lag-report/v1" and the content
 * {"id","sendTimeMs","commitTimeMs"}, and flushes it. When decoding reaches
 * it, the report {"lastTimings":{"sendTimeMs","commitTimeMs",
 * "receiveTimeMs"},"nextSendTimeMs"} is published in shared memory; the
 * server sends it to live subscribers as ["status",{"tag":"status",
 * "lagReport":...}] (not stored). So subscribers learn how far behind the
 * stream is, also while the published tables are quiet, and the WAL the
 * message is in moves decoding (and the slot) on as any other record.
 *
 * The message is written without our replication origin: the output
 * plugin drops what carries it. A report that does not come back within an
 * interval (a decoder behind by more than that) is sent again, as
 * zero-cache does; a report another process wrote with our prefix (a
 * zero-cache on the same database) is published too.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "replication/message.h"
#include "replication/origin.h"
#include "utils/timestamp.h"

#include "codec/json_read.h"
#include "compat/replication.h"
#include "decoding/change_encode.h"
#include "decoder/lag_report.h"
#include "guc.h"
#include "shmem.h"

static char prefix[NAMEDATALEN * 2];
static int64 expected_id = 0;		/* 0: none in flight */
static int64 expected_send_ms = 0;
static int64 next_send_ms = 0;
static int64 last_id = 0;

/* Unix epoch milliseconds, as JavaScript's Date.now() */
static int64
now_ms(void)
{
	return ((int64) GetCurrentTimestamp() + ZS_UNIX_EPOCH_OFFSET_US) / 1000;
}

const char *
zs_lag_report_prefix(void)
{
	if (prefix[0] == '\0')
		snprintf(prefix, sizeof(prefix), "%s/%d/lag-report/v1", zs_app_id, zs_shard_num);
	return prefix;
}

void
zs_lag_report_step(void)
{
	int64		now;
	char		content[128];
	XLogRecPtr	lsn;
	ReplOriginId saved_origin;

	if (zs_lag_report_interval_ms <= 0)
		return;
	now = now_ms();
	if (expected_id != 0 ? now < expected_send_ms + zs_lag_report_interval_ms : now < next_send_ms)
		return;
	/* ids need only differ from the previous report's */
	last_id = Max(last_id + 1, now);
	snprintf(content, sizeof(content),
			 "{\"id\":\"" INT64_FORMAT "\",\"sendTimeMs\":" INT64_FORMAT ",\"commitTimeMs\":" INT64_FORMAT "}",
			 last_id, now, now);
	saved_origin = zs_xact_origin();
	zs_set_xact_origin(InvalidReplOriginId);
	PG_TRY();
	{
		StartTransactionCommand();
		lsn = zs_log_logical_message(zs_lag_report_prefix(), content, strlen(content), false);
		CommitTransactionCommand();
		XLogFlush(lsn);
	}
	PG_FINALLY();
	{
		zs_set_xact_origin(saved_origin);
	}
	PG_END_TRY();
	expected_id = last_id;
	expected_send_ms = now;
}

void
zs_lag_report_received(const char *content, int len)
{
	ZsJsonDoc	doc;
	const char *id;
	int			send_node;
	int			commit_node;
	int64		send_ms;
	int64		commit_ms;
	int64		now = now_ms();
	int64		next;
	char		report[ZS_LAG_REPORT_LEN];

	zs_json_doc_init(&doc);
	if (!zs_json_parse(&doc, content, len) ||
		(id = zs_json_get_string(&doc, 0, "id")) == NULL ||
		(send_node = zs_json_get(&doc, 0, "sendTimeMs")) < 0 ||
		doc.nodes[send_node].type != ZS_JSON_NUMBER ||
		(commit_node = zs_json_get(&doc, 0, "commitTimeMs")) < 0 ||
		doc.nodes[commit_node].type != ZS_JSON_NUMBER)
	{
		zs_json_doc_free(&doc);
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("ignoring a malformed lag report message: %.*s", Min(len, 200), content)));
		return;
	}
	/* zero-cache's commitTimeMs is epoch * 1000 of now(): it may have a fraction */
	send_ms = (int64) zs_json_double(&doc, send_node);
	commit_ms = (int64) zs_json_double(&doc, commit_node);
	if (expected_id != 0 && strtoll(id, NULL, 10) == expected_id)
	{
		next = Max(now, send_ms + zs_lag_report_interval_ms);
		expected_id = 0;
		next_send_ms = next;
	}
	else
		next = expected_id != 0 ? expected_send_ms : Max(now, send_ms + zs_lag_report_interval_ms);
	zs_json_doc_free(&doc);

	snprintf(report, sizeof(report),
			 "{\"lastTimings\":{\"sendTimeMs\":" INT64_FORMAT ",\"commitTimeMs\":" INT64_FORMAT
			 ",\"receiveTimeMs\":" INT64_FORMAT "},\"nextSendTimeMs\":" INT64_FORMAT "}",
			 send_ms, commit_ms, now, next);
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->lag_report, report, sizeof(zs_shared->lag_report));
	zs_shared->lag_report_generation++;
	LWLockRelease(zs_shared->lock);
	zs_wake_worker(ZS_WORKER_SERVER);
}
