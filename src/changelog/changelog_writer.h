/*-------------------------------------------------------------------------
 * changelog_writer.h
 *	  The change log's writer (see changelog_writer.c): the decoder's
 *	  stores (zs_changelog_begin, zs_changelog_add, zs_changelog_finish),
 *	  and chunks written on their own (changelog.c's seed transaction and
 *	  its conversion of a log of rows). Every function runs inside the
 *	  caller's transaction with SPI connected.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_WRITER_H
#define ZS_CHANGELOG_WRITER_H

#include "compat/noreturn.h"

/* ERROR: owner (NULL: nobody) has taken the log over; this decoder stops writing it. */
extern void zs_changelog_report_taken_over(const char *owner) zs_noreturn;

/*
 * The writer of one local transaction. zs_changelog_begin locks the
 * state row and verifies that we still own the log.
 */
extern void zs_changelog_begin(void);

/*
 * ERROR unless the installed SQL objects are of a version this library
 * writes the change log for (extension_version.c); in a transaction.
 * zs_changelog_begin checks it at every store.
 */
extern void zs_changelog_check_sql_version(void);
extern void zs_changelog_add(const char *watermark, int64 pos,
							 const char *change, int change_len, bool is_commit);
extern void zs_changelog_finish(const char *last_watermark);

/*
 * The key of the log's last row: as read at start (zs_changelog_read_last_row),
 * then the last this process wrote (by the writer or as a lineage's seed);
 * false if none is known.
 */
extern bool zs_changelog_last_row(char *watermark, int64 *pos);

/* Read the key of the log's last row (at start, in a transaction). */
extern void zs_changelog_read_last_row(void);


/* In a transaction with SPI connected: nothing gathered, the table opened. */
extern void zs_changelog_writer_open(void);

/*
 * A row into the current chunk (precommit NULL for none). The chunk is
 * written first if the row would take it past changelog_chunk_size, and
 * after it if the row alone fills it; true if a chunk was written.
 */
extern bool zs_changelog_writer_add(const char *watermark, int64 pos, const char *change,
									int change_len, const char *precommit);

/* Before the transaction commits: the last chunk written (true if any), the table closed. */
extern bool zs_changelog_writer_close(void);

#endif							/* ZS_CHANGELOG_WRITER_H */
