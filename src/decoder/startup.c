/*-------------------------------------------------------------------------
 * startup.c
 *	  What the decoder checks and prepares before it takes its slot: the
 *	  server's settings, the session, the extension, the publications,
 *	  the change-log schema, the published schema's drift, the origin.
 *
 * Each step is its own transaction. The order is the worker's
 * (decoder_worker.c): DDL of our own (the default publication, Zero's
 * metadata) runs before our replication origin is set up, because a
 * transaction stamped with our origin is filtered out of the stream, and
 * with it the DDL capture's message.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_publication.h"	/* get_publication_oid on 15 */
#include "commands/extension.h"
#include "commands/publicationcmds.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"	/* get_publication_oid on 17+ */
#include "utils/memutils.h"

#include "changelog/changelog.h"
#include "compat/replication.h"
#include "decoder/startup.h"
#include "decoding/output_plugin.h"
#include "extension_version.h"
#include "guc.h"
#include "shmem.h"
#include "spi_xact.h"

void
zs_startup_check_server(void)
{
	if (wal_level < ZS_MIN_WAL_LEVEL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream requires wal_level = %s (it is \"%s\")",
						ZS_MIN_WAL_LEVEL_NAME, GetConfigOption("wal_level", false, false)),
				 errhint("Set wal_level = %s in postgresql.conf and restart the server.",
						 ZS_MIN_WAL_LEVEL_NAME)));
	if (max_replication_slots < 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream requires max_replication_slots > 0"),
				 errhint("Set max_replication_slots in postgresql.conf and restart the server.")));
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("zero_stream cannot decode on a standby")));
}

/* Session settings that make the text of every value canonical. */
void
zs_startup_session(void)
{
	zs_set_canonical_session("zero_stream decoder");
	zs_output_plugin_allow();
}

bool
zs_startup_extension_exists(void)
{
	bool		exists;

	StartTransactionCommand();
	exists = OidIsValid(get_extension_oid("zero_stream", true));
	CommitTransactionCommand();
	return exists;
}

/* The installed version of the extension's SQL objects, NULL without it. */
static char *
installed_version(void)
{
	char	   *version;
	char	   *copy;

	StartTransactionCommand();
	version = zs_installed_sql_version();
	copy = version ? MemoryContextStrdup(TopMemoryContext, version) : NULL;
	CommitTransactionCommand();
	return copy;
}

/*
 * Wait, without spinning, until CREATE EXTENSION zero_stream has run, and
 * its SQL objects are of a version this library writes the change log for
 * (extension_version.c): an older one that needs ALTER EXTENSION ... UPDATE
 * first, or a newer one, is said once in the log and in status(), and
 * waited out. An older one this library writes for is logged, and streamed.
 */
void
zs_startup_wait_for_extension(void)
{
	ZsDecoderState said = ZS_DECODER_STARTING;

	for (;;)
	{
		char	   *version = installed_version();
		ZsSqlFit	fit = zs_sql_fit(version);
		char	   *message = NULL;
		char	   *hint = NULL;
		ZsDecoderState waiting;

		if (version != NULL && zs_sql_fit_writable(fit))
		{
			if (fit == ZS_SQL_OLDER_COMPATIBLE)
				ereport(WARNING,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("%s", zs_sql_fit_message(version, fit)),
						 errdetail("The decoder streams: the change log of version %s is this library's.",
								   version),
						 errhint("%s", zs_sql_fit_hint(fit))));
			if (said != ZS_DECODER_STARTING)
				zs_set_last_error("");
			pfree(version);
			return;
		}
		waiting = version == NULL ? ZS_DECODER_WAITING_FOR_EXTENSION : ZS_DECODER_WAITING_FOR_UPDATE;
		if (said != waiting)
		{
			/* said once per state: the loop allocates nothing else */
			if (version == NULL)
				message = psprintf("extension \"zero_stream\" is not installed in database \"%s\"; run CREATE EXTENSION zero_stream there",
								   zs_database);
			else
			{
				message = zs_sql_fit_message(version, fit);
				hint = zs_sql_fit_hint(fit);
			}
			ereport(waiting == ZS_DECODER_WAITING_FOR_UPDATE ? WARNING : LOG,
					(errcode(waiting == ZS_DECODER_WAITING_FOR_UPDATE ?
							 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE : ERRCODE_UNDEFINED_OBJECT),
					 errmsg("%s", message),
					 hint ? errhint("%s", hint) : 0));
			{
				char	   *said_text = hint ? psprintf("%s. %s", message, hint) : pstrdup(message);

				zs_set_last_error(said_text);
				pfree(said_text);
			}
			zs_set_decoder_state(waiting);
			said = waiting;
			pfree(message);
			if (hint)
				pfree(hint);
		}
		if (version)
			pfree(version);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		zs_worker_check_interrupts();
	}
}

void
zs_startup_origin(void)
{
	char	   *name = zs_origin_name();
	ReplOriginId origin;

	StartTransactionCommand();
	origin = replorigin_by_name(name, true);
	if (origin == InvalidReplOriginId)
		origin = replorigin_create(name);
	CommitTransactionCommand();
	zs_replorigin_session_setup(origin);
	zs_set_xact_origin(origin);
	zs_own_origin = origin;
}

/*
 * The DDL capture announces every change of the published schema from the
 * event trigger, and remembers the last one it announced. A change made
 * without it (the trigger disabled, objects of a publication this version
 * streams for the first time, e.g. Zero's metadata on an existing change
 * log) is announced here, at start, as if an ALTER PUBLICATION had made it:
 * the stream gets its schema changes and backfills at this point.
 */
void
zs_startup_announce_schema_drift(void)
{
	bool		isnull;

	zs_spi_xact_begin(NULL);
	if (SPI_execute("SELECT zero_stream.announce_published_schema('ALTER PUBLICATION')", false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not compare the published schema with the DDL capture's")));
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(LOG,
				(errmsg("zero_stream: the published schema changed without the DDL capture (or its publications changed); announcing it in the stream")));
	zs_spi_xact_commit();
}

/* The configured publications must exist; the default one is created. */
void
zs_startup_publications(List *publications, bool is_default)
{
	ListCell   *lc;

	zs_spi_xact_begin(NULL);
	foreach(lc, publications)
	{
		char	   *name = (char *) lfirst(lc);

		if (OidIsValid(get_publication_oid(name, true)))
			continue;
		if (!is_default)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("publication \"%s\" named in zero_stream.publications does not exist in database \"%s\"",
							name, zs_database),
					 errhint("Create it (CREATE PUBLICATION %s FOR TABLES IN SCHEMA public), or change zero_stream.publications and restart.",
							 quote_identifier(name))));
		if (SPI_execute(psprintf("CREATE PUBLICATION %s FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true)",
								 quote_identifier(name)), false, 0) != SPI_OK_UTILITY)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("could not create publication \"%s\"", name)));
		ereport(LOG,
				(errmsg("zero_stream created publication \"%s\" FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true), as zero-cache does", name)));
	}
	zs_spi_xact_commit();
}

void
zs_startup_change_log(void)
{
	zs_spi_xact_begin(NULL);
	zs_changelog_ensure_schema();
	zs_spi_xact_commit();
}
