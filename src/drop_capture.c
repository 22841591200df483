/*-------------------------------------------------------------------------
 * drop_capture.c
 *	  The DDL capture's part that must run before a DROP TABLE: the
 *	  partitions it takes from a table published through its root.
 *
 * A partition attached or detached still exists when its command ends, so
 * the end-of-command capture (announce_published_schema) carries its rows.
 * A dropped one does not: its rows have to be read before the command
 * runs, at ddl_command_start, where an event trigger sees the command's
 * parse tree but no object yet. This C event trigger function names the
 * partitions the DROP TABLE targets, takes the locks DROP itself takes, in
 * its order (the parent, then the partition: RangeVarCallbackForDropRelation),
 * so that no row changes between the read and the drop, and hands them to
 * zero_stream.carry_dropped_partitions(), which carries the rows' keys as
 * the root's deletes and notes the partitions for the end of the command.
 * A partition it does not name (DROP SCHEMA ... CASCADE, a race with another
 * DROP) is not carried, and the decoder resets its root instead.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/partition.h"
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

#include "guc.h"

PG_FUNCTION_INFO_V1(zs_capture_drop_start);

Datum
zs_capture_drop_start(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	DropStmt   *drop;
	ListCell   *lc;
	Datum	   *oids;
	int			n = 0;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("zero_stream.capture_drop_start() is an event trigger function")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (trigdata->parsetree == NULL || !IsA(trigdata->parsetree, DropStmt))
		PG_RETURN_VOID();
	drop = (DropStmt *) trigdata->parsetree;
	/* the extension may exist in a database the decoder does not stream */
	if (drop->removeType != OBJECT_TABLE || zs_database == NULL ||
		strcmp(get_database_name(MyDatabaseId), zs_database) != 0)
		PG_RETURN_VOID();

	oids = palloc(sizeof(Datum) * Max(list_length(drop->objects), 1));
	foreach(lc, drop->objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);
		Oid			parent;

		if (!OidIsValid(relid) || !get_rel_relispartition(relid))
			continue;
		parent = get_partition_parent(relid, true);
		if (OidIsValid(parent))
			LockRelationOid(parent, AccessExclusiveLock);
		LockRelationOid(relid, AccessExclusiveLock);
		/* the name may have moved to another table meanwhile: the reset covers it */
		if (RangeVarGetRelid(rv, NoLock, true) != relid)
			continue;
		oids[n++] = ObjectIdGetDatum(relid);
	}
	if (n > 0)
	{
		Oid			argtypes[1] = {OIDARRAYOID};
		Datum		args[1];

		args[0] = PointerGetDatum(construct_array_builtin(oids, n, OIDOID));
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (SPI_execute_with_args("SELECT zero_stream.carry_dropped_partitions($1)",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_SELECT)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("zero_stream.carry_dropped_partitions() failed")));
		SPI_finish();
	}
	PG_RETURN_VOID();
}
