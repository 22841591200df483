/*-------------------------------------------------------------------------
 * json_js.c
 *	  A JSON text as zero-cache's JavaScript re-writes it:
 *	  BigIntJSON.stringify(BigIntJSON.parse(text)).
 *
 * zero-cache parses every element of a json[]/jsonb[] column (postgres.js
 * array parser + BigIntJSON.parse, which is json-custom-numbers) and
 * serializes it again, so what it stores is not the element's text but what
 * JavaScript made of it:
 *
 *	- numbers with a fraction or an exponent become doubles: 1e400 is null,
 *	  1e-400 is 0, 0.10000000000000000555 is 0.1; integer literals stay
 *	  exact (BigInt beyond 2^53), except that -0 prints as 0;
 *	- objects are plain JavaScript objects filled by assignment: a repeated
 *	  key keeps its first position and its last value, "__proto__" sets the
 *	  prototype instead of a member (so it disappears), and array-index keys
 *	  ("0" .. "4294967294") come first, in numeric order;
 *	- strings are re-escaped: json-custom-numbers writes a string verbatim
 *	  unless it holds a quote, a backslash or a control character, in which
 *	  case JSON.stringify escapes it; an unpaired surrogate is therefore
 *	  either escaped (\udxxx) or, written raw, turned into U+FFFD by Node's
 *	  UTF-8 encoder.
 *
 * The document is read with the exact reader (json_read.c) and written
 * without recursion, so any depth PostgreSQL accepts is handled.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/json_js.h"
#include "codec/json_out.h"
#include "codec/json_read.h"

/* an unpaired surrogate as json_read decodes it: ED A0..BF 80..BF */
static inline bool
is_wtf8_surrogate(const unsigned char *s, int i, int len)
{
	return s[i] == 0xED && i + 2 < len && s[i + 1] >= 0xA0;
}

