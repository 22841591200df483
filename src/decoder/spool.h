/*-------------------------------------------------------------------------
 * spool.h
 *	  Staging area for encoded changes between decoding and storing.
 *
 * One upstream transaction is replayed inside a single decoding call, so a
 * huge one must not be held in RAM: records stay in memory up to a limit,
 * then go to a temporary file that survives the replay's aborted
 * transaction.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SPOOL_H
#define ZS_SPOOL_H

#include "lib/stringinfo.h"

#include "live/live_round.h"

/* the live round's record format: the server reads an exported spool's file */
typedef ZsRoundRecord ZsSpoolRecord;

typedef struct ZsSpool ZsSpool;

extern ZsSpool *zs_spool_create(MemoryContext context, Size memory_limit);
extern void zs_spool_append(ZsSpool *spool, const ZsSpoolRecord *header, const char *data);
/* records beyond memory_limit bytes go to the file (from the next append on) */
extern void zs_spool_set_memory_limit(ZsSpool *spool, Size memory_limit);
extern Size zs_spool_bytes(ZsSpool *spool);
/* records appended, and the last one's header */
extern int64 zs_spool_records(ZsSpool *spool, ZsSpoolRecord *last);
/*
 * Once every record is appended: the path (from the data directory) of the
 * file that holds them all, for other processes to read until the spool is
 * cleared; NULL if the spool is in memory.
 */
extern const char *zs_spool_file(ZsSpool *spool);
extern void zs_spool_start_read(ZsSpool *spool);
extern bool zs_spool_read(ZsSpool *spool, ZsSpoolRecord *header, StringInfo data);
/* the offset of the record the next zs_spool_read returns */
extern Size zs_spool_read_offset(ZsSpool *spool);
extern void zs_spool_clear(ZsSpool *spool);

#endif							/* ZS_SPOOL_H */
