/*-------------------------------------------------------------------------
 * json_read.c
 *	  Parse one JSON document into a flat node array (see json_read.h).
 *
 * Strict RFC 8259: one value, optional whitespace around it, no trailing
 * commas, strings valid as escapes go (surrogates must pair), nesting at
 * most ZS_JSON_MAX_DEPTH deep. Errors name the byte offset.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <math.h>

#include "hex.h"
#include "json_out.h"
#include "json_read.h"

#define ZS_JSON_MAX_DEPTH 256

typedef struct Parser
{
	ZsJsonDoc  *doc;
	const char *p;
	const char *end;
	int			depth;
} Parser;

void
zs_json_doc_init(ZsJsonDoc *doc)
{
	memset(doc, 0, sizeof(*doc));
	doc->maxnodes = 64;
	doc->nodes = palloc(sizeof(ZsJsonNode) * doc->maxnodes);
	initStringInfo(&doc->strings);
}

void
zs_json_doc_free(ZsJsonDoc *doc)
{
	pfree(doc->nodes);
	pfree(doc->strings.data);
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
	n->type = type;
	n->raw_start = (int) (ps->p - doc->text);
	n->raw_len = 0;
	n->str_start = n->str_len = 0;
	n->key_start = n->key_len = 0;
	n->first_child = n->next = -1;
	n->count = 0;
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

		if (ps->p >= ps->end)
			return fail(ps, "unterminated string");
		c = (unsigned char) *ps->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(ps, "control character in string");
		if (c != '\\')
		{
			ps->p++;
			continue;
		}
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
					if (cp >= 0xDC00 && cp <= 0xDFFF)
						return fail(ps, "unpaired low surrogate");
					if (cp >= 0xD800 && cp <= 0xDBFF)
					{
						if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
							return fail(ps, "unpaired high surrogate");
						ps->p += 2;
						if (!read_hex4(ps, &low))
							return false;
						if (low < 0xDC00 || low > 0xDFFF)
							return fail(ps, "unpaired high surrogate");
						cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
					}
					zs_append_utf8(s, cp);
					break;
				}
			default:
				ps->p--;
				return fail(ps, "invalid escape");
		}
		run = ps->p;
	}
	appendBinaryStringInfo(s, run, ps->p - run);
	*len = s->len - *start;
	appendStringInfoChar(s, '\0');
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

static bool read_value(Parser *ps, int *out);

/* Read the members or elements after the opening bracket. */
static bool
read_container(Parser *ps, int node, bool is_object)
{
	char		close = is_object ? '}' : ']';
	int			last = -1;

	if (++ps->depth > ZS_JSON_MAX_DEPTH)
		return fail(ps, "nesting too deep");
	ps->p++;
	skip_space(ps);
	if (ps->p < ps->end && *ps->p == close)
	{
		ps->p++;
		ps->depth--;
		return true;
	}
	for (;;)
	{
		int			key_start = 0,
					key_len = 0,
					child;

		skip_space(ps);
		if (is_object)
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
		if (!read_value(ps, &child))
			return false;
		ps->doc->nodes[child].key_start = key_start;
		ps->doc->nodes[child].key_len = key_len;
		if (last < 0)
			ps->doc->nodes[node].first_child = child;
		else
			ps->doc->nodes[last].next = child;
		ps->doc->nodes[node].count++;
		last = child;
		skip_space(ps);
		if (ps->p >= ps->end)
			return fail(ps, is_object ? "unterminated object" : "unterminated array");
		if (*ps->p == ',')
		{
			ps->p++;
			continue;
		}
		if (*ps->p != close)
			return fail(ps, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
		ps->p++;
		ps->depth--;
		return true;
	}
}

static bool
read_value(Parser *ps, int *out)
{
	int			node;
	bool		ok;

	if (ps->p >= ps->end)
		return fail(ps, "expected a value");
	switch (*ps->p)
	{
		case '{':
			node = new_node(ps, ZS_JSON_OBJECT);
			ok = read_container(ps, node, true);
			break;
		case '[':
			node = new_node(ps, ZS_JSON_ARRAY);
			ok = read_container(ps, node, false);
			break;
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

bool
zs_json_parse(ZsJsonDoc *doc, const char *text, int len)
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

double
zs_json_double(const ZsJsonDoc *doc, int node)
{
	char		buf[64];
	const ZsJsonNode *n = &doc->nodes[node];

	if (n->raw_len < (int) sizeof(buf))
	{
		memcpy(buf, doc->text + n->raw_start, n->raw_len);
		buf[n->raw_len] = '\0';
		return strtod(buf, NULL);
	}
	else
	{
		char	   *copy = pnstrdup(doc->text + n->raw_start, n->raw_len);
		double		d = strtod(copy, NULL);

		pfree(copy);
		return d;
	}
}