/* A decoded string as json-custom-numbers' stringify writes it. */
static void
append_js_string(StringInfo out, const char *str, int len)
{
	const unsigned char *s = (const unsigned char *) str;
	bool		escape = false;
	int			run = 0;

	for (int i = 0; i < len && !escape; i++)
		escape = (s[i] < 0x20 || s[i] == '"' || s[i] == '\\');

	if (!escape)
	{
		appendStringInfoCharMacro(out, '"');
		for (int i = 0; i < len; i++)
		{
			if (!is_wtf8_surrogate(s, i, len))
				continue;
			appendBinaryStringInfo(out, str + run, i - run);
			appendStringInfoString(out, "\xEF\xBF\xBD");	/* U+FFFD */
			i += 2;
			run = i + 1;
		}
		appendBinaryStringInfo(out, str + run, len - run);
		appendStringInfoCharMacro(out, '"');
		return;
	}

	/* JSON.stringify: standard escapes, unpaired surrogates as \udxxx */
	{
		StringInfoData part;

		initStringInfo(&part);
		appendStringInfoCharMacro(out, '"');
		for (int i = 0; i < len; i++)
		{
			unsigned int cp;

			if (!is_wtf8_surrogate(s, i, len))
				continue;
			resetStringInfo(&part);
			zs_json_append_string(&part, str + run, i - run);
			appendBinaryStringInfo(out, part.data + 1, part.len - 2);
			cp = ((s[i] & 0x0F) << 12) | ((s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
			appendStringInfo(out, "\\u%04x", cp);
			i += 2;
			run = i + 1;
		}
		resetStringInfo(&part);
		zs_json_append_string(&part, str + run, len - run);
		appendBinaryStringInfo(out, part.data + 1, part.len - 2);
		appendStringInfoCharMacro(out, '"');
		pfree(part.data);
	}
}

static bool
append_js_number(StringInfo out, const char *raw, int len)
{
	if (memchr(raw, '.', len) || memchr(raw, 'e', len) || memchr(raw, 'E', len))
		return zs_json_append_number_text(out, raw, len);
	/* an integer literal: a safe integer or a BigInt, printed as read */
	if (len == 2 && raw[0] == '-' && raw[1] == '0')
		appendStringInfoCharMacro(out, '0');
	else
		appendBinaryStringInfo(out, raw, len);
	return true;
}

/* ---------------------------------------------------------------------
 * Objects: the member order and values of a JavaScript object
 * --------------------------------------------------------------------- */

typedef struct Member
{
	int			node;			/* the value (and its key) */
	int			pos;			/* first position of the key */
	bool		is_index;		/* an array-index key */
	uint32		index;
} Member;

/* "0", or [1-9][0-9]* up to 2^32 - 2: ordered before every other key */
static bool
array_index_key(const char *key, int len, uint32 *index)
{
	uint64		v = 0;

	if (len < 1 || len > 10 || (len > 1 && key[0] == '0'))
		return false;
	for (int i = 0; i < len; i++)
	{
		if (key[i] < '0' || key[i] > '9')
			return false;
		v = v * 10 + (key[i] - '0');
	}
	if (v > UINT64CONST(4294967294))
		return false;
	*index = (uint32) v;
	return true;
}

static bool
same_key(const ZsJsonDoc *doc, int a, int b)
{
	return doc->nodes[a].key_len == doc->nodes[b].key_len &&
		memcmp(zs_json_key(doc, a), zs_json_key(doc, b), doc->nodes[a].key_len) == 0;
}

static int
compare_key_then_pos(const void *a, const void *b, void *arg)
{
	const ZsJsonDoc *doc = arg;
	const Member *ma = a;
	const Member *mb = b;
	const ZsJsonNode *na = &doc->nodes[ma->node];
	const ZsJsonNode *nb = &doc->nodes[mb->node];
	int			c = memcmp(zs_json_key(doc, ma->node), zs_json_key(doc, mb->node),
						   Min(na->key_len, nb->key_len));

	if (c != 0)
		return c;
	if (na->key_len != nb->key_len)
		return na->key_len < nb->key_len ? -1 : 1;
	return ma->pos - mb->pos;
}

static int
compare_js_order(const void *a, const void *b)
{
	const Member *ma = a;
	const Member *mb = b;

	if (ma->is_index != mb->is_index)
		return ma->is_index ? -1 : 1;
	if (ma->is_index && ma->index != mb->index)
		return ma->index < mb->index ? -1 : 1;
	return ma->pos - mb->pos;
}

/* The value nodes of an object's members, in JavaScript's order. */
static int *
object_members(const ZsJsonDoc *doc, int object, int *nmembers)
{
	int			count = doc->nodes[object].count;
	Member	   *all = palloc(sizeof(Member) * Max(count, 1));
	int		   *result;
	int			n = 0;
	int			kept = 0;

	for (int c = doc->nodes[object].first_child, pos = 0; c >= 0;
		 c = doc->nodes[c].next, pos++)
	{
		const ZsJsonNode *node = &doc->nodes[c];

		if (node->key_len == 9 && memcmp(zs_json_key(doc, c), "__proto__", 9) == 0)
			continue;
		all[n].node = c;
		all[n].pos = pos;
		all[n].is_index = array_index_key(zs_json_key(doc, c), node->key_len, &all[n].index);
		n++;
	}

	/* a repeated key: first position, last value */
	qsort_arg(all, n, sizeof(Member), compare_key_then_pos, (void *) doc);
	for (int i = 0; i < n;)
	{
		int			j = i;

		while (j + 1 < n && same_key(doc, all[i].node, all[j + 1].node))
			j++;
		all[kept] = all[i];
		all[kept].node = all[j].node;
		kept++;
		i = j + 1;
	}
	qsort(all, kept, sizeof(Member), compare_js_order);

	result = palloc(sizeof(int) * Max(kept, 1));
	for (int i = 0; i < kept; i++)
		result[i] = all[i].node;
	pfree(all);
	*nmembers = kept;
	return result;
}

/* ---------------------------------------------------------------------
 * The writer: a container stack instead of recursion
 * --------------------------------------------------------------------- */

typedef struct OpenValue
{
	int			node;
	int		   *members;		/* objects: value nodes in output order */
	int			nmembers;
	int			next;			/* objects: index into members; arrays: next child */
	bool		first;
} OpenValue;

static bool
append_scalar(StringInfo out, const ZsJsonDoc *doc, int node)
{
	const ZsJsonNode *n = &doc->nodes[node];

	switch (n->type)
	{
		case ZS_JSON_NULL:
			appendStringInfoString(out, "null");
			return true;
		case ZS_JSON_TRUE:
			appendStringInfoString(out, "true");
			return true;
		case ZS_JSON_FALSE:
			appendStringInfoString(out, "false");
			return true;
		case ZS_JSON_NUMBER:
			return append_js_number(out, zs_json_raw(doc, node), n->raw_len);
		case ZS_JSON_STRING:
			append_js_string(out, zs_json_str(doc, node), n->str_len);
			return true;
		default:
			return false;
	}
}

static bool
append_document(StringInfo out, const ZsJsonDoc *doc)
{
	OpenValue  *stack = NULL;
	int			depth = 0;
	int			maxdepth = 0;
	int			node = 0;		/* the next value to write */
	bool		ok = true;

	for (;;)
	{
		ZsJsonType	type = doc->nodes[node].type;

		if (type == ZS_JSON_ARRAY || type == ZS_JSON_OBJECT)
		{
			OpenValue  *open;

			if (depth == maxdepth)
			{
				maxdepth = Max(16, maxdepth * 2);
				stack = stack ? repalloc(stack, sizeof(OpenValue) * maxdepth)
					: palloc(sizeof(OpenValue) * maxdepth);
			}
			open = &stack[depth++];
			open->node = node;
			open->first = true;
			if (type == ZS_JSON_OBJECT)
			{
				open->members = object_members(doc, node, &open->nmembers);
				open->next = 0;
				appendStringInfoCharMacro(out, '{');
			}
			else
			{
				open->members = NULL;
				open->next = doc->nodes[node].first_child;
				appendStringInfoCharMacro(out, '[');
			}
		}
		else if (!append_scalar(out, doc, node))
		{
			ok = false;
			break;
		}

		/* find the next value to write, closing finished containers */
		node = -1;
		while (depth > 0 && node < 0)
		{
			OpenValue  *open = &stack[depth - 1];

			if (doc->nodes[open->node].type == ZS_JSON_OBJECT)
			{
				if (open->next < open->nmembers)
				{
					node = open->members[open->next++];
					if (!open->first)
						appendStringInfoCharMacro(out, ',');
					append_js_string(out, zs_json_key(doc, node), doc->nodes[node].key_len);
					appendStringInfoCharMacro(out, ':');
				}
				else
				{
					appendStringInfoCharMacro(out, '}');
					pfree(open->members);
					depth--;
					continue;
				}
			}
			else if (open->next >= 0)
			{
				node = open->next;
				open->next = doc->nodes[node].next;
				if (!open->first)
					appendStringInfoCharMacro(out, ',');
			}
			else
			{
				appendStringInfoCharMacro(out, ']');
				depth--;
				continue;
			}
			open->first = false;
		}
		if (node < 0)
			break;
	}

	while (depth > 0)
	{
		if (stack[depth - 1].members)
			pfree(stack[depth - 1].members);
		depth--;
	}
	if (stack)
		pfree(stack);
	return ok;
}

bool
zs_json_append_js_reparsed(StringInfo out, const char *text, int len)
{
	ZsJsonDoc	doc;
	bool		ok;

	zs_json_doc_init(&doc);
	ok = zs_json_parse(&doc, text, len) && append_document(out, &doc);
	zs_json_doc_free(&doc);
	return ok;
}
