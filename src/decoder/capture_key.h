/*-------------------------------------------------------------------------
 * capture_key.h
 *	  The key of the DDL capture's signatures, as the stream sees it (see
 *	  capture_key.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CAPTURE_KEY_H
#define ZS_CAPTURE_KEY_H

#include "decoding/capture_message.h"

typedef enum ZsCaptureKeyState
{
	ZS_CAPTURE_KEY_FOUND,
	ZS_CAPTURE_KEY_NO_TABLE,	/* SQL before 0.5.1: messages are unsigned */
	ZS_CAPTURE_KEY_MISSING		/* the table holds no valid key */
} ZsCaptureKeyState;

/*
 * Read zero_stream.capture_key on the catalog snapshot of the transaction
 * being decoded, into key when found. Only inside the reorder buffer's
 * replay (decoder/stage.c).
 */
extern ZsCaptureKeyState zs_capture_key_read(uint8 key[ZS_CAPTURE_KEY_LEN]);

#endif							/* ZS_CAPTURE_KEY_H */
