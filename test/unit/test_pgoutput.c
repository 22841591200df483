/*
 * Unit tests for the pgoutput (proto_version 1) message reader: every
 * message kind built byte by byte as proto.c writes it, and truncated or
 * corrupt input, which must be reported and never read out of bounds.
 */
#include "postgres_fe.h"

#include "decoding/pgoutput_read.h"
#include "unit.h"

static ZsTuple old_tuple;
static ZsTuple new_tuple;

typedef struct Buf
{
	char		data[4096];
	int			len;
} Buf;

static void
put_u8(Buf *b, int v)
{
	b->data[b->len++] = (char) v;
}

static void
put_uint(Buf *b, uint64_t v, int nbytes)
{
	for (int i = nbytes - 1; i >= 0; i--)
		b->data[b->len++] = (char) ((v >> (8 * i)) & 0xFF);
}

static void
put_str(Buf *b, const char *s)
{
	size_t		n = strlen(s) + 1;

	memcpy(b->data + b->len, s, n);
	b->len += (int) n;
}

static void
put_text_col(Buf *b, const char *s)
{
	put_u8(b, 't');
	put_uint(b, strlen(s), 4);
	memcpy(b->data + b->len, s, strlen(s));
	b->len += (int) strlen(s);
}

static const char *
parse(Buf *b, ZsPgoutputMsg *msg)
{
	msg->old_tuple = &old_tuple;
	msg->new_tuple = &new_tuple;
	return zs_pgoutput_parse(b->data, b->len, msg);
}

static void
test_begin_commit(void)
{
	Buf			b = {.len = 0};
	ZsPgoutputMsg m;

	put_u8(&b, 'B');
	put_uint(&b, 0x16B374D848ULL, 8);
	put_uint(&b, 123456789, 8);
	put_uint(&b, 771, 4);
	CHECK(parse(&b, &m) == NULL, "begin parses");
	CHECK(m.type == 'B' && m.final_lsn == 0x16B374D848ULL && m.commit_time == 123456789 &&
		  m.xid == 771, "begin fields");

	b.len = 0;
	put_u8(&b, 'C');
	put_u8(&b, 0);
	put_uint(&b, 0x100, 8);
	put_uint(&b, 0x130, 8);
	put_uint(&b, 42, 8);
	CHECK(parse(&b, &m) == NULL, "commit parses");
	CHECK(m.final_lsn == 0x100 && m.end_lsn == 0x130 && m.commit_time == 42, "commit fields");

	b.len -= 1;
	CHECK(parse(&b, &m) != NULL, "truncated commit rejected");
}

static void
test_relation(void)
{
	Buf			b = {.len = 0};
	ZsPgoutputMsg m;

	put_u8(&b, 'R');
	put_uint(&b, 16390, 4);
	put_str(&b, "public");
	put_str(&b, "issue");
	put_u8(&b, 'd');
	put_uint(&b, 2, 2);
	put_u8(&b, 1);
	put_str(&b, "id");
	put_uint(&b, 20, 4);
	put_uint(&b, 0xFFFFFFFF, 4);
	put_u8(&b, 0);
	put_str(&b, "title");
	put_uint(&b, 25, 4);
	put_uint(&b, 0xFFFFFFFF, 4);
	CHECK(parse(&b, &m) == NULL, "relation parses");
	CHECK(m.relid == 16390 && strcmp(m.nspname, "public") == 0 &&
		  strcmp(m.relname, "issue") == 0 && m.replident == 'd' && m.natts == 2,
		  "relation header");
	CHECK(m.attrs[0].is_key && !m.attrs[1].is_key && m.attrs[0].typid == 20 &&
		  strcmp(m.attrs[1].name, "title") == 0 && m.attrs[1].typmod == -1, "relation attrs");

	/* the last name loses its terminator */
	b.len -= 9;
	CHECK(parse(&b, &m) != NULL, "unterminated column name rejected");
}

