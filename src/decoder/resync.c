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
 * gets past it. The decoding error is recognised by its error code and its
 * message's untranslated format (edata->message_id), never by the text
 * lc_messages translates, and without a catalog lookup: the publication
 * may exist again in the present catalog (created again, or by the
 * decoder's own start-up for its default one) while the historic one that
 * pgoutput reads never has it. The check at each slot save (18's case)
 * compares the present catalog's OIDs with those of the stream's start: a
 * publication created again is another one.
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
	if (replica_version == NULL)
		replica_version = "(none)";
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

List *
zs_resync_publication_oids(List *publications)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	List	   *oids = NIL;
	ListCell   *lc;

	foreach(lc, publications)
		oids = lappend_oid(oids, get_publication_oid((const char *) lfirst(lc), true));
	MemoryContextSwitchTo(old);
	return oids;
}

/*
 * The first publication of the list whose OID is not the one recorded
 * (missing, or dropped and created again: another publication), or NULL;
 * *missing says which. In a transaction of its own.
 */
static const char *
changed_publication(List *publications, List *oids, bool *missing)
{
	const char *changed = NULL;
	ListCell   *name;
	ListCell   *oid;

	StartTransactionCommand();
	forboth(name, publications, oid, oids)
	{
		Oid			now = get_publication_oid((const char *) lfirst(name), true);

		if (now != lfirst_oid(oid))
		{
			changed = (const char *) lfirst(name);
			*missing = !OidIsValid(now);
			break;
		}
	}
	CommitTransactionCommand();
	return changed;
}

/*
 * The message of PostgreSQL's error for a publication it cannot find, as
 * errmsg() received it (edata->message_id: before translation, whatever
 * lc_messages is).
 */
#define ZS_MISSING_PUBLICATION_MESSAGE "publication \"%s\" does not exist"

void
zs_resync_after_decoding_error(MemoryContext context, List *publications, XLogRecPtr lsn)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(context);
	const char *name = NULL;
	ListCell   *lc;

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	if (edata->sqlerrcode != ERRCODE_UNDEFINED_OBJECT || edata->message_id == NULL ||
		strcmp(edata->message_id, ZS_MISSING_PUBLICATION_MESSAGE) != 0)
	{
		FreeErrorData(edata);
		return;
	}
	/* which of the stream's: the one the message, as translated, names */
	foreach(lc, publications)
	{
		char	   *expected = psprintf(_(ZS_MISSING_PUBLICATION_MESSAGE),
										(const char *) lfirst(lc));

		if (edata->message != NULL && strcmp(edata->message, expected) == 0)
			name = (const char *) lfirst(lc);
		pfree(expected);
		if (name != NULL)
			break;
	}
	/* not in the present catalog: pgoutput looked at the change's historic one */
	if (name != NULL)
		zs_request_reset(psprintf("publication \"%s\" does not exist at %X/%X, where decoding stopped",
								  name, LSN_FORMAT_ARGS(lsn)));
	else
		zs_request_reset(psprintf("a publication of the stream does not exist at %X/%X, where decoding stopped",
								  LSN_FORMAT_ARGS(lsn)));
	FreeErrorData(edata);
}

void
zs_resync_check_publications(List *publications, List *oids, XLogRecPtr lsn)
{
	bool		missing = false;
	const char *name = changed_publication(publications, oids, &missing);

	if (name == NULL)
		return;
	if (missing)
	{
		zs_request_reset(psprintf("publication \"%s\" does not exist at %X/%X, where decoding stopped",
								  name, LSN_FORMAT_ARGS(lsn)));
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("publication \"%s\" does not exist", name),
				 errdetail("The decoder streams it (zero_stream.stream_publications()); its tables no longer reach the change log."),
				 errhint("The decoder starts a new lineage; create the publication again if it is not zero_stream's default.")));
	}
	zs_request_reset(psprintf("publication \"%s\" was dropped and created again before %X/%X, where decoding stopped",
							  name, LSN_FORMAT_ARGS(lsn)));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("publication \"%s\" was dropped and created again", name),
			 errdetail("Changes of its tables made while it did not exist were not published."),
			 errhint("The decoder starts a new lineage.")));
}
