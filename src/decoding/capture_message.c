/*-------------------------------------------------------------------------
 * capture_message.c
 *	  The envelope that authenticates the DDL capture's logical messages.
 *
 * Any role that can call pg_logical_emit_message (PUBLIC, by default) can
 * write a message with any prefix into the WAL. The capture's messages
 * ("zero_stream/ddl", "zero_stream/rows") change what every replica holds,
 * so the capture signs them (emit_capture_message() in the extension's SQL)
 * and the decoder takes only those that verify:
 *
 *	 {"mac":"<64 hex digits>","message":<content>}
 *
 * exactly so (no space), where mac is the HMAC-SHA256 under capture_key (a
 * table only the extension's owner reads) of
 *
 *	 prefix NUL xid NUL content NUL
 *
 * with xid the top-level transaction's id in decimal. The prefix keeps a
 * message from passing for another kind; the xid keeps one from being
 * replayed in another transaction by whoever read it from the WAL (until
 * the 32-bit transaction id wraps around, 2^32 transactions later). Compiles
 * as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "common/hmac.h"
#include "decoding/capture_message.h"

#define ENVELOPE_HEAD "{\"mac\":\""
#define ENVELOPE_MIDDLE "\",\"message\":"
#define ENVELOPE_TAIL "}"
#define MAC_HEX_LEN (PG_SHA256_DIGEST_LENGTH * 2)

/* The envelope's length around a message */
#define ENVELOPE_LEN (sizeof(ENVELOPE_HEAD) - 1 + MAC_HEX_LEN + \
					  sizeof(ENVELOPE_MIDDLE) - 1 + sizeof(ENVELOPE_TAIL) - 1)

/* The signature of message; false if the HMAC cannot be computed */
static bool
capture_mac(const char *prefix, uint32 xid, const char *message, int message_len,
			const uint8 *key, uint8 mac[PG_SHA256_DIGEST_LENGTH])
{
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);
	char		xid_text[16];
	const uint8 zero = 0;
	bool		ok;

	if (ctx == NULL)
		return false;
	snprintf(xid_text, sizeof(xid_text), "%u", xid);
	ok = pg_hmac_init(ctx, key, ZS_CAPTURE_KEY_LEN) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) prefix, strlen(prefix)) == 0 &&
		pg_hmac_update(ctx, &zero, 1) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) xid_text, strlen(xid_text)) == 0 &&
		pg_hmac_update(ctx, &zero, 1) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) message, message_len) == 0 &&
		pg_hmac_update(ctx, &zero, 1) == 0 &&
		pg_hmac_final(ctx, mac, PG_SHA256_DIGEST_LENGTH) == 0;
	pg_hmac_free(ctx);
	return ok;
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

const char *
zs_capture_message_open(const char *prefix, uint32 xid, const char *content, int len,
						const uint8 *key, const char **message, int *message_len)
{
	const char *hex = content + sizeof(ENVELOPE_HEAD) - 1;
	uint8		expected[PG_SHA256_DIGEST_LENGTH];
	uint8		differ = 0;

	*message = NULL;
	*message_len = 0;
	if (len < (int) ENVELOPE_LEN ||
		memcmp(content, ENVELOPE_HEAD, sizeof(ENVELOPE_HEAD) - 1) != 0)
		return "It is not signed";
	if (memcmp(hex + MAC_HEX_LEN, ENVELOPE_MIDDLE, sizeof(ENVELOPE_MIDDLE) - 1) != 0 ||
		content[len - 1] != ENVELOPE_TAIL[0])
		return "Its envelope is malformed";
	*message = hex + MAC_HEX_LEN + sizeof(ENVELOPE_MIDDLE) - 1;
	*message_len = len - (int) ENVELOPE_LEN;
	if (!capture_mac(prefix, xid, *message, *message_len, key, expected))
	{
		*message = NULL;
		*message_len = 0;
		return "Its HMAC cannot be computed";
	}
	/* every byte compared, whatever differs first */
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
	{
		int			high = hex_digit(hex[2 * i]);
		int			low = hex_digit(hex[2 * i + 1]);

		if (high < 0 || low < 0)
			differ = 1;
		else
			differ |= ((uint8) (high << 4 | low)) ^ expected[i];
	}
	if (differ != 0)
	{
		*message = NULL;
		*message_len = 0;
		return "Its signature does not verify: another key, another transaction or another prefix signed it";
	}
	return NULL;
}
