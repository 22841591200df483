/*-------------------------------------------------------------------------
 * stream_frame.c
 *	  Received stream frames -> their messages' types and watermarks
 *	  (see stream_frame.h).
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "codec/stream_frame.h"

/* nesting deeper than this is refused (Zero's messages nest a few levels) */
#define MAX_DEPTH 256

static const char *const type_names[] = {
	[ZS_STREAM_BEGIN] = "begin",
	[ZS_STREAM_DATA] = "data",
	[ZS_STREAM_COMMIT] = "commit",
	[ZS_STREAM_ROLLBACK] = "rollback",
	[ZS_STREAM_STATUS] = "status",
	[ZS_STREAM_ERROR] = "error",
	[ZS_STREAM_OTHER] = "other",
};

static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at an opening quote: the byte after the closing one, or NULL */
static const char *
skip_string(const char *p, const char *end)
{
	const char *from = p + 1;

	for (;;)
	{
		const char *q = memchr(from, '"', end - from);
		const char *r;

		if (q == NULL)
			return NULL;
		/* escaped if an odd number of backslashes precede it */
		for (r = q; r > p + 1 && r[-1] == '\\'; r--)
			;
		if (((q - r) & 1) == 0)
			return q + 1;
		from = q + 1;
	}
}

/* a byte that ends a scalar (number, true, false, null) */
static inline bool
ends_scalar(char c)
{
	switch (c)
	{
		case ',':
		case ']':
		case '}':
		case ':':
		case '{':
		case '[':
		case '"':
		case ' ':
		case '\t':
		case '\r':
		case '\n':
			return true;
		default:
			return false;
	}
}

/*
 * p at a value: the byte after it, or NULL. Brackets must match; scalars
 * are taken as they are (up to the next delimiter).
 */
