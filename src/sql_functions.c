/*-------------------------------------------------------------------------
 * sql_functions.c
 *	  The extension's SQL functions: zero_stream.status(),
 *	  zero_stream.subscribers() and zero_stream.workers() read what the
 *	  workers publish in shared memory; zero_stream.resync() asks the
 *	  decoder to start a new lineage (zero_stream.purge() is the purge's,
 *	  purge/purge_request.c).
 *
 * zero_stream.resync(): the decoder drops its slot, creates a new one,
 * copies every published table into a new backup replica at the new
 * slot's snapshot and starts the change log again at a new replicaVersion.
 * Subscribers of the old one are told WrongReplicaVersion and restore from
 * a snapshot. This is how a lost backup replica is rebuilt, or how a
 * deployment starts afresh on purpose.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "replication/slot.h"
#include "catalog/pg_type_d.h"
#include "catalog/namespace.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "extension_version.h"
#include "guc.h"
#include "shmem.h"
#include "slot_health.h"
#include "standby_hold.h"
#include "standby_slots.h"

PG_FUNCTION_INFO_V1(zs_status);
PG_FUNCTION_INFO_V1(zs_subscribers);
PG_FUNCTION_INFO_V1(zs_workers);

/*
 * status()'s columns: version 0.2.0 added extension_version and
 * library_version at the end, 0.3.0 timeline, promoted_at and
 * promoted_from_timeline after them, 0.4.0 retained_chunks and
 * retained_change_bytes, so the row of an older SQL (a library
 * newer than the installed SQL, before ALTER EXTENSION ... UPDATE) is its
 * prefix; a newer SQL's row (a newer library not loaded yet) gets these
 * columns, and NULL in those after them.
 */
#define STATUS_COLUMNS 50
#define STATUS_COLUMNS_0_3 48
#define STATUS_COLUMNS_0_2 45
#define STATUS_COLUMNS_0_1 43

/*
 * The row type the installed SQL declares must be the one this library
 * fills: the SQL objects of another version (a library installed without
 * ALTER EXTENSION ... UPDATE) would read values into the wrong columns.
 */
static void
check_row_type(TupleDesc tupdesc, int natts, const char *function)
{
	if (tupdesc->natts != natts)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream.%s() is declared with %d columns, but this zero_stream library returns %d",
						function, tupdesc->natts, natts),
				 errhint("The SQL objects of another version of zero_stream are installed: run ALTER EXTENSION zero_stream UPDATE.")));
}

static Datum
text_or_null(const char *s, bool *isnull)
{
	*isnull = (s == NULL || s[0] == '\0');
	return *isnull ? (Datum) 0 : CStringGetTextDatum(s);
}

/*
 * A subscriber's id as text: the bytes it sent, which need not be valid in
 * the database's encoding; those that are not become '?'.
 */
static Datum
id_text(const char *id, bool *isnull)
{
	char	   *copy;

	if (id[0] == '\0' || pg_verifymbstr(id, strlen(id), true))
		return text_or_null(id, isnull);
	copy = pstrdup(id);
	for (char *p = copy; *p; p++)
	{
		if (IS_HIGHBIT_SET(*p))
			*p = '?';
	}
	return text_or_null(copy, isnull);
}

static Datum
lsn_or_null(XLogRecPtr lsn, bool *isnull)
{
	*isnull = XLogRecPtrIsInvalid(lsn);
	return *isnull ? (Datum) 0 : LSNGetDatum(lsn);
}

static Datum
time_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return *isnull ? (Datum) 0 : TimestampTzGetDatum(t);
}

/*
 * The backup replica's state as a word (NULL without a backup replica),
 * what it says in detail, and what to do about it (NULL: nothing).
 */
static const char *
backup_state_name(ZsBackupState state)
{
	if (zs_replica_file == NULL || zs_replica_file[0] == '\0')
		return NULL;
	return zs_backup_state_name(state);
}

/* "table 2 of 5, public.t: 1200 of ~5000 rows", or NULL when no copy runs */
static const char *
copy_progress_text(const ZsCopyProgress *p)
{
	if (p->table_no == 0)
		return NULL;
	return psprintf("table %d of %d, %s: " INT64_FORMAT " of ~" INT64_FORMAT " rows",
					p->table_no, p->ntables, p->table, p->rows, p->estimated);
}

