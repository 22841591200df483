/*-------------------------------------------------------------------------
 * pgoutput_read.c
 *	  Bounds-checked reader for the pgoutput wire format (proto_version 1),
 *	  as written by src/backend/replication/logical/proto.c.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "decoding/pgoutput_read.h"

typedef struct Reader
{
	const char *p;
	const char *end;
	const char *error;
} Reader;

static void
fail(Reader *r, const char *error)
{
	if (r->error == NULL)
		r->error = error;
	r->p = r->end;
}

static uint8_t
read_u8(Reader *r)
{
	if (r->end - r->p < 1)
	{
		fail(r, "message truncated");
		return 0;
	}
	return (uint8_t) *r->p++;
}

static uint64_t
read_uint(Reader *r, int nbytes)
{
	uint64_t	v = 0;

	if (r->end - r->p < nbytes)
	{
		fail(r, "message truncated");
		return 0;
	}
	for (int i = 0; i < nbytes; i++)
		v = (v << 8) | (uint8_t) r->p[i];
	r->p += nbytes;
	return v;
}

static const char *
read_cstring(Reader *r)
{
	const char *s = r->p;
	const char *nul;

	if (r->p >= r->end || (nul = memchr(r->p, '\0', r->end - r->p)) == NULL)
	{
		fail(r, "unterminated string");
		return "";
	}
	r->p = nul + 1;
	return s;
}

static void
read_tuple(Reader *r, ZsTuple *tuple)
{
	int			natts = (int) read_uint(r, 2);

	if (natts > ZS_MAX_COLUMNS)
	{
		fail(r, "too many columns in tuple");
		return;
	}
	tuple->natts = natts;
	for (int i = 0; i < natts && r->error == NULL; i++)
	{
		ZsTupleColumn *col = &tuple->cols[i];

		col->kind = (char) read_u8(r);
		col->data = NULL;
		col->len = 0;
		switch (col->kind)
		{
			case ZS_PGO_COL_NULL:
			case ZS_PGO_COL_UNCHANGED:
				break;
			case ZS_PGO_COL_TEXT:
			case ZS_PGO_COL_BINARY:
				{
					uint32_t	len = (uint32_t) read_uint(r, 4);

					if (len > (uint32_t) (r->end - r->p))
					{
						fail(r, "column value overruns message");
						return;
					}
					col->data = r->p;
					col->len = (int) len;
					r->p += len;
					break;
				}
			default:
				fail(r, "unknown column kind");
				return;
		}
	}
}

const char *
zs_pgoutput_parse(const char *data, int len, ZsPgoutputMsg *msg)
{
	Reader		r = {data, data + len, NULL};

	msg->type = (char) read_u8(&r);
	msg->old_kind = 0;
	switch (msg->type)
	{
		case ZS_PGO_BEGIN:
			msg->final_lsn = read_uint(&r, 8);
			msg->commit_time = (int64_t) read_uint(&r, 8);
			msg->xid = (uint32_t) read_uint(&r, 4);
			break;
		case ZS_PGO_COMMIT:
			msg->flags = read_u8(&r);
			msg->final_lsn = read_uint(&r, 8);
			msg->end_lsn = read_uint(&r, 8);
			msg->commit_time = (int64_t) read_uint(&r, 8);
			break;
		case ZS_PGO_ORIGIN:
			msg->end_lsn = read_uint(&r, 8);
			msg->relname = read_cstring(&r);
			break;
		case ZS_PGO_RELATION:
			msg->relid = (uint32_t) read_uint(&r, 4);
			msg->nspname = read_cstring(&r);
			msg->relname = read_cstring(&r);
			msg->replident = (char) read_u8(&r);
			msg->natts = (int) read_uint(&r, 2);
			if (r.error != NULL)
				break;
			if (msg->natts > ZS_MAX_COLUMNS)
			{
				fail(&r, "too many columns in relation");
				break;
			}
			msg->attrs = palloc(sizeof(ZsRelationAttr) * (msg->natts + 1));
			for (int i = 0; i < msg->natts && r.error == NULL; i++)
			{
				msg->attrs[i].is_key = (read_u8(&r) & 1) != 0;
				msg->attrs[i].name = read_cstring(&r);
				msg->attrs[i].typid = (uint32_t) read_uint(&r, 4);
				msg->attrs[i].typmod = (int32_t) read_uint(&r, 4);
			}
			break;
		case ZS_PGO_TYPE:
			msg->relid = (uint32_t) read_uint(&r, 4);
			msg->nspname = read_cstring(&r);
			msg->relname = read_cstring(&r);
			break;
		case ZS_PGO_INSERT:
			msg->relid = (uint32_t) read_uint(&r, 4);
			if (read_u8(&r) != ZS_PGO_TUPLE_NEW)
				fail(&r, "insert without new tuple");
			read_tuple(&r, msg->new_tuple);
			break;
		case ZS_PGO_UPDATE:
			{
				char		kind;

				msg->relid = (uint32_t) read_uint(&r, 4);
				kind = (char) read_u8(&r);
				if (kind == ZS_PGO_TUPLE_KEY || kind == ZS_PGO_TUPLE_OLD)
				{
					msg->old_kind = kind;
					read_tuple(&r, msg->old_tuple);
					kind = (char) read_u8(&r);
				}
				if (kind != ZS_PGO_TUPLE_NEW)
					fail(&r, "update without new tuple");
				read_tuple(&r, msg->new_tuple);
				break;
			}
		case ZS_PGO_DELETE:
			msg->relid = (uint32_t) read_uint(&r, 4);
			msg->old_kind = (char) read_u8(&r);
			if (msg->old_kind != ZS_PGO_TUPLE_KEY && msg->old_kind != ZS_PGO_TUPLE_OLD)
				fail(&r, "delete without old tuple");
			read_tuple(&r, msg->old_tuple);
			break;
		case ZS_PGO_TRUNCATE:
			msg->nrelids = (int) read_uint(&r, 4);
			msg->flags = read_u8(&r);
			msg->relids_raw = r.p;
			if (msg->nrelids < 0 || (int64_t) msg->nrelids * 4 != (int64_t) (r.end - r.p))
				fail(&r, "truncate relation list has the wrong length");
			r.p = r.end;
			break;
		case ZS_PGO_MESSAGE:
			msg->flags = read_u8(&r);
			msg->message_lsn = read_uint(&r, 8);
			msg->prefix = read_cstring(&r);
			msg->content_len = (int) read_uint(&r, 4);
			msg->content = r.p;
			if (r.error == NULL && (msg->content_len < 0 || msg->content_len > r.end - r.p))
				fail(&r, "message content longer than the message");
			else if (r.error == NULL)
				r.p += msg->content_len;
			break;
		default:
			fail(&r, "unknown message type");
			break;
	}
	if (r.error == NULL && r.p != r.end)
		fail(&r, "trailing bytes after message");
	return r.error;
}

uint32_t
zs_pgoutput_relid_at(const ZsPgoutputMsg *msg, int i)
{
	const unsigned char *p = (const unsigned char *) msg->relids_raw + 4 * i;

	return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) |
		((uint32_t) p[2] << 8) | (uint32_t) p[3];
}
