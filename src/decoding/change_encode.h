/*-------------------------------------------------------------------------
 * change_encode.h
 *	  pgoutput messages -> Zero change objects (docs/zero-protocol.md §3.1-3.3),
 *	  for relations of the relation cache (relcache.h).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGE_ENCODE_H
#define ZS_CHANGE_ENCODE_H

#include "lib/stringinfo.h"

#include "decoding/pgoutput_read.h"
#include "decoding/relcache.h"

/*
 * Prepare a relation just described (zs_relcache_update) for encoding: its
 * changes cannot be encoded before.
 */
extern void zs_encode_prepare(ZsRelation *rel);

extern void zs_encode_begin(StringInfo out, const ZsPgoutputMsg *msg);
extern void zs_encode_commit(StringInfo out, const ZsPgoutputMsg *msg);
extern void zs_encode_insert(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);
extern void zs_encode_update(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);
extern void zs_encode_delete(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);

/* Does an update change any of these columns (e.g. a row key)? */
extern bool zs_encode_update_changes_columns(const ZsRelation *rel, const ZsPgoutputMsg *msg,
									  const char *const *names, int n);

/* [v1,v2,...]: a row's values in the relation's column order (a backfill row) */
extern void zs_encode_row_values(StringInfo out, const ZsRelation *rel, const ZsTuple *tuple);

/* Returns false (appending nothing) if every truncated relation is our own. */
extern bool zs_encode_truncate(StringInfo out, const ZsPgoutputMsg *msg);

/* PostgreSQL epoch (2000-01-01) microseconds -> Unix epoch microseconds */
#define ZS_UNIX_EPOCH_OFFSET_US INT64CONST(946684800000000)

#endif							/* ZS_CHANGE_ENCODE_H */
