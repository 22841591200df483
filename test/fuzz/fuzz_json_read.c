/*-------------------------------------------------------------------------
 * fuzz_json_read.c
 *	  libFuzzer target for src/codec/json_read.c: any bytes as a JSON
 *	  document.
 *
 * What parses is checked node by node (tree links, counts, source text of
 * every value, accessors) and serialized again, canonically (no whitespace,
 * numbers as written, strings escaped by zs_json_append_string); the
 * serialization must parse to the same tree and serialize identically.
 * A document that a reused ZsJsonDoc parses must parse the same way in a
 * fresh one.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/json_out.h"
#include "codec/json_read.h"
#include "fuzz.h"

static ZsJsonDoc reused;
static bool reused_ready = false;

/* Did two docs parse to the same nodes and decoded strings? */
static bool
same_nodes(const ZsJsonDoc *a, const ZsJsonDoc *b)
{
	return a->nnodes == b->nnodes &&
		memcmp(a->nodes, b->nodes, sizeof(ZsJsonNode) * a->nnodes) == 0 &&
		a->strings.len == b->strings.len &&
		memcmp(a->strings.data, b->strings.data, a->strings.len) == 0;
}

/* Serialize the tree canonically, without recursion. */
static void
serialize(const ZsJsonDoc *doc, StringInfo out)
{
	int		   *stack = palloc(sizeof(int) * (doc->nnodes + 1));
	int			depth = 0;
	int			node = 0;

	for (;;)
	{
		const ZsJsonNode *n = &doc->nodes[node];
		bool		in_object = depth > 0 && doc->nodes[stack[depth - 1]].type == ZS_JSON_OBJECT;

		if (in_object)
		{
			zs_json_append_string(out, zs_json_key(doc, node), n->key_len);
			appendStringInfoChar(out, ':');
		}
		switch (n->type)
		{
			case ZS_JSON_NULL:
				appendStringInfoString(out, "null");
				break;
			case ZS_JSON_TRUE:
				appendStringInfoString(out, "true");
				break;
			case ZS_JSON_FALSE:
				appendStringInfoString(out, "false");
				break;
			case ZS_JSON_NUMBER:
				appendBinaryStringInfo(out, zs_json_raw(doc, node), n->raw_len);
				break;
			case ZS_JSON_STRING:
				zs_json_append_string(out, zs_json_str(doc, node), n->str_len);
				break;
			case ZS_JSON_ARRAY:
			case ZS_JSON_OBJECT:
				appendStringInfoChar(out, n->type == ZS_JSON_ARRAY ? '[' : '{');
				if (n->first_child >= 0)
				{
					stack[depth++] = node;
					node = n->first_child;
					continue;
				}
				appendStringInfoChar(out, n->type == ZS_JSON_ARRAY ? ']' : '}');
				break;
		}
		/* the next sibling, or close containers until one has one */
		while (depth > 0 && doc->nodes[node].next < 0)
		{
			node = stack[--depth];
			appendStringInfoChar(out, doc->nodes[node].type == ZS_JSON_ARRAY ? ']' : '}');
		}
		if (depth == 0)
			break;
		appendStringInfoChar(out, ',');
		node = doc->nodes[node].next;
	}
	pfree(stack);
}

