/*-------------------------------------------------------------------------
 * compat/executor.h
 *	  The executor, table and index calls of the change log's writer,
 *	  reader and purge whose arguments changed between PostgreSQL 15 and 19.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_EXECUTOR_H
#define ZS_COMPAT_EXECUTOR_H

#include "access/genam.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/bitmapset.h"
#include "utils/relcache.h"

/*
 * The range table of an EState that only inserts. 16 added the permission
 * infos (RTEPermissionInfo, checked by ExecCheckPermissions, which we do
 * not call: none); 18 added the relations left after pruning: all of them.
 */
static inline void
zs_exec_init_range_table(EState *estate, List *range_table)
{
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, range_table, NIL,
					   bms_add_range(NULL, 1, list_length(range_table)));
#elif PG_VERSION_NUM >= 160000
	ExecInitRangeTable(estate, range_table, NIL);
#else
	ExecInitRangeTable(estate, range_table);
#endif
}

/*
 * Index entries of a new row. 16 added onlySummarizing (only BRIN-like
 * indexes, for a HOT update): false, every index, as on 15. 19 turned the
 * three booleans into flags: none (not an update, duplicates are errors,
 * every index).
 */
static inline List *
zs_exec_insert_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot, EState *estate)
{
#if PG_VERSION_NUM >= 190000
	return ExecInsertIndexTuples(rri, estate, 0, slot, NIL, NULL);
#elif PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL, false);
#else
	return ExecInsertIndexTuples(rri, slot, estate, false, false, NULL, NIL);
#endif
}

/*
 * The primary key's index. 18 added deferrable_ok: false, an immediate key
 * only, which is what 15 to 17 return.
 */
static inline Oid
zs_relation_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

/*
 * An index scan; 18 added instrumentation (for EXPLAIN): none. 19 added
 * flags (ScanOptions hints): none, as on 18.
 */
static inline IndexScanDesc
zs_index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys)
{
#if PG_VERSION_NUM >= 190000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys, 0);
#elif PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

/*
 * Delete a row, waiting for a concurrent writer; not a move between
 * partitions. 19 replaced changingPart by options flags: none.
 */
static inline TM_Result
zs_table_tuple_delete(Relation rel, ItemPointer tid, CommandId cid, Snapshot snapshot,
					  TM_FailureData *tmfd)
{
#if PG_VERSION_NUM >= 190000
	return table_tuple_delete(rel, tid, cid, 0, snapshot, InvalidSnapshot, true, tmfd);
#else
	return table_tuple_delete(rel, tid, cid, snapshot, InvalidSnapshot, true, tmfd, false);
#endif
}

#endif							/* ZS_COMPAT_EXECUTOR_H */
