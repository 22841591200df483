/*-------------------------------------------------------------------------
 * json_read.c
 *	  Parse one JSON document into a flat node array (see json_read.h).
 *
 * RFC 8259: one value, optional whitespace around it, no trailing commas.
 * Two liberties, both because PostgreSQL's json type takes them and such
 * values reach us inside json[] columns: a \u escape of an unpaired
 * surrogate decodes to its three-byte (WTF-8) form, and nesting is limited
 * by memory only, as the parser keeps its open containers on a stack of its
 * own instead of recursing. Errors name the byte offset.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#include "utils/memutils.h"
#endif

#include <float.h>
#include <math.h>

#include "codec/hex.h"
#include "codec/json_out.h"
#include "codec/json_read.h"

typedef struct Parser
{
	ZsJsonDoc  *doc;
	const char *p;
	const char *end;
	int			depth;
	const char *defer_key;		/* zs_json_parse_deferring's key, or NULL */
	int			defer_len;
	int			defer_depth;	/* of the objects whose member it is (1: the root) */
} Parser;

void
zs_json_doc_init(ZsJsonDoc *doc)
{
	memset(doc, 0, sizeof(*doc));
	doc->maxnodes = 64;
	doc->nodes = palloc(sizeof(ZsJsonNode) * doc->maxnodes);
	doc->maxstack = 16;
	doc->stack = palloc(sizeof(ZsJsonOpen) * doc->maxstack);
	initStringInfo(&doc->strings);
	/* in the doc's memory too (a parse may run in a shorter-lived context) */
	doc->deferred_last.maxlen = 256;
	doc->deferred_last.data = palloc(doc->deferred_last.maxlen);
	resetStringInfo(&doc->deferred_last);
}

void
zs_json_doc_free(ZsJsonDoc *doc)
{
	pfree(doc->nodes);
	pfree(doc->stack);
	pfree(doc->strings.data);
	pfree(doc->deferred_last.data);
	doc->deferred_last.data = NULL;
	doc->nodes = NULL;
}

static bool
fail(Parser *ps, const char *what)
{
	snprintf(ps->doc->error, sizeof(ps->doc->error), "%s at offset %d",
			 what, (int) (ps->p - ps->doc->text));
	return false;
}

static int
new_node(Parser *ps, ZsJsonType type)
{
	ZsJsonDoc  *doc = ps->doc;
	ZsJsonNode *n;

	if (doc->nnodes == doc->maxnodes)
	{
		doc->maxnodes *= 2;
		doc->nodes = repalloc(doc->nodes, sizeof(ZsJsonNode) * doc->maxnodes);
	}
	n = &doc->nodes[doc->nnodes];
	/* padding too: a node's bytes depend on the document only */
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->raw_start = (int) (ps->p - doc->text);
	n->first_child = n->next = -1;
	return doc->nnodes++;
}

