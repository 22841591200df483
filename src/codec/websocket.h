/*-------------------------------------------------------------------------
 * websocket.h
 *	  RFC 6455 framing: frame headers, masking, message reassembly, control
 *	  frames and the opening handshake's accept key.
 *
 * Pure codec, no I/O; compiles as backend or frontend code, so the server
 * worker, the client and the unit tests share it.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_WEBSOCKET_H
#define ZS_WEBSOCKET_H

#include "lib/stringinfo.h"

#define ZS_WS_OP_CONTINUATION	0x0
#define ZS_WS_OP_TEXT			0x1
#define ZS_WS_OP_BINARY			0x2
#define ZS_WS_OP_CLOSE			0x8
#define ZS_WS_OP_PING			0x9
#define ZS_WS_OP_PONG			0xA

/*
 * close codes (RFC 6455 §7.4.1); ZS_WS_CLOSE_NO_STATUS sends a close frame
 * without a status code (the peer reports 1005), as the "ws" library's
 * close() does, which zero-cache uses after an error message
 */
#define ZS_WS_CLOSE_NO_STATUS		0
#define ZS_WS_CLOSE_NORMAL			1000
#define ZS_WS_CLOSE_GOING_AWAY		1001
#define ZS_WS_CLOSE_PROTOCOL_ERROR	1002
#define ZS_WS_CLOSE_UNSUPPORTED		1003
#define ZS_WS_CLOSE_INVALID_DATA	1007
#define ZS_WS_CLOSE_POLICY			1008
#define ZS_WS_CLOSE_TOO_BIG			1009
#define ZS_WS_CLOSE_INTERNAL_ERROR	1011

#define ZS_WS_MAX_HEADER_LEN	14
#define ZS_WS_ACCEPT_KEY_LEN	28	/* base64 of a SHA-1 digest */
#define ZS_WS_MAX_CLOSE_REASON	123

/* One complete message (or control frame) taken from the input. */
typedef struct ZsWsMessage
{
	uint8		opcode;			/* TEXT, BINARY, CLOSE, PING or PONG */
	StringInfoData payload;		/* unmasked; for CLOSE the raw code + reason */
} ZsWsMessage;

/*
 * Incremental reader of one peer's frames. Feed it bytes as they arrive;
 * it returns whole messages, with fragments reassembled and control frames
 * delivered as they come (they may sit between fragments).
 */
typedef struct ZsWsReader
{
	bool		require_mask;	/* a server requires masked client frames */
	uint64		max_message;	/* payload limit of a reassembled message */
	StringInfoData input;		/* bytes received, not yet consumed */
	int			input_pos;
	uint8		fragment_opcode;	/* TEXT/BINARY while a message is fragmented */
	StringInfoData fragments;
	uint16		error_code;		/* close code to send after ZS_WS_ERROR */
	const char *error;			/* static description */
} ZsWsReader;

typedef enum ZsWsReadResult
{
	ZS_WS_NEED_MORE,
	ZS_WS_MESSAGE,
	ZS_WS_ERROR
} ZsWsReadResult;

extern void zs_ws_reader_init(ZsWsReader *reader, bool require_mask, uint64 max_message);
extern void zs_ws_reader_feed(ZsWsReader *reader, const char *data, int len);
extern ZsWsReadResult zs_ws_reader_next(ZsWsReader *reader, ZsWsMessage *message);
extern void zs_ws_reader_free(ZsWsReader *reader);

/*
 * Append a frame header for a payload of len bytes; with a mask (client
 * side) the caller masks the payload with zs_ws_mask.
 */
extern void zs_ws_append_header(StringInfo out, bool fin, uint8 opcode, uint64 len,
								const uint8 *mask);
extern void zs_ws_mask(char *data, size_t len, const uint8 mask[4], uint64 offset);

/* Append a whole unmasked (server) frame. */
extern void zs_ws_append_frame(StringInfo out, uint8 opcode, const char *payload, int len);

/* Append a close frame: code plus a reason truncated to 123 bytes at a UTF-8 boundary. */
extern void zs_ws_append_close(StringInfo out, uint16 code, const char *reason);

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key; false if the key is malformed. */
extern bool zs_ws_accept_key(const char *client_key, char *accept /* 29 bytes */ );

#endif							/* ZS_WEBSOCKET_H */
