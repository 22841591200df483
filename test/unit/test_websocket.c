/*
 * Unit tests for the RFC 6455 codec: the RFC's own examples, payload length
 * encodings at 125/126/65535/65536+, fragmentation with interleaved control
 * frames, byte-by-byte arrival, and every protocol violation a server must
 * refuse, each with its close code.
 */
#include "postgres_fe.h"

#include "codec/websocket.h"
#include "unit.h"

static ZsWsMessage msg;

/* a masked client frame */
static void
client_frame(StringInfo out, bool fin, uint8 opcode, const char *payload, int len)
{
	const uint8 mask[4] = {0x37, 0xfa, 0x21, 0x3d};
	int			start;

	zs_ws_append_header(out, fin, opcode, (uint64) len, mask);
	start = out->len;
	appendBinaryStringInfo(out, payload, len);
	zs_ws_mask(out->data + start, len, mask, 0);
}

static ZsWsReadResult
read_bytes(ZsWsReader *r, const char *data, int len)
{
	zs_ws_reader_feed(r, data, len);
	return zs_ws_reader_next(r, &msg);
}

static void
expect_error(const char *data, int len, uint16 code, const char *what)
{
	ZsWsReader	r;
	ZsWsReadResult res;

	zs_ws_reader_init(&r, true, 1024);
	zs_ws_reader_feed(&r, data, len);
	while ((res = zs_ws_reader_next(&r, &msg)) == ZS_WS_MESSAGE)
		;
	CHECK(res == ZS_WS_ERROR && r.error_code == code, "%s: result %d code %d (%s)", what,
		  res, r.error_code, r.error ? r.error : "");
	zs_ws_reader_free(&r);
}

