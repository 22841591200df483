/*-------------------------------------------------------------------------
 * websocket.c
 *	  RFC 6455 frame codec.
 *
 * The reader enforces what a server must: RSV bits clear (no extension is
 * negotiated), known opcodes, control frames unfragmented and at most 125
 * bytes, client frames masked, continuation frames only inside a
 * fragmented message, text messages valid UTF-8, and a size limit checked
 * against the declared length before any payload is buffered. Any
 * violation yields ZS_WS_ERROR with the close code to send.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "common/cryptohash.h"
#include "common/sha1.h"
#include "mb/pg_wchar.h"

#include "compat/base64.h"
#include "codec/websocket.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void
zs_ws_reader_init(ZsWsReader *reader, bool require_mask, uint64 max_message)
{
	memset(reader, 0, sizeof(*reader));
	reader->require_mask = require_mask;
	reader->max_message = max_message;
	initStringInfo(&reader->input);
	initStringInfo(&reader->fragments);
}

void
zs_ws_reader_free(ZsWsReader *reader)
{
	pfree(reader->input.data);
	pfree(reader->fragments.data);
}

void
zs_ws_reader_feed(ZsWsReader *reader, const char *data, int len)
{
	/* drop consumed bytes before growing the buffer */
	if (reader->input_pos > 0 && reader->input_pos == reader->input.len)
	{
		resetStringInfo(&reader->input);
		reader->input_pos = 0;
	}
	else if (reader->input_pos > 65536)
	{
		memmove(reader->input.data, reader->input.data + reader->input_pos,
				reader->input.len - reader->input_pos);
		reader->input.len -= reader->input_pos;
		reader->input.data[reader->input.len] = '\0';
		reader->input_pos = 0;
	}
	appendBinaryStringInfo(&reader->input, data, len);
}

static ZsWsReadResult
fail(ZsWsReader *reader, uint16 code, const char *error)
{
	reader->error_code = code;
	reader->error = error;
	return ZS_WS_ERROR;
}

void
zs_ws_mask(char *data, size_t len, const uint8 mask[4], uint64 offset)
{
	for (size_t i = 0; i < len; i++)
		data[i] ^= mask[(offset + i) & 3];
}

static bool
valid_utf8(const char *s, int len)
{
	return pg_encoding_verifymbstr(PG_UTF8, s, len) == len;
}

ZsWsReadResult
zs_ws_reader_next(ZsWsReader *reader, ZsWsMessage *message)
{
	for (;;)
	{
		const uint8 *p = (const uint8 *) reader->input.data + reader->input_pos;
		size_t		avail = reader->input.len - reader->input_pos;
		size_t		header = 2;
		bool		fin;
		uint8		opcode;
		bool		masked;
		uint64		len;
		uint8		mask[4] = {0, 0, 0, 0};
		char	   *payload;

		if (avail < 2)
			return ZS_WS_NEED_MORE;
		fin = (p[0] & 0x80) != 0;
		opcode = p[0] & 0x0F;
		masked = (p[1] & 0x80) != 0;
		len = p[1] & 0x7F;

		if (p[0] & 0x70)
			return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "reserved bits set without a negotiated extension");
		if (opcode != ZS_WS_OP_CONTINUATION && opcode != ZS_WS_OP_TEXT &&
			opcode != ZS_WS_OP_BINARY && opcode != ZS_WS_OP_CLOSE &&
			opcode != ZS_WS_OP_PING && opcode != ZS_WS_OP_PONG)
			return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "unknown opcode");
		if (reader->require_mask && !masked)
			return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "client frame is not masked");
		if (!reader->require_mask && masked)
			return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "server frame is masked");
		if (opcode >= ZS_WS_OP_CLOSE && (!fin || len > 125))
			return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "control frame is fragmented or longer than 125 bytes");

		if (len == 126)
		{
			if (avail < 4)
				return ZS_WS_NEED_MORE;
			len = ((uint64) p[2] << 8) | p[3];
			if (len < 126)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "frame length is not minimally encoded");
			header = 4;
		}
		else if (len == 127)
		{
			if (avail < 10)
				return ZS_WS_NEED_MORE;
			len = 0;
			for (int i = 0; i < 8; i++)
				len = (len << 8) | p[2 + i];
			if (len >> 63)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "frame length has its top bit set");
			if (len <= 0xFFFF)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "frame length is not minimally encoded");
			header = 10;
		}

		/* check sizes before waiting for (or buffering) the payload */
		if (opcode == ZS_WS_OP_CONTINUATION)
		{
			if (reader->fragment_opcode == 0)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "continuation frame without a message to continue");
			if (len > reader->max_message - reader->fragments.len)
				return fail(reader, ZS_WS_CLOSE_TOO_BIG, "message is larger than the limit");
		}
		else if (opcode < ZS_WS_OP_CLOSE)
		{
			if (reader->fragment_opcode != 0)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "new message while a fragmented one is unfinished");
			if (len > reader->max_message)
				return fail(reader, ZS_WS_CLOSE_TOO_BIG, "message is larger than the limit");
		}

		if (masked)
		{
			if (avail < header + 4)
				return ZS_WS_NEED_MORE;
			memcpy(mask, p + header, 4);
			header += 4;
		}
		if (avail < header + len)
			return ZS_WS_NEED_MORE;

		payload = (char *) p + header;
		if (masked)
			zs_ws_mask(payload, len, mask, 0);
		reader->input_pos += header + len;

		if (opcode >= ZS_WS_OP_CLOSE)
		{
			if (opcode == ZS_WS_OP_CLOSE && len == 1)
				return fail(reader, ZS_WS_CLOSE_PROTOCOL_ERROR, "close frame with a one-byte payload");
			if (opcode == ZS_WS_OP_CLOSE && len > 2 && !valid_utf8(payload + 2, (int) len - 2))
				return fail(reader, ZS_WS_CLOSE_INVALID_DATA, "close reason is not valid UTF-8");
			message->opcode = opcode;
			resetStringInfo(&message->payload);
			appendBinaryStringInfo(&message->payload, payload, (int) len);
			return ZS_WS_MESSAGE;
		}

		if (opcode != ZS_WS_OP_CONTINUATION)
		{
			reader->fragment_opcode = opcode;
			resetStringInfo(&reader->fragments);
		}
		appendBinaryStringInfo(&reader->fragments, payload, (int) len);
		if (!fin)
			continue;

		message->opcode = reader->fragment_opcode;
		reader->fragment_opcode = 0;
		if (message->opcode == ZS_WS_OP_TEXT &&
			!valid_utf8(reader->fragments.data, reader->fragments.len))
			return fail(reader, ZS_WS_CLOSE_INVALID_DATA, "text message is not valid UTF-8");
		resetStringInfo(&message->payload);
		appendBinaryStringInfo(&message->payload, reader->fragments.data, reader->fragments.len);
		resetStringInfo(&reader->fragments);
		return ZS_WS_MESSAGE;
	}
}

