/*-------------------------------------------------------------------------
 * changelog_insert.h
 *	  Appending chunks to changeLogChunks with the table AM (see
 *	  changelog_insert.c). Used by changelog.c's writer only.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_INSERT_H
#define ZS_CHANGELOG_INSERT_H

/*
 * In the current transaction (after our own SPI_connect), open
 * changeLogChunks of the cdc schema for direct inserts. Returns false, having opened
 * nothing, if the table is not exactly the one changelog.c creates.
 */
extern bool zs_changelog_insert_open(const char *schema);

/*
 * Insert a chunk: its seven columns' datums (watermark, pos,
 * firstWatermark, firstPos, rows, size, chunk), none NULL; visible at once.
 */
extern void zs_changelog_insert_chunk(const Datum *values);

/* Before the transaction commits: flush and close what open opened. */
extern void zs_changelog_insert_close(void);

#endif							/* ZS_CHANGELOG_INSERT_H */
