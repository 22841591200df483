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
 * replace it. On a standby it follows the replicated log, from a file
 * copied from the primary's backup replica whenever it has none it can
 * trust, of another lineage, or one the log was purged past, and tells
 * the primary where it is (standby_restore.c). Before replacing the file the decoder bumps
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
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "codec/change_message.h"
#include "guc.h"
#include "replica/backup_file.h"
#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "replicator/standby_restore.h"
#include "shmem.h"
#include "spi_xact.h"

PGDLLEXPORT void zs_replicator_main(Datum main_arg);

#define REPLICATOR_IDLE_MS 1000

typedef struct Replicator
{
	ZsReplica  *replica;
	char	   *path;
	uint32		generation;		/* of the open file */
	char		replica_version[ZS_WATERMARK_MAXLEN];	/* of the open file */
	/* keyset position: the last row applied */
	char		watermark[ZS_WATERMARK_MAXLEN];
	int64		pos;
	ZsJsonDoc	doc;
} Replicator;

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
	zs_set_backup_state(ZS_BACKUP_REPLACED, NULL, NULL);
	return true;
}

/*
 * How long a standby waits before it asks its primary for a copy again:
 * from a second (the primary's replica may only just have opened, after
 * its own promotion), doubling up to RESTORE_RETRY_MAX_MS.
 */
#define RESTORE_RETRY_MIN_MS 1000
#define RESTORE_RETRY_MAX_MS 10000
#define RESTORE_WARNING_INTERVAL_MS (60 * 1000)

/*
 * On a standby: the primary's backup replica of lineage copied in place of
 * the file. False (why in backup_state, a WARNING at most once a minute)
 * while the primary cannot give one; asked again after a back-off.
 */
static bool
restore_from_primary(Replicator *rep, const char *lineage)
{
	static TimestampTz last_attempt = 0;
	static TimestampTz last_warning = 0;
	static int	retry_ms = RESTORE_RETRY_MIN_MS;
	TimestampTz now = GetCurrentTimestamp();
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];
	char	   *error = NULL;

	if (last_attempt != 0 && !TimestampDifferenceExceeds(last_attempt, now, retry_ms))
		return false;
	if (last_attempt != 0)
		retry_ms = Min(retry_ms * 2, RESTORE_RETRY_MAX_MS);
	last_attempt = now;
	close_replica(rep);
	if (zs_standby_restore(rep->path, lineage, replica_version, watermark, &error))
	{
		last_attempt = 0;
		retry_ms = RESTORE_RETRY_MIN_MS;
		return true;
	}
	zs_set_backup_state(ZS_BACKUP_RESTORING,
						psprintf("waiting for the primary's backup replica: %s", error), NULL);
	if (TimestampDifferenceExceeds(last_warning, now, RESTORE_WARNING_INTERVAL_MS))
	{
		last_warning = now;
		ereport(WARNING,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not copy the primary's backup replica of replicaVersion %s: %s", lineage, error),
				 errdetail("This standby's backup replica is copied from the primary's; it is asked again within %d s.",
						   RESTORE_RETRY_MAX_MS / 1000),
				 errhint("The standby's replicator reaches the primary with primary_conninfo, in database \"%s\"; "
						 "its role needs EXECUTE on zero_stream.backup_replica_copy(text, text), zero_stream.backup_replica_read(bigint, integer) "
						 "and zero_stream.hold_backup_position(text, text, text).",
						 zs_database)));
	}
	return false;
}

/*
 * In the page's snapshot: has the purge passed the replica? On a primary
 * it never does while the replica follows; on a standby it does once the
 * primary's hold on the replica's position has expired (reports failed,
 * or the standby was down, for longer than subscriber_retention), and a
 * promoted standby may find it so. The purge deletes the oldest
 * transactions first, so while the replica's watermark is not below the
 * log's oldest, every row after it is there.
 */
