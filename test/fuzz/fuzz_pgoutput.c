/*-------------------------------------------------------------------------
 * fuzz_pgoutput.c
 *	  libFuzzer target for src/decoding/pgoutput_read.c: any bytes as one
 *	  pgoutput (proto_version 1) message.
 *
 * Whatever parses must point into the message only and must be the whole
 * message: written back from the parsed fields, as proto.c writes them, it
 * gives the input byte for byte (except the relation attributes' flags byte,
 * of which only the key bit is kept).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "decoding/pgoutput_read.h"
#include "fuzz.h"

static ZsTuple old_tuple;
static ZsTuple new_tuple;

typedef struct Writer
{
	char	   *data;
	int			len;
	int			size;
	int			nskip;			/* positions not compared (attribute flags) */
	int			skip[ZS_MAX_COLUMNS];
} Writer;

static void
put(Writer *w, const void *p, int n)
{
	FUZZ_CHECK(w->len + n <= w->size, "the written message is no longer than the input");
	memcpy(w->data + w->len, p, n);
	w->len += n;
}

static void
put_uint(Writer *w, uint64_t v, int nbytes)
{
	for (int i = nbytes - 1; i >= 0; i--)
	{
		char		c = (char) ((v >> (8 * i)) & 0xFF);

		put(w, &c, 1);
	}
}

static void
put_u8(Writer *w, int v)
{
	put_uint(w, (uint64_t) v, 1);
}

/* a string of the message: it must lie in it and end before its end */
static void
put_cstring(Writer *w, const char *s, const char *data, int len)
{
	FUZZ_CHECK(s >= data && s < data + len && memchr(s, '\0', data + len - s) != NULL,
			   "a string lies within the message");
	put(w, s, (int) strlen(s) + 1);
}

