/*-------------------------------------------------------------------------
 * claim.c
 *	  The decoder's claim on its change log: taking it at each stream's
 *	  start, keeping replicationState.ownerAddress current, and waiting
 *	  while another change streamer has taken the log over.
 *
 * A claim writes replicationState's owner and ownerAddress (changelog.c);
 * it fails if the state row names another owner: the other streamer
 * wrote it in the transaction that stored its first transaction past our
 * head (the takeover of seed 000). The claim also reads where the log
 * stands: its head, its last row (where a live round starts), and the
 * published schema there, the stream's schema baseline.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "decoder/claim.h"
#include "decoder/resync.h"
#include "decoder/startup.h"
#include "decoding/snapshot.h"
#include "guc.h"
#include "ownership.h"
#include "shmem.h"
#include "spi_xact.h"

/*
 * The published schema at the log's head. A log written before schema
 * changes were captured has none: the current one is taken (DDL that ran
 * while the decoder was behind is then not carried).
 */
static void
load_schema_baseline(ZsStream *s)
{
	char	   *snapshot = zs_changelog_read_published_schema();

	if (snapshot == NULL)
	{
		snapshot = zs_snapshot_published_schema(s->publications);
		zs_changelog_write_published_schema(snapshot);
		ereport(LOG,
				(errmsg("change log %s had no published schema; starting from the current one",
						zs_cdc_schema_name())));
	}
	zs_stage_set_baseline(&s->stage, snapshot, strlen(snapshot));
}

/* the ownerAddress we last wrote (TopMemoryContext), NULL without a server */
static char *owner_address = NULL;

void
zs_claim_readvertise(void)
{
	char	   *address = zs_owner_address();

	if ((address == NULL) == (owner_address == NULL) &&
		(address == NULL || strcmp(address, owner_address) == 0))
		return;
	zs_spi_xact_begin(NULL);
	zs_changelog_claim_ownership(address);
	zs_spi_xact_commit();
	owner_address = address ? MemoryContextStrdup(TopMemoryContext, address) : NULL;
}

void
zs_claim_change_log(ZsStream *s)
{
	zs_spi_xact_begin(NULL);
	owner_address = zs_owner_address();
	if (owner_address)
		owner_address = MemoryContextStrdup(TopMemoryContext, owner_address);
	zs_changelog_claim_ownership(owner_address);
	zs_changelog_read_head(s->stored_head);
	/* where a round published to live subscribers starts */
	zs_changelog_read_last_row();
	load_schema_baseline(s);
	zs_spi_xact_commit();
}

bool
zs_claim_taken_over(char **owner)
{
	bool		taken;

	zs_spi_xact_begin(NULL);
	taken = zs_changelog_taken_over(owner);
	if (taken)
		*owner = MemoryContextStrdup(TopMemoryContext, *owner);
	zs_spi_xact_commit();
	return taken;
}

/*
 * Another change streamer took the change log over (seed 000: the new owner
 * writes replicationState.owner in the transaction that stores its first
 * transaction past the head; this decoder's next store failed its ownership
 * check, and the worker started again). Writing on would interleave two
 * writers in one log; taking it back, or starting a new lineage in it (as a
 * missing or invalidated slot would), would stop the other one. So wait,
 * saying why, without holding the slot (it can be dropped meanwhile), until
 * zero_stream.resync() asks for a new lineage here (the operator has
 * stopped the other writer). The state row's owner keeps the decision
 * across restarts. A dropped extension ends the wait: the next worker waits
 * for CREATE EXTENSION.
 */
void
zs_claim_wait_while_taken_over(const char *slot_name, const char *taken_by)
{
	char	   *message = psprintf("change log %s has been taken over by %s; this decoder (%s) does not write it",
								   zs_cdc_schema_name(), taken_by, zs_owner_identity());
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		reason[ZS_ERROR_LEN];

	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", message),
			 errdetail("Two writers would interleave in one log, and taking it back would stop the other one. "
					   "Replication slot \"%s\", if it exists, holds back WAL while zero_stream waits.",
					   slot_name),
			 errhint("Stop the other change streamer, then SELECT zero_stream.resync() to start a new change log here; "
					 "or drop the slot and DROP EXTENSION zero_stream.")));
	zs_spi_xact_begin(NULL);
	if (!zs_changelog_read_replica_version(replica_version))
		replica_version[0] = '\0';
	zs_spi_xact_commit();
	/* status() shows the slot (and the WAL it holds back) meanwhile */
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->slot_name, slot_name, sizeof(zs_shared->slot_name));
	strlcpy(zs_shared->replica_version, replica_version, sizeof(zs_shared->replica_version));
	LWLockRelease(zs_shared->lock);
	zs_set_last_error(message);
	zs_set_decoder_state(ZS_DECODER_TAKEN_OVER);
	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		zs_worker_check_interrupts();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		/* resync() only: an automatic reset does not override the other writer */
		if (zs_resync_take(reason) == ZS_RESYNC_ASKED)
			return;
		if (!zs_startup_extension_exists())
		{
			ereport(LOG,
					(errmsg("extension \"zero_stream\" was dropped in database \"%s\"; the decoder stops waiting for the change log",
							zs_database)));
			zs_set_decoder_state(ZS_DECODER_WAITING_FOR_EXTENSION);
			proc_exit(1);
		}
	}
}
