/*-------------------------------------------------------------------------
 * startup.h
 *	  The decoder's checks and preparations before it takes its slot.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STARTUP_H
#define ZS_STARTUP_H

#include "nodes/pg_list.h"

/* wal_level, max_replication_slots, not a standby: an ERROR otherwise */
extern void zs_startup_check_server(void);

/* Session settings that make the text of every value canonical. */
extern void zs_startup_session(void);

extern bool zs_startup_extension_exists(void);

/*
 * Wait, without spinning, until CREATE EXTENSION zero_stream has run and
 * its SQL objects are of a version this library writes for.
 */
extern void zs_startup_wait_for_extension(void);

/* The change-log schema and its tables exist. */
extern void zs_startup_change_log(void);

/* The configured publications must exist; the default one is created. */
extern void zs_startup_publications(List *publications, bool is_default);

/*
 * A change of the published schema the DDL capture did not announce is
 * announced now, as if an ALTER PUBLICATION had made it.
 */
extern void zs_startup_announce_schema_drift(void);

/* Our replication origin, created if missing, set up for this session. */
extern void zs_startup_origin(void);

#endif							/* ZS_STARTUP_H */
