/*-------------------------------------------------------------------------
 * zero_errors.h
 *	  Zero's error types: the "type" of the ["error",{"type":n,"message":...}]
 *	  message that ends a subscription (zero-cache's error-type-enum.ts,
 *	  docs/zero-protocol.md §2.4).
 *
 * The server sends them and zero-stream-replica reads them, to tell a
 * subscription that must restore from a snapshot from one that can simply
 * reconnect. The numbers are Zero's wire values. Compiles as backend or
 * frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_ZERO_ERRORS_H
#define ZS_ZERO_ERRORS_H

typedef enum ZsZeroErrorType
{
	/*
	 * Any other failure of a subscriber; zero-cache also sends its
	 * AutoResetSignal (a backup-mode subscriber behind the log) as this type.
	 */
	ZS_ERR_UNKNOWN = 0,
	/* the subscriber's replicaVersion is not the change log's */
	ZS_ERR_WRONG_REPLICA_VERSION = 1,
	/* the subscriber's watermark is older than the change log's first one */
	ZS_ERR_WATERMARK_TOO_OLD = 2,
	/* the subscriber lagged behind the stream for longer than the grace period */
	ZS_ERR_STREAM_TOO_FAR_BEHIND = 3
} ZsZeroErrorType;

#endif							/* ZS_ZERO_ERRORS_H */
