/*-------------------------------------------------------------------------
 * changelog_live.h
 *	  The decoder's latest round in shared memory, before it is stored, and
 *	  pages of it for live subscribers (see changelog_live.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_LIVE_H
#define ZS_CHANGELOG_LIVE_H

#include "changelog/changelog.h"

/* The decoder: no round (at start, a new lineage, a failure). */
extern void zs_live_clear(void);

/*
 * The decoder publishes a round: begin (false when zero_stream.live_buffer
 * is 0; otherwise the round is locked until end), add its rows in log
 * order while they fit (false once one does not: stop there), end.
 * after_watermark/after_pos is the last row stored so far.
 */
extern bool zs_live_begin(const char *replica_version, const char *after_watermark,
						  int64 after_pos);
extern bool zs_live_add(const char *watermark, int64 pos, const char *change, int change_len);
extern void zs_live_end(void);

/*
 * The decoder: the rest of a round larger than zero_stream.live_buffer goes
 * to a temporary file, once the round's first part is published (after
 * zs_live_end). prepare_rest sets up the decoder's file set (at start, in a
 * transaction). rest_begin returns false if the file is not to be written
 * (no live buffer, or temp_file_limit could not hold it beside a spool of
 * round_bytes); else add each further row in log order, then end. Once the
 * round is stored, rest_drop deletes its file.
 */
extern void zs_live_prepare_rest(void);
extern bool zs_live_rest_begin(Size round_bytes);
extern void zs_live_rest_add(const char *watermark, int64 pos, const char *change, int change_len);
extern void zs_live_rest_end(void);
extern void zs_live_rest_drop(void);

/*
 * The server: the key of the round's last row published so far (the rest
 * of a large round is published as it is written), if it holds one of
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

#endif							/* ZS_CHANGELOG_LIVE_H */