void
zs_ws_append_header(StringInfo out, bool fin, uint8 opcode, uint64 len, const uint8 *mask)
{
	uint8		h[ZS_WS_MAX_HEADER_LEN];
	int			n = 0;
	uint8		mask_bit = mask ? 0x80 : 0;

	h[n++] = (fin ? 0x80 : 0) | (opcode & 0x0F);
	if (len < 126)
		h[n++] = mask_bit | (uint8) len;
	else if (len <= 0xFFFF)
	{
		h[n++] = mask_bit | 126;
		h[n++] = (uint8) (len >> 8);
		h[n++] = (uint8) len;
	}
	else
	{
		h[n++] = mask_bit | 127;
		for (int shift = 56; shift >= 0; shift -= 8)
			h[n++] = (uint8) (len >> shift);
	}
	if (mask)
	{
		memcpy(h + n, mask, 4);
		n += 4;
	}
	appendBinaryStringInfo(out, (const char *) h, n);
}

void
zs_ws_append_frame(StringInfo out, uint8 opcode, const char *payload, int len)
{
	zs_ws_append_header(out, true, opcode, (uint64) len, NULL);
	appendBinaryStringInfo(out, payload, len);
}

void
zs_ws_append_close(StringInfo out, uint16 code, const char *reason)
{
	char		buf[2 + ZS_WS_MAX_CLOSE_REASON];
	int			len = reason ? (int) strlen(reason) : 0;

	/* truncate without splitting a UTF-8 sequence */
	if (len > ZS_WS_MAX_CLOSE_REASON)
	{
		len = ZS_WS_MAX_CLOSE_REASON;
		while (len > 0 && (((unsigned char) reason[len]) & 0xC0) == 0x80)
			len--;
	}
	if (code == ZS_WS_CLOSE_NO_STATUS)
	{
		zs_ws_append_frame(out, ZS_WS_OP_CLOSE, "", 0);
		return;
	}
	buf[0] = (char) (code >> 8);
	buf[1] = (char) code;
	if (len > 0)
		memcpy(buf + 2, reason, len);
	zs_ws_append_frame(out, ZS_WS_OP_CLOSE, buf, 2 + len);
}

bool
zs_ws_accept_key(const char *client_key, char *accept)
{
	pg_cryptohash_ctx *ctx;
	uint8		digest[SHA1_DIGEST_LENGTH];
	char		decoded[32];
	int			keylen = (int) strlen(client_key);
	int			n;
	bool		ok;

	/* the key must be the base64 form of 16 bytes */
	if (keylen != 24 || zs_b64_decode(client_key, keylen, decoded, sizeof(decoded)) != 16)
		return false;
	ctx = pg_cryptohash_create(PG_SHA1);
	ok = ctx != NULL &&
		pg_cryptohash_init(ctx) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) client_key, keylen) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) ws_guid, strlen(ws_guid)) == 0 &&
		pg_cryptohash_final(ctx, digest, sizeof(digest)) == 0;
	if (ctx != NULL)
		pg_cryptohash_free(ctx);
	if (!ok)
		return false;
	n = zs_b64_encode(digest, SHA1_DIGEST_LENGTH, accept, ZS_WS_ACCEPT_KEY_LEN + 1);
	if (n != ZS_WS_ACCEPT_KEY_LEN)
		return false;
	accept[n] = '\0';
	return true;
}
