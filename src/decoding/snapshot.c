/*-------------------------------------------------------------------------
 * snapshot.c
 *	  A consistent snapshot of the published tables from an ephemeral
 *	  logical slot, and the published schema read in it.
 *
 * The walsender's CREATE_REPLICATION_SLOT ... USE_SNAPSHOT, in this
 * process: the decoder's lineage starts on one (its initial copy), and the
 * backfill worker copies a backfilled table's rows on one. The snapshot
 * holds exactly the transactions that committed before the slot's
 * consistent point, so the rows copied and the changes decoded after that
 * point meet without a gap or an overlap (docs/pg-internals.md §3).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlogutils.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "replication/logical.h"
#include "replication/slot.h"
#include "replication/snapbuild.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "compat/replication.h"
#include "decoding/output_plugin.h"
#include "decoding/snapshot.h"
#include "guc.h"

static XLogReaderRoutine wal_reader_routine = {
	.page_read = read_local_xlog_page,
	.segment_open = wal_segment_open,
	.segment_close = wal_segment_close,
};

LogicalDecodingContext *
zs_snapshot_slot_create(const char *name, XLogRecPtr *consistent)
{
	LogicalDecodingContext *ctx;
	MemoryContext old;

	zs_replication_slot_create(name, RS_EPHEMERAL);

	/*
	 * Inside a transaction, so this backend's xmin keeps counting (fact 3).
	 * need_full_snapshot holds back the data xmin too, until the slot is
	 * released, so the snapshot taken from it stays valid.
	 */
	StartTransactionCommand();
	/* the context and its WAL reader's buffers outlive this transaction */
	old = MemoryContextSwitchTo(TopMemoryContext);
	ctx = zs_create_init_decoding_context(ZS_OUTPUT_PLUGIN_NAME, &wal_reader_routine);
	DecodingContextFindStartpoint(ctx);
	MemoryContextSwitchTo(old);
	*consistent = MyReplicationSlot->data.confirmed_flush;
	CommitTransactionCommand();
	return ctx;
}

void
zs_snapshot_begin(LogicalDecodingContext *ctx)
{
	Snapshot	snap;

	StartTransactionCommand();
	XactIsoLevel = XACT_REPEATABLE_READ;
	snap = SnapBuildInitialSnapshot(ctx->snapshot_builder);
	RestoreTransactionSnapshot(snap, MyProc);
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

char *
zs_snapshot_published_schema(List *publications)
{
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1] = {zs_publication_array(publications)};
	if (SPI_execute_with_args("SELECT zero_stream.published_schema($1)::text", 1, types, values,
							  NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the published schema")));
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}