/* "\"public\".\"t\": 1200 of 5000 rows" (or ": starting"), or NULL when none runs */
static const char *
backfill_progress_text(const ZsBackfillProgress *p)
{
	switch (p->phase)
	{
		case ZS_BACKFILL_IDLE:
			return NULL;
		case ZS_BACKFILL_STARTING:
			return psprintf("%s: starting", p->table);
		case ZS_BACKFILL_SENDING:
			return psprintf("%s: " INT64_FORMAT " of " INT64_FORMAT " rows", p->table, p->rows, p->total);
	}
	return NULL;
}

static const char *
backup_state_detail(const ZsSharedState *snap)
{
	switch (snap->backup_state)
	{
		case ZS_BACKUP_NOT_STARTED:
		case ZS_BACKUP_FOLLOWING:
			return NULL;
		case ZS_BACKUP_WAITING_FOR_DECODER:
			return "the replicator waits for the decoder to stream";
		case ZS_BACKUP_MISSING:
			return "the replica file does not exist";
		case ZS_BACKUP_STALE:
		case ZS_BACKUP_RESTORING:
			return snap->backup_detail;
		case ZS_BACKUP_REPLACED:
			return "replaced by a new initial copy";
		case ZS_BACKUP_FAILED:
			return "the replicator stopped on an error and restarts";
	}
	return NULL;
}

static const char *
backup_state_hint(ZsBackupState state)
{
	switch (state)
	{
		case ZS_BACKUP_MISSING:
			return "SELECT zero_stream.resync() copies it again";
		case ZS_BACKUP_FAILED:
			return "see zero_stream.workers()";
		default:
			return NULL;
	}
}

static const char *
subscriber_state_name(ZsSubscriberState state)
{
	switch (state)
	{
		case ZS_SUB_CONNECTING:
			return "connecting";
		case ZS_SUB_CATCHING_UP:
			return "catching up";
		case ZS_SUB_LIVE:
			return "live";
		case ZS_SUB_FAILED:
			return "failed";
		case ZS_SUB_RESERVED:
			return "reserved";
		case ZS_SUB_SENDING_SNAPSHOT:
			return "sending snapshot";
		case ZS_SUB_CLOSING:
			return "closing";
	}
	return "unknown";
}

static const char *
worker_name(ZsWorkerKind kind)
{
	switch (kind)
	{
		case ZS_WORKER_DECODER:
			return "decoder";
		case ZS_WORKER_SERVER:
			return "server";
		case ZS_WORKER_REPLICATOR:
			return "replicator";
	}
	return "unknown";
}

/* The change log's size, as status() shows it */
typedef struct ChangeLogSize
{
	bool		counted;		/* the figures below are known */
	int64		bytes;			/* on disk, with its index and TOAST */
	int64		rows;
	int64		chunks;
	int64		change_bytes;	/* the rows' encoding before compression */
} ChangeLogSize;

/* the chunks read exactly up to this many heap pages, estimated beyond */
#define SIZE_EXACT_PAGES 1024
/* the newest pages the estimate samples */
#define SIZE_SAMPLE_PAGES 128

/*
 * The change log's size on disk, and its rows, chunks and change text (each
 * chunk counts its own rows and size). Up to SIZE_EXACT_PAGES of chunks
 * (about 8 MB of the heap, which holds each large chunk's value out of
 * line) they are summed; beyond, the planner's number of chunks is
 * multiplied by the rows and change text per chunk of the newest
 * SIZE_SAMPLE_PAGES (chunks are appended: the newest are the table's last
 * pages), so status() stays cheap for any log. The table's lock is taken
 * only if free and held only while it is read (NULL figures otherwise): a
 * monitoring query that calls status() in a long transaction must never
 * hold up the decoder's TRUNCATE of a new lineage, nor wait for it.
 */
