/*-------------------------------------------------------------------------
 * zero_stream.c
 *	  Module entry point: parameters, shared memory, background workers and
 *	  the commit hook that wakes the decoder.
 *
 * zero_stream turns PostgreSQL into the change streamer of a Zero sync
 * engine. A decoder worker decodes this server's WAL in-process with
 * pgoutput and writes a Zero-compatible change log through SPI; see
 * decoder/decoder_worker.c for the pipeline and docs/architecture.md for
 * the whole design.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/proc.h"

#include "capture_truncate.h"
#include "guc.h"
#include "shmem.h"

PG_MODULE_MAGIC;

extern PGDLLEXPORT void _PG_init(void);

/*
 * Wake the decoder when a transaction that wrote something commits; its
 * commit record is flushed by now (XACT_EVENT_COMMIT runs after
 * RecordTransactionCommit). The decoder still polls, for asynchronous
 * commits whose WAL is not flushed yet.
 */
static void
wake_decoder_at_commit(XactEvent event, void *arg)
{
	Latch	   *latch;

	if (event != XACT_EVENT_COMMIT || zs_shared == NULL)
		return;
	if (!FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
		return;
	latch = zs_shared->workers[ZS_WORKER_DECODER].latch;
	if (latch != NULL && latch != MyLatch)
		SetLatch(latch);
}

/*
 * A static worker connected to zero_stream.database, restarted 5 s after an
 * error. They start as soon as the server accepts connections, on a hot
 * standby too: there the decoder only follows the replicated change log
 * (decoder/standby_follow.c), and the server and the replicator serve and
 * keep the backup replica from it, read-only.
 */
static void
register_worker(const char *function, const char *name)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 5;
	strlcpy(worker.bgw_library_name, "zero_stream", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, name, BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

void
_PG_init(void)
{
	/* defined in every process that loads us, so SHOW and SET see them */
	zs_define_gucs();

	if (!process_shared_preload_libraries_in_progress)
		return;

	if (zs_rejected_identity_setting() != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zero_stream cannot start: %s has an invalid value",
						zs_rejected_identity_setting()),
				 errdetail("It names the change log, its replication slot or its publications; the default would stream somewhere else."),
				 errhint("Correct it in postgresql.conf; the warning above says why it was rejected.")));

	zs_shared_state_install_hooks();
	zs_capture_truncate_install_hook();
	RegisterXactCallback(wake_decoder_at_commit, NULL);
	register_worker("zs_decoder_main", "zero_stream decoder");
	if (zs_port > 0)
		register_worker("zs_server_main", "zero_stream server");
	if (zs_replica_file[0] != '\0')
		register_worker("zs_replicator_main", "zero_stream replicator");
}