static void
skip_space(Parser *ps)
{
	while (ps->p < ps->end &&
		   (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}


static bool
read_hex4(Parser *ps, unsigned int *cp)
{
	if (ps->end - ps->p < 4)
		return fail(ps, "truncated \\u escape");
	if (!zs_hex4_value(ps->p, cp))
		return fail(ps, "invalid \\u escape");
	ps->p += 4;
	return true;
}

/* the bytes that end a run of plain string text: quote, backslash, controls */
static const bool string_stop[256] = {
	[0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true,
	[0x05] = true, [0x06] = true, [0x07] = true, [0x08] = true, [0x09] = true,
	[0x0a] = true, [0x0b] = true, [0x0c] = true, [0x0d] = true, [0x0e] = true,
	[0x0f] = true, [0x10] = true, [0x11] = true, [0x12] = true, [0x13] = true,
	[0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true, [0x18] = true,
	[0x19] = true, [0x1a] = true, [0x1b] = true, [0x1c] = true, [0x1d] = true,
	[0x1e] = true, [0x1f] = true, ['"'] = true, ['\\'] = true,
};

/* Decode a string at ps->p (the opening quote) into doc->strings. */
static bool
read_string(Parser *ps, int *start, int *len)
{
	StringInfo	s = &ps->doc->strings;
	const char *run;

	ps->p++;
	*start = s->len;
	run = ps->p;
	for (;;)
	{
		unsigned char c;

		/* the plain bytes up to a quote, a backslash or a control character */
		while (ps->p < ps->end && !string_stop[(unsigned char) *ps->p])
			ps->p++;
		if (ps->p >= ps->end)
			return fail(ps, "unterminated string");
		c = (unsigned char) *ps->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(ps, "control character in string");
		appendBinaryStringInfo(s, run, ps->p - run);
		ps->p++;
		if (ps->p >= ps->end)
			return fail(ps, "unterminated string");
		c = (unsigned char) *ps->p++;
		switch (c)
		{
			case '"':
			case '\\':
			case '/':
				appendStringInfoChar(s, (char) c);
				break;
			case 'b':
				appendStringInfoChar(s, '\b');
				break;
			case 'f':
				appendStringInfoChar(s, '\f');
				break;
			case 'n':
				appendStringInfoChar(s, '\n');
				break;
			case 'r':
				appendStringInfoChar(s, '\r');
				break;
			case 't':
				appendStringInfoChar(s, '\t');
				break;
			case 'u':
				{
					unsigned int cp,
								low;

					if (!read_hex4(ps, &cp))
						return false;
					if (cp >= 0xD800 && cp <= 0xDBFF && ps->end - ps->p >= 6 &&
						ps->p[0] == '\\' && ps->p[1] == 'u' &&
						zs_hex4_value(ps->p + 2, &low) &&
						low >= 0xDC00 && low <= 0xDFFF)
					{
						cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
						ps->p += 6;
					}
					/* an unpaired surrogate is kept as its WTF-8 bytes */
					zs_json_append_utf8(s, cp);
					break;
				}
			default:
				ps->p--;
				return fail(ps, "invalid escape");
		}
		run = ps->p;
	}
	/* the last run and the terminator in one step (most strings have no escape) */
	if (s->maxlen - s->len <= (int) (ps->p - run) + 1)
		enlargeStringInfo(s, (int) (ps->p - run) + 1);
	memcpy(s->data + s->len, run, ps->p - run);
	s->len += (int) (ps->p - run);
	*len = s->len - *start;
	s->data[s->len++] = '\0';
	s->data[s->len] = '\0';
	ps->p++;
	return true;
}

static bool
read_number(Parser *ps)
{
	const char *p = ps->p;

	if (p < ps->end && *p == '-')
		p++;
	if (p >= ps->end || !isdigit((unsigned char) *p))
		return fail(ps, "invalid number");
	if (*p == '0')
		p++;
	else
		while (p < ps->end && isdigit((unsigned char) *p))
			p++;
	if (p < ps->end && *p == '.')
	{
		p++;
		if (p >= ps->end || !isdigit((unsigned char) *p))
			return fail(ps, "invalid number");
		while (p < ps->end && isdigit((unsigned char) *p))
			p++;
	}
	if (p < ps->end && (*p == 'e' || *p == 'E'))
	{
		p++;
		if (p < ps->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= ps->end || !isdigit((unsigned char) *p))
			return fail(ps, "invalid number");
		while (p < ps->end && isdigit((unsigned char) *p))
			p++;
	}
	ps->p = p;
	return true;
}

static bool
read_literal(Parser *ps, const char *word)
{
	size_t		n = strlen(word);

	if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "invalid literal");
	ps->p += n;
	return true;
}

/* Read a scalar (anything but an array or object) into a new node. */
static bool
read_scalar(Parser *ps, int *out)
{
	int			node;
	bool		ok;

	if (ps->p >= ps->end)
		return fail(ps, "expected a value");
	switch (*ps->p)
	{
		case '"':
			{
				int			start,
							len;

				node = new_node(ps, ZS_JSON_STRING);
				ok = read_string(ps, &start, &len);
				ps->doc->nodes[node].str_start = start;
				ps->doc->nodes[node].str_len = len;
				break;
			}
		case 't':
			node = new_node(ps, ZS_JSON_TRUE);
			ok = read_literal(ps, "true");
			break;
		case 'f':
			node = new_node(ps, ZS_JSON_FALSE);
			ok = read_literal(ps, "false");
			break;
		case 'n':
			node = new_node(ps, ZS_JSON_NULL);
			ok = read_literal(ps, "null");
			break;
		default:
			node = new_node(ps, ZS_JSON_NUMBER);
			ok = read_number(ps);
			break;
	}
	if (!ok)
		return false;
	ps->doc->nodes[node].raw_len =
		(int) (ps->p - ps->doc->text) - ps->doc->nodes[node].raw_start;
	*out = node;
	return true;
}

/* Make child the next member of the container on top of the stack. */
static void
link_child(Parser *ps, int child, int key_start, int key_len)
{
	ZsJsonDoc  *doc = ps->doc;
	ZsJsonOpen *top = &doc->stack[ps->depth - 1];

	doc->nodes[child].key_start = key_start;
	doc->nodes[child].key_len = key_len;
	if (top->last < 0)
		doc->nodes[top->node].first_child = child;
	else
		doc->nodes[top->last].next = child;
	doc->nodes[top->node].count++;
	top->last = child;
}

static void
push_container(Parser *ps, int node)
{
	ZsJsonDoc  *doc = ps->doc;

	if (ps->depth == doc->maxstack)
	{
		doc->maxstack *= 2;
		doc->stack = repalloc(doc->stack, sizeof(ZsJsonOpen) * doc->maxstack);
	}
	doc->stack[ps->depth].node = node;
	doc->stack[ps->depth].last = -1;
	ps->depth++;
}

/* Close the container on top of the stack at ps->p (its closing bracket). */
static void
pop_container(Parser *ps)
{
	ZsJsonDoc  *doc = ps->doc;
	int			node = doc->stack[--ps->depth].node;

	ps->p++;
	doc->nodes[node].raw_len = (int) (ps->p - doc->text) - doc->nodes[node].raw_start;
}

static inline bool
top_is_object(Parser *ps)
{
	return ps->doc->nodes[ps->doc->stack[ps->depth - 1].node].type == ZS_JSON_OBJECT;
}

/*
 * Step over the container at ps->p to just past its closing bracket,
 * checking only that strings end and that as many brackets close as open,
 * whatever their kind (a deferred member's text is read, and checked, when
 * it is parsed on its own).
 */
static bool
skip_container(Parser *ps)
{
	const char *p = ps->p;
	int			depth = 0;

	while (p < ps->end)
	{
		char		c = *p++;

		if (c == '"')
		{
			while (p < ps->end && *p != '"')
				p += (*p == '\\' && p + 1 < ps->end) ? 2 : 1;
			if (p >= ps->end)
				break;
			p++;
		}
		else if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
		{
			ps->p = p;
			return true;
		}
	}
	ps->p = p;
	return fail(ps, "unterminated object");
}

/* the longest deferred text kept for the next message */
#define DEFERRED_KEEP_MAX	8192

/*
 * Step over a deferred member that is the last one's text again (the rows
 * of a table repeat their relation): skip_container would stop at the same
 * place, as it accepted those very bytes and ended at their last one.
 * Otherwise scan it, and keep its text for the next message if it is not
 * large.
 */
static bool
skip_deferred(Parser *ps)
{
	StringInfo	last = &ps->doc->deferred_last;
	const char *start = ps->p;

#ifndef FRONTEND
	/* kept with the doc, not in the context of the parse (zs_json_doc_init) */
	Assert(GetMemoryChunkContext(last->data) == GetMemoryChunkContext(ps->doc->nodes));
#endif
	if (last->len > 0 && ps->end - ps->p >= last->len &&
		memcmp(ps->p, last->data, last->len) == 0)
	{
		ps->p += last->len;
		return true;
	}
	if (!skip_container(ps))
		return false;
	if (ps->p - start <= DEFERRED_KEEP_MAX)
	{
		/* grown by repalloc: it stays in the doc's memory */
		resetStringInfo(last);
		appendBinaryStringInfo(last, start, (int) (ps->p - start));
	}
	return true;
}

/* Is the member name just read (in doc->strings) the one to defer? */
static inline bool
is_deferred_member(Parser *ps, int key_start, int key_len)
{
	return ps->defer_len > 0 && ps->depth == ps->defer_depth && top_is_object(ps) &&
		key_len == ps->defer_len &&
		memcmp(ps->doc->strings.data + key_start, ps->defer_key, key_len) == 0;
}

/*
 * Read one value, arrays and objects included, without recursion: open
 * containers are kept on doc->stack, so nesting is limited by memory only
 * (PostgreSQL's own json type accepts any depth its stack allows).
 */
static bool
read_value(Parser *ps, int *out)
{
	int			root = -1;

	for (;;)
	{
		int			key_start = 0,
					key_len = 0,
					node;

		/* a member name, when filling an object */
		if (ps->depth > 0 && top_is_object(ps))
		{
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected a member name");
			if (!read_string(ps, &key_start, &key_len))
				return false;
			skip_space(ps);
			if (ps->p >= ps->end || *ps->p != ':')
				return fail(ps, "expected ':'");
			ps->p++;
			skip_space(ps);
		}

		if (ps->p < ps->end && *ps->p == '{' && is_deferred_member(ps, key_start, key_len))
		{
			node = new_node(ps, ZS_JSON_OBJECT);
			ps->doc->nodes[node].deferred = true;
			link_child(ps, node, key_start, key_len);
			if (!skip_deferred(ps))
				return false;
			ps->doc->nodes[node].raw_len =
				(int) (ps->p - ps->doc->text) - ps->doc->nodes[node].raw_start;
		}
		else if (ps->p < ps->end && (*ps->p == '[' || *ps->p == '{'))
		{
			bool		is_object = (*ps->p == '{');

			node = new_node(ps, is_object ? ZS_JSON_OBJECT : ZS_JSON_ARRAY);
			if (ps->depth > 0)
				link_child(ps, node, key_start, key_len);
			else
				root = node;
			push_container(ps, node);
			ps->p++;
			skip_space(ps);
			if (ps->p >= ps->end || *ps->p != (is_object ? '}' : ']'))
				continue;		/* read the first member */
			pop_container(ps);
		}
		else
		{
			if (!read_scalar(ps, &node))
				return false;
			if (ps->depth > 0)
				link_child(ps, node, key_start, key_len);
			else
				root = node;
		}

		/* after a value: a separator, or the end of containers */
		for (;;)
		{
			bool		is_object;

			if (ps->depth == 0)
			{
				*out = root;
				return true;
			}
			is_object = top_is_object(ps);
			skip_space(ps);
			if (ps->p >= ps->end)
				return fail(ps, is_object ? "unterminated object" : "unterminated array");
			if (*ps->p == ',')
			{
				ps->p++;
				skip_space(ps);
				break;
			}
			if (*ps->p != (is_object ? '}' : ']'))
				return fail(ps, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
			pop_container(ps);
		}
	}
}

bool
zs_json_parse(ZsJsonDoc *doc, const char *text, int len)
{
	return zs_json_parse_deferring_at(doc, text, len, NULL, 0);
}

bool
zs_json_parse_deferring(ZsJsonDoc *doc, const char *text, int len, const char *key)
{
	return zs_json_parse_deferring_at(doc, text, len, key, 1);
}

bool
zs_json_parse_deferring_at(ZsJsonDoc *doc, const char *text, int len, const char *key,
						   int depth)
{
	Parser		ps;
	int			root;

	doc->text = text;
	doc->len = len;
	doc->nnodes = 0;
	doc->error[0] = '\0';
	resetStringInfo(&doc->strings);
	ps.doc = doc;
	ps.p = text;
	ps.end = text + len;
	ps.depth = 0;
	ps.defer_key = key;
	Assert(key == NULL || depth >= 1);
	ps.defer_len = (key != NULL && depth >= 1) ? (int) strlen(key) : 0;
	ps.defer_depth = depth;
	skip_space(&ps);
	if (!read_value(&ps, &root))
		return false;
	skip_space(&ps);
	if (ps.p != ps.end)
		return fail(&ps, "unexpected text after the value");
	return true;
}

int
zs_json_get(const ZsJsonDoc *doc, int node, const char *key)
{
	size_t		klen = strlen(key);

	if (node < 0 || doc->nodes[node].type != ZS_JSON_OBJECT)
		return -1;
	for (int c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next)
		if ((size_t) doc->nodes[c].key_len == klen &&
			memcmp(zs_json_key(doc, c), key, klen) == 0)
			return c;
	return -1;
}

const char *
zs_json_get_string(const ZsJsonDoc *doc, int node, const char *key)
{
	int			n = zs_json_get(doc, node, key);

	return n >= 0 && doc->nodes[n].type == ZS_JSON_STRING ? zs_json_str(doc, n) : NULL;
}

int
zs_json_at(const ZsJsonDoc *doc, int node, int i)
{
	int			c;

	if (node < 0 || doc->nodes[node].type != ZS_JSON_ARRAY)
		return -1;
	for (c = doc->nodes[node].first_child; c >= 0 && i > 0; c = doc->nodes[c].next)
		i--;
	return c;
}

bool
zs_json_str_eq(const ZsJsonDoc *doc, int node, const char *s)
{
	return node >= 0 && doc->nodes[node].type == ZS_JSON_STRING &&
		(size_t) doc->nodes[node].str_len == strlen(s) &&
		memcmp(zs_json_str(doc, node), s, doc->nodes[node].str_len) == 0;
}

bool
zs_json_int64(const ZsJsonDoc *doc, int node, int64 *value)
{
	const ZsJsonNode *n = &doc->nodes[node];
	const char *p = doc->text + n->raw_start;
	const char *end = p + n->raw_len;
	bool		neg = false;
	uint64		acc = 0;
	uint64		limit;

	if (n->type != ZS_JSON_NUMBER)
		return false;
	if (*p == '-')
	{
		neg = true;
		p++;
	}
	/* up to 18 digits cannot leave int64: no overflow check per digit */
	if (end - p <= 18)
	{
		for (; p < end; p++)
		{
			if (!isdigit((unsigned char) *p))
				return false;	/* fraction or exponent */
			acc = acc * 10 + (*p - '0');
		}
		*value = neg ? -(int64) acc : (int64) acc;
		return true;
	}
	limit = neg ? (uint64) PG_INT64_MAX + 1 : (uint64) PG_INT64_MAX;
	for (; p < end; p++)
	{
		if (!isdigit((unsigned char) *p))
			return false;		/* fraction or exponent */
		if (acc > (limit - (*p - '0')) / 10)
			return false;		/* beyond int64 */
		acc = acc * 10 + (*p - '0');
	}
	*value = neg ? (int64) (0 - acc) : (int64) acc;
	return true;
}

/*
 * The exact fast path for a number's double (Clinger's): when the number
 * is m * 10^e with m <= 2^53 and |e| <= 22, both m and 10^|e| are exact
 * doubles and one IEEE multiplication or division rounds correctly, as
 * strtod does. False when the number is outside that (strtod then), or
 * when the compiler evaluates doubles in extended precision.
 */
static bool
exact_double(const char *p, const char *end, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
	static const double powers[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
	};
	bool		neg = false;
	uint64		m = 0;
	int			digits = 0;		/* in m, leading zeros not counted */
	int			e = 0;
	double		d;

	if (p < end && *p == '-')
	{
		neg = true;
		p++;
	}
	for (; p < end && isdigit((unsigned char) *p); p++)
	{
		if (digits > 0 || *p != '0')
			digits++;
		m = m * 10 + (*p - '0');
		if (digits > 16)
			return false;
	}
	if (p < end && *p == '.')
	{
		for (p++; p < end && isdigit((unsigned char) *p); p++)
		{
			if (digits > 0 || *p != '0')
				digits++;
			m = m * 10 + (*p - '0');
			e--;
			if (digits > 16)
				return false;
		}
	}
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		bool		eneg = false;
		int			x = 0;

		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = (*p++ == '-');
		for (; p < end && isdigit((unsigned char) *p); p++)
		{
			x = x * 10 + (*p - '0');
			if (x > 1000)
				return false;
		}
		e += eneg ? -x : x;
	}
	if (p != end || m > ((uint64) 1 << 53) || e < -22 || e > 22)
		return false;
	d = (double) m;
	d = e < 0 ? d / powers[-e] : d * powers[e];
	*out = neg ? -d : d;
	return true;
#else
	return false;
#endif
}

double
zs_json_double(const ZsJsonDoc *doc, int node)
{
	char		buf[64];
	const ZsJsonNode *n = &doc->nodes[node];
	double		d;

	if (exact_double(doc->text + n->raw_start, doc->text + n->raw_start + n->raw_len, &d))
		return d;
	if (n->raw_len < (int) sizeof(buf))
	{
		memcpy(buf, doc->text + n->raw_start, n->raw_len);
		buf[n->raw_len] = '\0';
		return strtod(buf, NULL);
	}
	else
	{
		char	   *copy = pnstrdup(doc->text + n->raw_start, n->raw_len);
		double		value = strtod(copy, NULL);

		pfree(copy);
		return value;
	}
}
