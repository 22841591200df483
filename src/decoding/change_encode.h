/*-------------------------------------------------------------------------
 * change_encode.h
 *	  pgoutput messages -> Zero change objects (docs/zero-protocol.md §3.1-3.3),
 *	  with the relation cache that pgoutput's 'R' messages maintain.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGE_ENCODE_H
#define ZS_CHANGE_ENCODE_H

#include "lib/stringinfo.h"

#include "decoding/pgoutput_read.h"

typedef struct ZsRelation ZsRelation;

/* The extension's own schema (zero_stream.control): never part of the stream */
#define ZS_EXTENSION_SCHEMA "zero_stream"

extern void zs_relcache_init(MemoryContext context, const char *own_schema);

/*
 * Record a relation message. Must run where the historic catalog snapshot
 * of the change is active (inside the output plugin's write callback), as
 * column types are resolved through the syscache.
 */
extern void zs_relcache_update(const ZsPgoutputMsg *msg);
extern ZsRelation *zs_relcache_lookup(uint32 relid);

/* "schema.name" of a described relation, or NULL (for error reports) */
extern const char *zs_relcache_name(uint32 relid);

/* Relations of our own change-log schema are never part of the stream. */
extern bool zs_relation_is_own(const ZsRelation *rel);

extern void zs_encode_begin(StringInfo out, const ZsPgoutputMsg *msg);
extern void zs_encode_commit(StringInfo out, const ZsPgoutputMsg *msg);
extern void zs_encode_insert(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);
extern void zs_encode_update(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);
extern void zs_encode_delete(StringInfo out, const ZsRelation *rel, const ZsPgoutputMsg *msg);

/* Does an update change any of these columns (e.g. a row key)? */
extern bool zs_update_changes_columns(const ZsRelation *rel, const ZsPgoutputMsg *msg,
									  const char *const *names, int n);

/* [v1,v2,...]: a row's values in the relation's column order (a backfill row) */
extern void zs_encode_row_values(StringInfo out, const ZsRelation *rel, const ZsTuple *tuple);

/* Returns false (appending nothing) if every truncated relation is our own. */
extern bool zs_encode_truncate(StringInfo out, const ZsPgoutputMsg *msg);

/* PostgreSQL epoch (2000-01-01) microseconds -> Unix epoch microseconds */
#define ZS_UNIX_EPOCH_OFFSET_US INT64CONST(946684800000000)

#endif							/* ZS_CHANGE_ENCODE_H */
