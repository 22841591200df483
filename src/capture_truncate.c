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
 * its own partitions, ACCESS EXCLUSIVE), so that no row changes between
 * the read and the command, and hands the tables, as the extension's owner, to
 * zero_stream.carry_truncated_partitions(): the rows' keys of the leaves
 * published through a root not itself truncated are carried as the root's
 * deletes, and a leaf over zero_stream.partition_carry_rows (or in a
 * transaction above READ COMMITTED) is listed as emptied, whose root the
 * decoder resets (decoding/partition_diff.c). A table the caller may not
 * truncate is left to the command's own error, and then nothing is locked.
 * With CASCADE, the tables it adds through foreign keys are locked and
 * carried as the command finds them.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type_d.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
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
 * The tables stmt truncates, locked as TRUNCATE locks them: each it names
 * (then its own partitions, unless ONLY), and with CASCADE the tables that
 * reference them by foreign key, round after round, as the command finds
 * them. Returns them (in the current memory context), or NIL if none is a
 * partition or the caller may not truncate one it names (then nothing is
 * locked: the command fails on its own).
 */
static List *
lock_targets(TruncateStmt *stmt)
{
	ListCell   *lc;
	List	   *named = NIL;
	List	   *relids = NIL;
	bool		any_partition = false;

	foreach(lc, stmt->relations)
	{
		Oid			relid = RangeVarGetRelid((RangeVar *) lfirst(lc), NoLock, true);

		if (!OidIsValid(relid) ||
			pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK)
			return NIL;
		named = lappend_oid(named, relid);
	}
	foreach(lc, stmt->relations)
	{
		RangeVar   *rv = (RangeVar *) lfirst(lc);
		Oid			relid = list_nth_oid(named, foreach_current_index(lc));

		LockRelationOid(relid, AccessExclusiveLock);
		/* the name may have moved to another table meanwhile: the reset covers it */
		if (RangeVarGetRelid(rv, NoLock, true) != relid)
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
				LockRelationOid(lfirst_oid(lc), AccessExclusiveLock);
				relids = lappend_oid(relids, lfirst_oid(lc));
			}
		}
	}
	foreach(lc, relids)
		any_partition |= get_rel_relispartition(lfirst_oid(lc));
	return any_partition ? relids : NIL;
}

/* Carry the rows of the partitions among relids empty, as the extension's owner */
static void
carry_truncated(List *relids)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		args[1];
	Datum	   *oids = palloc(sizeof(Datum) * list_length(relids));
	ListCell   *lc;
	Oid			owner;
	bool		isnull;
	Oid			save_userid;
	int			save_sec_context;

	foreach(lc, relids)
		oids[foreach_current_index(lc)] = ObjectIdGetDatum(lfirst_oid(lc));
	args[0] = PointerGetDatum(construct_array_builtin(oids, list_length(relids), OIDOID));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT extowner FROM pg_catalog.pg_extension WHERE extname = 'zero_stream'",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
	{
		SPI_finish();
		return;
	}
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	/* (an error aborts the transaction, which restores the user) */
	if (SPI_execute_with_args("SELECT zero_stream.carry_truncated_partitions($1)",
							  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("zero_stream.carry_truncated_partitions() failed")));
	SetUserIdAndSecContext(save_userid, save_sec_context);
	SPI_finish();
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
