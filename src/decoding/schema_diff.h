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
 * returns how many, with the array in *changes. accounted_leaves (or
 * NULL) is a JSON array of the leaf partitions whose joining or leaving
 * the stream accounts for, emptied_leaves (or NULL) one of leaves emptied
 * with no change in the stream, whose roots are sent again
 * (partition_diff.h). tag is the DDL command's tag (it decides what
 * zero-cache backfills); tables and indexes in the
 * schemas own_schemas[0 .. n_own - 1] are ignored. Returns -1 with *error
 * set if a snapshot is not a published schema. Compiles as backend or
 * frontend code.
 */
extern int	zs_schema_diff(const char *prev, int prev_len, const char *next, int next_len,
						   const char *accounted_leaves, int accounted_len,
						   const char *emptied_leaves, int emptied_len,
						   const char *tag, const char *const *own_schemas, int n_own,
						   char ***changes, const char **error);

#endif							/* ZS_SCHEMA_DIFF_H */
