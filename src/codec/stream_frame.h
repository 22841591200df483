/*-------------------------------------------------------------------------
 * stream_frame.h
 *	  A subscriber's reading of the frames a change stream sends
 *	  (docs/zero-protocol.md §2.3, §3.6): {"id":n,"msg":m},
 *	  {"id":n,"batch":[m1,m2,...]} and the server's {"ack":n}, and of each
 *	  message its type and watermark (["begin",c,{"commitWatermark":w}],
 *	  ["data",c], ["commit",c,{"watermark":w}], ["error",...], ...).
 *
 * Only the envelope is read: the values are skipped as JSON (strings with
 * their escapes, nested objects and arrays), not decoded, so counting the
 * messages of a stream costs one pass over its bytes. Pointers point into
 * the frame's text. Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STREAM_FRAME_H
#define ZS_STREAM_FRAME_H

typedef enum ZsStreamFrameKind
{
	ZS_FRAME_MSG,				/* {"id":n,"msg":m} */
	ZS_FRAME_BATCH,				/* {"id":n,"batch":[...]} */
	ZS_FRAME_ACK				/* {"ack":n}: the server acks our own upstream frame */
} ZsStreamFrameKind;

typedef struct ZsStreamFrame
{
	ZsStreamFrameKind kind;
	int64		id;				/* the frame's id, or the acked id */
	/* the messages: one (msg) or the batch's items; iterated by next_message */
	const char *items;
	const char *items_end;
	bool		started;		/* a message was taken */
} ZsStreamFrame;

typedef enum ZsStreamMessageType
{
	ZS_STREAM_BEGIN,
	ZS_STREAM_DATA,
	ZS_STREAM_COMMIT,
	ZS_STREAM_ROLLBACK,
	ZS_STREAM_STATUS,
	ZS_STREAM_ERROR,
	ZS_STREAM_OTHER				/* a message type this reader does not know */
} ZsStreamMessageType;

typedef struct ZsStreamMessage
{
	ZsStreamMessageType type;
	const char *text;			/* the whole message, ["type",...] */
	int			len;
	/* begin: its commitWatermark; commit: its watermark; else NULL */
	const char *watermark;
	int			watermark_len;
} ZsStreamMessage;

/*
 * Read a frame's envelope (members in any order, whitespace allowed);
 * false if the text is not one of the three frames.
 */
extern bool zs_stream_frame_parse(const char *text, int len, ZsStreamFrame *frame);

/*
 * The frame's next message: 1 with *msg filled, 0 after the last one, -1
 * if a message is malformed (not an array starting with a string, or a
 * begin/commit without its watermark object).
 */
extern int	zs_stream_frame_next_message(ZsStreamFrame *frame, ZsStreamMessage *msg);

#endif							/* ZS_STREAM_FRAME_H */
