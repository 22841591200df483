/*-------------------------------------------------------------------------
 * compat/executor.h
 *	  The executor and index calls of the change log's writer and reader
 *	  whose arguments changed between PostgreSQL 15 and 18.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_EXECUTOR_H
#define ZS_COMPAT_EXECUTOR_H

#include "access/genam.h"
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
 * indexes, for a HOT update): false, every index, as on 15.
 */
static inline List *
zs_exec_insert_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot, EState *estate)
{
#if PG_VERSION_NUM >= 160000
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

/* An index scan; 18 added instrumentation (for EXPLAIN): none. */
static inline IndexScanDesc
zs_index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys, int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

#endif							/* ZS_COMPAT_EXECUTOR_H */
