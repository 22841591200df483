/*-------------------------------------------------------------------------
 * capture_leaving.c
 *	  The DDL capture's part that must run before the command: the
 *	  partitions a DROP TABLE or an ALTER TABLE ... DETACH PARTITION ...
 *	  CONCURRENTLY takes from a table published through its root.
 *
 * A partition attached or detached in one transaction still exists when
 * its command ends, so the end-of-command capture
 * (announce_published_schema) carries its rows. A dropped one does not:
 * its rows have to be read before the command runs, at ddl_command_start,
 * where an event trigger sees the command's parse tree but no object yet.
 * A partition detached CONCURRENTLY leaves the root for new transactions
 * when the command's first transaction commits, and what is written to it
 * afterwards no longer reaches the stream as the root's, so its rows are
 * read there too, as they are at that commit.
 *
 * This C event trigger function names those partitions (only those its
 * caller owns: it runs as the extension's owner, and DROP checks ownership
 * before it locks), takes locks in the command's own order so that no row
 * changes between the read and the command (DROP: the parent, then the
 * partition and its own partitions, ACCESS EXCLUSIVE as DROP takes them;
 * DETACH CONCURRENTLY: the parent SHARE UPDATE EXCLUSIVE as the command
 * takes it, then the partition and its own partitions SHARE, which holds
 * writers back until the first transaction commits), and hands them to
 * zero_stream.carry_leaving_partitions(), which carries the rows' keys as
 * the root's deletes and notes the partitions for the end of the command
 * (for DETACH CONCURRENTLY, whose end is in its second transaction, in the
 * session). A partition it does not name (DROP SCHEMA ... CASCADE, one the
 * caller may drop as the schema's owner, a race with another DROP) is not
 * carried, and the decoder resets its root instead.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type_d.h"
#include "commands/dbcommands.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "compat/acl.h"
#include "guc.h"

PG_FUNCTION_INFO_V1(zs_capture_leaving_partitions);

/*
 * The partition rv names, locked parent_lock then lock (with its own
 * partitions), if it is one its caller owns; else InvalidOid.
 */
static Oid
lock_partition(RangeVar *rv, LOCKMODE parent_lock, LOCKMODE lock)
{
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	Oid			parent;

	if (!OidIsValid(relid) || !get_rel_relispartition(relid) ||
		!zs_relation_ownercheck(relid, GetOuterUserId()))
		return InvalidOid;
	parent = get_partition_parent(relid, true);
	if (OidIsValid(parent))
		LockRelationOid(parent, parent_lock);
	LockRelationOid(relid, lock);
	/* the name may have moved to another table meanwhile: the reset covers it */
	if (RangeVarGetRelid(rv, NoLock, true) != relid)
		return InvalidOid;
	(void) find_all_inheritors(relid, lock, NULL);
	return relid;
}

Datum
zs_capture_leaving_partitions(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *parsetree;
	ListCell   *lc;
	Datum	   *oids = NULL;
	int			n = 0;
	bool		session = false;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zero_stream.capture_leaving_partitions() is an event trigger function")));
	trigdata = (EventTriggerData *) fcinfo->context;
	parsetree = trigdata->parsetree;
	/* the extension may exist in a database the decoder does not stream */
	if (parsetree == NULL || zs_database == NULL ||
		strcmp(get_database_name(MyDatabaseId), zs_database) != 0)
		PG_RETURN_VOID();

	if (IsA(parsetree, DropStmt) && ((DropStmt *) parsetree)->removeType == OBJECT_TABLE)
	{
		DropStmt   *drop = (DropStmt *) parsetree;

		oids = palloc(sizeof(Datum) * Max(list_length(drop->objects), 1));
		foreach(lc, drop->objects)
		{
			Oid			relid = lock_partition(makeRangeVarFromNameList((List *) lfirst(lc)),
											   AccessExclusiveLock, AccessExclusiveLock);

			if (OidIsValid(relid))
				oids[n++] = ObjectIdGetDatum(relid);
		}
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *alter = (AlterTableStmt *) parsetree;

		oids = palloc(sizeof(Datum) * Max(list_length(alter->cmds), 1));
		foreach(lc, alter->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
			Oid			relid;

			if (cmd->subtype != AT_DetachPartition || cmd->def == NULL ||
				!IsA(cmd->def, PartitionCmd) || !((PartitionCmd *) cmd->def)->concurrent)
				continue;
			relid = lock_partition(((PartitionCmd *) cmd->def)->name,
								   ShareUpdateExclusiveLock, ShareLock);
			if (OidIsValid(relid))
			{
				oids[n++] = ObjectIdGetDatum(relid);
				session = true;
			}
		}
	}
	if (n > 0)
	{
		Oid			argtypes[2] = {OIDARRAYOID, BOOLOID};
		Datum		args[2];

		args[0] = PointerGetDatum(construct_array_builtin(oids, n, OIDOID));
		args[1] = BoolGetDatum(session);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute_with_args("SELECT zero_stream.carry_leaving_partitions($1, $2)",
								  2, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("zero_stream.carry_leaving_partitions() failed")));
		SPI_finish();
	}
	PG_RETURN_VOID();
}
