/*-------------------------------------------------------------------------
 * schema_backfill.h
 *	  A backfill request checked against the published schema.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SCHEMA_BACKFILL_H
#define ZS_SCHEMA_BACKFILL_H

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

#endif							/* ZS_SCHEMA_BACKFILL_H */
