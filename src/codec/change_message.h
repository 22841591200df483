/*-------------------------------------------------------------------------
 * change_message.h
 *	  Rebuild a wire message from a stored change-log row (docs/zero-protocol.md
 *	  §3.6): the change text is stored verbatim, the message is built around
 *	  it by concatenation, byte for byte what zero-cache sends.
 *
 * Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGE_MESSAGE_H
#define ZS_CHANGE_MESSAGE_H

#include "lib/stringinfo.h"

typedef enum ZsMessageType
{
	ZS_MSG_BEGIN,
	ZS_MSG_DATA,
	ZS_MSG_COMMIT,
	ZS_MSG_ROLLBACK
} ZsMessageType;

/*
 * The message type of a stored change, from its leading "tag" (every change
 * Zero stores begins with it).
 */
extern ZsMessageType zs_change_message_type(const char *change, int len);

/* Append ["begin",<change>,{"commitWatermark":w}], ["data",<change>], ... */
extern ZsMessageType zs_change_message_append(StringInfo out, const char *watermark,
											  const char *change, int len);

#endif							/* ZS_CHANGE_MESSAGE_H */
