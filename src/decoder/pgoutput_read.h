/*-------------------------------------------------------------------------
 * pgoutput_read.h
 *	  Reader for pgoutput protocol version 1 messages (text tuples).
 *
 * Parsed messages point into the caller's buffer; nothing is copied except
 * the relation message's attribute array. Compiles as backend or frontend
 * code, so malformed input can be unit-tested.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PGOUTPUT_READ_H
#define ZS_PGOUTPUT_READ_H

#include <stdint.h>

/* pgoutput never sends more columns than a heap tuple can hold */
#define ZS_MAX_COLUMNS 1664

typedef struct ZsTupleColumn
{
	char		kind;			/* 'n' null, 'u' unchanged TOAST, 't' text, 'b' binary */
	int			len;
	const char *data;
} ZsTupleColumn;

typedef struct ZsTuple
{
	int			natts;
	ZsTupleColumn cols[ZS_MAX_COLUMNS];
} ZsTuple;

typedef struct ZsRelationAttr
{
	bool		is_key;
	const char *name;
	uint32_t	typid;
	int32_t		typmod;
} ZsRelationAttr;

typedef struct ZsPgoutputMsg
{
	char		type;			/* 'B','C','R','Y','I','U','D','T','O','M' */

	/* B, C */
	uint64_t	final_lsn;		/* B: commit LSN; C: commit_lsn */
	uint64_t	end_lsn;		/* C */
	int64_t		commit_time;	/* B, C: microseconds since 2000-01-01 */
	uint32_t	xid;			/* B */
	uint8_t		flags;			/* C, T */

	/* R, I, U, D */
	uint32_t	relid;
	const char *nspname;		/* R, Y */
	const char *relname;		/* R; Y: type name */
	char		replident;		/* R: 'd','n','f','i' */
	int			natts;			/* R */
	ZsRelationAttr *attrs;		/* R: palloc'd */

	/* U, D: 'K', 'O' or 0 */
	char		old_kind;
	ZsTuple    *old_tuple;		/* caller-provided storage */
	ZsTuple    *new_tuple;		/* caller-provided storage */

	/* T */
	int			nrelids;
	const char *relids_raw;		/* nrelids big-endian uint32 */
} ZsPgoutputMsg;

/*
 * Parse one message. old_tuple/new_tuple must point at storage before the
 * call. Returns NULL on success, else a static description of what is
 * malformed.
 */
extern const char *zs_pgoutput_parse(const char *data, int len, ZsPgoutputMsg *msg);

extern uint32_t zs_pgoutput_relid_at(const ZsPgoutputMsg *msg, int i);

#endif							/* ZS_PGOUTPUT_READ_H */
