/*-------------------------------------------------------------------------
 * fuzz_websocket.c
 *	  libFuzzer target for src/codec/websocket.c: any bytes as a peer's
 *	  stream of frames.
 *
 * Input: one options byte (bit 0: server side, requiring masked frames;
 * bits 1-2: the message size limit; bits 3-7 seed the chunk sizes), then
 * the stream. The stream is read twice, once fed whole and once in chunks
 * of pseudo-random sizes; both readers must return the same messages and
 * end the same way. Every message must respect the codec's guarantees
 * (size limit, control frames of at most 125 bytes, valid UTF-8 text, a
 * close payload of 0 or at least 2 bytes), must re-encode with
 * zs_ws_append_header/zs_ws_mask into a frame that reads back identically,
 * and a close reason must go through zs_ws_append_close as a valid close
 * frame. The first text message is also tried as a Sec-WebSocket-Key.
 * For one input in sixteen that is at least 256 bytes of whole frames,
 * those frames are repeated beyond 64 kB, past the reader's buffer
 * compaction.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "mb/pg_wchar.h"

#include "codec/websocket.h"
#include "fuzz.h"

static const uint64 limits[4] = {0, 125, 1024, 65536};

/* Append a record of a read's outcome: result, opcode, payload / close code. */
static void
log_result(StringInfo log, ZsWsReader *r, ZsWsReadResult res, ZsWsMessage *m)
{
	appendStringInfoChar(log, (char) res);
	if (res == ZS_WS_MESSAGE)
	{
		appendStringInfoChar(log, (char) m->opcode);
		appendBinaryStringInfo(log, (char *) &m->payload.len, sizeof(int));
		appendBinaryStringInfo(log, m->payload.data, m->payload.len);
	}
	else if (res == ZS_WS_ERROR)
		appendBinaryStringInfo(log, (char *) &r->error_code, sizeof(uint16));
}

static void
check_message(const ZsWsReader *r, const ZsWsMessage *m)
{
	uint8		op = m->opcode;

	FUZZ_CHECK(op == ZS_WS_OP_TEXT || op == ZS_WS_OP_BINARY || op == ZS_WS_OP_CLOSE ||
			   op == ZS_WS_OP_PING || op == ZS_WS_OP_PONG, "a message's opcode");
	FUZZ_CHECK(m->payload.data[m->payload.len] == '\0', "payload is NUL-terminated");
	if (op >= ZS_WS_OP_CLOSE)
		FUZZ_CHECK(m->payload.len <= 125, "control frame of at most 125 bytes");
	else
		FUZZ_CHECK((uint64) m->payload.len <= r->max_message, "message within the limit");
	if (op == ZS_WS_OP_TEXT)
		FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, m->payload.data, m->payload.len) ==
				   m->payload.len, "text message is UTF-8");
	if (op == ZS_WS_OP_CLOSE)
	{
		FUZZ_CHECK(m->payload.len != 1, "close payload is not one byte");
		if (m->payload.len > 2)
			FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, m->payload.data + 2, m->payload.len - 2) ==
					   m->payload.len - 2, "close reason is UTF-8");
	}
}

