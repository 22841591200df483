/*-------------------------------------------------------------------------
 * stream.h
 *	  What the decoder keeps between rounds of one stream: the decoding
 *	  context of its slot, the change log's head and lineage, the staged
 *	  round, and the confirmation that waits for the round's flush.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STREAM_H
#define ZS_STREAM_H

#include "nodes/pg_list.h"
#include "replication/logical.h"
#include "utils/resowner.h"

#include "backfill/backfill.h"
#include "codec/watermark.h"
#include "decoder/stage.h"
#include "purge/purge.h"

typedef struct ZsStream
{
	LogicalDecodingContext *ctx;	/* NULL between streams */
	const char *slot_name;
	List	   *publications;	/* the stream's, in TopMemoryContext */
	List	   *publication_oids;	/* theirs at the stream's start */
	char		replica_version[ZS_WATERMARK_MAXLEN];	/* the lineage */
	char		stored_head[ZS_WATERMARK_MAXLEN];	/* lastWatermark in the log */
	char		purge_gate[ZS_WATERMARK_MAXLEN];	/* the head when the stream started */
	ZsPurge		purge;			/* the change log's purge (across streams) */
	ZsBackfill	backfill;		/* the backfills the log asks for */
	ZsStage		stage;			/* the round being decoded */
	bool		decoding;		/* in a round's decoding loop */
	ResourceOwner decoding_owner;	/* the replay's resources */

	/* the slot is confirmed only once the last store's commit is flushed */
	XLogRecPtr	unflushed_store;	/* that commit's end */
	XLogRecPtr	pending_confirm;	/* where the slot is to be confirmed */
	TimestampTz pending_since;

	/*
	 * A failover slot waits for the standbys (round.c): a confirmation whose
	 * store is flushed here, until they have flushed it too.
	 */
	XLogRecPtr	standby_confirm;	/* where the slot is to be confirmed */
	XLogRecPtr	standby_store;	/* the store's commit end it waits for */
	bool		round_held;		/* the last round stopped where they had flushed */
	bool		confirm_held;	/* the last settle waited for them */
} ZsStream;

#endif							/* ZS_STREAM_H */
