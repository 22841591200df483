/*-------------------------------------------------------------------------
 * standby_snapshot.c
 *	  The primary's side of a standby's backup replica: where the standby
 *	  is held in the purge floor, and copies of the primary's backup
 *	  replica for it, through SQL.
 *
 * A standby keeps its own backup replica current from the replicated
 * change log (replicator/standby_restore.c), but the primary purges that
 * log: it must know where the standby's replica is, and a standby whose
 * replica is missing or fell behind the purge floor needs a copy of the
 * primary's. The standby reaches the primary the way PostgreSQL's slot
 * sync worker does, with a connection made from primary_conninfo, and
 * calls:
 *   zero_stream.hold_backup_position(standby, replicaVersion, watermark):
 *     the standby's replica is at watermark; the primary keeps it as a
 *     departed subscriber "standby <name>" of mode backup, so the purge
 *     floor holds it for zero_stream.subscriber_retention after the last
 *     report (the standby reports every few seconds), across restarts too
 *     (the decoder saves departed entries in subscriber_positions);
 *   zero_stream.backup_replica_copy(standby, replicaVersion): a consistent
 *     copy of the backup replica (backup_copy.c, as the server's
 *     snapshots) while it follows that lineage, held open by this
 *     session: its size, replicaVersion and stateVersion; the standby is
 *     held at that stateVersion from then on;
 *   zero_stream.backup_replica_read(offset, length): the copy's bytes.
 * The session's copy is an open descriptor of a removed file: it goes once
 * its last byte is read, with the next copy, or with the session.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/htup_details.h"
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include "codec/watermark.h"
#include "guc.h"
#include "replica/backup_copy.h"
#include "replica/backup_file.h"
#include "server/standby_snapshot.h"
#include "shmem.h"
#include "standby_hold.h"

PG_FUNCTION_INFO_V1(zs_hold_backup_position);
PG_FUNCTION_INFO_V1(zs_backup_replica_copy);
PG_FUNCTION_INFO_V1(zs_backup_replica_read);

/* pages copied per step: interrupts are checked between steps */
#define COPY_STEP_PAGES 1024

/* the largest read: a bytea must fit in a message of the connection */
#define MAX_READ_BYTES (64 * 1024 * 1024)

/* this session's copy */
static int	copy_fd = -1;
static off_t copy_size = 0;

static void
check_name(const char *what, const char *value, size_t max)
{
	if (value[0] == '\0' || strlen(value) >= max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %zu bytes long", what, max - 1)));
}

static void
check_watermark(const char *what, const char *value)
{
	uint64_t	decoded;

	if (!zs_watermark_decode(value, &decoded))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" is not a watermark", what, value)));
}

/* A standby's request, checked: this server is a primary, the input sane. */
static void
check_request(const char *standby, const char *replica_version)
{
	zs_require_shared_state();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is a standby: a standby's backup replica is held by the primary"),
				 errhint("Point primary_conninfo of the standby at the primary.")));
	check_name("standby", standby, ZS_NAME_LEN - strlen(ZS_STANDBY_HOLD_PREFIX));
	check_watermark("replicaVersion", replica_version);
}

static void
hold(const char *standby, const char *replica_version, const char *watermark)
{
	char		id[ZS_NAME_LEN];

	check_request(standby, replica_version);
	check_watermark("watermark", watermark);
	snprintf(id, sizeof(id), ZS_STANDBY_HOLD_PREFIX "%s", standby);
	zs_record_departed_subscriber(id, ZS_SUB_MODE_BACKUP, replica_version, watermark);
}

Datum
zs_hold_backup_position(PG_FUNCTION_ARGS)
{
	hold(text_to_cstring(PG_GETARG_TEXT_PP(0)), text_to_cstring(PG_GETARG_TEXT_PP(1)),
		 text_to_cstring(PG_GETARG_TEXT_PP(2)));
	PG_RETURN_VOID();
}

static void
close_copy(void)
{
	if (copy_fd >= 0)
	{
		close(copy_fd);
		ReleaseExternalFD();
	}
	copy_fd = -1;
	copy_size = 0;
}