static bool
behind_the_log(const Replicator *rep, char *floor)
{
	floor[0] = '\0';
	if (strcmp(rep->watermark, rep->replica_version) == 0)
		return false;

	/*
	 * A row of the replica's transaction up to where it read it, still
	 * stored: everything after it is. That is one key lookup, checked
	 * before every page, where the floor is read only when it fails. A
	 * purge batch may end inside a transaction: with the rows up to the
	 * replica's gone, the rest of its transaction may be partly gone too,
	 * so a floor at the replica's own watermark counts as passed.
	 */
	if (zs_changelog_holds_position(rep->watermark, rep->pos))
		return false;
	zs_changelog_read_floor(floor);
	return floor[0] != '\0' && strcmp(floor, rep->watermark) >= 0;
}
/*
 * A replica the purge has passed is not followed: a standby copies the
 * primary's again; a primary has none to copy, and says so (stale).
 */
static void
leave_behind(Replicator *rep, const char *floor)
{
	ereport(LOG,
			(errmsg("backup replica \"%s\" at %s is behind the change log, which starts at %s%s",
					rep->path, rep->watermark, floor,
					RecoveryInProgress() ? ": copying the primary's again" : "")));
	if (RecoveryInProgress())
		(void) restore_from_primary(rep, rep->replica_version);
	else
	{
		close_replica(rep);
		zs_set_backup_state(ZS_BACKUP_STALE,
							psprintf("at %s, behind the change log, which starts at %s",
									 rep->watermark, floor), NULL);
	}
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
	ZsDecoderState decoder_state;
	char		state_version[ZS_WATERMARK_MAXLEN];
	char		floor[ZS_WATERMARK_MAXLEN];
	char		err[512];
	struct stat st;
	MemoryContext old;
	bool		behind;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	strlcpy(log_version, zs_shared->replica_version, sizeof(log_version));
	decoder_state = zs_shared->decoder_state;
	rep->generation = zs_shared->backup_generation;
	LWLockRelease(zs_shared->lock);

	/* on a standby, the decoder follows the replicated log (standby_follow.c) */
	if ((decoder_state != ZS_DECODER_STREAMING && decoder_state != ZS_DECODER_STANDBY) ||
		log_version[0] == '\0')
	{
		zs_set_backup_state(ZS_BACKUP_WAITING_FOR_DECODER, NULL, NULL);
		return false;
	}
	/*
	 * A standby's own file is a copy of the primary's, made here: the one a
	 * base backup copied may be torn, and goes (so that a promotion before
	 * a copy could be made leaves no file, rather than that one).
	 */
	if (decoder_state == ZS_DECODER_STANDBY && !zs_standby_restore_trusted(rep->path))
	{
		if (stat(rep->path, &st) == 0 && !zs_replica_remove_files(rep->path, err, sizeof(err)))
			ereport(ERROR, (errcode_for_file_access(), errmsg("%s", err)));
		if (!restore_from_primary(rep, log_version))
			return false;
	}
	if (stat(rep->path, &st) != 0)
	{
		zs_set_backup_state(ZS_BACKUP_MISSING, NULL, NULL);
		return false;
	}
	/* the handle outlives the loop's memory context */
	old = MemoryContextSwitchTo(TopMemoryContext);
	rep->replica = zs_replica_open(rep->path, 0, err, sizeof(err));
	MemoryContextSwitchTo(old);
	if (rep->replica == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("%s", err)));
	if (!zs_replica_read_state(rep->replica, replica_version, state_version))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("\"%s\" is not a usable replica: %s",
						rep->path, zs_replica_error(rep->replica))));
	if (strcmp(replica_version, log_version) != 0 && decoder_state == ZS_DECODER_STANDBY)
	{
		/* the primary started a new lineage: its new replica, once it has one */
		(void) restore_from_primary(rep, log_version);
		return false;
	}
	if (strcmp(replica_version, log_version) != 0)
	{
		zs_set_backup_state(ZS_BACKUP_STALE,
							psprintf("replicaVersion %s, change log %s", replica_version, log_version),
							NULL);
		close_replica(rep);
		return false;
	}
	strlcpy(rep->replica_version, replica_version, sizeof(rep->replica_version));
	strlcpy(rep->watermark, state_version, sizeof(rep->watermark));
	rep->pos = PG_INT64_MAX;	/* the stateVersion transaction is applied */
	zs_spi_xact_begin(NULL);
	behind = behind_the_log(rep, floor);
	zs_spi_xact_commit();
	if (behind)
	{
		leave_behind(rep, floor);
		return false;
	}
	zs_set_backup_state(ZS_BACKUP_FOLLOWING, NULL, state_version);
	ereport(LOG,
			(errmsg("backup replica \"%s\" follows the change log from %s", rep->path, state_version)));
	return true;
}