static void
test_row_changes(void)
{
	Buf			b = {.len = 0};
	ZsPgoutputMsg m;

	put_u8(&b, 'I');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 3, 2);
	put_text_col(&b, "42");
	put_u8(&b, 'n');
	put_u8(&b, 'u');
	CHECK(parse(&b, &m) == NULL, "insert parses");
	CHECK(new_tuple.natts == 3 && new_tuple.cols[0].kind == 't' && new_tuple.cols[0].len == 2 &&
		  memcmp(new_tuple.cols[0].data, "42", 2) == 0 && new_tuple.cols[1].kind == 'n' &&
		  new_tuple.cols[2].kind == 'u', "insert tuple");

	b.len = 0;
	put_u8(&b, 'U');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'K');
	put_uint(&b, 1, 2);
	put_text_col(&b, "1");
	put_u8(&b, 'N');
	put_uint(&b, 1, 2);
	put_text_col(&b, "2");
	CHECK(parse(&b, &m) == NULL, "update with key parses");
	CHECK(m.old_kind == 'K' && old_tuple.cols[0].data[0] == '1' &&
		  new_tuple.cols[0].data[0] == '2', "update tuples");

	b.len = 0;
	put_u8(&b, 'U');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 1, 2);
	put_text_col(&b, "2");
	CHECK(parse(&b, &m) == NULL && m.old_kind == 0, "update without old tuple");

	b.len = 0;
	put_u8(&b, 'D');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'O');
	put_uint(&b, 1, 2);
	put_text_col(&b, "7");
	CHECK(parse(&b, &m) == NULL && m.old_kind == 'O', "delete with old row");

	b.len = 0;
	put_u8(&b, 'D');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 0, 2);
	CHECK(parse(&b, &m) != NULL, "delete without old tuple rejected");

	/* a value length that runs past the message */
	b.len = 0;
	put_u8(&b, 'I');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 1, 2);
	put_u8(&b, 't');
	put_uint(&b, 1000, 4);
	put_str(&b, "short");
	CHECK(parse(&b, &m) != NULL, "overlong value rejected");

	b.len = 0;
	put_u8(&b, 'I');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 1, 2);
	put_u8(&b, 'x');
	CHECK(parse(&b, &m) != NULL, "unknown column kind rejected");

	b.len = 0;
	put_u8(&b, 'I');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, ZS_MAX_COLUMNS + 1, 2);
	CHECK(parse(&b, &m) != NULL, "too many columns rejected");

	b.len = 0;
	put_u8(&b, 'I');
	put_uint(&b, 16390, 4);
	put_u8(&b, 'N');
	put_uint(&b, 0, 2);
	put_u8(&b, 0);
	CHECK(parse(&b, &m) != NULL, "trailing bytes rejected");
}

static void
test_truncate_and_others(void)
{
	Buf			b = {.len = 0};
	ZsPgoutputMsg m;

	put_u8(&b, 'T');
	put_uint(&b, 2, 4);
	put_u8(&b, 3);
	put_uint(&b, 100, 4);
	put_uint(&b, 200, 4);
	CHECK(parse(&b, &m) == NULL, "truncate parses");
	CHECK(m.nrelids == 2 && m.flags == 3 && zs_pgoutput_relid_at(&m, 0) == 100 &&
		  zs_pgoutput_relid_at(&m, 1) == 200, "truncate fields");
	b.len -= 2;
	CHECK(parse(&b, &m) != NULL, "short truncate relid list rejected");

	b.len = 0;
	put_u8(&b, 'Y');
	put_uint(&b, 16384, 4);
	put_str(&b, "public");
	put_str(&b, "mood");
	CHECK(parse(&b, &m) == NULL && strcmp(m.relname, "mood") == 0, "type message");

	b.len = 0;
	put_u8(&b, 'Z');
	CHECK(parse(&b, &m) != NULL, "unknown message type rejected");

	b.len = 0;
	CHECK(parse(&b, &m) != NULL, "empty message rejected");
}

/* 'M': a logical message (messages 'true'), transactional or not */
static void
test_message(void)
{
	Buf			b = {.len = 0};
	ZsPgoutputMsg m;
	const char *content = "{\"tag\":\"ALTER TABLE\"}";

	put_u8(&b, 'M');
	put_u8(&b, 1);
	put_uint(&b, UINT64_C(0x1234), 8);
	put_str(&b, "zero_stream/ddl");
	put_uint(&b, strlen(content), 4);
	memcpy(b.data + b.len, content, strlen(content));
	b.len += (int) strlen(content);
	CHECK(parse(&b, &m) == NULL, "message parses");
	CHECK((m.flags & ZS_PGO_MESSAGE_TRANSACTIONAL) && m.message_lsn == 0x1234 &&
		  strcmp(m.prefix, "zero_stream/ddl") == 0 && m.content_len == (int) strlen(content) &&
		  memcmp(m.content, content, m.content_len) == 0, "message fields");
	b.len -= 3;
	CHECK(parse(&b, &m) != NULL, "truncated message content rejected");

	b.len = 0;
	put_u8(&b, 'M');
	put_u8(&b, 0);
	put_uint(&b, 1, 8);
	put_str(&b, "app");
	put_uint(&b, 0xFFFFFFF0, 4);
	CHECK(parse(&b, &m) != NULL, "message length beyond the buffer rejected");
}

int
main(void)
{
	test_begin_commit();
	test_relation();
	test_row_changes();
	test_truncate_and_others();
	test_message();
	return unit_report("test_pgoutput");
}
