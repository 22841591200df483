/*-------------------------------------------------------------------------
 * subscription.h
 *	  One subscriber of the change log: request validation, reading the
 *	  committed log by keyset pages, Zero framing, acks.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIPTION_H
#define ZS_SUBSCRIPTION_H

#include "lib/stringinfo.h"

#include "codec/http.h"
#include "changelog/changelog.h"
#include "codec/watermark.h"

typedef struct ZsSubscriber ZsSubscriber;

/*
 * Validate a subscription request (zero-protocol.md §2.1-2.2). Returns
 * NULL with *error set (the text after "Error: ") if the request must be
 * refused with close code 1002, NULL with *awaiting_start for a v7
 * /subscribe connection, whose subscription starts with a message, or NULL
 * with *snapshot_task for a legacy /snapshot reservation.
 */
extern ZsSubscriber *zs_subscriber_create(const ZsHttpRequest *req, bool *awaiting_start,
										  char **snapshot_task, int *protocol, char **error);

/*
 * A v7 /subscribe connection: its upstream frame ids, the downstream frames
 * sent before the subscription existed (a reservation), and the snapshot
 * reservation it holds.
 */
typedef struct ZsUpstream
{
	const char *host;			/* Host header, for the backupURL */
	int64		upstream_id;	/* last upstream frame acked */
	int64		sent;			/* downstream frames sent before the subscription */
	int64		acked;			/* ... and acknowledged */
	char	   *reserved_task;	/* taskID of the open reservation, or NULL */
	char		reserved_watermark[ZS_WATERMARK_MAXLEN];
	char	   *started_task;	/* set when a start-subscription was just accepted */
} ZsUpstream;

/*
 * A text frame from a v7 /subscribe client (§2.6): an ack of our frames, or
 * {"id":n,"msg"|"batch":...} carrying start-subscription (which creates
 * *sub and releases the reservation) or reserve-snapshot (answered with a
 * "reserved" message). Upstream frames are acked into out. False with
 * *error on anything else.
 */
extern bool zs_subscriber_handle_upstream(ZsSubscriber **sub, int protocol, ZsUpstream *up,
										  const char *text, int len, StringInfo out,
										  char **error);

/* Does the subscriber have room for another page of messages? */
extern bool zs_subscriber_wants_rows(const ZsSubscriber *sub, const char *head);

/* The key after which the subscriber's next page starts. */
extern void zs_subscriber_position(const ZsSubscriber *sub, char *watermark, int64 *pos);

/*
 * Append the frames of a page read at the subscriber's position, stopping at
 * a row boundary once about room bytes were added (the rest is read again
 * later). A
 * subscription that cannot be served gets an error message instead
 * (zero-protocol.md §2.4) and reads nothing more.
 */
extern void zs_subscriber_consume_page(ZsSubscriber *sub, const ZsChangeLogPage *page,
									   const char *replica_version, StringInfo out,
									   Size room);

/* The error message was acknowledged: close the stream. */
extern bool zs_subscriber_is_finished(const ZsSubscriber *sub);

/* Handle one text message from the subscriber; false with *error on abuse. */
extern bool zs_subscriber_handle_message(ZsSubscriber *sub, const char *text, int len,
										 char **error);

extern const char *zs_subscriber_id(const ZsSubscriber *sub);
extern const char *zs_subscriber_task(const ZsSubscriber *sub);

typedef struct ZsSubscriberInfo
{
	const char *id;
	bool		backup_mode;
	int			protocol;
	const char *watermark_sent;		/* last commit sent (or the requested one) */
	const char *watermark_acked;	/* last commit acknowledged, "" if none */
	int64		messages_sent;
	int64		messages_acked;
	const char *state;			/* "catching up", "live" or "failed" */
} ZsSubscriberInfo;

extern void zs_subscriber_describe(const ZsSubscriber *sub, const char *head,
								   ZsSubscriberInfo *info);

/*
 * Is the subscriber lagging: it had caught up with the head, is behind it
 * again, and waits for its own acks? (A first catch-up never counts.)
 */
extern bool zs_subscriber_is_lagging(ZsSubscriber *sub, const char *head);
extern bool zs_subscriber_is_live(const ZsSubscriber *sub, const char *head);

/* End the subscription with StreamTooFarBehind (error type 3). */
extern void zs_subscriber_fail_lagging(ZsSubscriber *sub, StringInfo out, int64 grace_ms,
									   int64 lagging_ms);

#endif							/* ZS_SUBSCRIPTION_H */
