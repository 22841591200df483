/*-------------------------------------------------------------------------
 * changelog_insert.c
 *	  Appending rows to changeLog with the table AM's multi-insert.
 *
 * The decoder's stores are most of its time. An SPI
 * `INSERT ... SELECT unnest(...)` materializes every batch twice (the
 * parameter arrays, then the function scan's tuplestore) and writes one
 * heap WAL record per row. Here a batch goes straight to
 * table_multi_insert, as COPY FROM does: one WAL record per heap page,
 * then the index entries row by row (the primary key's uniqueness is
 * checked there, as for any insert).
 *
 * Used only while changeLog has exactly the shape changelog.c creates (the
 * four columns, no triggers, rules, check constraints or generated
 * columns, a plain table): anything else (a table someone altered) is
 * written through SPI, where PostgreSQL applies all of it.
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
	TupleDesc	desc;			/* a copy of rel's, not reference-counted */
	ResultRelInfo *rri;
	EState	   *estate;
	BulkInsertState bistate;
	TupleTableSlot **slots;
	int			nslots;
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
	{"change", JSONOID},
	{"precommit", TEXTOID},
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

	relid = get_relname_relid("changeLog", get_namespace_oid(schema, false));
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

	/*
	 * The slots share a copy of the descriptor that is not
	 * reference-counted: a batch's slots each pinning the relation's own
	 * would register the same pointer thousands of times with the
	 * transaction's resource owner, whose hash probes linearly past equal
	 * entries (quadratic in the batch).
	 */
	inserter->desc = CreateTupleDescCopy(RelationGetDescr(rel));
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
	MemoryContextSwitchTo(old);
	return true;
}

void
zs_changelog_insert_rows(int n, const Datum *watermarks, const Datum *positions,
						 const Datum *changes, const Datum *precommits,
						 const bool *precommit_nulls)
{
	MemoryContext old;
	EState	   *estate;

	Assert(inserter != NULL);
	estate = inserter->estate;
	old = MemoryContextSwitchTo(inserter->context);
	if (inserter->nslots < n)
	{
		inserter->slots = inserter->slots == NULL ?
			palloc(sizeof(TupleTableSlot *) * n) :
			repalloc(inserter->slots, sizeof(TupleTableSlot *) * n);
		while (inserter->nslots < n)
			inserter->slots[inserter->nslots++] =
				MakeSingleTupleTableSlot(inserter->desc, table_slot_callbacks(inserter->rel));
	}
	for (int i = 0; i < n; i++)
	{
		TupleTableSlot *slot = inserter->slots[i];

		ExecClearTuple(slot);
		slot->tts_values[0] = watermarks[i];
		slot->tts_values[1] = positions[i];
		slot->tts_values[2] = changes[i];
		slot->tts_values[3] = precommits[i];
		slot->tts_isnull[0] = false;
		slot->tts_isnull[1] = false;
		slot->tts_isnull[2] = false;
		slot->tts_isnull[3] = precommit_nulls[i];
		ExecStoreVirtualTuple(slot);
	}
	/* heap pages first (one WAL record each), then each row's index entries */
	MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
	table_multi_insert(inserter->rel, inserter->slots, n, estate->es_output_cid, 0,
					   inserter->bistate);
	for (int i = 0; i < n; i++)
	{
		List	   *recheck;

		recheck = zs_exec_insert_index_tuples(inserter->rri, inserter->slots[i], estate);
		list_free(recheck);
		ExecClearTuple(inserter->slots[i]);
	}
	MemoryContextSwitchTo(old);
	ResetPerTupleExprContext(estate);
	/* later statements of this transaction see the rows */
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
	for (int i = 0; i < inserter->nslots; i++)
		ExecDropSingleTupleTableSlot(inserter->slots[i]);
	MemoryContextDelete(inserter->context);
	inserter = NULL;
}