static void
change_log_size(ChangeLogSize *size)
{
	Oid			relid = InvalidOid;
	Oid			nsp = get_namespace_oid(zs_cdc_schema_name(), true);
	AttrNumber	rows_att;
	AttrNumber	size_att;
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	BlockNumber nblocks;
	bool		sampled;
	int64		seen = 0;
	int64		rows = 0;
	int64		change_bytes = 0;

	memset(size, 0, sizeof(*size));
	if (OidIsValid(nsp))
		relid = get_relname_relid("changeLogChunks", nsp);
	if (!OidIsValid(relid))
		return;
	rows_att = get_attnum(relid, "rows");
	size_att = get_attnum(relid, "size");
	if (rows_att == InvalidAttrNumber || get_atttype(relid, rows_att) != INT4OID ||
		size_att == InvalidAttrNumber || get_atttype(relid, size_att) != INT4OID ||
		!ConditionalLockRelationOid(relid, AccessShareLock))
		return;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(relid, AccessShareLock);
		return;
	}
	size->bytes = DatumGetInt64(DirectFunctionCall1(pg_total_relation_size,
													ObjectIdGetDatum(relid)));
	nblocks = RelationGetNumberOfBlocks(rel);
	sampled = nblocks > SIZE_EXACT_PAGES && rel->rd_rel->reltuples > 0 &&
		rel->rd_rel->relkind == RELKIND_RELATION && rel->rd_tableam == GetHeapamTableAmRoutine();
	slot = table_slot_create(rel, NULL);
	/* no synchronized scan: heap_setscanlimits needs the scan to start at 0 */
	scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, NULL, true, false);
	if (sampled)
		heap_setscanlimits(scan, nblocks - SIZE_SAMPLE_PAGES, SIZE_SAMPLE_PAGES);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		n = slot_getattr(slot, rows_att, &isnull);

		if (!isnull)
			rows += DatumGetInt32(n);
		n = slot_getattr(slot, size_att, &isnull);
		if (!isnull)
			change_bytes += DatumGetInt32(n);
		seen++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	if (!sampled)
	{
		size->chunks = seen;
		size->rows = rows;
		size->change_bytes = change_bytes;
	}
	else if (seen > 0)
	{
		double		chunks = rel->rd_rel->reltuples;

		size->chunks = (int64) chunks;
		size->rows = (int64) (chunks * rows / seen);
		size->change_bytes = (int64) (chunks * change_bytes / seen);
	}
	relation_close(rel, AccessShareLock);
	size->counted = true;
}