/* The change being applied, for error reports (an errcontext callback). */
typedef struct ApplyPosition
{
	const Replicator *rep;
	const ZsChangeLogScan *row;
	const char *kind;			/* begin, commit, rollback; NULL for data */
	bool		parsed;			/* rep->doc holds the row's change */
} ApplyPosition;

static void
apply_error_context(void *arg)
{
	ApplyPosition *at = arg;
	const ZsJsonDoc *doc = &at->rep->doc;
	const char *tag = at->kind;
	const char *schema = NULL;
	const char *table = NULL;
	ZsJsonDoc	deferred;		/* a deferred relation, read on this path only */
	bool		read_deferred = false;

	if (at->row == NULL)
		return;
	if (at->parsed)
	{
		const ZsJsonDoc *rdoc = doc;
		int			relation = zs_json_get(doc, 0, "relation");

		tag = zs_json_get_string(doc, 0, "tag");
		if (relation >= 0 && doc->nodes[relation].deferred)
		{
			zs_json_doc_init(&deferred);
			read_deferred = true;
			relation = zs_json_parse(&deferred, zs_json_raw(doc, relation),
									 doc->nodes[relation].raw_len) ? 0 : -1;
			rdoc = &deferred;
		}
		schema = zs_json_get_string(rdoc, relation, "schema");
		table = zs_json_get_string(rdoc, relation, "name");
	}
	if (table != NULL)
		errcontext("applying change %s/" INT64_FORMAT " (%s of table %s.%s) to the backup replica \"%s\"",
				   at->row->watermark, at->row->pos, tag ? tag : "?", schema ? schema : "?",
				   table, at->rep->path);
	else
		errcontext("applying change %s/" INT64_FORMAT " (%s) to the backup replica \"%s\"",
				   at->row->watermark, at->row->pos, tag ? tag : "?", at->rep->path);
	if (read_deferred)
		zs_json_doc_free(&deferred);
}

/*
 * Apply one stored change: begin and commit carry the row's watermark (as
 * the server's wire messages do), a data change is parsed and applied.
 */
static bool
apply_row(Replicator *rep, ApplyPosition *at)
{
	const ZsChangeLogScan *row = at->row;

	switch (zs_change_message_type(row->change, row->change_len))
	{
		case ZS_MSG_BEGIN:
			at->kind = "begin";
			return zs_replica_begin(rep->replica, row->watermark);
		case ZS_MSG_COMMIT:
			at->kind = "commit";
			return zs_replica_commit(rep->replica, row->watermark);
		case ZS_MSG_ROLLBACK:
			at->kind = "rollback";
			return zs_replica_rollback(rep->replica);
		case ZS_MSG_DATA:
			break;
	}
	/* every row of a table repeats its relation: the replica reads it once */
	if (!zs_json_parse_deferring(&rep->doc, row->change, row->change_len, "relation"))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change %s/" INT64_FORMAT " is not JSON: %s",
						row->watermark, row->pos, rep->doc.error)));
	at->parsed = true;
	return zs_replica_apply_change(rep->replica, &rep->doc, 0);
}

/*
 * Apply one page of the change log, as the server would send it, straight
 * from the query's result; true if it was full.
 */