/* Structural checks of a parsed document. */
static void
check_tree(const ZsJsonDoc *doc)
{
	ZsJsonDoc	part;

	FUZZ_CHECK(doc->nnodes >= 1, "a document has a root");
	FUZZ_CHECK(doc->nodes[0].next == -1, "the root has no sibling");
	zs_json_doc_init(&part);
	for (int i = 0; i < doc->nnodes; i++)
	{
		const ZsJsonNode *n = &doc->nodes[i];
		const char *raw = zs_json_raw(doc, i);

		FUZZ_CHECK(n->raw_start >= 0 && n->raw_len > 0 && n->raw_start + n->raw_len <= doc->len,
				   "source text within the document");
		FUZZ_CHECK(n->next == -1 || n->next > i, "siblings follow in document order");
		switch (n->type)
		{
			case ZS_JSON_ARRAY:
			case ZS_JSON_OBJECT:
				{
					int			count = 0;
					int			last_end = n->raw_start;
					bool		is_array = n->type == ZS_JSON_ARRAY;

					FUZZ_CHECK(raw[0] == (is_array ? '[' : '{') &&
							   raw[n->raw_len - 1] == (is_array ? ']' : '}'),
							   "a container's source text is bracketed");
					for (int c = n->first_child; c >= 0; c = doc->nodes[c].next)
					{
						const ZsJsonNode *child = &doc->nodes[c];

						FUZZ_CHECK(c > i, "children follow their parent");
						FUZZ_CHECK(child->raw_start > last_end &&
								   child->raw_start + child->raw_len < n->raw_start + n->raw_len,
								   "a child's text lies within its parent's, in order");
						last_end = child->raw_start + child->raw_len;
						if (is_array)
							FUZZ_CHECK(zs_json_at(doc, i, count) == c, "zs_json_at");
						else
						{
							int			found;

							FUZZ_CHECK(strlen(zs_json_key(doc, c)) <= (size_t) child->key_len,
									   "key is NUL-terminated");
							found = zs_json_get(doc, i, zs_json_key(doc, c));
							/* a key holding \u0000 is found only by its prefix */
							if ((int) strlen(zs_json_key(doc, c)) == child->key_len)
								FUZZ_CHECK(found >= 0 && found <= c &&
										   doc->nodes[found].key_len == child->key_len &&
										   memcmp(zs_json_key(doc, found), zs_json_key(doc, c),
												  child->key_len) == 0,
										   "zs_json_get finds the first member of a key");
						}
						count++;
					}
					FUZZ_CHECK(count == n->count, "child count");
					if (is_array)
						FUZZ_CHECK(zs_json_at(doc, i, count) == -1, "zs_json_at past the end");
					break;
				}
			case ZS_JSON_NUMBER:
				{
					int64		v;

					FUZZ_CHECK(zs_json_parse(&part, raw, n->raw_len) &&
							   part.nodes[0].type == ZS_JSON_NUMBER, "a number alone parses");
					if (zs_json_int64(doc, i, &v))
					{
						char		buf[32];

						snprintf(buf, sizeof(buf), INT64_FORMAT, v);
						/* "-0" reads as 0 */
						FUZZ_CHECK((strlen(buf) == (size_t) n->raw_len &&
									memcmp(buf, raw, n->raw_len) == 0) ||
								   (v == 0 && n->raw_len == 2 && raw[0] == '-'),
								   "zs_json_int64 reads the integer as written");
					}
					{
						/* the reader's fast path rounds as strtod does */
						char	   *copy = pnstrdup(raw, n->raw_len);
						double		want = strtod(copy, NULL);
						double		got = zs_json_double(doc, i);

						FUZZ_CHECK(memcmp(&got, &want, sizeof(double)) == 0,
								   "zs_json_double reads what strtod reads");
						pfree(copy);
					}
					break;
				}
			case ZS_JSON_STRING:
				FUZZ_CHECK(n->str_start + n->str_len < doc->strings.len &&
						   zs_json_str(doc, i)[n->str_len] == '\0', "decoded string in strings");
				FUZZ_CHECK(zs_json_parse(&part, raw, n->raw_len) &&
						   part.nodes[0].type == ZS_JSON_STRING &&
						   part.nodes[0].str_len == n->str_len &&
						   memcmp(zs_json_str(&part, 0), zs_json_str(doc, i), n->str_len) == 0,
						   "a string alone decodes the same");
				if ((int) strlen(zs_json_str(doc, i)) == n->str_len)
					FUZZ_CHECK(zs_json_str_eq(doc, i, zs_json_str(doc, i)), "zs_json_str_eq");
				break;
			default:
				FUZZ_CHECK(zs_json_parse(&part, raw, n->raw_len) &&
						   part.nodes[0].type == n->type, "a literal alone parses");
				break;
		}
	}
	zs_json_doc_free(&part);
}

