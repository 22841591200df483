/*-------------------------------------------------------------------------
 * schema_snapshot.h
 *	  Reading a snapshot of the published schema (zero_stream.published_schema()).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SCHEMA_SNAPSHOT_H
#define ZS_SCHEMA_SNAPSHOT_H

#include "lib/stringinfo.h"

#include "codec/json_read.h"

typedef struct ZsSchemaSnapshot
{
	ZsJsonDoc	doc;
	int			tables;			/* array node */
	int			indexes;		/* array node */
	int			identities;		/* array node, or -1 if absent */
} ZsSchemaSnapshot;

/*
 * Parse text into s (its doc initialised by the caller, freed by the
 * caller); false with *error set if it is not a published schema.
 */
extern bool zs_schema_snapshot_read(ZsSchemaSnapshot *s, const char *text, int len,
									const char **error);

/* A member's string ("" if absent) or integer (0 if absent). */
extern const char *zs_schema_snapshot_str(const ZsJsonDoc *doc, int node, const char *key);
extern int64 zs_schema_snapshot_int(const ZsJsonDoc *doc, int node, const char *key);

/* A table, index or column node of the snapshot, or -1. */
extern int	zs_schema_snapshot_table_by_oid(const ZsSchemaSnapshot *s, int64 oid);
extern int	zs_schema_snapshot_table_by_name(const ZsSchemaSnapshot *s, const char *schema,
											 const char *name);
extern int	zs_schema_snapshot_index_by_id(const ZsSchemaSnapshot *s, const char *schema,
										   const char *name);
extern int	zs_schema_snapshot_column_by_pos(const ZsJsonDoc *doc, int table, int64 pos);
extern int	zs_schema_snapshot_column_by_name(const ZsJsonDoc *doc, int table, const char *name);

/*
 * Is the column at attnum pos of table oid an identity column (GENERATED
 * ... AS IDENTITY)? The snapshot's "identities" say, if it has them.
 */
extern bool zs_schema_snapshot_is_identity_column(const ZsSchemaSnapshot *s, int64 oid, int64 pos);

/* A table's replica-identity columns as a JSON array of names. */
extern void zs_schema_snapshot_append_identity(StringInfo out, const ZsSchemaSnapshot *s, int table);

/*
 * A published table's row filter: NULL if one of its publications has none,
 * else its publications' filters OR'ed (palloc'd).
 */
extern char *zs_schema_snapshot_row_filter(const char *schema, int schema_len,
								  const char *table_schema, const char *table_name);

/* The same for a table node of a parsed snapshot. */
extern char *zs_schema_snapshot_table_row_filter(const ZsJsonDoc *doc, int table);

#endif							/* ZS_SCHEMA_SNAPSHOT_H */