static const char *
skip_value(const char *p, const char *end)
{
	char		closers[MAX_DEPTH];
	int			depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[')
	{
		const char *start = p;

		while (p < end && !ends_scalar(*p))
			p++;
		return p > start ? p : NULL;
	}
	while (p < end)
	{
		switch (*p)
		{
			case '"':
				p = skip_string(p, end);
				if (p == NULL)
					return NULL;
				continue;
			case '{':
			case '[':
				if (depth == MAX_DEPTH)
					return NULL;
				closers[depth++] = *p == '{' ? '}' : ']';
				break;
			case '}':
			case ']':
				if (depth == 0 || closers[depth - 1] != *p)
					return NULL;
				if (--depth == 0)
					return p + 1;
				break;
			default:
				break;
		}
		p++;
	}
	return NULL;
}

/* p at a string: true if its raw text is name */
static bool
string_is(const char *p, const char *after, const char *name)
{
	size_t		len = strlen(name);

	return (size_t) (after - p) == len + 2 && memcmp(p + 1, name, len) == 0;
}

/* an integer value [p, after) */
static bool
read_int64(const char *p, const char *after, int64 *value)
{
	bool		negative = false;
	uint64		v = 0;

	if (p < after && *p == '-')
	{
		negative = true;
		p++;
	}
	if (p == after)
		return false;
	for (; p < after; p++)
	{
		if (*p < '0' || *p > '9' || v > (PG_UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (*p - '0');
	}
	if (v > (uint64) PG_INT64_MAX)
		return false;
	*value = negative ? -(int64) v : (int64) v;
	return true;
}

/*
 * The frames the server (and zero-cache) send, {"id":<n>,"msg":...} and
 * {"id":<n>,"batch":[...]}, are taken without a pass over their messages:
 * the messages run to the frame's closing brace, and reading them finds
 * whatever is wrong with them.
 */
static bool
server_shape(const char *text, const char *end, ZsStreamFrame *frame)
{
	const char *p = text;
	const char *digits;
	const char *close = end;

	if (end - text < 16 || memcmp(p, "{\"id\":", 6) != 0)
		return false;
	p += 6;
	digits = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == digits || p - digits > 18 || (*digits == '0' && p - digits > 1) ||
		!read_int64(digits, p, &frame->id))
		return false;
	while (close > p && (close[-1] == ' ' || close[-1] == '\t' || close[-1] == '\n' || close[-1] == '\r'))
		close--;
	if (close[-1] != '}')
		return false;
	close--;
	if (close - p > 7 && memcmp(p, ",\"msg\":", 7) == 0)
	{
		frame->kind = ZS_FRAME_MSG;
		frame->items = p + 7;
		frame->items_end = close;
		return true;
	}
	if (close - p > 10 && memcmp(p, ",\"batch\":[", 10) == 0)
	{
		while (close > p + 10 && (close[-1] == ' ' || close[-1] == '\t' || close[-1] == '\n' || close[-1] == '\r'))
			close--;
		if (close[-1] != ']')
			return false;
		frame->kind = ZS_FRAME_BATCH;
		frame->items = p + 10;
		frame->items_end = close - 1;
		return true;
	}
	return false;
}

bool
zs_stream_frame_parse(const char *text, int len, ZsStreamFrame *frame)
{
	const char *end = text + len;
	const char *p = skip_ws(text, end);
	bool		has_id = false;
	bool		has_ack = false;
	int			bodies = 0;

	memset(frame, 0, sizeof(*frame));
	if (server_shape(text, end, frame))
		return true;
	if (p >= end || *p != '{')
		return false;
	p = skip_ws(p + 1, end);
	while (p < end && *p != '}')
	{
		const char *key = p;
		const char *key_end;
		const char *value;
		const char *value_end;

		if (*p != '"' || (key_end = skip_string(p, end)) == NULL)
			return false;
		p = skip_ws(key_end, end);
		if (p >= end || *p != ':')
			return false;
		value = skip_ws(p + 1, end);
		value_end = skip_value(value, end);
		if (value_end == NULL)
			return false;
		if (string_is(key, key_end, "id") || string_is(key, key_end, "ack"))
		{
			bool		is_ack = key[1] == 'a';

			if ((is_ack ? has_ack : has_id) || !read_int64(value, value_end, &frame->id))
				return false;
			if (is_ack)
				has_ack = true;
			else
				has_id = true;
		}
		else if (string_is(key, key_end, "msg"))
		{
			frame->kind = ZS_FRAME_MSG;
			frame->items = value;
			frame->items_end = value_end;
			bodies++;
		}
		else if (string_is(key, key_end, "batch"))
		{
			if (*value != '[')
				return false;
			frame->kind = ZS_FRAME_BATCH;
			frame->items = value + 1;
			frame->items_end = value_end - 1;
			bodies++;
		}
		p = skip_ws(value_end, end);
		if (p < end && *p == ',')
		{
			p = skip_ws(p + 1, end);
			if (p < end && *p == '}')
				return false;	/* a trailing comma */
		}
		else if (p < end && *p != '}')
			return false;
	}
	if (p >= end || skip_ws(p + 1, end) != end)
		return false;
	if (has_ack)
	{
		frame->kind = ZS_FRAME_ACK;
		frame->items = frame->items_end = NULL;
		return !has_id && bodies == 0;
	}
	return has_id && bodies == 1;
}

/*
 * The watermark object that ends a begin or commit, {"<key>":"<w>"}, in
 * [p, after); false if it is anything else.
 */
static bool
read_watermark(const char *p, const char *after, const char *key, ZsStreamMessage *msg)
{
	const char *k_end;
	const char *w;
	const char *w_end;

	if (p >= after || *p != '{')
		return false;
	p = skip_ws(p + 1, after);
	if (p >= after || *p != '"' || (k_end = skip_string(p, after)) == NULL ||
		!string_is(p, k_end, key))
		return false;
	p = skip_ws(k_end, after);
	if (p >= after || *p != ':')
		return false;
	w = skip_ws(p + 1, after);
	if (w >= after || *w != '"' || (w_end = skip_string(w, after)) == NULL)
		return false;
	if (memchr(w, '\\', w_end - w) != NULL || w_end - w < 3)
		return false;			/* watermarks need no escapes, and are not empty */
	if (skip_ws(w_end, after) != after - 1 || after[-1] != '}')
		return false;
	msg->watermark = w + 1;
	msg->watermark_len = (int) (w_end - w - 2);
	return true;
}

/*
 * One message starting at p, in one pass: its type and watermark, and the
 * byte after it in *after; false if it is malformed.
 */
static bool
read_message(const char *p, const char *end, ZsStreamMessage *msg, const char **after)
{
	const char *tag;
	const char *tag_end;
	const char *last = NULL;
	const char *last_end = NULL;
	int			elements = 1;

	msg->text = p;
	msg->watermark = NULL;
	msg->watermark_len = 0;
	if (p >= end || *p != '[')
		return false;
	tag = skip_ws(p + 1, end);
	if (tag >= end || *tag != '"' || (tag_end = skip_string(tag, end)) == NULL)
		return false;
	msg->type = ZS_STREAM_OTHER;
	for (int t = 0; t < (int) lengthof(type_names); t++)
	{
		if (t != ZS_STREAM_OTHER && string_is(tag, tag_end, type_names[t]))
			msg->type = (ZsStreamMessageType) t;
	}
	/* the other elements: only the last one is looked at */
	p = skip_ws(tag_end, end);
	while (p < end && *p == ',')
	{
		last = skip_ws(p + 1, end);
		last_end = skip_value(last, end);
		if (last_end == NULL)
			return false;
		elements++;
		p = skip_ws(last_end, end);
	}
	if (p >= end || *p != ']')
		return false;
	*after = p + 1;
	msg->len = (int) (*after - msg->text);
	if (msg->type == ZS_STREAM_BEGIN)
		return elements >= 3 && read_watermark(last, last_end, "commitWatermark", msg);
	if (msg->type == ZS_STREAM_COMMIT)
		return elements >= 3 && read_watermark(last, last_end, "watermark", msg);
	return true;
}

int
zs_stream_frame_next_message(ZsStreamFrame *frame, ZsStreamMessage *msg)
{
	const char *end = frame->items_end;
	const char *p;
	const char *after;

	if (frame->items == NULL)
		return 0;
	p = skip_ws(frame->items, end);
	/* after a message: the end, or (in a batch) a comma and another one */
	if (frame->started && p < end)
	{
		if (frame->kind != ZS_FRAME_BATCH || *p != ',')
			goto malformed;
		p = skip_ws(p + 1, end);
		if (p >= end)
			goto malformed;
	}
	if (p >= end)
	{
		frame->items = NULL;
		return 0;
	}
	if (!read_message(p, end, msg, &after))
		goto malformed;
	frame->started = true;
	frame->items = after;
	return 1;

malformed:
	frame->items = NULL;
	return -1;
}
