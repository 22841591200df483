/*-------------------------------------------------------------------------
 * replicator_worker.c
 *	  The replicator background worker: keeps the backup replica current
 *	  from the change log.
 *
 * It is a subscriber in "backup" mode that reads committed change-log rows
 * directly (keyset pages after the replica's stateVersion), applies them
 * with the replica library, and commits each page's whole transactions in
 * one SQLite transaction. The replica's stateVersion is the backup
 * watermark, published in shared memory for status() and snapshots.
 *
 * It only applies to a replica whose replicaVersion is the change log's;
 * a replica of an older lineage waits for the decoder's initial copy to
 * replace it. Before replacing the file the decoder bumps
 * backup_generation and waits (zs_backup_file_release) until this
 * worker has closed it, so no connection ever sees the file swapped
 * under it. On any error the worker exits and restarts from the
 * replica's committed stateVersion: a transaction is applied at most once
 * because its rows and the stateVersion commit together.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "changelog/changelog.h"
#include "guc.h"
#include "replica/backup_file.h"
#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "shmem.h"
#include "spi_xact.h"

PGDLLEXPORT void zs_replicator_main(Datum main_arg);

#define REPLICATOR_PAGE_ROWS 5000
#define REPLICATOR_IDLE_MS 1000

typedef struct Replicator
{
	ZsReplica  *replica;
	char	   *path;
	uint32		generation;		/* of the open file */
	/* keyset position: the last row applied */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	ZsJsonDoc	doc;
} Replicator;

static void
set_backup_state(const char *state, const char *watermark)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->backup_state, state, sizeof(zs_shared->backup_state));
	if (watermark != NULL)
		strlcpy(zs_shared->backup_watermark, watermark, sizeof(zs_shared->backup_watermark));
	LWLockRelease(zs_shared->lock);
}

static void
close_replica(Replicator *rep)
{
	if (rep->replica != NULL)
	{
		zs_replica_close(rep->replica);
		rep->replica = NULL;
	}
}

/* Close the file if the decoder asked for it; true if it did. */
static bool
honour_release(Replicator *rep)
{
	uint32		generation = zs_backup_file_generation();

	if (generation == rep->generation)
		return false;
	close_replica(rep);
	rep->generation = generation;
	zs_backup_file_released(generation);
	set_backup_state("replaced by a new initial copy", NULL);
	return true;
}

/*
 * Open the replica if it belongs to the change log's lineage. False (with
 * the reason in backup_state) if there is nothing to follow yet.
 */
static bool
open_replica(Replicator *rep)
{
	char		log_version[ZS_WATERMARK_MAXLEN];
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		decoder_state[64];
	char		state_version[ZS_WATERMARK_MAXLEN];
	char		err[512];
	struct stat st;
	MemoryContext old;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	strlcpy(log_version, zs_shared->replica_version, sizeof(log_version));
	strlcpy(decoder_state, zs_shared->decoder_state, sizeof(decoder_state));
	rep->generation = zs_shared->backup_generation;
	LWLockRelease(zs_shared->lock);

	if (strcmp(decoder_state, "streaming") != 0 || log_version[0] == '\0')
	{
		set_backup_state("waiting for the decoder", NULL);
		return false;
	}
	if (stat(rep->path, &st) != 0)
	{
		set_backup_state("missing: the replica file does not exist; SELECT zero_stream.resync() copies it again", NULL);
		return false;
	}
	/* the handle outlives the loop's memory context */
	old = MemoryContextSwitchTo(TopMemoryContext);
	rep->replica = zs_replica_open(rep->path, 0, err, sizeof(err));
	MemoryContextSwitchTo(old);
	if (rep->replica == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("zero_stream replicator: %s", err)));
	if (!zs_replica_read_state(rep->replica, replica_version, state_version))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("zero_stream replicator: \"%s\" is not a usable replica: %s",
						rep->path, zs_replica_error(rep->replica))));
	if (strcmp(replica_version, log_version) != 0)
	{
		char	   *state = psprintf("stale: replicaVersion %s, change log %s", replica_version, log_version);

		set_backup_state(state, NULL);
		close_replica(rep);
		return false;
	}
	strlcpy(rep->watermark, state_version, sizeof(rep->watermark));
	rep->pos = PG_INT64_MAX;	/* the stateVersion transaction is applied */
	set_backup_state("following", state_version);
	ereport(LOG,
			(errmsg("zero_stream replicator: following \"%s\" from %s", rep->path, state_version)));
	return true;
}

/* Apply one page of the change log, as the server would send it; returns its size. */
static uint64
apply_page(Replicator *rep)
{
	ZsChangeLogPage	   *page;

	zs_spi_xact_begin("zero_stream: applying the change log to the backup replica");
	page = zs_changelog_read_page(rep->watermark, rep->pos, REPLICATOR_PAGE_ROWS);
	for (int i = 0; i < page->nrows; i++)
	{
		const ZsChangeLogRow *row = &page->rows[i];

		if (!zs_json_parse(&rep->doc, row->message, row->message_len))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("zero_stream replicator: change %s/" INT64_FORMAT " is not JSON: %s",
							row->watermark, row->pos, rep->doc.error)));
		if (zs_replica_apply_message(rep->replica, &rep->doc, 0) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("zero_stream replicator: could not apply change %s/" INT64_FORMAT ": %s",
							row->watermark, row->pos,
							zs_replica_error(rep->replica)[0] ? zs_replica_error(rep->replica)
							: "not a change message")));
		strlcpy(rep->watermark, row->watermark, sizeof(rep->watermark));
		rep->pos = row->pos;
	}
	zs_spi_xact_commit();

	/* whole transactions only: a page never ends inside one for long */
	if (page->nrows > 0 && !zs_replica_in_transaction(rep->replica))
	{
		if (!zs_replica_flush(rep->replica))
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("zero_stream replicator: could not commit to \"%s\": %s",
							rep->path, zs_replica_error(rep->replica))));
		LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
		strlcpy(zs_shared->backup_watermark, rep->watermark, sizeof(zs_shared->backup_watermark));
		zs_shared->backup_rows_applied = zs_replica_rows_applied(rep->replica);
		LWLockRelease(zs_shared->lock);
	}
	return page->nrows;
}

void
zs_replicator_main(Datum main_arg)
{
	Replicator	rep;
	MemoryContext loop_context;

	zs_worker_attach(ZS_WORKER_REPLICATOR, "zero_stream replicator");

	memset(&rep, 0, sizeof(rep));
	rep.path = zs_replica_file_path();
	zs_json_doc_init(&rep.doc);
	loop_context = AllocSetContextCreate(TopMemoryContext, "zero_stream replicator loop",
										 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		MemoryContext old;
		bool		busy = false;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		old = MemoryContextSwitchTo(loop_context);
		if (!honour_release(&rep) && (rep.replica != NULL || open_replica(&rep)))
			busy = apply_page(&rep) == REPLICATOR_PAGE_ROWS;
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_context);
		if (busy)
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 REPLICATOR_IDLE_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
