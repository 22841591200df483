/*-------------------------------------------------------------------------
 * change_message.c
 *	  Stored change -> wire message (docs/zero-protocol.md §3.6).
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/change_message.h"

static bool
has_prefix(const char *s, int len, const char *prefix)
{
	int			n = (int) strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

ZsMessageType
zs_change_message_type(const char *change, int len)
{
	if (has_prefix(change, len, "{\"tag\":\"begin\""))
		return ZS_MSG_BEGIN;
	if (has_prefix(change, len, "{\"tag\":\"commit\""))
		return ZS_MSG_COMMIT;
	if (has_prefix(change, len, "{\"tag\":\"rollback\""))
		return ZS_MSG_ROLLBACK;
	return ZS_MSG_DATA;
}

ZsMessageType
zs_change_message_append(StringInfo out, const char *watermark, const char *change, int len)
{
	ZsMessageType type = zs_change_message_type(change, len);

	switch (type)
	{
		case ZS_MSG_BEGIN:
			appendStringInfoString(out, "[\"begin\",");
			appendBinaryStringInfo(out, change, len);
			appendStringInfo(out, ",{\"commitWatermark\":\"%s\"}]", watermark);
			break;
		case ZS_MSG_COMMIT:
			appendStringInfoString(out, "[\"commit\",");
			appendBinaryStringInfo(out, change, len);
			appendStringInfo(out, ",{\"watermark\":\"%s\"}]", watermark);
			break;
		case ZS_MSG_ROLLBACK:
			appendStringInfoString(out, "[\"rollback\",");
			appendBinaryStringInfo(out, change, len);
			appendStringInfoChar(out, ']');
			break;
		case ZS_MSG_DATA:
			appendStringInfoString(out, "[\"data\",");
			appendBinaryStringInfo(out, change, len);
			appendStringInfoChar(out, ']');
			break;
	}
	return type;
}
