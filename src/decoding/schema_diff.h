/*-------------------------------------------------------------------------
 * schema_diff.h
 *	  Zero's schema-change messages from two snapshots of the published
 *	  schema (see schema_diff.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SCHEMA_DIFF_H
#define ZS_SCHEMA_DIFF_H

/* The prefix of the logical messages that carry a new published schema */
#define ZS_DDL_MESSAGE_PREFIX "zero_stream/ddl"

/*
 * The change objects (palloc'd JSON texts: create-table, add-column, ...)
 * that turn the published schema prev into next, in zero-cache's order;
 * returns how many, with the array in *changes. tag is the DDL command's
 * tag (it decides what zero-cache backfills); tables and indexes in the
 * schemas own_schemas[0 .. n_own - 1] are ignored. Returns -1 with *error
 * set if a snapshot is not a published schema. Compiles as backend or
 * frontend code.
 */
extern int	zs_schema_diff(const char *prev, int prev_len, const char *next, int next_len,
						   const char *tag, const char *const *own_schemas, int n_own,
						   char ***changes, const char **error);

/*
 * The columns a backfill reads: the row key's, then the backfilled ones
 * (zero-cache's BackfillRequest, checked against the published schema).
 */
typedef struct ZsBackfillTable
{
	char	   *schema;
	char	   *name;
	unsigned int relid;
	int			nkeys;			/* names[0 .. nkeys - 1] are the row key */
	int			ncolumns;		/* all of names[] */
	char	  **names;
	unsigned int *typids;
	int		   *attnums;
	char	   *row_filter;		/* the publications' row filters, or NULL */
} ZsBackfillTable;

/*
 * Check a BackfillRequest ({"table":{"schema","name","metadata"},
 * "columns":{col:{"attNum":n}}}) against the published schema, as
 * zero-cache's backfill stream does before it reads: the table is still
 * published under the same relation and schema OIDs, with the same row
 * key, and every column still has its attnum. Returns NULL and fills *out,
 * or the reason the request no longer applies (palloc'd).
 */
extern char *zs_schema_backfill_table(const char *schema, int schema_len,
									  const char *request, int request_len,
									  ZsBackfillTable *out);

/*
 * A published table's row filter: NULL if one of its publications has none,
 * else its publications' filters OR'ed (palloc'd).
 */
extern char *zs_schema_row_filter(const char *schema, int schema_len,
								  const char *table_schema, const char *table_name);

#endif							/* ZS_SCHEMA_DIFF_H */