static void
put_tuple(Writer *w, const ZsTuple *t, const char *data, int len)
{
	FUZZ_CHECK(t->natts >= 0 && t->natts <= ZS_MAX_COLUMNS, "column count");
	put_uint(w, (uint64_t) t->natts, 2);
	for (int i = 0; i < t->natts; i++)
	{
		const ZsTupleColumn *c = &t->cols[i];

		put_u8(w, c->kind);
		if (c->kind == ZS_PGO_COL_TEXT || c->kind == ZS_PGO_COL_BINARY)
		{
			FUZZ_CHECK(c->len >= 0 && c->data >= data && c->data + c->len <= data + len,
					   "a value lies within the message");
			put_uint(w, (uint64_t) c->len, 4);
			put(w, c->data, c->len);
		}
		else
			FUZZ_CHECK(c->kind == ZS_PGO_COL_NULL || c->kind == ZS_PGO_COL_UNCHANGED,
					   "a known column kind");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size)
{
	const char *data = (const char *) bytes;
	int			len = (int) size;
	ZsPgoutputMsg msg;
	const char *error;
	Writer		w;

	memset(&msg, 0, sizeof(msg));
	msg.old_tuple = &old_tuple;
	msg.new_tuple = &new_tuple;
	error = zs_pgoutput_parse(data, len, &msg);
	if (error != NULL)
	{
		if (msg.attrs)
			pfree(msg.attrs);
		return 0;
	}

	w.data = palloc(len + 1);
	w.len = 0;
	w.size = len;
	w.nskip = 0;
	put_u8(&w, msg.type);
	switch (msg.type)
	{
		case ZS_PGO_BEGIN:
			put_uint(&w, msg.final_lsn, 8);
			put_uint(&w, (uint64_t) msg.commit_time, 8);
			put_uint(&w, msg.xid, 4);
			break;
		case ZS_PGO_COMMIT:
			put_u8(&w, msg.flags);
			put_uint(&w, msg.final_lsn, 8);
			put_uint(&w, msg.end_lsn, 8);
			put_uint(&w, (uint64_t) msg.commit_time, 8);
			break;
		case ZS_PGO_ORIGIN:
			put_uint(&w, msg.end_lsn, 8);
			put_cstring(&w, msg.relname, data, len);
			break;
		case ZS_PGO_RELATION:
			put_uint(&w, msg.relid, 4);
			put_cstring(&w, msg.nspname, data, len);
			put_cstring(&w, msg.relname, data, len);
			put_u8(&w, msg.replident);
			FUZZ_CHECK(msg.natts >= 0 && msg.natts <= ZS_MAX_COLUMNS && msg.attrs != NULL,
					   "relation attributes");
			put_uint(&w, (uint64_t) msg.natts, 2);
			for (int i = 0; i < msg.natts; i++)
			{
				w.skip[w.nskip++] = w.len;
				put_u8(&w, msg.attrs[i].is_key ? 1 : 0);
				put_cstring(&w, msg.attrs[i].name, data, len);
				put_uint(&w, msg.attrs[i].typid, 4);
				put_uint(&w, (uint32_t) msg.attrs[i].typmod, 4);
			}
			break;
		case ZS_PGO_TYPE:
			put_uint(&w, msg.relid, 4);
			put_cstring(&w, msg.nspname, data, len);
			put_cstring(&w, msg.relname, data, len);
			break;
		case ZS_PGO_INSERT:
			put_uint(&w, msg.relid, 4);
			put_u8(&w, ZS_PGO_TUPLE_NEW);
			put_tuple(&w, msg.new_tuple, data, len);
			break;
		case ZS_PGO_UPDATE:
			put_uint(&w, msg.relid, 4);
			if (msg.old_kind != 0)
			{
				FUZZ_CHECK(msg.old_kind == ZS_PGO_TUPLE_KEY || msg.old_kind == ZS_PGO_TUPLE_OLD,
						   "update's old tuple kind");
				put_u8(&w, msg.old_kind);
				put_tuple(&w, msg.old_tuple, data, len);
			}
			put_u8(&w, ZS_PGO_TUPLE_NEW);
			put_tuple(&w, msg.new_tuple, data, len);
			break;
		case ZS_PGO_DELETE:
			put_uint(&w, msg.relid, 4);
			FUZZ_CHECK(msg.old_kind == ZS_PGO_TUPLE_KEY || msg.old_kind == ZS_PGO_TUPLE_OLD,
					   "delete's old tuple kind");
			put_u8(&w, msg.old_kind);
			put_tuple(&w, msg.old_tuple, data, len);
			break;
		case ZS_PGO_TRUNCATE:
			FUZZ_CHECK(msg.nrelids >= 0 && msg.relids_raw >= data &&
					   msg.relids_raw + 4 * (int64) msg.nrelids <= data + len,
					   "truncate relation list within the message");
			put_uint(&w, (uint64_t) msg.nrelids, 4);
			put_u8(&w, msg.flags);
			for (int i = 0; i < msg.nrelids; i++)
				put_uint(&w, zs_pgoutput_relid_at(&msg, i), 4);
			break;
		case ZS_PGO_MESSAGE:
			FUZZ_CHECK(msg.content_len >= 0 && msg.content >= data &&
					   msg.content + msg.content_len <= data + len,
					   "message content within the message");
			put_u8(&w, msg.flags);
			put_uint(&w, msg.message_lsn, 8);
			put_cstring(&w, msg.prefix, data, len);
			put_uint(&w, (uint64_t) msg.content_len, 4);
			put(&w, msg.content, msg.content_len);
			break;
		default:
			FUZZ_CHECK(false, "a parsed message has a known type");
	}

	FUZZ_CHECK(w.len == len, "the parsed fields are the whole message");
	for (int i = 0, s = 0; i < len; i++)
	{
		if (s < w.nskip && w.skip[s] == i)
		{
			FUZZ_CHECK((w.data[i] & 1) == (data[i] & 1), "an attribute's key flag");
			s++;
			continue;
		}
		FUZZ_CHECK(w.data[i] == data[i], "written back, the message is the input");
	}
	pfree(w.data);
	if (msg.attrs)
		pfree(msg.attrs);
	return 0;
}
