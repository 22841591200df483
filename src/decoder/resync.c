/*-------------------------------------------------------------------------
 * resync.c
 *	  Why the decoder starts a new lineage: zero_stream.resync() asked for
 *	  one, or a failure made the change log impossible to continue.
 *
 * A request waits in shared memory (ZsSharedState.resync_cause) until the
 * decoder takes it: in its loop, at its start, or while it waits for a
 * change log another streamer has taken over (only resync() ends that
 * wait). The failure that asks for one here is a streamed publication
 * that was dropped: pgoutput looks each publication up at each change's
 * historic snapshot, and a publication created again later is another
 * one, so decoding can never get past the change (15 to 17 stop with an
 * error; 18's pgoutput skips the publication with a WARNING, and its
 * tables would silently stop reaching the change log). Only a new lineage
 * gets past it. The publication is recognised by a catalog lookup, never
 * by the text of an error message (which lc_messages translates).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_publication.h"	/* get_publication_oid on 15 */
#include "commands/publicationcmds.h"
#include "utils/lsyscache.h"	/* get_publication_oid on 17+ */
#include "utils/memutils.h"

#include "decoder/resync.h"
#include "guc.h"

ZsResyncCause
zs_resync_take(char *reason)
{
	ZsResyncCause cause;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	cause = zs_shared->resync_cause;
	if (cause == ZS_RESYNC_FAILURE)
		strlcpy(reason, zs_shared->reset_reason, ZS_ERROR_LEN);
	else
		reason[0] = '\0';
	zs_shared->resync_cause = ZS_RESYNC_NONE;
	zs_shared->reset_reason[0] = '\0';
	LWLockRelease(zs_shared->lock);
	return cause;
}

void
zs_resync_report(ZsResyncCause cause, const char *reason, const char *replica_version)
{
	if (cause != ZS_RESYNC_FAILURE)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s; change log %s of replicaVersion %s cannot continue and a new lineage is started",
					reason, zs_cdc_schema_name(), replica_version),
			 errdetail("Changes of the published tables made while the publication did not exist were never published."),
			 errhint("Subscribers of replicaVersion %s are told WrongReplicaVersion and restore from the new backup replica. "
					 "Do not drop a publication zero_stream streams; change zero_stream.publications instead.",
					 replica_version)));
	zs_set_last_reset(psprintf("%s: change log of replicaVersion %s could not continue; a new lineage was started",
							   reason, replica_version));
}

/*
 * The first publication of the list that does not exist (in
 * TopMemoryContext), or NULL; in a transaction of its own.
 */
static char *
missing_publication(List *publications)
{
	char	   *missing = NULL;
	ListCell   *lc;

	StartTransactionCommand();
	foreach(lc, publications)
	{
		const char *name = (const char *) lfirst(lc);

		if (!OidIsValid(get_publication_oid(name, true)))
		{
			missing = MemoryContextStrdup(TopMemoryContext, name);
			break;
		}
	}
	CommitTransactionCommand();
	return missing;
}

void
zs_resync_after_decoding_error(MemoryContext context, List *publications, XLogRecPtr lsn)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(context);
	bool		undefined;
	char	   *missing;

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	undefined = edata->sqlerrcode == ERRCODE_UNDEFINED_OBJECT;
	FreeErrorData(edata);
	if (!undefined)
		return;
	/* the failed replay's transaction is done with; the catalog is read in a new one */
	AbortOutOfAnyTransaction();
	missing = missing_publication(publications);
	if (missing != NULL)
		zs_request_reset(psprintf("publication \"%s\" does not exist at %X/%X, where decoding stopped",
								  missing, LSN_FORMAT_ARGS(lsn)));
}

void
zs_resync_check_publications(List *publications, XLogRecPtr lsn)
{
	char	   *missing = missing_publication(publications);

	if (missing == NULL)
		return;
	zs_request_reset(psprintf("publication \"%s\" does not exist at %X/%X, where decoding stopped",
							  missing, LSN_FORMAT_ARGS(lsn)));
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("publication \"%s\" does not exist", missing),
			 errdetail("The decoder streams it (zero_stream.stream_publications()); its tables no longer reach the change log."),
			 errhint("The decoder starts a new lineage; create the publication again if it is not zero_stream's default.")));
}
