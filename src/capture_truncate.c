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
 * When the statement names a partition, it takes the command's locks in
 * the command's order (each named table the caller may truncate, then its
 * own partitions, ACCESS EXCLUSIVE), so that no row changes between the
 * read and the command, and hands the tables, as the extension's owner, to
 * zero_stream.carry_truncated_partitions(): the rows' keys of the leaves
 * published through a root not itself truncated are carried as the root's
 * deletes, and a leaf over zero_stream.partition_carry_rows (or in a
 * transaction above READ COMMITTED) is listed as emptied, whose root the
 * decoder resets (decoding/partition_diff.c). A table the caller may not
 * truncate is left to the command's own error, and then nothing is locked.
 * Tables a TRUNCATE ... CASCADE adds through foreign keys are not carried.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
 * The tables stmt names, locked as TRUNCATE locks them, in *oids (palloc'd);
 * returns how many, or 0 if none is a partition or the caller may not
 * truncate one of them (then nothing is locked).
 */
static int
lock_targets(TruncateStmt *stmt, Datum **oids)
{
	ListCell   *lc;
	int			n = 0;
	bool		any_partition = false;
	Oid		   *relids = palloc(sizeof(Oid) * Max(list_length(stmt->relations), 1));

	foreach(lc, stmt->relations)
	{
		Oid			relid = RangeVarGetRelid((RangeVar *) lfirst(lc), NoLock, true);

		if (!OidIsValid(relid) ||
			pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK)
			return 0;
		any_partition |= get_rel_relispartition(relid);
		relids[n++] = relid;
	}
	if (!any_partition)
		return 0;
	*oids = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		RangeVar   *rv = (RangeVar *) list_nth(stmt->relations, i);

		LockRelationOid(relids[i], AccessExclusiveLock);
		/* the name may have moved to another table meanwhile: the reset covers it */
		if (RangeVarGetRelid(rv, NoLock, true) != relids[i])
			return 0;
		if (rv->inh)
			(void) find_all_inheritors(relids[i], AccessExclusiveLock, NULL);
		(*oids)[i] = ObjectIdGetDatum(relids[i]);
	}
	return n;
}

/* Carry the rows of the partitions oids[0 .. n - 1] empty, as the extension's owner */
static void
carry_truncated(Datum *oids, int n)
{
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		args[1];
	Oid			owner;
	bool		isnull;
	Oid			save_userid;
	int			save_sec_context;

	args[0] = PointerGetDatum(construct_array_builtin(oids, n, OIDOID));
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
		Datum	   *oids = NULL;
		int			n = lock_targets((TruncateStmt *) parsetree, &oids);

		if (n > 0)
			carry_truncated(oids, n);
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