static bool
apply_page(Replicator *rep)
{
	ZsChangeLogScan scan;
	ApplyPosition at = {rep, NULL, NULL, false};
	char		floor[ZS_WATERMARK_MAXLEN];
	char		head[ZS_WATERMARK_MAXLEN];
	ErrorContextCallback callback;
	bool		applied = false;

	zs_spi_xact_begin("zero_stream: applying the change log to the backup replica");
	if (behind_the_log(rep, floor))
	{
		zs_spi_xact_commit();
		leave_behind(rep, floor);
		return false;
	}
	/* up to the published head (changelog.h) */
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	strlcpy(head, zs_shared->last_watermark, sizeof(head));
	LWLockRelease(zs_shared->lock);
	zs_changelog_scan_begin(&scan, rep->watermark, rep->pos, zs_catchup_page_rows, head);
	callback.callback = apply_error_context;
	callback.arg = &at;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	for (;;)
	{
		/* reading the next row is not applying the last one */
		at.row = NULL;
		zs_worker_check_interrupts();
		if (!zs_changelog_scan_next(&scan))
			break;
		at.row = &scan;
		at.kind = NULL;
		at.parsed = false;
		if (!apply_row(rep, &at))
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("could not apply a change to the backup replica: %s",
							zs_replica_error(rep->replica))));
		strlcpy(rep->watermark, scan.watermark, sizeof(rep->watermark));
		rep->pos = scan.pos;
		applied = true;
	}
	error_context_stack = callback.previous;
	if (scan.error != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s", scan.error),
				 errdetail("The backup replica is applied up to %s/" INT64_FORMAT ", the change before that chunk.",
						   rep->watermark, rep->pos)));
	zs_changelog_scan_end(&scan);
	zs_spi_xact_commit();

	/* whole transactions only: a page never ends inside one for long */
	if (applied && !zs_replica_in_transaction(rep->replica))
	{
		/* a dead server's replica is not committed to */
		zs_worker_check_interrupts();
		if (!zs_replica_flush(rep->replica))
			ereport(ERROR,
					(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("could not commit to the backup replica \"%s\": %s",
							rep->path, zs_replica_error(rep->replica))));
		zs_set_backup_progress(rep->watermark, zs_replica_rows_applied(rep->replica));
	}
	if (RecoveryInProgress())
		zs_standby_report_position(rep->replica_version, rep->watermark);
	else
		zs_standby_disconnect();	/* promoted: no primary to report to */
	return scan.full;
}

/*
 * The loop, in pg_cron's shape: each iteration does one bounded unit of
 * work (one page), then reloads the configuration and waits unless there
 * is more to do.
 */
static void
run_replicator(Replicator *rep)
{
	MemoryContext loop_context = AllocSetContextCreate(TopMemoryContext,
													   "zero_stream replicator loop",
													   ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		MemoryContext old;
		bool		busy = false;

		zs_worker_check_interrupts();
		old = MemoryContextSwitchTo(loop_context);
		if (!honour_release(rep) && (rep->replica != NULL || open_replica(rep)))
			busy = apply_page(rep);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_context);

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (busy)
			continue;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 REPLICATOR_IDLE_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

void
zs_replicator_main(Datum main_arg)
{
	Replicator	rep;
	MemoryContext worker_context;

	zs_worker_attach(ZS_WORKER_REPLICATOR, "zero_stream replicator");
	worker_context = AllocSetContextCreate(TopMemoryContext, "zero_stream replicator",
										   ALLOCSET_DEFAULT_SIZES);

	memset(&rep, 0, sizeof(rep));
	rep.path = zs_replica_file_path();
	zs_json_doc_init(&rep.doc);

	PG_TRY();
	{
		run_replicator(&rep);
	}
	PG_CATCH();
	{
		zs_worker_fail(ZS_WORKER_REPLICATOR, worker_context);
	}
	PG_END_TRY();
}
