/*-------------------------------------------------------------------------
 * replica_frame.h
 *	  One downstream frame of the change stream applied to
 *	  zero-stream-replica's replica (replica_frame.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_FRAME_H
#define ZS_REPLICA_FRAME_H

#include "client/subscribe_connection.h"
#include "replica/replica_apply.h"

/* What a frame did to the subscription */
typedef enum ZsReplicaFrameResult
{
	ZS_REPLICA_FRAME_APPLIED,	/* applied (or the server's ack of ours): go on */
	ZS_REPLICA_FRAME_RECONNECT, /* the server ended the subscription: subscribe again */
	ZS_REPLICA_FRAME_RESTORE	/* ended with WrongReplicaVersion or
								 * WatermarkTooOld: restore, then subscribe */
} ZsReplicaFrameResult;

/*
 * Apply the frame in conn->msg, {"id":n,"batch":[msg...]} or
 * {"id":n,"msg":msg}, to r, and count it processed (conn->last_frame); an
 * error message from the server is acked at once and ends the
 * subscription. A frame that is not JSON or not a frame exits 2; a message
 * that cannot be applied exits 3, naming the frame, the transaction's
 * watermark and the change's table, e.g. "applying frame 42 (watermark
 * 0a1b2c, table public.items): <the replica's error>".
 */
extern ZsReplicaFrameResult zs_replica_frame_apply(ZsSubscribeConn *conn, ZsReplica *r);

#endif							/* ZS_REPLICA_FRAME_H */