/*
 * Walk a whole parse and a deferring one (key, depth) in document order:
 * the same nodes with the same text, names and kinds, except that a
 * deferred object has no children (its whole subtree is skipped), and a
 * node is deferred exactly when it is an object that is the member named
 * key of an object at that depth. A deferred object reads alone as the
 * object it is.
 */
static void
compare_deferred(const ZsJsonDoc *whole, const ZsJsonDoc *d, const char *key, int depth,
				 ZsJsonDoc *part)
{
	int		   *open_end = palloc(sizeof(int) * (whole->nnodes + 1));
	bool	   *open_object = palloc(sizeof(bool) * (whole->nnodes + 1));
	int			top = 0;
	int			j = 0;
	int			keylen = (int) strlen(key);

	for (int i = 0; i < whole->nnodes;)
	{
		const ZsJsonNode *m = &whole->nodes[i];
		const ZsJsonNode *n;
		bool		member;
		bool		should;

		while (top > 0 && m->raw_start >= open_end[top - 1])
			top--;
		FUZZ_CHECK(j < d->nnodes, "deferring keeps every node outside deferred ones");
		n = &d->nodes[j];
		member = top > 0 && open_object[top - 1];
		FUZZ_CHECK(n->raw_start == m->raw_start && n->raw_len == m->raw_len && n->type == m->type &&
				   (!member || (n->key_len == m->key_len &&
								memcmp(zs_json_key(d, j), zs_json_key(whole, i), m->key_len) == 0)),
				   "a node has the same text deferring or not");
		should = m->type == ZS_JSON_OBJECT && member && top == depth && keylen > 0 &&
			m->key_len == keylen && memcmp(zs_json_key(whole, i), key, keylen) == 0;
		FUZZ_CHECK(n->deferred == should, "exactly the objects named so at that depth are deferred");
		i++;
		j++;
		if (n->deferred)
		{
			FUZZ_CHECK(n->count == 0 && n->first_child == -1 &&
					   zs_json_parse(part, zs_json_raw(d, j - 1), n->raw_len) &&
					   part->nodes[0].type == ZS_JSON_OBJECT && part->nodes[0].count == m->count,
					   "a deferred member reads alone as the object");
			while (i < whole->nnodes && whole->nodes[i].raw_start < m->raw_start + m->raw_len)
				i++;
		}
		else if (m->type == ZS_JSON_OBJECT || m->type == ZS_JSON_ARRAY)
		{
			open_end[top] = m->raw_start + m->raw_len;
			open_object[top] = m->type == ZS_JSON_OBJECT;
			top++;
		}
	}
	FUZZ_CHECK(j == d->nnodes, "deferring adds no node");
	pfree(open_end);
	pfree(open_object);
}

/*
 * zs_json_parse_deferring_at of "relation" and of the root's first member
 * name, at depths 1 to 4, each twice: what parses whole parses so too,
 * with the nodes compare_deferred expects. The doc lives across inputs,
 * so a deferred member is also stepped over as the text of the last one
 * (of this input, or of an earlier one) wherever it starts so.
 */
static ZsJsonDoc deferring_doc;		/* lives across inputs */
static bool deferring_doc_ready = false;

static void
check_deferring(const ZsJsonDoc *whole, const char *text, int len)
{
	const char *keys[2] = {"relation", NULL};
	ZsJsonDoc	part;

	if (whole->nodes[0].type == ZS_JSON_OBJECT && whole->nodes[0].first_child >= 0)
		keys[1] = zs_json_key(whole, whole->nodes[0].first_child);
	if (!deferring_doc_ready)
	{
		zs_json_doc_init(&deferring_doc);
		deferring_doc_ready = true;
	}
	zs_json_doc_init(&part);
	for (int k = 0; k < 2 && keys[k] != NULL; k++)
	{
		for (int depth = 1; depth <= 4; depth++)
		{
			for (int pass = 0; pass < 2; pass++)
			{
				FUZZ_CHECK(depth == 1 ?
						   zs_json_parse_deferring(&deferring_doc, text, len, keys[k]) :
						   zs_json_parse_deferring_at(&deferring_doc, text, len, keys[k], depth),
						   "what parses whole parses deferring");
				compare_deferred(whole, &deferring_doc, keys[k], depth, &part);
			}
		}
	}
	zs_json_doc_free(&part);
}

