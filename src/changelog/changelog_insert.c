/*-------------------------------------------------------------------------
 * changelog_insert.c
 *	  Appending chunks to changeLogChunks with the table AM.
 *
 * The decoder's stores are most of its time. An SPI INSERT plans,
 * projects and copies each chunk (a compressed value of up to
 * changelog_chunk_size of changes); here a chunk goes straight to
 * table_tuple_insert (which moves a large value out of line, as any
 * insert does), then its primary-key entry, whose uniqueness is checked
 * there.
 *
 * Used only while changeLogChunks has exactly the shape changelog.c
 * creates (its seven columns, no triggers, rules, check constraints or
 * generated columns, a plain table): anything else (a table someone
 * altered) is written through SPI, where PostgreSQL applies all of it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "changelog/changelog_insert.h"
#include "compat/executor.h"

typedef struct ChangelogInserter
{
	MemoryContext context;		/* the transaction's: all of the below */
	Relation	rel;
	ResultRelInfo *rri;
	EState	   *estate;
	BulkInsertState bistate;
	TupleTableSlot *slot;
} ChangelogInserter;

/* the open transaction's, in its memory: NULL when none is open */
static ChangelogInserter *inserter = NULL;

static const struct
{
	const char *name;
	Oid			type;
}			expected_columns[] = {
	{"watermark", TEXTOID},
	{"pos", INT8OID},
	{"firstWatermark", TEXTOID},
	{"firstPos", INT8OID},
	{"rows", INT4OID},
	{"size", INT4OID},
	{"chunk", BYTEAOID},
};

/* Is rel exactly the table changelog.c creates, with nothing that fires on insert? */
static bool
plain_changelog(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL ||
		rel->rd_rel->relhasrules || rel->rd_rel->relrowsecurity ||
		desc->natts != (int) lengthof(expected_columns))
		return false;
	if (desc->constr && (desc->constr->num_check > 0 || desc->constr->has_generated_stored))
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->attgenerated ||
			att->atttypid != expected_columns[i].type ||
			strcmp(NameStr(att->attname), expected_columns[i].name) != 0)
			return false;
	}
	return true;
}

bool
zs_changelog_insert_open(const char *schema)
{
	Oid			relid;
	Relation	rel;
	MemoryContext old;
	RangeTblEntry *rte;

	/* a previous transaction's inserter went with its memory and locks */
	inserter = NULL;

	relid = get_relname_relid("changeLogChunks", get_namespace_oid(schema, false));
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, RowExclusiveLock);
	if (!plain_changelog(rel))
	{
		table_close(rel, RowExclusiveLock);
		return false;
	}

	old = MemoryContextSwitchTo(CurTransactionContext);
	inserter = palloc0(sizeof(ChangelogInserter));
	inserter->context = AllocSetContextCreate(CurTransactionContext,
											  "zero_stream changelog insert",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(inserter->context);
	inserter->rel = rel;

	inserter->estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	zs_exec_init_range_table(inserter->estate, list_make1(rte));
	inserter->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(inserter->rri, rel, 1, NULL, 0);
	ExecOpenIndices(inserter->rri, false);
	inserter->estate->es_output_cid = GetCurrentCommandId(true);
	inserter->bistate = GetBulkInsertState();
	inserter->slot = table_slot_create(rel, NULL);
	MemoryContextSwitchTo(old);
	return true;
}

void
zs_changelog_insert_chunk(const Datum *values)
{
	MemoryContext old;
	EState	   *estate;
	TupleTableSlot *slot;
	List	   *recheck;

	Assert(inserter != NULL);
	estate = inserter->estate;
	slot = inserter->slot;
	ExecClearTuple(slot);
	for (int i = 0; i < (int) lengthof(expected_columns); i++)
	{
		slot->tts_values[i] = values[i];
		slot->tts_isnull[i] = false;
	}
	ExecStoreVirtualTuple(slot);
	old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
	table_tuple_insert(inserter->rel, slot, estate->es_output_cid, 0, inserter->bistate);
	recheck = zs_exec_insert_index_tuples(inserter->rri, slot, estate);
	list_free(recheck);
	ExecClearTuple(slot);
	MemoryContextSwitchTo(old);
	ResetPerTupleExprContext(estate);
	/* later statements of this transaction see the chunk */
	CommandCounterIncrement();
	inserter->estate->es_output_cid = GetCurrentCommandId(true);
}

void
zs_changelog_insert_close(void)
{
	if (inserter == NULL)
		return;
	FreeBulkInsertState(inserter->bistate);
	table_finish_bulk_insert(inserter->rel, 0);
	ExecCloseIndices(inserter->rri);
	FreeExecutorState(inserter->estate);
	table_close(inserter->rel, NoLock);
	ExecDropSingleTupleTableSlot(inserter->slot);
	MemoryContextDelete(inserter->context);
	inserter = NULL;
}
