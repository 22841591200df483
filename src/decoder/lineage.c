/*-------------------------------------------------------------------------
 * lineage.c
 *	  Create or acquire the decoder's logical replication slot.
 *
 * The slot and the change log's replicaVersion belong together: the
 * replicaVersion is the watermark just before the slot's consistent point
 * (see create_slot_and_lineage), and a
 * change log is only continuous as long as the same slot feeds it. So:
 *   slot exists and log initialized -> resume;
 *   anything else -> new slot, new lineage (replicaVersion), seed row.
 * The slot is created ephemeral with a full snapshot (USE_SNAPSHOT): the
 * initial copy of the published tables into the backup replica runs on the
 * slot's own consistent snapshot, then the lineage commits, and only then
 * is the slot persisted. A crash anywhere before that leaves no slot, and
 * the next start simply begins again (docs/pg-internals.md §3).
 *
 * With zero_stream.failover (PostgreSQL 17), the slot is a failover slot:
 * standbys with sync_replication_slots keep a copy of it, and a promoted
 * standby finds the slot and the replicated change log together, so it
 * resumes the same lineage, as a restart here would.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlogutils.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "replication/logical.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "storage/proc.h"
#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "changelog/changelog.h"
#include "compat/replication.h"
#include "decoder/lineage.h"
#include "decoding/snapshot.h"
#include "guc.h"
#include "decoder/initial_copy.h"
#include "decoding/output_plugin.h"
#include "decoder/shard_setup.h"
#include "shmem.h"
#include "spi_xact.h"
#include "standby_slots.h"
#include "codec/watermark.h"

static bool
read_lineage(char *replica_version)
{
	bool		found;

	zs_spi_xact_begin(NULL);
	found = zs_changelog_read_replica_version(replica_version);
	zs_spi_xact_commit();
	return found;
}

static void
check_slot_is_ours(const char *slot_name)
{
	ReplicationSlot *slot = MyReplicationSlot;

	if (SlotIsLogical(slot) && slot->data.database != MyDatabaseId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication slot \"%s\" belongs to another database (OID %u), not to \"%s\"",
						slot_name, slot->data.database, zs_database),
				 errhint("Drop the slot, or choose another one with zero_stream.slot_name.")));
	if (!SlotIsLogical(slot) ||
		strcmp(NameStr(slot->data.plugin), ZS_OUTPUT_PLUGIN_NAME) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("replication slot \"%s\" was not created by zero_stream", slot_name),
				 errdetail("zero_stream needs a logical slot of database \"%s\" using the \"%s\" output plugin.",
						   zs_database, ZS_OUTPUT_PLUGIN_NAME),
				 errhint("Drop the slot, or choose another one with zero_stream.slot_name.")));
}

static void
check_slot_not_in_use(const char *slot_name)
{
	ReplicationSlot *slot;
	int			active_pid = 0;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	slot = SearchNamedReplicationSlot(slot_name, false);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		active_pid = zs_slot_active_pid(slot);
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(ReplicationSlotControlLock);
	if (active_pid != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("replication slot \"%s\" is in use by process %d", slot_name, active_pid),
				 errhint("zero_stream's decoder must be the slot's only consumer; stop the other one or set zero_stream.slot_name.")));
}

/*
 * A slot invalidated because the WAL it needed was removed
 * (max_slot_wal_keep_size, or the WAL lost otherwise) can never be decoded
 * again, and the change log it fed has lost the transactions in that WAL.
 * The only safe way on is a new lineage, as for a missing slot: say so
 * loudly, in the log and in status().
 */
static bool
slot_was_invalidated(const char *slot_name, const char *replica_version)
{
	char		why[256];
	char	   *message;

	if (!zs_slot_invalidation(MyReplicationSlot, why, sizeof(why)))
		return false;
	message = psprintf("replication slot \"%s\" was invalidated: %s; "
					   "change log %s of replicaVersion %s cannot continue and a new lineage is started",
					   slot_name, why, zs_cdc_schema_name(), replica_version);
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", message),
			 errdetail("The transactions in the removed WAL are lost to the change log."),
			 errhint("Subscribers of replicaVersion %s are told WrongReplicaVersion and restore from the new backup replica. "
					 "max_slot_wal_keep_size limits the WAL a slot may hold back; raise it, or keep the decoder running.",
					 replica_version)));
	zs_set_last_error(message);
	zs_set_last_reset(message);
	return true;
}

/*
 * Copy the published tables on the slot's consistent snapshot: the
 * walsender's USE_SNAPSHOT, in this process (docs/pg-internals.md §3).
 */
static char *
copy_at_slot_snapshot(LogicalDecodingContext *ctx, const char *replica_version,
					  List *publications)
{
	char	   *schema;

	zs_set_decoder_state(ZS_DECODER_INITIAL_COPY);
	zs_snapshot_begin(ctx);
	/* as zero-cache's initial sync: a table its replicas cannot hold stops it */
	(void) zs_shard_setup_check_tables(publications, ERROR);
	/* the published schema the stream starts from, as of the copy's snapshot */
	schema = MemoryContextStrdup(TopMemoryContext, zs_snapshot_published_schema(publications));
	zs_initial_copy(replica_version, publications, schema);
	zs_spi_xact_commit();
	return schema;
}

/*
 * Create the slot, copy the tables, and start a new lineage at its
 * consistent point. Only take_over (an explicit resync) empties a log that
 * another change streamer has taken over.
 */
