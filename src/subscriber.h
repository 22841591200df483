/*-------------------------------------------------------------------------
 * subscriber.h
 *	  One subscriber of the change log: request validation, reading the
 *	  committed log by keyset pages, Zero framing, acks.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIBER_H
#define ZS_SUBSCRIBER_H

#include "lib/stringinfo.h"

#include "http.h"
#include "watermark.h"

typedef struct ZsSubscriber ZsSubscriber;

/*
 * Validate a subscription request (zero-protocol.md §2.1-2.2). Returns
 * NULL with *error set (the text after "Error: ") if the request must be
 * refused with close code 1002.
 */
extern ZsSubscriber *zs_subscriber_create(const ZsHttpRequest *req, char **error);

/* Does the subscriber have room for another page of messages? */
extern bool zs_subscriber_wants_rows(const ZsSubscriber *sub, const char *head);

/*
 * Read the next page of committed change-log rows after the subscriber's
 * position and append the WebSocket frames for them to out. Runs SPI in the
 * caller's transaction. A subscription that cannot be served gets an error
 * message instead (zero-protocol.md §2.4) and reads nothing more.
 */
extern void zs_subscriber_read_page(ZsSubscriber *sub, const char *replica_version,
									StringInfo out);

/* The error message was acknowledged: close the stream. */
extern bool zs_subscriber_is_finished(const ZsSubscriber *sub);

/* Handle one text message from the subscriber; false with *error on abuse. */
extern bool zs_subscriber_handle_message(ZsSubscriber *sub, const char *text, int len,
										 char **error);

extern const char *zs_subscriber_id(const ZsSubscriber *sub);

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

#endif							/* ZS_SUBSCRIBER_H */
