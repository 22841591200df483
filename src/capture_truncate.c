/*-------------------------------------------------------------------------
 * capture_truncate.c
 *	  The DDL capture's part for TRUNCATE: the partitions it empties under a
 *	  table published through its root.
 *
 * pgoutput sends no truncate of a partition published through its root (it
 * sends changes as the root's, and a TRUNCATE of one partition is not the
 * root's), so without this a TRUNCATE of a partition would leave its rows
 * on every replica for good. Event triggers do not fire for TRUNCATE; this
 * ProcessUtility hook runs before the command, in the streamed database.
 * When the statement truncates a partition, it takes the command's locks
 * in the command's order (each named table the caller may truncate, then
 * its own partitions, ACCESS EXCLUSIVE; a partition's ancestors ACCESS
 * SHARE before it, as the carry reads the root), so that no row changes
 * between the read and the command, and hands the tables, as the
 * extension's owner (a restricted operation), to
 * zero_stream.carry_truncated_partitions(): the rows' keys of the leaves
 * published through a root not itself truncated are carried as the root's
 * deletes, and a leaf over zero_stream.partition_carry_rows (or in a
 * transaction above READ COMMITTED) is listed as emptied, whose root the
 * decoder resets (decoding/partition_diff.c). A table the caller may not
 * truncate is left to the command's own error, and then nothing is carried.
 * With CASCADE, the tables it adds through foreign keys are locked and
 * carried as the command finds them. A table renamed while the hook waited
 * for its lock is looked up again, as the command itself does.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/heap.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type_d.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "capture_truncate.h"
#include "guc.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * zero_stream.carry_truncated_partitions(oid[]), if this SQL version has it
 * (looked up without the caller's privileges on the schema)
 */
static bool
carry_function_exists(void)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Oid			namespace = get_namespace_oid("zero_stream", true);

	return OidIsValid(namespace) &&
		SearchSysCacheExists3(PROCNAMEARGSNSP,
							  CStringGetDatum("carry_truncated_partitions"),
							  PointerGetDatum(buildoidvector(argtypes, 1)),
							  ObjectIdGetDatum(namespace));
}

/*
 * Lock relid as TRUNCATE does (ACCESS EXCLUSIVE), its partitioned
 * ancestors first, root first, ACCESS SHARE: the carry reads the root (its
 * replica identity, its publications), and a command that locks the root
 * then its partitions (TRUNCATE or ALTER of the root) must find it taken
 * before the partition, not after.
 */
static void
lock_with_ancestors(Oid relid)
{
	List	   *ancestors = get_rel_relispartition(relid) ? get_partition_ancestors(relid) : NIL;

	for (int i = list_length(ancestors) - 1; i >= 0; i--)
		LockRelationOid(list_nth_oid(ancestors, i), AccessShareLock);
	LockRelationOid(relid, AccessExclusiveLock);
}

/*
 * The table rv names, locked (lock_with_ancestors) once the name is found
 * to name the same table after the lock, as RangeVarGetRelidExtended does;
 * InvalidOid if it names none, or one the caller may not truncate (the
 * command then fails on its own).
 */
static Oid
lock_named(RangeVar *rv)
{
	for (;;)
	{
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (!OidIsValid(relid) ||
			pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK)
			return InvalidOid;
		lock_with_ancestors(relid);
		if (RangeVarGetRelid(rv, NoLock, true) == relid)
			return relid;
		/* renamed meanwhile: the name is another table's now */
		UnlockRelationOid(relid, AccessExclusiveLock);
	}
}

/*
 * The tables stmt truncates, locked as TRUNCATE locks them: each it names
 * (then its own partitions, unless ONLY), and with CASCADE the tables that
 * reference them by foreign key, round after round, as the command finds
 * them. Returns them (in the current memory context), or NIL if none is a
 * partition, or the command is to fail on its own (a table it names does
 * not exist or may not be truncated by the caller, or ONLY names a
 * partitioned table): then nothing is carried.
 */
static List *
lock_targets(TruncateStmt *stmt)
{
	ListCell   *lc;
	List	   *relids = NIL;
	bool		any_partition = false;

	foreach(lc, stmt->relations)
	{
		RangeVar   *rv = (RangeVar *) lfirst(lc);
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (!OidIsValid(relid) ||
			pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK ||
			(!rv->inh && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE))
			return NIL;
	}
	foreach(lc, stmt->relations)
	{
		RangeVar   *rv = (RangeVar *) lfirst(lc);
		Oid			relid = lock_named(rv);

		if (!OidIsValid(relid))
			return NIL;
		relids = list_append_unique_oid(relids, relid);
		if (rv->inh)
			relids = list_concat_unique_oid(relids,
											find_all_inheritors(relid, AccessExclusiveLock, NULL));
	}
	if (stmt->behavior == DROP_CASCADE)
	{
		for (;;)
		{
			List	   *referencing = heap_truncate_find_FKs(relids);

			if (referencing == NIL)
				break;
			foreach(lc, referencing)
			{
				lock_with_ancestors(lfirst_oid(lc));
				relids = lappend_oid(relids, lfirst_oid(lc));
			}
		}
	}
	foreach(lc, relids)
		any_partition |= get_rel_relispartition(lfirst_oid(lc));
	return any_partition ? relids : NIL;
}

/* The extension's owner, read from pg_extension (no SQL: no caller's operator) */
static Oid
extension_owner(void)
{
	Oid			extension = get_extension_oid("zero_stream", true);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			owner = InvalidOid;

	if (!OidIsValid(extension))
		return InvalidOid;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return owner;
}

/* Carry the rows of the partitions among relids empty, as the extension's owner */
static void
carry_truncated(List *relids)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		args[1];
	Datum	   *oids = palloc(sizeof(Datum) * list_length(relids));
	ListCell   *lc;
	Oid			owner = extension_owner();
	Oid			save_userid;
	int			save_sec_context;

	if (!OidIsValid(owner))
		return;
	foreach(lc, relids)
		oids[foreach_current_index(lc)] = ObjectIdGetDatum(lfirst_oid(lc));
	args[0] = PointerGetDatum(construct_array_builtin(oids, list_length(relids), OIDOID));
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	/* (an error aborts the transaction, which restores the user) */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT zero_stream.carry_truncated_partitions($1)",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("zero_stream.carry_truncated_partitions() failed")));
	SPI_finish();
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

static void
capture_truncate(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	/* the extension may exist in a database the decoder does not stream */
	if (IsA(parsetree, TruncateStmt) && !RecoveryInProgress() && zs_database != NULL &&
		IsTransactionState() && strcmp(get_database_name(MyDatabaseId), zs_database) == 0 &&
		carry_function_exists())
	{
		List	   *relids = lock_targets((TruncateStmt *) parsetree);

		if (relids != NIL)
			carry_truncated(relids);
	}
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

void
zs_capture_truncate_install_hook(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = capture_truncate;
}
