/*-------------------------------------------------------------------------
 * metrics.c
 *	  zero_stream's state in Prometheus's text exposition format (0.0.4):
 *	  what status() and subscribers() tell, for GET /metrics on the
 *	  subscriber server and for zero_stream.metrics() in SQL.
 *
 * Everything comes from shared memory and the server's WAL positions, so
 * the server (which has no database connection) and a backend build the
 * same text, and a scrape never waits on a lock longer than a copy of the
 * shared struct. Names follow Prometheus's conventions: a zero_stream_
 * prefix, base units (_bytes, _seconds), _total for counters, which count
 * since the postmaster started. A subscriber's series carry its id and
 * mode, one per pair: there are at most zero_stream.max_subscribers of
 * them. What needs the database (the change log's size) stays in
 * status().
 *
 * docs/metrics.md lists every series and the alerts to set on them.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "codec/watermark.h"
#include "extension_version.h"
#include "guc.h"
#include "server/metrics.h"
#include "server/peer_log.h"
#include "shmem.h"
#include "slot_health.h"
#include "standby_slots.h"

PG_FUNCTION_INFO_V1(zs_sql_metrics);

/* the label values of server_refusals[], by ZsPeerEvent */
static const char *const refusal_reasons[ZS_PEER_EVENT_KINDS] = {
	"limit", "authentication", "handshake_timeout", "policy", "tls"
};

static const char *const worker_names[ZS_NUM_WORKERS] = {"decoder", "server", "replicator"};

