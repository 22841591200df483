/*-------------------------------------------------------------------------
 * changelog.h
 *	  The Zero-compatible change log in "<app>_<shard>/cdc" (docs/zero-protocol.md
 *	  §6): schema set-up, lineage (replicaVersion), ownership, and the batched
 *	  writer. Every function runs inside the caller's transaction with SPI
 *	  connected.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_H
#define ZS_CHANGELOG_H

#include "access/skey.h"
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "codec/watermark.h"
#include "compat/noreturn.h"

/* Create the schema and tables if missing; check an existing schema's version. */
extern void zs_changelog_ensure_schema(void);

/* replicationConfig.replicaVersion, or false if the log was never initialized. */
extern bool zs_changelog_read_replica_version(char *replica_version);

/*
 * Start a new lineage: empty the log, write config, state and seed
 * transaction. A log another change streamer has taken over is an ERROR,
 * unless take_over (an explicit resync).
 */
extern void zs_changelog_initialize(const char *replica_version, List *publications,
									bool take_over);

/*
 * Take ownership: replicationState.owner = zs_owner_identity(), and
 * ownerAddress = where view-syncers in discover mode reach our server
 * (NULL if it does not run). Only from no owner or from this cluster's
 * decoder (zs_owner_is_this_decoder): a log another change streamer has
 * taken over is an ERROR (zs_changelog_report_taken_over).
 */
extern void zs_changelog_claim_ownership(const char *address);

/*
 * Has another change streamer taken the log over? *owner: the owner, or
 * NULL; the state row stays locked until the transaction ends.
 */
extern bool zs_changelog_taken_over(char **owner);

/* replicationState.lastWatermark */
extern void zs_changelog_read_head(char *last_watermark);

/*
 * A schema-change row (create-table, add-column, ...): stored on its own,
 * after the rows added before it, with zero-cache's tableMetadata and
 * backfilling bookkeeping in the same transaction.
 */
extern void zs_changelog_add_schema(const char *watermark, int64 pos,
									const char *change, int change_len);

/*
 * The unfinished backfills (the "backfilling" rows with their table's
 * metadata), one zero BackfillRequest JSON text per table:
 * {"table":{"schema","name","metadata"},"columns":{"col":BackfillID,...}}.
 */
extern List *zs_changelog_read_backfill_requests(void);

/* The published schema the log's head was written with (NULL if unknown). */
extern char *zs_changelog_read_published_schema(void);
extern void zs_changelog_write_published_schema(const char *snapshot);

/*
 * A page of the committed change log after a (watermark, pos) key, with each
 * row's wire message built once, to be shared by every subscriber at that
 * position.
 */
typedef struct ZsChangeLogRow
{
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	bool		is_commit;
	char	   *message;		/* ["begin"|"data"|"commit"|"rollback", ...] */
	int			message_len;
} ZsChangeLogRow;

typedef struct ZsChangeLogPage
{
	char		after_watermark[ZS_WATERMARK_MAXLEN];
	int64		after_pos;
	bool		full;			/* more rows may follow */
	int			nrows;
	ZsChangeLogRow  *rows;
	char	   *error;			/* the page ends at a chunk that cannot be read: why */
} ZsChangeLogPage;

/* A page's row: its key, and its wire message built once from the change. */
extern void zs_changelog_row_set(ZsChangeLogRow *row, const char *watermark, int64 pos,
								 const char *change, int change_len);

/*
 * Read a page of at most limit committed rows after (after_watermark,
 * after_pos), up to the head published in shared memory (upto; NULL: all
 * committed rows). A row is committed a moment before its head is
 * published, and a backfill's rows on a failover slot only become readable
 * once the standbys have them (backfill.c): a reader stops at the head.
 */
extern ZsChangeLogPage *zs_changelog_read_page(const char *after_watermark, int64 after_pos,
											   int limit, const char *upto);

/*
 * The same page, row by row, as it is read: no wire message is built and
 * nothing is copied (the replicator applies the stored changes
 * themselves). change points into the current chunk's decompressed rows,
 * which last until the next chunk is read, or scan_end. A chunk that
 * cannot be read ends the scan with error set (naming it); nothing after
 * it is read.
 */
typedef struct ZsChangeLogScan
{
	struct ZsChangeLogKeyScan *key_scan;	/* through the chunks' primary key */
	char	   *error;			/* why the scan ended early, or NULL */
	uint64		next;
	int			limit;
	bool		full;			/* the page reached its limit (known at its end) */
	char		upto[ZS_WATERMARK_MAXLEN];	/* no row after this one; "" for all */
	/* the current row */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	const char *change;
	int			change_len;
} ZsChangeLogScan;

extern void zs_changelog_scan_begin(ZsChangeLogScan *scan, const char *after_watermark,
									int64 after_pos, int limit, const char *upto);
extern bool zs_changelog_scan_next(ZsChangeLogScan *scan);
extern void zs_changelog_scan_end(ZsChangeLogScan *scan);

/* The oldest watermark in the log ("" if it is empty). */
extern void zs_changelog_read_floor(char *floor);

/*
 * changeLogChunks opened (heap with lockmode, its primary key with
 * AccessShareLock); false (nothing open) if it does not exist, as in a
 * change log of rows not converted yet. A table that lacks the shape
 * changelog.c creates (a plain table without children whose key is the
 * btree on (watermark text, pos int8), with the chunk columns) is an
 * ERROR. Close the index with index_close(NoLock) and the heap with
 * table_close(NoLock).
 */
typedef struct ZsChangeLogKeyed
{
	Relation	heap;
	Relation	index;
	AttrNumber	watermark_att;	/* the chunk's last row */
	AttrNumber	pos_att;
	AttrNumber	first_watermark_att;	/* its first row's */
	AttrNumber	rows_att;
	AttrNumber	chunk_att;
} ZsChangeLogKeyed;

extern bool zs_changelog_open_keyed(LOCKMODE lockmode, ZsChangeLogKeyed *keyed);

/* The scan key of the primary key's column (0-based) by strategy with arg. */
extern void zs_changelog_key_init(ScanKey key, Relation index, int column,
								  StrategyNumber strategy, Datum arg);

/* Whether a row at this watermark with a pos at most pos is stored. */
extern bool zs_changelog_holds_position(const char *watermark, int64 pos);

#endif							/* ZS_CHANGELOG_H */