Datum
zs_backup_replica_copy(PG_FUNCTION_ARGS)
{
	const char *standby = text_to_cstring(PG_GETARG_TEXT_PP(0));
	const char *lineage = text_to_cstring(PG_GETARG_TEXT_PP(1));
	TupleDesc	tupdesc;
	bool		following;
	char		log_version[ZS_WATERMARK_MAXLEN];
	ZsBackupCopy *copy;
	char	   *error = NULL;
	volatile int step_rc = 0;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int			rc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	check_request(standby, lineage);
	if (zs_replica_file_path() == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server keeps no backup replica (zero_stream.replica_file is empty)")));
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	following = zs_shared->backup_state == ZS_BACKUP_FOLLOWING;
	strlcpy(log_version, zs_shared->replica_version, sizeof(log_version));
	LWLockRelease(zs_shared->lock);
	/* a copy of another lineage would only be made again and again */
	if (!following || strcmp(log_version, lineage) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the backup replica does not follow the change log of replicaVersion %s (%s)",
						lineage, !following ? "see zero_stream.status().backup_state" :
						psprintf("the change log is of replicaVersion %s", log_version))));
	close_copy();

	copy = zs_backup_copy_start(&error);
	if (copy == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not copy the backup replica: %s", error)));
	/* the copy's SQLite handles and file are not PostgreSQL resources */
	PG_TRY();
	{
		while ((step_rc = zs_backup_copy_step(copy, COPY_STEP_PAGES, &error)) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		zs_backup_copy_abort(copy);
		PG_RE_THROW();
	}
	PG_END_TRY();
	rc = step_rc;
	if (rc < 0)
	{
		zs_backup_copy_abort(copy);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not copy the backup replica: %s", error)));
	}
	AcquireExternalFD();
	copy_fd = zs_backup_copy_finish(copy, &copy_size, replica_version, watermark, &error);
	if (copy_fd < 0)
	{
		ReleaseExternalFD();
		copy_fd = -1;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not copy the backup replica: %s", error)));
	}
	if (strcmp(replica_version, lineage) != 0)
	{
		close_copy();
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the backup replica is of replicaVersion %s, not %s", replica_version, lineage)));
	}
	/* from now on the log keeps what the standby needs after the copy */
	hold(standby, replica_version, watermark);
	ereport(LOG,
			(errmsg("copied the backup replica of replicaVersion %s at %s (" INT64_FORMAT " bytes) for standby \"%s\"",
					replica_version, watermark, (int64) copy_size, standby)));

	values[0] = Int64GetDatum((int64) copy_size);
	values[1] = CStringGetTextDatum(replica_version);
	values[2] = CStringGetTextDatum(watermark);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

Datum
zs_backup_replica_read(PG_FUNCTION_ARGS)
{
	int64		offset = PG_GETARG_INT64(0);
	int32		length = PG_GETARG_INT32(1);
	bytea	   *result;
	Size		done = 0;

	if (copy_fd < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no copy of the backup replica is open in this session"),
				 errhint("Call zero_stream.backup_replica_copy() first.")));
	if (offset < 0 || length < 0 || length > MAX_READ_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("offset must be >= 0 and length between 0 and %d", MAX_READ_BYTES)));
	if (offset >= (int64) copy_size)
		length = 0;
	else
		length = (int32) Min((int64) length, (int64) copy_size - offset);
	result = (bytea *) palloc(VARHDRSZ + length);
	while (done < (Size) length)
	{
		ssize_t		n = pread(copy_fd, VARDATA(result) + done, length - done, offset + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read the copy of the backup replica at " INT64_FORMAT ": %m",
							(int64) (offset + done))));
		done += n;
	}
	SET_VARSIZE(result, VARHDRSZ + length);
	/* read to its end: the copy's space goes back */
	if (offset + length >= (int64) copy_size)
		close_copy();
	PG_RETURN_BYTEA_P(result);
}