Datum
zs_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum	   *values;
	bool	   *nulls;
	ZsSharedState snap;
	XLogRecPtr	restart_lsn = InvalidXLogRecPtr;
	XLogRecPtr	confirmed_lsn = InvalidXLogRecPtr;
	/* a standby has no flush position of its own: where replay is */
	XLogRecPtr	flush = RecoveryInProgress() ? GetXLogReplayRecPtr(NULL) : GetFlushRecPtr(NULL);
	char		slot_warning[ZS_ERROR_LEN];
	ZsFailoverStatus failover;
	ChangeLogSize size;
	int			i = 0;

	zs_require_shared_state();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	change_log_size(&size);
	/* a newer SQL's columns after this library's are NULL */
	if (tupdesc->natts != STATUS_COLUMNS_0_1 && tupdesc->natts != STATUS_COLUMNS_0_2 &&
		tupdesc->natts != STATUS_COLUMNS_0_3 && tupdesc->natts < STATUS_COLUMNS)
		check_row_type(tupdesc, STATUS_COLUMNS, "status");
	values = palloc0(sizeof(Datum) * tupdesc->natts);
	nulls = palloc0(sizeof(bool) * tupdesc->natts);

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	memcpy(&snap, zs_shared, offsetof(ZsSharedState, subscribers));
	LWLockRelease(zs_shared->lock);

	zs_slot_positions(snap.slot_name, &restart_lsn, &confirmed_lsn);

	values[i++] = CStringGetTextDatum(zs_decoder_state_name(snap.decoder_state));
	values[i] = Int32GetDatum(snap.workers[ZS_WORKER_DECODER].pid);
	nulls[i++] = (snap.workers[ZS_WORKER_DECODER].pid == 0);
	values[i] = text_or_null(zs_database, &nulls[i]);
	i++;
	values[i] = text_or_null(snap.slot_name, &nulls[i]);
	i++;
	values[i] = lsn_or_null(confirmed_lsn, &nulls[i]);
	i++;
	values[i] = lsn_or_null(restart_lsn, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(flush - restart_lsn);
	nulls[i++] = XLogRecPtrIsInvalid(restart_lsn) || flush < restart_lsn;
	values[i] = Int64GetDatum(flush - confirmed_lsn);
	nulls[i++] = XLogRecPtrIsInvalid(confirmed_lsn) || flush < confirmed_lsn;
	values[i] = text_or_null(snap.replica_version, &nulls[i]);
	i++;
	values[i] = text_or_null(snap.last_watermark, &nulls[i]);
	i++;
	values[i] = Int64GetDatum((int64) snap.txns_stored);
	i++;
	values[i] = Int64GetDatum((int64) snap.changes_stored);
	i++;
	values[i] = Int64GetDatum((int64) snap.local_commits);
	i++;
	values[i] = time_or_null(snap.last_store_time, &nulls[i]);
	i++;
	values[i] = time_or_null(snap.last_upstream_commit_time, &nulls[i]);
	i++;
	/* replication lag of the newest stored transaction */
	if (snap.last_store_time != 0 && snap.last_upstream_commit_time != 0)
	{
		Interval   *lag = palloc0(sizeof(Interval));

		lag->time = snap.last_store_time - snap.last_upstream_commit_time;
		values[i++] = IntervalPGetDatum(lag);
	}
	else
		nulls[i++] = true;
	values[i] = text_or_null(zs_cdc_schema_name(), &nulls[i]);
	i++;
	values[i] = text_or_null(copy_progress_text(&snap.copy_progress), &nulls[i]);
	i++;
	values[i] = text_or_null(backfill_progress_text(&snap.backfill_progress), &nulls[i]);
	i++;
	values[i] = text_or_null(backup_state_name(snap.backup_state), &nulls[i]);
	i++;
	values[i] = text_or_null(backup_state_detail(&snap), &nulls[i]);
	i++;
	values[i] = text_or_null(backup_state_hint(snap.backup_state), &nulls[i]);
	i++;
	values[i] = text_or_null(snap.backup_watermark, &nulls[i]);
	i++;
	values[i] = text_or_null(snap.last_error, &nulls[i]);
	i++;
	values[i] = time_or_null(snap.last_error[0] ? snap.last_error_time : 0, &nulls[i]);
	i++;
	values[i++] = Int64GetDatum((int64) snap.value_errors);
	values[i] = text_or_null(snap.last_value_error, &nulls[i]);
	i++;
	values[i] = Int64GetDatum(size.rows);
	nulls[i++] = !size.counted;
	values[i] = Int64GetDatum(size.bytes);
	nulls[i++] = !size.counted;
	values[i] = CStringGetTextDatum(snap.purge_floor);
	nulls[i++] = !snap.has_purge_floor;
	values[i] = text_or_null(zs_purge_holder_text(&snap.purge_holder), &nulls[i]);
	i++;
	values[i++] = Int64GetDatum((int64) snap.purged_rows);
	values[i++] = Int64GetDatum((int64) snap.purged_bytes);
	values[i] = time_or_null(snap.last_purge_time, &nulls[i]);
	i++;
	values[i] = text_or_null(snap.last_reset, &nulls[i]);
	i++;
	values[i] = time_or_null(snap.last_reset_time, &nulls[i]);
	i++;
	values[i++] = Int32GetDatum(zs_count_retained(zs_subscriber_retention_ms));
	if (zs_slot_at_risk(restart_lsn, confirmed_lsn, slot_warning, sizeof(slot_warning)))
		values[i++] = CStringGetTextDatum(slot_warning);
	else
		nulls[i++] = true;
	zs_failover_describe(snap.slot_name[0] ? snap.slot_name : zs_effective_slot_name(),
						 confirmed_lsn, &failover);
	values[i++] = CStringGetTextDatum(failover.mode);
	values[i] = text_or_null(failover.standbys, &nulls[i]);
	i++;
	values[i] = BoolGetDatum(failover.synced);
	nulls[i++] = !failover.synced_known;
	values[i] = text_or_null(failover.warning, &nulls[i]);
	i++;
	values[i] = text_or_null(failover.hint, &nulls[i]);
	i++;
	Assert(i == STATUS_COLUMNS_0_1);
	if (tupdesc->natts >= STATUS_COLUMNS_0_2)
	{
		char	   *installed = zs_installed_sql_version();

		values[i] = text_or_null(installed, &nulls[i]);
		i++;
		values[i++] = CStringGetTextDatum(ZS_LIBRARY_VERSION);
		Assert(i == STATUS_COLUMNS_0_2);
	}
	if (tupdesc->natts >= STATUS_COLUMNS_0_3)
	{
		values[i++] = Int32GetDatum((int32) zs_current_timeline());
		values[i] = time_or_null(snap.promoted_at, &nulls[i]);
		i++;
		values[i] = Int32GetDatum((int32) snap.promoted_from_timeline);
		nulls[i++] = (snap.promoted_at == 0);
		Assert(i == STATUS_COLUMNS_0_3);
	}
	if (tupdesc->natts >= STATUS_COLUMNS)
	{
		values[i] = Int64GetDatum(size.chunks);
		nulls[i++] = !size.counted;
		values[i] = Int64GetDatum(size.change_bytes);
		nulls[i++] = !size.counted;
		Assert(i == STATUS_COLUMNS);
		while (i < tupdesc->natts)
			nulls[i++] = true;
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * subscribers()'s columns: version 0.3.0 added retained_because at the end,
 * so the row of 0.1.0's and 0.2.0's SQL is its prefix; a newer SQL's row
 * gets these columns, and NULL in those after them.
 */
#define SUBSCRIBER_COLUMNS 14
#define SUBSCRIBER_COLUMNS_0_2 13

/* Why a position is retained after its subscriber left (retained_because). */
static const char *
retained_because(const ZsDepartedSubscriber *d)
{
	if (d->mode == ZS_SUB_MODE_SNAPSHOT)
		return "reservation";
	if (d->mode == ZS_SUB_MODE_BACKUP && zs_standby_hold_name(d->id) != NULL)
		return "standby";
	return d->restored ? "restarted" : "disconnected";
}

/*
 * zero_stream.subscribers(): one row per connection of the subscriber
 * server, then one per position retained for a subscriber that left (state
 * departed), or that was read back after a restart (state restored): what
 * the purge floor counts until retained_until, and why.
 */
Datum
zs_subscribers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz now = GetCurrentTimestamp();
	int			natts;
	Datum	   *values;
	bool	   *nulls;

	zs_require_shared_state();
	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts != SUBSCRIBER_COLUMNS_0_2 && natts < SUBSCRIBER_COLUMNS)
		check_row_type(rsinfo->setDesc, SUBSCRIBER_COLUMNS, "subscribers");
	/* (a newer SQL's columns after this library's stay NULL) */
	values = palloc0(sizeof(Datum) * Max(natts, SUBSCRIBER_COLUMNS));
	nulls = palloc(sizeof(bool) * Max(natts, SUBSCRIBER_COLUMNS));

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	for (int s = 0; s < zs_shared->max_subscribers; s++)
	{
		ZsSubscriberSlot *slot = &zs_shared->subscribers[s];
		int			i = 0;

		if (!slot->in_use)
			continue;
		memset(nulls, true, sizeof(bool) * Max(natts, SUBSCRIBER_COLUMNS));
		memset(nulls, false, sizeof(bool) * SUBSCRIBER_COLUMNS_0_2);
		values[i] = id_text(slot->id, &nulls[i]);
		i++;
		values[i] = text_or_null(slot->address, &nulls[i]);
		i++;
		values[i] = text_or_null(zs_subscriber_mode_name(slot->mode), &nulls[i]);
		i++;
		values[i] = Int32GetDatum(slot->protocol);
		nulls[i++] = (slot->protocol == 0);
		values[i] = text_or_null(subscriber_state_name(slot->state), &nulls[i]);
		i++;
		values[i] = text_or_null(slot->watermark_sent, &nulls[i]);
		i++;
		values[i] = text_or_null(slot->watermark_acked, &nulls[i]);
		i++;
		values[i++] = Int64GetDatum(slot->messages_sent);
		values[i++] = Int64GetDatum(slot->messages_acked);
		values[i++] = Int64GetDatum(slot->backlog_bytes);
		values[i] = time_or_null(slot->connected_since, &nulls[i]);
		i++;
		nulls[i++] = true;		/* disconnected_at */
		nulls[i++] = true;		/* retained_until */
		i++;					/* retained_because: a connection is not retained */
		Assert(i == SUBSCRIBER_COLUMNS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	for (int s = 0; s < zs_shared->max_departed; s++)
	{
		ZsDepartedSubscriber *d = &zs_departed_entries()[s];
		int			i = 0;

		if (!zs_departed_is_retained(d, zs_shared->replica_version, now, zs_subscriber_retention_ms))
			continue;
		memset(nulls, true, sizeof(bool) * Max(natts, SUBSCRIBER_COLUMNS));
		values[i] = id_text(d->id, &nulls[i]);
		i += 2;					/* no address */
		values[i] = text_or_null(zs_subscriber_mode_name(d->mode), &nulls[i]);
		i += 2;					/* no protocol */
		values[i] = CStringGetTextDatum(d->restored ? "restored" : "departed");
		nulls[i] = false;
		i += 2;					/* nothing sent */
		values[i] = CStringGetTextDatum(d->watermark);
		nulls[i] = false;
		i += 5;					/* no messages, backlog, connection */
		values[i] = TimestampTzGetDatum(d->departed_at);
		nulls[i++] = false;
		values[i] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(d->departed_at,
																	zs_subscriber_retention_ms));
		nulls[i++] = false;
		values[i] = CStringGetTextDatum(retained_because(d));
		nulls[i++] = (natts == SUBSCRIBER_COLUMNS_0_2);
		Assert(i == SUBSCRIBER_COLUMNS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(zs_shared->lock);
	return (Datum) 0;
}

#define WORKER_COLUMNS 5

/*
 * zero_stream.workers(): one row per background worker with its pid, how
 * often it was restarted, and the error it last stopped on, so that a
 * worker failing and restarting in a loop is visible.
 */
Datum
zs_workers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ZsWorkerSlot slots[ZS_NUM_WORKERS];

	zs_require_shared_state();
	InitMaterializedSRF(fcinfo, 0);
	check_row_type(rsinfo->setDesc, WORKER_COLUMNS, "workers");
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	memcpy(slots, zs_shared->workers, sizeof(slots));
	LWLockRelease(zs_shared->lock);

	for (int k = 0; k < ZS_NUM_WORKERS; k++)
	{
		Datum		values[WORKER_COLUMNS];
		bool		nulls[WORKER_COLUMNS];
		int			i = 0;

		memset(nulls, 0, sizeof(nulls));
		values[i++] = CStringGetTextDatum(worker_name((ZsWorkerKind) k));
		values[i] = Int32GetDatum(slots[k].pid);
		nulls[i++] = (slots[k].pid == 0);
		values[i++] = Int64GetDatum(slots[k].starts > 0 ? (int64) slots[k].starts - 1 : 0);
		values[i] = text_or_null(slots[k].last_error, &nulls[i]);
		i++;
		values[i] = time_or_null(slots[k].last_error[0] ? slots[k].last_error_time : 0, &nulls[i]);
		i++;
		Assert(i == WORKER_COLUMNS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(zs_stream_publications);

/* zero_stream.stream_publications(): the publications the decoder streams */
Datum
zs_stream_publications(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(zs_publication_array(zs_publication_list()));
}

PG_FUNCTION_INFO_V1(zs_resync);

Datum
zs_resync(PG_FUNCTION_ARGS)
{
	int			pid;

	zs_require_shared_state();
	pid = zs_ask_decoder(ZS_ASK_RESYNC, NULL);
	ereport(NOTICE,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			 errmsg("zero_stream decoder (PID %d) will start a new lineage", pid),
			 errdetail("Subscribers of the current replicaVersion will be told to restore from a snapshot.")));
	PG_RETURN_VOID();
}
