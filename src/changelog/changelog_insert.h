/*-------------------------------------------------------------------------
 * changelog_insert.h
 *	  Appending rows to changeLog with the table AM's multi-insert
 *	  (see changelog_insert.c). Used by changelog.c's batched writer only.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_INSERT_H
#define ZS_CHANGELOG_INSERT_H

/*
 * In the current transaction (after our own SPI_connect), open changeLog
 * of the cdc schema for direct inserts. Returns false, having opened
 * nothing, if the table is not exactly the one changelog.c creates.
 */
extern bool zs_changelog_insert_open(const char *schema);

/* Insert n rows (text, int8, json, text-or-NULL datums); visible at once. */
extern void zs_changelog_insert_rows(int n, const Datum *watermarks, const Datum *positions,
									 const Datum *changes, const Datum *precommits,
									 const bool *precommit_nulls);

/* Before the transaction commits: flush and close what open opened. */
extern void zs_changelog_insert_close(void);

#endif							/* ZS_CHANGELOG_INSERT_H */
