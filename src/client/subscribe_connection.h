/*-------------------------------------------------------------------------
 * subscribe_connection.h
 *	  zero-stream-replica's connection to a zero_stream server's
 *	  /replication/v7/subscribe: connect, reserve a snapshot, send upstream
 *	  messages and acks, read the next text message.
 *
 * Failures leave their reason in zs_replica_cli_err (replica_cli.h).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SUBSCRIBE_CONNECTION_H
#define ZS_SUBSCRIBE_CONNECTION_H

#include "codec/json_read.h"
#include "codec/watermark.h"
#include "codec/websocket.h"
#include "client/ws_client.h"

typedef struct ZsSubscribeConn
{
	ZsClientConn link;
	ZsWsReader	reader;
	ZsWsMessage msg;			/* the last message read */
	ZsJsonDoc	doc;			/* the last message parsed */
	int64		next_upstream_id;
	int64		last_frame;		/* downstream frame ids processed */
	int64		last_acked;
	bool		lost;			/* dropped without a close frame, or a write failed */
} ZsSubscribeConn;

typedef enum ZsSubscribeResult
{
	ZS_SUBSCRIBE_OK,
	ZS_SUBSCRIBE_UNREACHABLE,	/* no connection, a reset, or 502/503/504 */
	ZS_SUBSCRIBE_REFUSED		/* anything else (401 exits at once) */
} ZsSubscribeResult;

typedef enum ZsSubscribeNext
{
	ZS_SUBSCRIBE_TEXT,			/* conn->msg holds a text message */
	ZS_SUBSCRIBE_TIMEOUT,		/* nothing within the timeout (or a signal) */
	ZS_SUBSCRIBE_CLOSED			/* closed; zs_replica_cli_err says how */
} ZsSubscribeNext;

/* The reservation's answer */
typedef struct ZsReservation
{
	char	   *backup_url;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		min_watermark[ZS_WATERMARK_MAXLEN];
	int64		replica_size;
} ZsReservation;

/*
 * Open /replication/v7/subscribe?taskID=task_id; how it failed, with the
 * reason in zs_replica_cli_err. A wrong password (401) exits at once.
 */
extern ZsSubscribeResult zs_subscribe_connect(ZsSubscribeConn *conn, const ZsUrl *url,
											  const char *task_id);

/* A close frame (if still connected), then everything freed. */
extern void zs_subscribe_disconnect(ZsSubscribeConn *conn);

/* reserve-snapshot, then wait for ["reserved", {...}]; false if refused */
extern bool zs_subscribe_reserve(ZsSubscribeConn *conn, const char *task_id, ZsReservation *res);

/* {"id":n,"msg":[type,body]}, the next upstream id; false if the connection is lost. */
extern bool zs_subscribe_send_upstream(ZsSubscribeConn *conn, const char *type, const char *body);

/* Ack every processed frame (up to conn->last_frame), in order, in one write. */
extern bool zs_subscribe_send_acks(ZsSubscribeConn *conn);

/* The next text message (in conn->msg); control frames are answered on the way. */
extern ZsSubscribeNext zs_subscribe_next(ZsSubscribeConn *conn, int timeout_ms);

#endif							/* ZS_SUBSCRIBE_CONNECTION_H */
