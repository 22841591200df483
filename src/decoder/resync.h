/*-------------------------------------------------------------------------
 * resync.h
 *	  Why the decoder starts a new lineage: zero_stream.resync() asked, or
 *	  a failure made the old one impossible to continue.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_RESYNC_H
#define ZS_RESYNC_H

#include "access/xlogdefs.h"
#include "nodes/pg_list.h"

#include "shmem.h"

/*
 * Take the pending request, if any. For ZS_RESYNC_FAILURE, reason (of
 * ZS_ERROR_LEN bytes) says what failed; it is "" otherwise.
 */
extern ZsResyncCause zs_resync_take(char *reason);

/*
 * Say a failure's resync loudly, as an invalidated slot is (lineage.c): in
 * the log, with what subscribers will see, and in status(). Nothing for a
 * resync() that was asked for. replica_version: the lineage that ends,
 * NULL if the log had none.
 */
extern void zs_resync_report(ZsResyncCause cause, const char *reason,
							 const char *replica_version);

/*
 * After an error raised while decoding (in PG_CATCH, before the worker
 * exits; no catalog access): if it is pgoutput's "publication does not
 * exist", ask for a new lineage at the next start.
 */
extern void zs_resync_after_decoding_error(MemoryContext context, List *publications,
										   XLogRecPtr lsn);

/* The publications' OIDs now (InvalidOid if missing; in TopMemoryContext), in a transaction. */
extern List *zs_resync_publication_oids(List *publications);

/*
 * At each slot save: every publication of the stream still exists with the
 * OID it had at the stream's start, or an ERROR after asking for a new
 * lineage.
 */
extern void zs_resync_check_publications(List *publications, List *oids, XLogRecPtr lsn);

#endif							/* ZS_RESYNC_H */