/* "# HELP" and "# TYPE" of a metric family */
static void
family(StringInfo out, const char *name, const char *type, const char *help)
{
	appendStringInfo(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A label value, escaped as the format asks (backslash, quote, newline).
 * Prometheus refuses a whole scrape over one label value that is not
 * UTF-8, and a subscriber's id is whatever bytes it sent (cut to the
 * slot's size, maybe inside a character): each byte that starts no valid
 * character becomes U+FFFD.
 */
static void
append_label_value(StringInfo out, const char *value)
{
	const unsigned char *p = (const unsigned char *) value;

	appendStringInfoChar(out, '"');
	while (*p)
	{
		int			len = pg_utf_mblen(p);

		if (*p == '\\')
			appendStringInfoString(out, "\\\\");
		else if (*p == '"')
			appendStringInfoString(out, "\\\"");
		else if (*p == '\n')
			appendStringInfoString(out, "\\n");
		else if (*p < 0x80)
			appendStringInfoChar(out, (char) *p);
		else if (len > 1 && strnlen((const char *) p, len) == (size_t) len &&
				 pg_utf8_islegal(p, len))
		{
			appendBinaryStringInfo(out, (const char *) p, len);
			p += len;
			continue;
		}
		else
			appendStringInfoString(out, "\xef\xbf\xbd");
		p++;
	}
	appendStringInfoChar(out, '"');
}

static void
sample(StringInfo out, const char *name, double value)
{
	appendStringInfo(out, "%s %.17g\n", name, value);
}

static void
sample_u64(StringInfo out, const char *name, uint64 value)
{
	appendStringInfo(out, "%s " UINT64_FORMAT "\n", name, value);
}

/* seconds since the epoch of a timestamp, for *_timestamp_seconds */
static double
epoch_seconds(TimestampTz t)
{
	return (double) (t - SetEpochTimestamp()) / USECS_PER_SEC;
}

/* the commit LSN a state version's major part encodes, 0 if none */
static XLogRecPtr
watermark_lsn(const char *watermark)
{
	char		major[ZS_WATERMARK_MAXLEN];
	const char *dot = strchr(watermark, '.');
	uint64_t	value;

	if (watermark[0] == '\0')
		return InvalidXLogRecPtr;
	strlcpy(major, watermark, dot ? Min(sizeof(major), (size_t) (dot - watermark) + 1) : sizeof(major));
	return zs_watermark_decode(major, &value) ? (XLogRecPtr) value : InvalidXLogRecPtr;
}

static void
decoder_metrics(StringInfo out, const ZsSharedState *snap)
{
	XLogRecPtr	restart_lsn = InvalidXLogRecPtr;
	XLogRecPtr	confirmed_lsn = InvalidXLogRecPtr;
	XLogRecPtr	flush = RecoveryInProgress() ? GetXLogReplayRecPtr(NULL) : GetFlushRecPtr(NULL);
	char		warning[ZS_ERROR_LEN];
	ZsFailoverStatus failover;

	zs_slot_positions(snap->slot_name, &restart_lsn, &confirmed_lsn);

	family(out, "zero_stream_info", "gauge",
		   "The library's version, the lineage (replicaVersion) and the decoder's slot; always 1.");
	appendStringInfoString(out, "zero_stream_info{library_version=");
	append_label_value(out, ZS_LIBRARY_VERSION);
	appendStringInfoString(out, ",replica_version=");
	append_label_value(out, snap->replica_version);
	appendStringInfoString(out, ",slot=");
	append_label_value(out, snap->slot_name);
	appendStringInfoString(out, "} 1\n");

	family(out, "zero_stream_decoder_state", "gauge",
		   "1 for the decoder's state (status().state), 0 for the others.");
	for (int s = 0; s < ZS_DECODER_STATES; s++)
	{
		appendStringInfoString(out, "zero_stream_decoder_state{state=");
		append_label_value(out, zs_decoder_state_name((ZsDecoderState) s));
		appendStringInfo(out, "} %d\n", snap->decoder_state == (ZsDecoderState) s);
	}

	family(out, "zero_stream_lag_bytes", "gauge",
		   "WAL flushed (replayed, on a standby) after the slot's confirmed position.");
	if (!XLogRecPtrIsInvalid(confirmed_lsn) && flush >= confirmed_lsn)
		sample_u64(out, "zero_stream_lag_bytes", flush - confirmed_lsn);
	family(out, "zero_stream_retained_wal_bytes", "gauge",
		   "WAL the decoder's slot retains (flush position minus restart_lsn).");
	if (!XLogRecPtrIsInvalid(restart_lsn) && flush >= restart_lsn)
		sample_u64(out, "zero_stream_retained_wal_bytes", flush - restart_lsn);
	family(out, "zero_stream_slot_at_risk", "gauge",
		   "1 when the slot is about to be lost to max_slot_wal_keep_size (status().slot_warning).");
	sample(out, "zero_stream_slot_at_risk",
		   zs_slot_at_risk(restart_lsn, confirmed_lsn, warning, sizeof(warning)) ? 1 : 0);
	zs_failover_describe(snap->slot_name[0] ? snap->slot_name : zs_effective_slot_name(),
						 confirmed_lsn, &failover);
	family(out, "zero_stream_failover_synced", "gauge",
		   "With zero_stream.failover: 1 when the standbys have the slot's position (on a standby: when it holds the slot's synchronized copy), status().failover_synced.");
	if (failover.synced_known)
		sample(out, "zero_stream_failover_synced", failover.synced ? 1 : 0);
	family(out, "zero_stream_timeline", "gauge",
		   "This server's timeline (status().timeline): it changes with a promotion.");
	sample_u64(out, "zero_stream_timeline", zs_current_timeline());
	family(out, "zero_stream_last_promotion_timestamp_seconds", "gauge",
		   "When this server was promoted, since its postmaster started (status().promoted_at).");
	if (snap->promoted_at != 0)
		sample(out, "zero_stream_last_promotion_timestamp_seconds", epoch_seconds(snap->promoted_at));

	family(out, "zero_stream_lag_seconds", "gauge",
		   "From the upstream commit of the newest stored transaction to its store.");
	if (snap->last_store_time != 0 && snap->last_upstream_commit_time != 0)
		sample(out, "zero_stream_lag_seconds",
			   (double) (snap->last_store_time - snap->last_upstream_commit_time) / USECS_PER_SEC);
	family(out, "zero_stream_last_store_timestamp_seconds", "gauge",
		   "When the decoder last committed to the change log.");
	if (snap->last_store_time != 0)
		sample(out, "zero_stream_last_store_timestamp_seconds", epoch_seconds(snap->last_store_time));

	family(out, "zero_stream_transactions_stored_total", "counter",
		   "Upstream transactions stored in the change log.");
	sample_u64(out, "zero_stream_transactions_stored_total", snap->txns_stored);
	family(out, "zero_stream_changes_stored_total", "counter",
		   "Changes stored (row changes, truncates, schema changes: the change log's rows but each transaction's begin and commit).");
	sample_u64(out, "zero_stream_changes_stored_total", snap->changes_stored);
	family(out, "zero_stream_local_commits_total", "counter",
		   "The decoder's own commits to the change log (each holds one or more transactions).");
	sample_u64(out, "zero_stream_local_commits_total", snap->local_commits);
	family(out, "zero_stream_value_errors_total", "counter",
		   "Values stored as text because they could not be encoded (status().last_value_error).");
	sample_u64(out, "zero_stream_value_errors_total", snap->value_errors);
	family(out, "zero_stream_resets_total", "counter",
		   "New lineages the decoder started on its own (status().last_reset): every replica restores.");
	sample_u64(out, "zero_stream_resets_total", snap->resets);
	family(out, "zero_stream_last_error_timestamp_seconds", "gauge",
		   "When the decoder last failed (status().last_error).");
	if (snap->last_error[0] != '\0' && snap->last_error_time != 0)
		sample(out, "zero_stream_last_error_timestamp_seconds", epoch_seconds(snap->last_error_time));
}

static void
backup_metrics(StringInfo out, const ZsSharedState *snap)
{
	XLogRecPtr	head = watermark_lsn(snap->last_watermark);
	XLogRecPtr	backup = watermark_lsn(snap->backup_watermark);

	if (zs_replica_file == NULL || zs_replica_file[0] == '\0')
		return;
	family(out, "zero_stream_backup_state", "gauge",
		   "1 for the backup replica's state (status().backup_state), 0 for the others.");
	for (int s = 0; s < ZS_BACKUP_STATES; s++)
	{
		appendStringInfoString(out, "zero_stream_backup_state{state=");
		append_label_value(out, zs_backup_state_name((ZsBackupState) s));
		appendStringInfo(out, "} %d\n", snap->backup_state == (ZsBackupState) s);
	}
	family(out, "zero_stream_backup_lag_bytes", "gauge",
		   "WAL between the change log's head and the backup replica's stateVersion (commit LSNs).");
	if (head != InvalidXLogRecPtr && backup != InvalidXLogRecPtr)
		sample_u64(out, "zero_stream_backup_lag_bytes", head > backup ? head - backup : 0);
	family(out, "zero_stream_backup_rows_applied_total", "counter",
		   "Rows the replicator applied to the backup replica.");
	sample_u64(out, "zero_stream_backup_rows_applied_total", snap->backup_rows_applied);
}

static void
purge_metrics(StringInfo out, const ZsSharedState *snap)
{
	family(out, "zero_stream_purge_runs_total", "counter", "Purges of the change log completed.");
	sample_u64(out, "zero_stream_purge_runs_total", snap->purge_runs);
	family(out, "zero_stream_purged_rows_total", "counter", "Change-log rows purged.");
	sample_u64(out, "zero_stream_purged_rows_total", snap->purged_rows);
	family(out, "zero_stream_purged_bytes_total", "counter", "Bytes of change-log rows purged.");
	sample_u64(out, "zero_stream_purged_bytes_total", snap->purged_bytes);
	family(out, "zero_stream_last_purge_timestamp_seconds", "gauge", "When the last purge ran.");
	if (snap->last_purge_time != 0)
		sample(out, "zero_stream_last_purge_timestamp_seconds", epoch_seconds(snap->last_purge_time));
}

static void
worker_metrics(StringInfo out, const ZsSharedState *snap)
{
	family(out, "zero_stream_worker_up", "gauge", "1 while the background worker runs.");
	for (int w = 0; w < ZS_NUM_WORKERS; w++)
		appendStringInfo(out, "zero_stream_worker_up{worker=\"%s\"} %d\n",
						 worker_names[w], snap->workers[w].pid != 0);
	family(out, "zero_stream_worker_starts_total", "counter",
		   "Starts of the background worker (a restart after an error counts).");
	for (int w = 0; w < ZS_NUM_WORKERS; w++)
		appendStringInfo(out, "zero_stream_worker_starts_total{worker=\"%s\"} %u\n",
						 worker_names[w], snap->workers[w].starts);
}

/*
 * One subscriber's series: its connections of one id and mode summed up
 * (a view-syncer that reconnects is seen twice while the old connection
 * closes, and a scrape may hold no series twice).
 */
typedef struct SubscriberSeries
{
	const char *id;
	const char *mode;
	bool		has_lag;
	uint64		lag;			/* the largest of its connections' */
	int64		backlog;		/* summed up */
	double		connected;		/* the longest-connected one's */
	int64		sent;			/* summed up */
	int64		acked;
} SubscriberSeries;

/* the connected subscribers by id and mode; returns how many */
static int
subscriber_series(const ZsSharedState *snap, const ZsSubscriberSlot *slots, int nslots,
				  SubscriberSeries *series)
{
	XLogRecPtr	head = watermark_lsn(snap->last_watermark);
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;

	for (int i = 0; i < nslots; i++)
	{
		const ZsSubscriberSlot *s = &slots[i];
		const char *mode = zs_subscriber_mode_name(s->mode);
		XLogRecPtr	acked = watermark_lsn(s->watermark_acked);
		SubscriberSeries *e = NULL;

		if (!s->in_use || s->mode == ZS_SUB_MODE_NONE)
			continue;
		for (int j = 0; j < n && e == NULL; j++)
		{
			if (strcmp(series[j].id, s->id) == 0 && strcmp(series[j].mode, mode) == 0)
				e = &series[j];
		}
		if (e == NULL)
		{
			e = &series[n++];
			memset(e, 0, sizeof(*e));
			e->id = s->id;
			e->mode = mode;
		}
		if (acked != InvalidXLogRecPtr && head != InvalidXLogRecPtr)
		{
			e->lag = Max(e->lag, head > acked ? head - acked : 0);
			e->has_lag = true;
		}
		e->backlog += s->backlog_bytes;
		e->connected = Max(e->connected, (double) (now - s->connected_since) / USECS_PER_SEC);
		e->sent += s->messages_sent;
		e->acked += s->messages_acked;
	}
	return n;
}

/* a subscriber's sample: name{id="...",mode="..."} */
static void
subscriber_sample(StringInfo out, const char *name, const SubscriberSeries *e)
{
	appendStringInfo(out, "%s{id=", name);
	append_label_value(out, e->id);
	appendStringInfoString(out, ",mode=");
	append_label_value(out, e->mode);
	appendStringInfoString(out, "} ");
}

static void
subscriber_metrics(StringInfo out, const ZsSharedState *snap, const ZsSubscriberSlot *slots,
				   int nslots)
{
	SubscriberSeries *series = palloc(sizeof(SubscriberSeries) * Max(nslots, 1));
	int			nseries = subscriber_series(snap, slots, nslots, series);
	int			connected = 0;
	int			connections = 0;

	for (int i = 0; i < nslots; i++)
	{
		connections += slots[i].in_use;
		connected += slots[i].in_use && slots[i].mode != ZS_SUB_MODE_NONE;
	}
	family(out, "zero_stream_subscribers_connected", "gauge",
		   "Connections of the server with a subscription or a snapshot reservation.");
	appendStringInfo(out, "zero_stream_subscribers_connected %d\n", connected);
	family(out, "zero_stream_server_connections", "gauge",
		   "Connections of the subscriber server that hold a slot (subscribers, downloads, and those still in their handshake).");
	appendStringInfo(out, "zero_stream_server_connections %d\n", connections);
	family(out, "zero_stream_subscribers_max", "gauge", "zero_stream.max_subscribers.");
	appendStringInfo(out, "zero_stream_subscribers_max %d\n", nslots);
	family(out, "zero_stream_subscribers_retained", "gauge",
		   "Subscribers that left and whose position the purge still keeps (subscriber_retention).");
	appendStringInfo(out, "zero_stream_subscribers_retained %d\n",
					 zs_count_retained(zs_subscriber_retention_ms));

	family(out, "zero_stream_subscriber_lag_bytes", "gauge",
		   "WAL between the change log's head and what the subscriber acknowledged (commit LSNs).");
	for (int i = 0; i < nseries; i++)
	{
		if (!series[i].has_lag)
			continue;
		subscriber_sample(out, "zero_stream_subscriber_lag_bytes", &series[i]);
		appendStringInfo(out, UINT64_FORMAT "\n", series[i].lag);
	}
	family(out, "zero_stream_subscriber_backlog_bytes", "gauge",
		   "Output queued for the subscriber that its socket has not taken.");
	for (int i = 0; i < nseries; i++)
	{
		subscriber_sample(out, "zero_stream_subscriber_backlog_bytes", &series[i]);
		appendStringInfo(out, INT64_FORMAT "\n", series[i].backlog);
	}
	family(out, "zero_stream_subscriber_connected_seconds", "gauge",
		   "How long the subscriber has been connected.");
	for (int i = 0; i < nseries; i++)
	{
		subscriber_sample(out, "zero_stream_subscriber_connected_seconds", &series[i]);
		appendStringInfo(out, "%.3f\n", series[i].connected);
	}
	family(out, "zero_stream_subscriber_messages_sent_total", "counter",
		   "Messages sent to the subscriber on its connection.");
	for (int i = 0; i < nseries; i++)
	{
		subscriber_sample(out, "zero_stream_subscriber_messages_sent_total", &series[i]);
		appendStringInfo(out, INT64_FORMAT "\n", series[i].sent);
	}
	family(out, "zero_stream_subscriber_messages_acked_total", "counter",
		   "Messages the subscriber acknowledged on its connection.");
	for (int i = 0; i < nseries; i++)
	{
		subscriber_sample(out, "zero_stream_subscriber_messages_acked_total", &series[i]);
		appendStringInfo(out, INT64_FORMAT "\n", series[i].acked);
	}
	pfree(series);

	family(out, "zero_stream_server_connections_refused_total", "counter",
		   "Connections the subscriber server refused or closed, by reason (limit: max_subscribers or max_pending_connections; authentication; handshake_timeout; policy; tls).");
	for (int k = 0; k < ZS_PEER_EVENT_KINDS; k++)
		appendStringInfo(out, "zero_stream_server_connections_refused_total{reason=\"%s\"} " UINT64_FORMAT "\n",
						 refusal_reasons[k], snap->server_refusals[k]);
}

char *
zs_metrics_text(void)
{
	StringInfoData out;
	ZsSharedState snap;
	ZsSubscriberSlot *slots;
	int			nslots;

	zs_require_shared_state();
	/* set at startup, never changed: the copy is allocated before the lock */
	nslots = zs_shared->max_subscribers;
	slots = palloc(sizeof(ZsSubscriberSlot) * Max(nslots, 1));
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	memcpy(&snap, zs_shared, offsetof(ZsSharedState, subscribers));
	memcpy(slots, zs_shared->subscribers, sizeof(ZsSubscriberSlot) * nslots);
	LWLockRelease(zs_shared->lock);

	initStringInfo(&out);
	decoder_metrics(&out, &snap);
	backup_metrics(&out, &snap);
	purge_metrics(&out, &snap);
	worker_metrics(&out, &snap);
	subscriber_metrics(&out, &snap, slots, nslots);
	pfree(slots);
	return out.data;
}

/* zero_stream.metrics(): the same text, for a scrape through SQL */
Datum
zs_sql_metrics(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(zs_metrics_text()));
}
