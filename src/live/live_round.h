/*-------------------------------------------------------------------------
 * live_round.h
 *	  The decoder's latest round in shared memory, before it is stored, and
 *	  pages of it for live subscribers (see live_round.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LIVE_ROUND_H
#define ZS_LIVE_ROUND_H

#include "changelog/changelog.h"
#include "codec/watermark.h"

/* The decoder: no round (at start, a new lineage, a failure). */
extern void zs_live_clear(void);

/*
 * The decoder publishes a round: begin (false when zero_stream.live_buffer
 * is 0; otherwise the round is locked until end), add its rows in log
 * order while they fit (false once one does not: stop there), end (which
 * wakes the server, as zs_live_rest_publish does).
 * after_watermark/after_pos is the last row stored so far.
 */
extern bool zs_live_begin(const char *replica_version, const char *after_watermark,
						  int64 after_pos);
extern bool zs_live_add(const char *watermark, int64 pos, const char *change, int change_len);
extern void zs_live_end(void);

/*
 * A round's record, as the decoder's spool stages it; the server reads the
 * rest of a large round from the spool's file.
 */
typedef struct ZsRoundRecord
{
	char		watermark[ZS_LSN_WATERMARK_MAXLEN];
	int64		pos;
	uint32		len;			/* of the change text that follows */
	bool		is_commit;
	bool		is_schema;		/* a schema change (create-table, add-column, ...) */
} ZsRoundRecord;

/*
 * The decoder, after zs_live_end when a row did not fit: the round's other
 * rows are the rows ZsRoundRecords from offset on in the file at path (from
 * the data directory), the last with the key (last_watermark, last_pos).
 * rest_drop, once the round is stored, before the file is deleted.
 */
extern void zs_live_rest_publish(const char *path, Size offset, int64 rows,
								 const char *last_watermark, int64 last_pos);
extern void zs_live_rest_drop(void);

/*
 * The server: the key of the round's last row published (that of its
 * rest's last row once the rest is published), if it holds a round of
 * this lineage.
 */
extern bool zs_live_head(const char *replica_version, char *watermark, int64 *pos);

/*
 * The server: a page of at most limit rows of the round after
 * (after_watermark, after_pos), with each row's wire message, in the
 * current memory context; NULL if the round does not continue from there
 * (read the log instead).
 */
extern ZsChangeLogPage *zs_live_read_page(const char *replica_version, const char *after_watermark,
										  int64 after_pos, int limit);

#endif							/* ZS_LIVE_ROUND_H */