/*
 * Any input, valid or not: deferring "relation" at depths 1 to 4, the doc
 * that keeps the last deferred text (of this input or an earlier one)
 * parses as a doc that keeps none: the same success, error and nodes.
 */
static void
check_kept_text(const char *text, int len)
{
	ZsJsonDoc	fresh;

	if (!deferring_doc_ready)
	{
		zs_json_doc_init(&deferring_doc);
		deferring_doc_ready = true;
	}
	zs_json_doc_init(&fresh);
	for (int depth = 1; depth <= 4; depth++)
	{
		bool		kept;

		resetStringInfo(&fresh.deferred_last);
		kept = zs_json_parse_deferring_at(&deferring_doc, text, len, "relation", depth);
		FUZZ_CHECK(zs_json_parse_deferring_at(&fresh, text, len, "relation", depth) == kept,
				   "a kept deferred text changes nothing");
		if (!kept)
			FUZZ_CHECK(strcmp(deferring_doc.error, fresh.error) == 0, "the same error with a kept text");
		else
			FUZZ_CHECK(same_nodes(&fresh, &deferring_doc), "the same nodes with a kept text");
	}
	zs_json_doc_free(&fresh);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *) data;
	ZsJsonDoc	fresh;
	ZsJsonDoc	again;
	StringInfoData out1,
				out2;
	bool		ok;

	if (!reused_ready)
	{
		zs_json_doc_init(&reused);
		reused_ready = true;
	}
	check_kept_text(text, (int) size);
	ok = zs_json_parse(&reused, text, (int) size);
	zs_json_doc_init(&fresh);
	FUZZ_CHECK(zs_json_parse(&fresh, text, (int) size) == ok, "a reused doc parses the same");
	if (!ok)
	{
		FUZZ_CHECK(reused.error[0] != '\0', "a failed parse says why");
		zs_json_doc_free(&fresh);
		return 0;
	}
	FUZZ_CHECK(same_nodes(&fresh, &reused), "a reused doc gives the same nodes");
	check_tree(&fresh);
	check_deferring(&fresh, text, (int) size);

	initStringInfo(&out1);
	initStringInfo(&out2);
	serialize(&fresh, &out1);
	zs_json_doc_init(&again);
	FUZZ_CHECK(zs_json_parse(&again, out1.data, out1.len), "the serialization parses");
	FUZZ_CHECK(again.nnodes == fresh.nnodes, "the serialization has as many nodes");
	for (int i = 0; i < again.nnodes; i++)
	{
		const ZsJsonNode *a = &fresh.nodes[i];
		const ZsJsonNode *b = &again.nodes[i];

		FUZZ_CHECK(a->type == b->type && a->count == b->count &&
				   a->first_child == b->first_child && a->next == b->next &&
				   a->str_len == b->str_len && a->key_len == b->key_len,
				   "the serialization parses to the same tree");
		FUZZ_CHECK(memcmp(zs_json_str(&fresh, i), zs_json_str(&again, i), a->str_len) == 0 &&
				   memcmp(zs_json_key(&fresh, i), zs_json_key(&again, i), a->key_len) == 0,
				   "the same strings and keys");
	}
	serialize(&again, &out2);
	FUZZ_CHECK(out1.len == out2.len && memcmp(out1.data, out2.data, out1.len) == 0,
			   "serializing is idempotent");

	zs_json_doc_free(&again);
	zs_json_doc_free(&fresh);
	pfree(out1.data);
	pfree(out2.data);
	return 0;
}
