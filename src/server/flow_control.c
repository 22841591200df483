/*-------------------------------------------------------------------------
 * flow_control.c
 *	  Page scheduling across subscribers, backlog limits and laggards
 *	  (docs/zero-protocol.md §5).
 *
 * The server pulls from the durable change log at each subscriber's own
 * pace, so no subscriber can hold back the decoder or another subscriber.
 * What is left of zero-cache's flow control is per subscriber:
 *   - ack pacing: a page is read for a subscriber only while less than a
 *     page of its messages is unacknowledged (subscription.c);
 *   - the backlog limit: nothing more is read for a subscriber whose queued
 *     output reached zero_stream.subscriber_backlog_limit, until it has
 *     taken it below 80%;
 *   - laggards: one that had caught up and then lags, held back by its own
 *     acks, for longer than zero_stream.slow_subscriber_grace_period while
 *     another keeps up, is ended with StreamTooFarBehind.
 * Subscribers at the same position share one read of the log and the
 * messages built from it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "codec/websocket.h"
#include "guc.h"
#include "server/connection.h"
#include "server/flow_control.h"
#include "spi_xact.h"

static Size
backlog_limit(void)
{
	return (Size) zs_backlog_limit_kb * 1024;
}

/*
 * Above the high-water mark nothing more is read for a subscriber until it
 * has taken its output below the low-water mark, 80% (zero-cache's ratio).
 */
static bool
backlog_full(ZsConn *c)
{
	Size		pending = zs_conn_pending(c);

	if (pending >= backlog_limit())
		c->backlog_blocked = true;
	else if (pending <= backlog_limit() / 10 * 8)
		c->backlog_blocked = false;
	return c->backlog_blocked;
}

/* Is c a subscription that has room for another page now? */
static bool
wants_page(ZsConn *c, const char *head)
{
	return !c->closed && !c->close_after_flush && c->sub != NULL &&
		zs_subscriber_wants_rows(c->sub, head) && !backlog_full(c);
}

void
zs_flow_serve_pages(const char *head, const char *replica_version)
{
	bool		any = false;
	ZsChangeLogPage **pages;
	int			npages = 0;
	char		log_version[ZS_WATERMARK_MAXLEN];
	bool		have_log;

	if (replica_version[0] == '\0')
		return;					/* the decoder has not started the log yet */

	for (int i = 0; i < zs_nconns && !any; i++)
		any = wants_page(zs_conns[i], head);
	if (!any)
		return;

	zs_spi_xact_begin("zero_stream: reading the change log");
	/* the lineage as of the pages' snapshot; a log being initialized has none */
	have_log = zs_changelog_read_replica_version(log_version);
	pages = palloc(sizeof(ZsChangeLogPage *) * zs_nconns);
	/* subscribers at the same position share one read and its messages */
	for (int i = 0; have_log && i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];
		char		watermark[ZS_WATERMARK_MAXLEN];
		int64		pos;
		ZsChangeLogPage *page = NULL;

		if (!wants_page(c, head))
			continue;
		zs_subscriber_position(c->sub, watermark, &pos);
		for (int p = 0; p < npages && page == NULL; p++)
		{
			if (pages[p]->after_pos == pos && strcmp(pages[p]->after_watermark, watermark) == 0)
				page = pages[p];
		}
		if (page == NULL)
		{
			page = zs_changelog_read_page(watermark, pos, zs_catchup_page_rows);
			pages[npages++] = page;
		}
		zs_subscriber_consume_page(c->sub, page, log_version, &c->out,
								   backlog_limit() - zs_conn_pending(c));
	}
	zs_spi_xact_commit();
}

/*
 * Laggard disconnection (docs/zero-protocol.md §5.3): a subscriber that had
 * caught up and then lags, held back by its own acks, for longer than the
 * grace period while another subscriber keeps up, is told
 * StreamTooFarBehind and disconnected. Without an on-time subscriber to
 * compare with, nobody is disconnected.
 */
void
zs_flow_check_laggards(const char *head)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		someone_live = false;

	if (zs_slow_subscriber_grace_ms <= 0)
		return;

	for (int i = 0; i < zs_nconns && !someone_live; i++)
		someone_live = !zs_conns[i]->closed && zs_conns[i]->sub != NULL &&
			zs_subscriber_is_live(zs_conns[i]->sub, head);
	for (int i = 0; i < zs_nconns; i++)
	{
		ZsConn	   *c = zs_conns[i];
		long		secs;
		int			usecs;
		int64		lagging_ms;

		if (c->closed || c->close_after_flush || c->sub == NULL)
			continue;
		if (!zs_subscriber_is_lagging(c->sub, head))
		{
			c->lagging_since = 0;
			continue;
		}
		if (c->lagging_since == 0)
			c->lagging_since = now;
		if (!someone_live ||
			!TimestampDifferenceExceeds(c->lagging_since, now, zs_slow_subscriber_grace_ms))
			continue;
		TimestampDifference(c->lagging_since, now, &secs, &usecs);
		lagging_ms = (int64) secs * 1000 + usecs / 1000;
		ereport(LOG,
				(errcode(ERRCODE_CONNECTION_EXCEPTION),
				 errmsg("disconnecting subscriber %s (%s): it lagged behind the stream for " INT64_FORMAT " ms",
						zs_subscriber_id(c->sub), c->address, lagging_ms)));
		zs_subscriber_fail_lagging(c->sub, &c->out, zs_slow_subscriber_grace_ms, lagging_ms);
		zs_conn_send_close(c, ZS_WS_CLOSE_NO_STATUS, NULL);	/* as zero-cache after an error */
	}
}