static void
create_slot_and_lineage(const char *slot_name, List *publications, char *replica_version,
						bool take_over)
{
	LogicalDecodingContext *ctx;
	XLogRecPtr	consistent;
	char	   *schema;

	zs_set_decoder_state(ZS_DECODER_CREATING_SLOT);
	ctx = zs_snapshot_slot_create(slot_name, &consistent);

	/*
	 * The lineage is named one byte before the consistent point, not at it
	 * (as zero-cache does). The consistent point is the end of a
	 * running-xacts record, so the very next record can be the commit of a
	 * transaction that was still running there: it is not in the copy's
	 * snapshot and must be streamed, but its commit LSN, hence its
	 * watermark, equals the consistent point. Named at the consistent point,
	 * the lineage's seed transaction would take that watermark and the
	 * transaction would be dropped as already stored (and skipped by every
	 * replica at stateVersion = replicaVersion). No commit record can start
	 * at consistent - 1, and every commit in the snapshot is before it.
	 */
	zs_watermark_encode(consistent - 1, replica_version);
	schema = copy_at_slot_snapshot(ctx, replica_version, publications);
	FreeDecodingContext(ctx);

	zs_spi_xact_begin(NULL);
	zs_changelog_initialize(replica_version, publications, take_over);
	zs_changelog_write_published_schema(schema);
	pfree(schema);
	/* our progress starts at the consistent point */
	zs_set_xact_origin_commit(consistent, GetCurrentTimestamp());
	zs_spi_xact_commit();
	zs_set_xact_origin_commit(InvalidXLogRecPtr, 0);

	ReplicationSlotMarkDirty();
	ReplicationSlotSave();
	ReplicationSlotPersist();
	/* as the walsender does: release drops the copy's data xmin; take it back */
	ReplicationSlotRelease();
	zs_replication_slot_acquire(slot_name, true);

	ereport(LOG,
			(errmsg("zero_stream created replication slot \"%s\" at %X/%X; change log %s starts at replicaVersion %s",
					slot_name, LSN_FORMAT_ARGS(consistent), zs_cdc_schema_name(),
					replica_version)));
}

void
zs_lineage_apply_failover(void)
{
#ifdef ZS_HAVE_FAILOVER_SLOTS
	ReplicationSlot *slot = MyReplicationSlot;

	if (slot == NULL || slot->data.persistency != RS_PERSISTENT ||
		slot->data.failover == zs_failover)
		return;
	/* what ReplicationSlotAlter does, on the slot this process holds */
	SpinLockAcquire(&slot->mutex);
	slot->data.failover = zs_failover;
	SpinLockRelease(&slot->mutex);
	ReplicationSlotMarkDirty();
	ReplicationSlotSave();
	ereport(LOG,
			(errmsg("replication slot \"%s\" is %s failover slot (zero_stream.failover)",
					NameStr(slot->data.name), zs_failover ? "a" : "no longer a")));
#endif
}

void
zs_lineage_restart(const char *slot_name, List *publications, char *replica_version,
				   bool take_over)
{
	ereport(LOG,
			(errmsg("resync requested: dropping replication slot \"%s\" and starting a new lineage",
					slot_name)));
	ReplicationSlotRelease();
	ReplicationSlotDrop(slot_name, true);
	create_slot_and_lineage(slot_name, publications, replica_version, take_over);
}

static bool
slot_exists(const char *slot_name)
{
	bool		exists;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	exists = SearchNamedReplicationSlot(slot_name, false) != NULL;
	LWLockRelease(ReplicationSlotControlLock);
	return exists;
}

/* Acquire an existing slot, if it is ours and free. */
static void
acquire_existing_slot(const char *slot_name)
{
	check_slot_not_in_use(slot_name);
	zs_replication_slot_acquire(slot_name, true);
	check_slot_is_ours(slot_name);
}

void
zs_lineage_replace(const char *slot_name, List *publications, char *replica_version,
				   bool take_over)
{
	if (slot_exists(slot_name))
	{
		acquire_existing_slot(slot_name);
		zs_lineage_restart(slot_name, publications, replica_version, take_over);
		return;
	}
	ereport(LOG,
			(errmsg("resync requested: starting a new lineage on a new replication slot \"%s\"",
					slot_name)));
	create_slot_and_lineage(slot_name, publications, replica_version, take_over);
}

void
zs_lineage_acquire_slot(const char *slot_name, List *publications, char *replica_version)
{
	bool		have_lineage = read_lineage(replica_version);
	bool		exists = slot_exists(slot_name);

	if (exists)
	{
		acquire_existing_slot(slot_name);
		if (have_lineage && slot_was_invalidated(slot_name, replica_version))
		{
			ReplicationSlotRelease();
			ReplicationSlotDrop(slot_name, true);
			create_slot_and_lineage(slot_name, publications, replica_version, false);
			return;
		}
		if (have_lineage)
			return;
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("change log %s has no replicaVersion; recreating replication slot \"%s\"",
						zs_cdc_schema_name(), slot_name)));
		ReplicationSlotRelease();
		ReplicationSlotDrop(slot_name, true);
	}
	else if (have_lineage)
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("replication slot \"%s\" is missing; the change log of replicaVersion %s cannot continue",
						slot_name, replica_version),
				 errdetail("Changes made while the slot did not exist cannot be recovered."),
				 errhint("A new replicaVersion is started; subscribers of the old one will be told to resync.")));
	if (!exists && have_lineage)
		zs_set_last_reset(psprintf("replication slot \"%s\" was missing: change log of replicaVersion %s could not continue; a new lineage was started",
								   slot_name, replica_version));

	create_slot_and_lineage(slot_name, publications, replica_version, false);
}
