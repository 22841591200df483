/*-------------------------------------------------------------------------
 * extension_version.c
 *	  Which versions of zero_stream's SQL objects this library can run
 *	  with, and what an operator is told when they differ.
 *
 * The library (the .so the postmaster preloads) and the SQL objects
 * (CREATE EXTENSION, ALTER EXTENSION ... UPDATE) are installed apart: a new
 * package replaces the library at the next restart, the SQL stays where it
 * was until someone runs ALTER EXTENSION zero_stream UPDATE. So the library
 * knows every SQL version it was released after and whether it writes
 * that version's change log as its own:
 *
 * - the current version: nothing to say;
 * - an older version whose change log tables are this version's (its
 *   update adds or changes only functions): the decoder streams, and
 *   logs that an update is available;
 * - an older version whose update changes what the decoder writes: the
 *   decoder waits, writing nothing, until ALTER EXTENSION ... UPDATE;
 * - any other version (a newer SQL, installed with a newer library that
 *   this server has not loaded yet): the decoder waits too, and never
 *   writes a log it does not understand.
 *
 * Every release that changes the SQL adds its update script and a line
 * to known_versions below (CONTRIBUTING in docs/architecture.md).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifndef FRONTEND
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_extension.h"
#include "catalog/indexing.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#endif

#include "extension_version.h"

typedef struct KnownVersion
{
	const char *version;
	bool		writable;		/* does this library write its change log? */
} KnownVersion;

/* every SQL version before this library's, oldest first */
static const KnownVersion known_versions[] = {
	/* 0.2.0 added metrics() and status()'s versions; the log is the same */
	{"0.1.0", true},
	/* 0.3.0 added subscribers().retained_because; the log is the same */
	{"0.2.0", true},
	/*
	 * 0.4.0 added status()'s chunk figures; its decoder converts the log
	 * into chunks, which needs no SQL object of the extension
	 */
	{"0.3.0", true},
	/*
	 * 0.4.1 announces DDL where 19 decodes at wal_level = replica; the log
	 * is the same
	 */
	{"0.4.0", true},
	/*
	 * 0.5.0 carries the rows of partitions that join or leave a root; its
	 * decoder reads 0.4.1's capture as before, and the log is the same
	 */
	{"0.4.1", true},
	/*
	 * 0.5.1 signs the capture's messages; its decoder takes 0.5.0's
	 * unsigned ones where the stream has no capture key, and the log is
	 * the same
	 */
	{"0.5.0", true},
};

ZsSqlFit
zs_sql_fit(const char *installed)
{
	if (installed == NULL)
		return ZS_SQL_NOT_INSTALLED;
	if (strcmp(installed, ZS_LIBRARY_VERSION) == 0)
		return ZS_SQL_CURRENT;
	for (int i = 0; i < lengthof(known_versions); i++)
		if (strcmp(installed, known_versions[i].version) == 0)
			return known_versions[i].writable ? ZS_SQL_OLDER_COMPATIBLE : ZS_SQL_OLDER_INCOMPATIBLE;
	return ZS_SQL_UNKNOWN;
}

bool
zs_sql_fit_writable(ZsSqlFit fit)
{
	return fit == ZS_SQL_CURRENT || fit == ZS_SQL_OLDER_COMPATIBLE;
}

char *
zs_sql_fit_message(const char *installed, ZsSqlFit fit)
{
	switch (fit)
	{
		case ZS_SQL_CURRENT:
			return NULL;
		case ZS_SQL_OLDER_COMPATIBLE:
			return psprintf("the zero_stream library is version %s, but the extension's SQL objects are still version %s",
							ZS_LIBRARY_VERSION, installed);
		case ZS_SQL_OLDER_INCOMPATIBLE:
			return psprintf("the zero_stream library (version %s) cannot write the change log of the extension's SQL objects of version %s: the decoder waits",
							ZS_LIBRARY_VERSION, installed);
		case ZS_SQL_UNKNOWN:
			return psprintf("the extension's SQL objects are version %s, which this zero_stream library (version %s) does not know: the decoder waits",
							installed, ZS_LIBRARY_VERSION);
		case ZS_SQL_NOT_INSTALLED:
			return psprintf("extension \"zero_stream\" is not installed in this database");
	}
	return NULL;
}

char *
zs_sql_fit_hint(ZsSqlFit fit)
{
	switch (fit)
	{
		case ZS_SQL_CURRENT:
			return NULL;
		case ZS_SQL_OLDER_COMPATIBLE:
		case ZS_SQL_OLDER_INCOMPATIBLE:
			return psprintf("Run ALTER EXTENSION zero_stream UPDATE in the streamed database.");
		case ZS_SQL_UNKNOWN:
			return psprintf("Install the zero_stream library of the installed SQL's version and restart the server, or install the SQL of version %s.",
							ZS_LIBRARY_VERSION);
		case ZS_SQL_NOT_INSTALLED:
			return psprintf("Run CREATE EXTENSION zero_stream in the streamed database.");
	}
	return NULL;
}

#ifndef FRONTEND
char *
zs_installed_sql_version(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("zero_stream"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}
#endif
