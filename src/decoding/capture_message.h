/*-------------------------------------------------------------------------
 * capture_message.h
 *	  The envelope that authenticates the DDL capture's logical messages
 *	  (see capture_message.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CAPTURE_MESSAGE_H
#define ZS_CAPTURE_MESSAGE_H

#include "common/sha2.h"

/* The key's length: capture_key holds 32 bytes */
#define ZS_CAPTURE_KEY_LEN 32

/*
 * Open the envelope of message content (len bytes) with prefix, written in
 * the transaction xid (the top-level one), under key. On success *message
 * and *message_len are the content the capture wrote (pointing into
 * content) and NULL is returned; otherwise what is wrong with it, as an
 * error detail: not signed, malformed, or a signature that does not verify
 * (a message that the capture did not write in this transaction).
 */
extern const char *zs_capture_message_open(const char *prefix, uint32 xid,
										   const char *content, int len,
										   const uint8 *key,
										   const char **message, int *message_len);

#endif							/* ZS_CAPTURE_MESSAGE_H */
