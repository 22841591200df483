/*-------------------------------------------------------------------------
 * json_read.h
 *	  A small JSON reader for change messages: parses one document into a
 *	  flat array of nodes that keep the exact source text of every value.
 *
 * Why not cJSON: numbers must be read exactly (an int8 of 2^63-1 does not
 * survive a double), and a replica stores arrays and objects as their
 * compact source text. Decoded strings are UTF-8, except that an unpaired
 * surrogate escape (which PostgreSQL's json type accepts) decodes to its
 * three-byte WTF-8 form. Nodes are reused from one document to the next, so
 * the apply loop allocates nothing in steady state. Compiles as backend or
 * frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_JSON_READ_H
#define ZS_JSON_READ_H

#include "lib/stringinfo.h"

typedef enum ZsJsonType
{
	ZS_JSON_NULL,
	ZS_JSON_FALSE,
	ZS_JSON_TRUE,
	ZS_JSON_NUMBER,
	ZS_JSON_STRING,
	ZS_JSON_ARRAY,
	ZS_JSON_OBJECT
} ZsJsonType;

typedef struct ZsJsonNode
{
	ZsJsonType	type;
	int			raw_start;		/* the value's source text */
	int			raw_len;
	int			str_start;		/* STRING: decoded text in doc->strings */
	int			str_len;
	int			key_start;		/* member of an OBJECT: decoded key */
	int			key_len;
	int			first_child;	/* ARRAY/OBJECT: -1 if empty */
	int			next;			/* next sibling, -1 at the end */
	int			count;			/* ARRAY/OBJECT: number of children */
	bool		deferred;		/* OBJECT not read (zs_json_parse_deferring) */
} ZsJsonNode;

/* An array or object still open while parsing */
typedef struct ZsJsonOpen
{
	int			node;
	int			last;			/* its last child so far, -1 if none */
} ZsJsonOpen;

typedef struct ZsJsonDoc
{
	const char *text;			/* the parsed text (not copied) */
	int			len;
	ZsJsonNode *nodes;			/* nodes[0] is the root */
	int			nnodes;
	int			maxnodes;
	ZsJsonOpen *stack;			/* parser's open containers */
	int			maxstack;
	StringInfoData strings;		/* decoded strings and keys, NUL-separated */
	StringInfoData deferred_last;	/* the last deferred member's text */
	char		error[128];
} ZsJsonDoc;

extern void zs_json_doc_init(ZsJsonDoc *doc);
extern void zs_json_doc_free(ZsJsonDoc *doc);

/* Parse text; false with doc->error set if it is not one JSON value. */
extern bool zs_json_parse(ZsJsonDoc *doc, const char *text, int len);

/*
 * The same, except that an object that is the value of the root object's
 * member named key (not empty) is not read: its node is an OBJECT marked
 * deferred, with no children, whose source text has ended strings and as
 * many closing brackets as opening ones but is otherwise unchecked until
 * it is parsed on its own. For a part of every message that repeats (a
 * change's relation), read once and kept by the caller. The doc keeps the
 * last deferred member's text: the next one that starts with the same
 * bytes is stepped over by one comparison instead of a scan.
 */
extern bool zs_json_parse_deferring(ZsJsonDoc *doc, const char *text, int len,
									const char *key);

/*
 * The same for the members named key of the objects at that depth (1 or
 * more): 1 is the root object, 3 a change in a frame
 * {"id":n,"msg":["data",change]}, 4 in {"id":n,"batch":[["data",change],...]}.
 */
extern bool zs_json_parse_deferring_at(ZsJsonDoc *doc, const char *text, int len,
									   const char *key, int depth);

/* Child of an object by key, or -1. */
extern int	zs_json_get(const ZsJsonDoc *doc, int node, const char *key);

/* Decoded text of a STRING member of an object, or NULL if absent or not a string. */
extern const char *zs_json_get_string(const ZsJsonDoc *doc, int node, const char *key);

/* The i-th element of an array, or -1. */
extern int	zs_json_at(const ZsJsonDoc *doc, int node, int i);

/* Decoded string of a STRING node, key of a member (NUL-terminated). */
static inline const char *
zs_json_str(const ZsJsonDoc *doc, int node)
{
	return doc->strings.data + doc->nodes[node].str_start;
}

static inline const char *
zs_json_key(const ZsJsonDoc *doc, int node)
{
	return doc->strings.data + doc->nodes[node].key_start;
}

static inline const char *
zs_json_raw(const ZsJsonDoc *doc, int node)
{
	return doc->text + doc->nodes[node].raw_start;
}

/* STRING node whose text equals s */
extern bool zs_json_str_eq(const ZsJsonDoc *doc, int node, const char *s);

/* NUMBER that is an integer within int64: its value; false otherwise. */
extern bool zs_json_int64(const ZsJsonDoc *doc, int node, int64 *value);

/* NUMBER as a double */
extern double zs_json_double(const ZsJsonDoc *doc, int node);

#endif							/* ZS_JSON_READ_H */
