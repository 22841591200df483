/*-------------------------------------------------------------------------
 * upstream.h
 *	  What a subscriber sends: acks, and on a v7 /subscribe connection the
 *	  upstream frames that start its subscription or reserve a snapshot
 *	  (docs/zero-protocol.md §2.3, §2.6).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_UPSTREAM_H
#define ZS_UPSTREAM_H

#include "lib/stringinfo.h"

#include "codec/watermark.h"
#include "server/subscription.h"

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
	const char *started_task;	/* set when a start-subscription was just accepted */
} ZsUpstream;

/*
 * A text frame from a v7 /subscribe client (§2.6): an ack of our frames, or
 * {"id":n,"msg"|"batch":...} carrying start-subscription (which creates
 * *sub, in the current memory context, and releases the reservation) or
 * reserve-snapshot (answered with a "reserved" message). Upstream frames
 * are acked into out. False with *error on anything else.
 */
extern bool zs_upstream_receive(ZsSubscriber **sub, int protocol, ZsUpstream *up,
								const char *text, int len, StringInfo out, char **error);

/*
 * A text frame from a /changes subscriber: only {"ack":n} is accepted.
 * False with *error on anything else or on an ack out of order.
 */
extern bool zs_upstream_receive_ack(ZsSubscriber *sub, const char *text, int len,
									char **error);

#endif							/* ZS_UPSTREAM_H */
