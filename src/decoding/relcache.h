/*-------------------------------------------------------------------------
 * relcache.h
 *	  The relations pgoutput has described ('R' messages), by OID: their
 *	  names, columns, key and how each column's value is encoded.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_RELCACHE_H
#define ZS_RELCACHE_H

#include "decoding/pgoutput_read.h"
#include "decoding/value_encode.h"

/* The extension's own schema (zero_stream.control): never part of the stream */
#define ZS_EXTENSION_SCHEMA "zero_stream"

typedef struct ZsRelColumn
{
	char	   *name;
	unsigned int typid;
	bool		is_key;
	bool		is_array;
	ZsValueKind kind;			/* of the value, or of the elements */
	char		delim;			/* an array's element delimiter */
	/* the encoder's, set by zs_encode_prepare(): "name": */
	char	   *json_key;
	int			json_key_len;
} ZsRelColumn;

typedef struct ZsRelation
{
	Oid			relid;			/* hash key */
	bool		valid;
	bool		own;			/* in our change-log schema or the extension's */
	char	   *schema;
	char	   *name;
	char		replident;		/* pgoutput's replica identity setting */
	int			natts;
	ZsRelColumn *columns;
	/* the encoder's, set by zs_encode_prepare() */
	char	   *json;			/* the "relation" object */
	int			json_len;
	char	   *insert_open;	/* an insert's JSON up to its row's value */
	int			insert_open_len;
	MemoryContext context;		/* holds everything above */
} ZsRelation;

/*
 * An empty cache in context; relations of own_schema (and of the
 * extension's schema) are marked own.
 */
extern void zs_relcache_init(MemoryContext context, const char *own_schema);

/*
 * Record a relation message, replacing an earlier description, and return
 * it. Must run where the historic catalog snapshot of the change is active
 * (inside the output plugin's write callback), as column types are
 * resolved through the syscache.
 */
extern ZsRelation *zs_relcache_update(const ZsPgoutputMsg *msg);

/* A described relation; an ERROR if pgoutput never described it. */
extern ZsRelation *zs_relcache_lookup(uint32 relid);

/* "schema.name" of a described relation, or NULL (for error reports) */
extern const char *zs_relcache_name(uint32 relid);

/* Relations of our own change-log schema are never part of the stream. */
extern bool zs_relcache_is_own(const ZsRelation *rel);

#endif							/* ZS_RELCACHE_H */
