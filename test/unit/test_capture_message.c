/*
 * Unit tests for the envelope that authenticates the DDL capture's
 * messages (decoding/capture_message.c): envelopes signed as
 * emit_capture_message() signs them open to their content, with vectors
 * computed apart (Python's hmac module); a changed byte anywhere (content,
 * signature, prefix, transaction, key), an unsigned message, a truncated
 * or malformed envelope are refused and never read out of bounds.
 */
#include "postgres_fe.h"

#include "decoding/capture_message.h"
#include "unit.h"

static uint8 key[ZS_CAPTURE_KEY_LEN];

#define DDL_CONTENT "{\"tag\":\"CREATE TABLE\",\"schema\":{}}"
/* HMAC-SHA256(key 00..1f, "zero_stream/ddl\0" "1234\0" DDL_CONTENT "\0") */
#define DDL_MAC "93db11e70a4b1f2cda19ef9dd53dfc36ca2c4b06e70e14d7004551a599f7cffc"
/* HMAC-SHA256(key 00..1f, "zero_stream/rows\0" "4294967295\0" "\0") */
#define EMPTY_MAC "394303ce6e5578a5449bf75f8da23a3cad30c69379a2d714e9d252cb89905dd3"

static const char *const ddl_envelope =
"{\"mac\":\"" DDL_MAC "\",\"message\":" DDL_CONTENT "}";

/* Open a copy of exactly len bytes (so that a read past them is caught) */
static const char *
open_copy(const char *prefix, uint32 xid, const char *content, int len,
		  const char **message, int *message_len, char **copy)
{
	*copy = malloc(len > 0 ? len : 1);
	memcpy(*copy, content, len);
	return zs_capture_message_open(prefix, xid, *copy, len, key, message, message_len);
}

static void
test_signed(void)
{
	const char *message;
	int			message_len;
	char	   *copy;
	const char *error;

	error = open_copy("zero_stream/ddl", 1234, ddl_envelope, strlen(ddl_envelope),
					  &message, &message_len, &copy);
	CHECK(error == NULL, "a signed message opens: %s", error ? error : "");
	CHECK(message == copy + strlen("{\"mac\":\"" DDL_MAC "\",\"message\":"),
		  "the content points into the envelope");
	CHECK(message_len == (int) strlen(DDL_CONTENT) &&
		  memcmp(message, DDL_CONTENT, message_len) == 0, "the content is the capture's");
	free(copy);

	/* empty content, the largest xid */
	error = open_copy("zero_stream/rows", 4294967295u,
					  "{\"mac\":\"" EMPTY_MAC "\",\"message\":}",
					  strlen("{\"mac\":\"" EMPTY_MAC "\",\"message\":}"),
					  &message, &message_len, &copy);
	CHECK(error == NULL && message_len == 0, "an empty content opens: %s", error ? error : "");
	free(copy);
}

static void
test_forged(void)
{
	const char *message;
	int			message_len;
	char	   *copy;
	const char *error;
	int			len = strlen(ddl_envelope);
	char	   *changed = strdup(ddl_envelope);
	const char *mac_at = strstr(ddl_envelope, DDL_MAC);

	/* another transaction: a replay */
	error = open_copy("zero_stream/ddl", 1235, ddl_envelope, len, &message, &message_len, &copy);
	CHECK(error != NULL && strncmp(error, "Its signature does not verify", 29) == 0 && message == NULL,
		  "replayed in another transaction: %s", error ? error : "accepted");
	free(copy);

	/* another prefix: passed for another kind */
	error = open_copy("zero_stream/rows", 1234, ddl_envelope, len, &message, &message_len, &copy);
	CHECK(error != NULL && message == NULL, "under another prefix: refused");
	free(copy);

	/* another key */
	key[7] ^= 1;
	error = open_copy("zero_stream/ddl", 1234, ddl_envelope, len, &message, &message_len, &copy);
	CHECK(error != NULL && message == NULL, "under another key: refused");
	free(copy);
	key[7] ^= 1;

	/* each byte of the signature and of the content changed in turn */
	for (int i = (int) (mac_at - ddl_envelope); i < len - 1; i++)
	{
		if (changed[i] == '"' || changed[i] == ',' || changed[i] == ':')
			continue;
		changed[i] ^= 1;
		error = open_copy("zero_stream/ddl", 1234, changed, len, &message, &message_len, &copy);
		CHECK(error != NULL && message == NULL, "byte %d changed: refused", i);
		free(copy);
		changed[i] ^= 1;
	}
	/* upper-case hex is not what the capture writes */
	for (int i = 0; i < 64; i++)
		changed[mac_at - ddl_envelope + i] = toupper((unsigned char) DDL_MAC[i]);
	error = open_copy("zero_stream/ddl", 1234, changed, len, &message, &message_len, &copy);
	CHECK(error != NULL, "upper-case hex: refused");
	free(copy);
	free(changed);
}

static void
test_malformed(void)
{
	const char *message;
	int			message_len;
	char	   *copy;
	const char *error;
	int			len = strlen(ddl_envelope);
	static const char *const bad[] = {
		"",
		"{",
		DDL_CONTENT,			/* unsigned, as before 0.5.1 */
		"{\"mac\":\"\",\"message\":{}}",
		"{\"mac\":\"" DDL_MAC "\",\"message\":",	/* no closing brace */
		"{\"mac\":\"" DDL_MAC "\" ,\"message\":{}}",
		"{\"mac\":\"" DDL_MAC "\",\"content\":{}}",
		"{\"mac\": \"" DDL_MAC "\",\"message\":{}}",
		"{\"mac\":\"" DDL_MAC "0\",\"message\":{}}",
	};

	for (int i = 0; i < lengthof(bad); i++)
	{
		error = open_copy("zero_stream/ddl", 1234, bad[i], strlen(bad[i]),
						  &message, &message_len, &copy);
		CHECK(error != NULL && message == NULL && message_len == 0,
			  "malformed envelope %d refused", i);
		free(copy);
	}
	CHECK(strcmp(zs_capture_message_open("p", 1, DDL_CONTENT, strlen(DDL_CONTENT), key,
										 &message, &message_len), "It is not signed") == 0,
		  "an unsigned message is said to be so");

	/* every truncation of a good envelope */
	for (int cut = 0; cut < len; cut++)
	{
		error = open_copy("zero_stream/ddl", 1234, ddl_envelope, cut, &message, &message_len, &copy);
		CHECK(error != NULL && message == NULL, "truncated to %d: refused", cut);
		free(copy);
	}
}

int
main(void)
{
	for (int i = 0; i < ZS_CAPTURE_KEY_LEN; i++)
		key[i] = (uint8) i;
	test_signed();
	test_forged();
	test_malformed();
	return unit_report("test_capture_message");
}
