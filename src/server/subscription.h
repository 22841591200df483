/*-------------------------------------------------------------------------
 * subscription.h
 *	  One subscriber of the change log: validation of its parameters,
 *	  reading the committed log by keyset pages, Zero framing, acks.
 *
 * A subscription knows nothing of sockets or HTTP: routes.c and upstream.c
 * create it from a request or a start-subscription message, flow_control.c
 * hands it pages, and its frames are appended to the connection's output.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIPTION_H
#define ZS_SUBSCRIPTION_H

#include "lib/stringinfo.h"

#include "changelog/changelog.h"
#include "codec/watermark.h"
#include "shmem.h"

/* the protocol versions served (docs/zero-protocol.md §2.1) */
#define ZS_MIN_PROTOCOL 4
#define ZS_MAX_PROTOCOL 7

typedef struct ZsSubscriber ZsSubscriber;

/*
 * The parameters of a subscription, from a query string or a v7
 * start-subscription message. Its frame ids continue after frames_sent
 * frames sent before it on the same connection, of which frames_acked were
 * acknowledged (a v7 snapshot reservation's); both are 0 otherwise.
 */
typedef struct ZsSubscribeParams
{
	const char *id;
	const char *task_id;
	const char *replica_version;
	const char *watermark;
	const char *mode;			/* "backup", or anything else for serving */
	bool		batched;		/* {"id":n,"batch":[...]} frames */
	int64		frames_sent;
	int64		frames_acked;
} ZsSubscribeParams;

/*
 * Validate the parameters (docs/zero-protocol.md §2.2) and start a
 * subscription, in the current memory context. NULL with *error (the text
 * after "Error: " of a close with code 1002) if a parameter is missing or
 * the watermark is malformed.
 */
extern ZsSubscriber *zs_subscriber_start(const ZsSubscribeParams *params, int protocol,
										 char **error);

/*
 * Does the subscriber have room for another page of messages, and are there
 * rows after its position? head_pos is the position of head's last row
 * that can be read: PG_INT64_MAX once head's transaction is stored whole,
 * less while the rows of a transaction larger than the live buffer are
 * still being published.
 */
extern bool zs_subscriber_wants_rows(const ZsSubscriber *sub, const char *head, int64 head_pos);

/* The key after which the subscriber's next page starts. */
extern void zs_subscriber_position(const ZsSubscriber *sub, char *watermark, int64 *pos);

/*
 * Append the frames of a page read at the subscriber's position, stopping at
 * a row boundary once about room bytes were added (the rest is read again
 * later). A subscription that cannot be served gets an error message
 * instead (docs/zero-protocol.md §2.4) and reads nothing more. True if the
 * page's own error (a chunk that cannot be read) ended the subscription.
 */
extern bool zs_subscriber_consume_page(ZsSubscriber *sub, const ZsChangeLogPage *page,
									   const char *replica_version, StringInfo out,
									   Size room);

/*
 * The subscriber acknowledged frame id: acks must come in order and name a
 * frame sent. False with *error otherwise.
 */
extern bool zs_subscriber_ack(ZsSubscriber *sub, int64 id, char **error);

/* The error message was acknowledged: close the stream. */
extern bool zs_subscriber_is_finished(const ZsSubscriber *sub);


extern const char *zs_subscriber_id(const ZsSubscriber *sub);
extern const char *zs_subscriber_task(const ZsSubscriber *sub);

typedef struct ZsSubscriberInfo
{
	const char *id;
	const char *replica_version;	/* the one it asked for */
	bool		backup_mode;
	int			protocol;
	const char *watermark_sent;		/* last commit sent (or the requested one) */
	const char *watermark_acked;	/* last commit acknowledged, "" if none */
	int64		messages_sent;
	int64		messages_acked;
	ZsSubscriberState state;	/* catching up, live or failed */
} ZsSubscriberInfo;

extern void zs_subscriber_describe(const ZsSubscriber *sub, const char *head,
								   ZsSubscriberInfo *info);

/*
 * Is the subscriber lagging: it had caught up with the head, is behind it
 * again, and waits for its own acks? (A first catch-up never counts.)
 */
extern bool zs_subscriber_is_lagging(ZsSubscriber *sub, const char *head);
extern bool zs_subscriber_is_live(const ZsSubscriber *sub, const char *head);

/*
 * Did the subscriber's last page reach the end of the log, so that what it
 * reads next are only commits stored since? (False while it catches up.)
 */
extern bool zs_subscriber_is_following(const ZsSubscriber *sub);

/*
 * Lag reports (docs/zero-protocol.md §3.5): the latest one, which new
 * subscriptions get in their first status; and sending it to a subscriber
 * as ["status",{"tag":"status","lagReport":...}], only between transactions
 * (false if it was not sent).
 */
extern void zs_subscriber_set_lag_report(const char *report);
extern bool zs_subscriber_send_lag_report(ZsSubscriber *sub, StringInfo out);

/* End the subscription with StreamTooFarBehind. */
extern void zs_subscriber_fail_lagging(ZsSubscriber *sub, StringInfo out, int64 grace_ms,
									   int64 lagging_ms);

#endif							/* ZS_SUBSCRIPTION_H */