/* A message written back as a frame must read back as the same message. */
static void
check_reencode(const ZsWsReader *r, const ZsWsMessage *m)
{
	const uint8 mask[4] = {0x5a, 0x01, 0xc3, 0x7e};
	StringInfoData frame;
	ZsWsReader	again;
	ZsWsMessage back;
	int			start;

	initStringInfo(&frame);
	initStringInfo(&back.payload);
	zs_ws_append_header(&frame, true, m->opcode, (uint64) m->payload.len,
						r->require_mask ? mask : NULL);
	FUZZ_CHECK(frame.len <= ZS_WS_MAX_HEADER_LEN, "header length");
	start = frame.len;
	appendBinaryStringInfo(&frame, m->payload.data, m->payload.len);
	if (r->require_mask)
		zs_ws_mask(frame.data + start, m->payload.len, mask, 0);
	zs_ws_reader_init(&again, r->require_mask, r->max_message);
	zs_ws_reader_feed(&again, frame.data, frame.len);
	FUZZ_CHECK(zs_ws_reader_next(&again, &back) == ZS_WS_MESSAGE, "re-encoded frame reads");
	FUZZ_CHECK(back.opcode == m->opcode && back.payload.len == m->payload.len &&
			   memcmp(back.payload.data, m->payload.data, m->payload.len) == 0,
			   "re-encoded frame reads back the same");
	FUZZ_CHECK(zs_ws_reader_next(&again, &back) == ZS_WS_NEED_MORE, "nothing after it");
	zs_ws_reader_free(&again);

	/* the close reason (up to a NUL) through zs_ws_append_close */
	if (m->opcode == ZS_WS_OP_CLOSE && m->payload.len >= 2)
	{
		const char *reason = m->payload.data + 2;

		resetStringInfo(&frame);
		zs_ws_append_close(&frame, 1000, reason);
		zs_ws_reader_init(&again, false, 0);
		zs_ws_reader_feed(&again, frame.data, frame.len);
		FUZZ_CHECK(zs_ws_reader_next(&again, &back) == ZS_WS_MESSAGE &&
				   back.opcode == ZS_WS_OP_CLOSE, "zs_ws_append_close writes a valid frame");
		FUZZ_CHECK(back.payload.len >= 2 && back.payload.len - 2 <= ZS_WS_MAX_CLOSE_REASON &&
				   memcmp(back.payload.data + 2, reason, back.payload.len - 2) == 0,
				   "close reason is a prefix of the one given");
		zs_ws_reader_free(&again);
	}
	pfree(frame.data);
	pfree(back.payload.data);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ZsWsReader	whole,
				chunked;
	ZsWsMessage m;
	StringInfoData log_whole,
				log_chunked;
	ZsWsReadResult res;
	bool		require_mask;
	uint64		limit;
	uint32_t	seed;
	const char *stream;
	int			len;
	int			pos;
	int			messages_len;
	bool		tried_key = false;

	if (size < 1)
		return 0;
	require_mask = (data[0] & 1) != 0;
	limit = limits[(data[0] >> 1) & 3];
	seed = data[0] >> 3;
	stream = (const char *) data + 1;
	len = (int) size - 1;

	initStringInfo(&m.payload);
	initStringInfo(&log_whole);
	initStringInfo(&log_chunked);

	/* all at once */
	zs_ws_reader_init(&whole, require_mask, limit);
	zs_ws_reader_feed(&whole, stream, len);
	while ((res = zs_ws_reader_next(&whole, &m)) == ZS_WS_MESSAGE)
	{
		check_message(&whole, &m);
		check_reencode(&whole, &m);
		if (m.opcode == ZS_WS_OP_TEXT && !tried_key && m.payload.len <= 64)
		{
			char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];

			if (zs_ws_accept_key(m.payload.data, accept))
				FUZZ_CHECK(strlen(accept) == ZS_WS_ACCEPT_KEY_LEN, "accept key length");
			tried_key = true;
		}
		log_result(&log_whole, &whole, res, &m);
	}
	if (res == ZS_WS_ERROR)
		FUZZ_CHECK(whole.error != NULL && whole.error_code >= 1000, "an error has a close code");
	messages_len = log_whole.len;
	log_result(&log_whole, &whole, res, &m);

	/*
	 * Whole frames, no message left unfinished: the same bytes over and over,
	 * beyond the 64 kB after which zs_ws_reader_feed moves unread bytes to
	 * the front of its buffer, must give the same messages over and over.
	 */
	if (res == ZS_WS_NEED_MORE && whole.fragment_opcode == 0 && whole.input_pos >= 256 &&
		(seed & 15) == 0)
	{
		int			unit = whole.input_pos;
		int			times = 70000 / unit + 1;
		StringInfoData repeated,
					expected,
					got;
		ZsWsReader	r;

		initStringInfo(&repeated);
		initStringInfo(&expected);
		initStringInfo(&got);
		for (int i = 0; i < times; i++)
		{
			appendBinaryStringInfo(&repeated, stream, unit);
			appendBinaryStringInfo(&expected, log_whole.data, messages_len);
		}
		zs_ws_reader_init(&r, require_mask, limit);
		for (pos = 0; pos < repeated.len;)
		{
			int			n = 1 + (int) (fuzz_next(&seed) % 3000);

			if (n > repeated.len - pos)
				n = repeated.len - pos;
			zs_ws_reader_feed(&r, repeated.data + pos, n);
			pos += n;
			while ((res = zs_ws_reader_next(&r, &m)) == ZS_WS_MESSAGE)
				log_result(&got, &r, res, &m);
			FUZZ_CHECK(res == ZS_WS_NEED_MORE, "repeated whole frames read without error");
		}
		FUZZ_CHECK(got.len == expected.len && memcmp(got.data, expected.data, got.len) == 0,
				   "repeated frames give repeated messages");
		zs_ws_reader_free(&r);
		pfree(repeated.data);
		pfree(expected.data);
		pfree(got.data);
	}

	/* in chunks, reading after each, stopping at an error as a server does */
	zs_ws_reader_init(&chunked, require_mask, limit);
	res = ZS_WS_NEED_MORE;
	pos = 0;
	while (pos < len && res != ZS_WS_ERROR)
	{
		int			n = 1 + (int) (fuzz_next(&seed) % 24);

		if (n > len - pos)
			n = len - pos;
		zs_ws_reader_feed(&chunked, stream + pos, n);
		pos += n;
		while ((res = zs_ws_reader_next(&chunked, &m)) == ZS_WS_MESSAGE)
			log_result(&log_chunked, &chunked, res, &m);
	}
	if (len == 0)
		res = zs_ws_reader_next(&chunked, &m);
	log_result(&log_chunked, &chunked, res, &m);
	FUZZ_CHECK(log_whole.len == log_chunked.len &&
			   memcmp(log_whole.data, log_chunked.data, log_whole.len) == 0,
			   "reading in chunks gives what reading all at once gives");

	zs_ws_reader_free(&whole);
	zs_ws_reader_free(&chunked);
	pfree(m.payload.data);
	pfree(log_whole.data);
	pfree(log_chunked.data);
	return 0;
}
