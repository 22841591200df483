/*-------------------------------------------------------------------------
 * replica_ddl.h
 *	  What the schema-change files of the replica library share:
 *	  replica_ddl.c (the dispatch, tables, indexes, and the helpers below),
 *	  replica_column_ddl.c (column changes, a column from its spec) and
 *	  replica_backfill.c (backfill, backfill-completed). The rest of the
 *	  library reaches them through zs_replica_apply_schema_change()
 *	  (replica_internal.h).
 *
 * Every function follows the library's rule: false (or NULL) with r->error
 * set, never a thrown error.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_DDL_H
#define ZS_REPLICA_DDL_H

#include "replica/replica_internal.h"

/* A table (or index) of a change: {"schema":..,"name":..} */
typedef struct ZsReplicaTableId
{
	const char *schema;
	const char *name;
	char	   *lite;			/* the replica's name (palloc'd) */
} ZsReplicaTableId;

/* replica_ddl.c: reading a change */

/* obj's schema and name_key members; what names the change in the error */
extern bool zs_replica_ddl_table_id(ZsReplica *r, const ZsJsonDoc *doc, int obj,
									const char *name_key, const char *what,
									ZsReplicaTableId *id);
extern void zs_replica_ddl_free_table_id(ZsReplicaTableId *id);

/* The table's cache entry; an error naming the change if it has no such table. */
extern TableInfo *zs_replica_ddl_known_table(ZsReplica *r, const char *table, const char *what);

/* JSON.stringify of a parsed value: its text without insignificant whitespace. */
extern char *zs_replica_ddl_compact_json(const ZsJsonDoc *doc, int node);

/* A member that is present and not null (JavaScript's truthy object). */
extern bool zs_replica_ddl_present(const ZsJsonDoc *doc, int node);

/* replica_ddl.c: writing */

/* Run a statement with nparams text parameters (a NULL one binds NULL). */
extern bool zs_replica_ddl_run(ZsReplica *r, const char *sql, int nparams,...);

/* tableMetadata.upstreamMetadata (zero's setUpstreamMetadata) */
extern bool zs_replica_ddl_set_upstream_metadata(ZsReplica *r, const ZsReplicaTableId *id,
												 const ZsJsonDoc *doc, int metadata);

/*
 * minRowVersion = the transaction's version, and a reset: every row of the
 * table counts as changed (zero's bumpVersions).
 */
extern bool zs_replica_ddl_bump_versions(ZsReplica *r, const ZsReplicaTableId *id);

/* replica_column_ddl.c */

/*
 * A ColumnSpec as the replica declares it (zero's mapPostgresToLiteColumn
 * and pgColumnSpecToMetadata); c points into doc.
 */
extern bool zs_replica_column_from_spec(ZsReplica *r, const ZsJsonDoc *doc, const char *name,
										int spec, const char *what, ZsReplicaColumn *c);
extern bool zs_replica_column_add(ZsReplica *r, const ZsJsonDoc *doc, int change);
extern bool zs_replica_column_update(ZsReplica *r, const ZsJsonDoc *doc, int change);
extern bool zs_replica_column_drop(ZsReplica *r, const ZsJsonDoc *doc, int change);

/* replica_backfill.c */
extern bool zs_replica_backfill_apply(ZsReplica *r, const ZsJsonDoc *doc, int change);
extern bool zs_replica_backfill_complete(ZsReplica *r, const ZsJsonDoc *doc, int change);

#endif							/* ZS_REPLICA_DDL_H */
