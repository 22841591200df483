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

#include "codec/watermark.h"

typedef struct ZsSpoolRecord
{
	char		watermark[ZS_LSN_WATERMARK_MAXLEN];
	int64		pos;
	uint32		len;
	bool		is_commit;
	bool		is_schema;		/* a schema change (create-table, add-column, ...) */
} ZsSpoolRecord;

typedef struct ZsSpool ZsSpool;

extern ZsSpool *zs_spool_create(MemoryContext context, Size memory_limit);
extern void zs_spool_append(ZsSpool *spool, const ZsSpoolRecord *header, const char *data);
/* records beyond memory_limit bytes go to the file (from the next append on) */
extern void zs_spool_set_memory_limit(ZsSpool *spool, Size memory_limit);
extern Size zs_spool_bytes(ZsSpool *spool);
extern void zs_spool_start_read(ZsSpool *spool);
extern bool zs_spool_read(ZsSpool *spool, ZsSpoolRecord *header, StringInfo data);
extern void zs_spool_clear(ZsSpool *spool);

#endif							/* ZS_SPOOL_H */
