/*-------------------------------------------------------------------------
 * extension_version.h
 *	  Which versions of zero_stream's SQL objects this library can run
 *	  with, see extension_version.c.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_EXTENSION_VERSION_H
#define ZS_EXTENSION_VERSION_H

/* this library's version: zero_stream.control's default_version */
#define ZS_LIBRARY_VERSION "0.5.1"

typedef enum ZsSqlFit
{
	ZS_SQL_CURRENT,				/* the SQL of this library's version */
	ZS_SQL_OLDER_COMPATIBLE,	/* an older SQL whose change log this library writes as its own */
	ZS_SQL_OLDER_INCOMPATIBLE,	/* an older SQL: ALTER EXTENSION UPDATE before anything is written */
	ZS_SQL_UNKNOWN,				/* a version this library does not know (a newer one) */
	ZS_SQL_NOT_INSTALLED		/* no extension zero_stream in this database */
} ZsSqlFit;

/* How the installed SQL (pg_extension.extversion) fits this library. */
extern ZsSqlFit zs_sql_fit(const char *installed);

/* Can this library write the change log with that SQL installed? */
extern bool zs_sql_fit_writable(ZsSqlFit fit);

/*
 * What an operator is told about it: the message and the hint (palloc'd;
 * NULL for the current version).
 */
extern char *zs_sql_fit_message(const char *installed, ZsSqlFit fit);
extern char *zs_sql_fit_hint(ZsSqlFit fit);

/*
 * The installed version of extension zero_stream in this database, NULL
 * when it is not installed. Needs a transaction; backend only.
 */
extern char *zs_installed_sql_version(void);

#endif							/* ZS_EXTENSION_VERSION_H */