static void
test_rfc_examples(void)
{
	char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];
	const char	hello_masked[] = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";
	const char	hello_fragments[] = "\x01\x83\x00\x00\x00\x00Hel\x80\x82\x00\x00\x00\x00lo";
	ZsWsReader	r;

	CHECK(zs_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", accept), "accept key computed");
	CHECK_STR(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	CHECK(!zs_ws_accept_key("short", accept), "malformed key refused");
	CHECK(!zs_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=!", accept), "non-base64 key refused");

	zs_ws_reader_init(&r, true, 1024);
	CHECK(read_bytes(&r, hello_masked, 11) == ZS_WS_MESSAGE && msg.opcode == ZS_WS_OP_TEXT &&
		  msg.payload.len == 5 && memcmp(msg.payload.data, "Hello", 5) == 0,
		  "RFC 6455 5.7 masked Hello");
	CHECK(read_bytes(&r, hello_fragments, sizeof(hello_fragments) - 1) == ZS_WS_MESSAGE &&
		  strcmp(msg.payload.data, "Hello") == 0, "RFC 6455 5.7 fragmented Hello");
	CHECK(zs_ws_reader_next(&r, &msg) == ZS_WS_NEED_MORE, "nothing left");
	zs_ws_reader_free(&r);
}

static void
test_lengths(void)
{
	int			sizes[] = {0, 125, 126, 65535, 65536, 200000};

	for (int i = 0; i < (int) lengthof(sizes); i++)
	{
		StringInfoData frame;
		ZsWsReader	r;
		char	   *payload = palloc(sizes[i] + 1);
		int			expect_header = sizes[i] < 126 ? 6 : sizes[i] <= 65535 ? 8 : 14;

		for (int j = 0; j < sizes[i]; j++)
			payload[j] = 'a' + j % 26;
		initStringInfo(&frame);
		client_frame(&frame, true, ZS_WS_OP_BINARY, payload, sizes[i]);
		CHECK(frame.len == expect_header + sizes[i], "header length for %d", sizes[i]);

		zs_ws_reader_init(&r, true, 1 << 20);
		/* arrive in pieces, the header split too */
		zs_ws_reader_feed(&r, frame.data, 1);
		CHECK(zs_ws_reader_next(&r, &msg) == ZS_WS_NEED_MORE, "partial header waits");
		zs_ws_reader_feed(&r, frame.data + 1, frame.len / 2);
		if (frame.len > 2)
			CHECK(zs_ws_reader_next(&r, &msg) == ZS_WS_NEED_MORE || sizes[i] == 0,
				  "partial payload waits (%d)", sizes[i]);
		zs_ws_reader_feed(&r, frame.data + 1 + frame.len / 2, frame.len - 1 - frame.len / 2);
		CHECK(zs_ws_reader_next(&r, &msg) == ZS_WS_MESSAGE && msg.payload.len == sizes[i] &&
			  memcmp(msg.payload.data, payload, sizes[i]) == 0, "payload of %d bytes", sizes[i]);
		zs_ws_reader_free(&r);
		pfree(frame.data);
		pfree(payload);
	}
}

static void
test_control_and_fragments(void)
{
	StringInfoData in;
	ZsWsReader	r;

	initStringInfo(&in);
	client_frame(&in, false, ZS_WS_OP_TEXT, "{\"ack\"", 6);
	client_frame(&in, true, ZS_WS_OP_PING, "p1", 2);
	client_frame(&in, false, ZS_WS_OP_CONTINUATION, ":", 1);
	client_frame(&in, true, ZS_WS_OP_CONTINUATION, "1}", 2);
	client_frame(&in, true, ZS_WS_OP_CLOSE, "\x03\xe8" "bye", 5);

	zs_ws_reader_init(&r, true, 1024);
	/* byte by byte */
	for (int i = 0; i < in.len - 1; i++)
	{
		zs_ws_reader_feed(&r, in.data + i, 1);
		if (zs_ws_reader_next(&r, &msg) == ZS_WS_MESSAGE)
			CHECK((msg.opcode == ZS_WS_OP_PING && strcmp(msg.payload.data, "p1") == 0) ||
				  (msg.opcode == ZS_WS_OP_TEXT && strcmp(msg.payload.data, "{\"ack\":1}") == 0),
				  "interleaved message %d", msg.opcode);
	}
	zs_ws_reader_feed(&r, in.data + in.len - 1, 1);
	CHECK(zs_ws_reader_next(&r, &msg) == ZS_WS_MESSAGE && msg.opcode == ZS_WS_OP_CLOSE &&
		  msg.payload.len == 5 && (uint8) msg.payload.data[0] == 0x03, "close frame with code");
	zs_ws_reader_free(&r);
	pfree(in.data);
}

static void
test_server_output(void)
{
	StringInfoData out;
	char		reason[300];
	ZsWsReader	r;

	initStringInfo(&out);
	zs_ws_append_frame(&out, ZS_WS_OP_TEXT, "{\"id\":1}", 8);
	CHECK(out.len == 10 && (uint8) out.data[0] == 0x81 && out.data[1] == 8, "server text frame");

	/* close reasons are cut to 123 bytes without splitting a character */
	memset(reason, 'x', 122);
	strcpy(reason + 122, "\xc3\xa9 tail");
	resetStringInfo(&out);
	zs_ws_append_close(&out, ZS_WS_CLOSE_PROTOCOL_ERROR, reason);
	CHECK(out.len == 2 + 2 + 122, "reason truncated before the split character (%d)", out.len);

	/* a close without a status code (zero-cache's after an error): an empty payload */
	resetStringInfo(&out);
	zs_ws_append_close(&out, ZS_WS_CLOSE_NO_STATUS, "ignored");
	CHECK(out.len == 2 && (uint8) out.data[0] == 0x88 && out.data[1] == 0, "close without a status code");

	/* a client reads server frames, which must not be masked */
	zs_ws_reader_init(&r, false, 1024);
	resetStringInfo(&out);
	zs_ws_append_close(&out, ZS_WS_CLOSE_PROTOCOL_ERROR, "Error: invalid path: /x");
	CHECK(read_bytes(&r, out.data, out.len) == ZS_WS_MESSAGE && msg.opcode == ZS_WS_OP_CLOSE &&
		  strcmp(msg.payload.data + 2, "Error: invalid path: /x") == 0, "client reads close");
	zs_ws_reader_free(&r);
	pfree(out.data);
}

static void
test_violations(void)
{
	StringInfoData in;
	char		big[200];

	expect_error("\x81\x05Hello", 7, ZS_WS_CLOSE_PROTOCOL_ERROR, "unmasked client frame");
	expect_error("\xc1\x80\x00\x00\x00\x00", 6, ZS_WS_CLOSE_PROTOCOL_ERROR, "RSV1 set");
	expect_error("\x83\x80\x00\x00\x00\x00", 6, ZS_WS_CLOSE_PROTOCOL_ERROR, "opcode 3");
	expect_error("\x09\x80\x00\x00\x00\x00", 6, ZS_WS_CLOSE_PROTOCOL_ERROR, "fragmented ping");
	expect_error("\x80\x80\x00\x00\x00\x00", 6, ZS_WS_CLOSE_PROTOCOL_ERROR, "lone continuation");
	expect_error("\x88\x81\x00\x00\x00\x00\x03", 7, ZS_WS_CLOSE_PROTOCOL_ERROR, "1-byte close");
	expect_error("\x81\xfe\x00\x05\x00\x00\x00\x00", 8, ZS_WS_CLOSE_PROTOCOL_ERROR, "non-minimal 16-bit length");
	expect_error("\x81\xff\x80\x00\x00\x00\x00\x00\x00\x00", 10, ZS_WS_CLOSE_PROTOCOL_ERROR, "64-bit length with top bit");
	/* declared size beyond the limit: refused before the payload arrives */
	expect_error("\x82\xff\x00\x00\x00\x01\x00\x00\x00\x00", 10, ZS_WS_CLOSE_TOO_BIG, "oversized message");

	initStringInfo(&in);
	memset(big, 'p', sizeof(big));
	client_frame(&in, true, ZS_WS_OP_PING, big, 126);
	expect_error(in.data, in.len, ZS_WS_CLOSE_PROTOCOL_ERROR, "ping over 125 bytes");

	resetStringInfo(&in);
	client_frame(&in, true, ZS_WS_OP_TEXT, "\xff\xfe", 2);
	expect_error(in.data, in.len, ZS_WS_CLOSE_INVALID_DATA, "invalid UTF-8 text");

	resetStringInfo(&in);
	client_frame(&in, false, ZS_WS_OP_TEXT, "a", 1);
	client_frame(&in, true, ZS_WS_OP_TEXT, "b", 1);
	expect_error(in.data, in.len, ZS_WS_CLOSE_PROTOCOL_ERROR, "new message inside a fragmented one");

	/* fragments that together exceed the limit (1024) */
	resetStringInfo(&in);
	memset(big, 'f', sizeof(big));
	for (int i = 0; i < 6; i++)
		client_frame(&in, false, i == 0 ? ZS_WS_OP_TEXT : ZS_WS_OP_CONTINUATION, big, 200);
	expect_error(in.data, in.len, ZS_WS_CLOSE_TOO_BIG, "fragments over the limit");
	pfree(in.data);
}

int
main(void)
{
	initStringInfo(&msg.payload);
	test_rfc_examples();
	test_lengths();
	test_control_and_fragments();
	test_server_output();
	test_violations();
	return unit_report("test_websocket");
}
