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

/*
 * pgoutput's message types: the values of PostgreSQL's LogicalRepMsgType
 * (replication/logicalproto.h), which is not frontend-safe; the decoder
 * checks at compile time that they agree.
 */
typedef enum ZsPgoutputType
{
	ZS_PGO_BEGIN = 'B',
	ZS_PGO_COMMIT = 'C',
	ZS_PGO_ORIGIN = 'O',
	ZS_PGO_RELATION = 'R',
	ZS_PGO_TYPE = 'Y',
	ZS_PGO_INSERT = 'I',
	ZS_PGO_UPDATE = 'U',
	ZS_PGO_DELETE = 'D',
	ZS_PGO_TRUNCATE = 'T',
	ZS_PGO_MESSAGE = 'M'
} ZsPgoutputType;

/* A tuple column's kind (LOGICALREP_COLUMN_* in logicalproto.h) */
#define ZS_PGO_COL_NULL		'n'
#define ZS_PGO_COL_UNCHANGED 'u'	/* an unchanged TOASTed value, not sent */
#define ZS_PGO_COL_TEXT		't'
#define ZS_PGO_COL_BINARY	'b'

/* The tuples of an update or delete */
#define ZS_PGO_TUPLE_NEW	'N'
#define ZS_PGO_TUPLE_KEY	'K'		/* the old replica-identity key */
#define ZS_PGO_TUPLE_OLD	'O'		/* the whole old row (REPLICA IDENTITY FULL) */

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

	/* M (flags: ZS_PGO_MESSAGE_TRANSACTIONAL) */
	uint64_t	message_lsn;
	const char *prefix;
	const char *content;		/* not NUL-terminated */
	int			content_len;
} ZsPgoutputMsg;

/* A logical message written inside its transaction (pg_logical_emit_message(true, ...)) */
#define ZS_PGO_MESSAGE_TRANSACTIONAL 1

/*
 * Parse one message. old_tuple/new_tuple must point at storage before the
 * call. Returns NULL on success, else a static description of what is
 * malformed.
 */
extern const char *zs_pgoutput_parse(const char *data, int len, ZsPgoutputMsg *msg);

extern uint32_t zs_pgoutput_relid_at(const ZsPgoutputMsg *msg, int i);

#endif							/* ZS_PGOUTPUT_READ_H */
