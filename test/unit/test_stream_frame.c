/*
 * Unit tests for the subscriber's frame reader (codec/stream_frame.c):
 * {"id","msg"}, {"id","batch"} and {"ack"} envelopes as the server and
 * zero-cache send them, every message type with its watermark, values that
 * look like envelopes inside strings, and malformed frames and messages.
 */
#include "postgres_fe.h"

#include "codec/change_message.h"
#include "codec/stream_frame.h"
#include "unit.h"

static bool
parse(const char *text, ZsStreamFrame *frame)
{
	return zs_stream_frame_parse(text, (int) strlen(text), frame);
}

static void
append_change(StringInfo out, const char *change)
{
	zs_change_message_append(out, "0a", change, (int) strlen(change));
}

/* the name each type has in the stream, as this test expects the reader to map it */
static const char *
type_name(ZsStreamMessageType type)
{
	switch (type)
	{
		case ZS_STREAM_BEGIN:
			return "begin";
		case ZS_STREAM_DATA:
			return "data";
		case ZS_STREAM_COMMIT:
			return "commit";
		case ZS_STREAM_ROLLBACK:
			return "rollback";
		case ZS_STREAM_STATUS:
			return "status";
		case ZS_STREAM_ERROR:
			return "error";
		case ZS_STREAM_OTHER:
			return "other";
	}
	return "?";
}

/* the messages of a frame as "type:watermark type ..." (or "ERR" at a malformed one) */
static char *
messages(const char *text)
{
	static char out[1024];
	ZsStreamFrame frame;
	ZsStreamMessage msg;
	int			rc;

	out[0] = '\0';
	if (!parse(text, &frame))
		return strcpy(out, "NOFRAME");
	while ((rc = zs_stream_frame_next_message(&frame, &msg)) == 1)
	{
		if (out[0])
			strcat(out, " ");
		strcat(out, type_name(msg.type));
		if (msg.watermark)
			snprintf(out + strlen(out), sizeof(out) - strlen(out), ":%.*s",
					 msg.watermark_len, msg.watermark);
	}
	if (rc < 0)
		strcat(out, out[0] ? " ERR" : "ERR");
	/* after the end (or an error) it stays at the end */
	CHECK(zs_stream_frame_next_message(&frame, &msg) == 0, "end is sticky for %s", text);
	return out;
}

/* a frame is refused if it does not parse or one of its messages is malformed */
static bool
refused(const char *text)
{
	const char *m = messages(text);

	return strcmp(m, "NOFRAME") == 0 || strstr(m, "ERR") != NULL;
}

int
main(void)
{
	ZsStreamFrame frame;
	ZsStreamMessage msg;
	StringInfoData built;

	/* the envelopes */
	CHECK(parse("{\"id\":7,\"msg\":[\"data\",{}]}", &frame) && frame.kind == ZS_FRAME_MSG &&
		  frame.id == 7, "msg frame");
	CHECK(parse("{\"id\":12,\"batch\":[]}", &frame) && frame.kind == ZS_FRAME_BATCH &&
		  frame.id == 12, "batch frame");
	CHECK(parse("{\"ack\":3}", &frame) && frame.kind == ZS_FRAME_ACK && frame.id == 3, "ack frame");
	CHECK(parse(" { \"msg\" : [\"data\",{}] , \"id\" : 9223372036854775807 } ", &frame) &&
		  frame.id == PG_INT64_MAX, "members in any order, whitespace");
	CHECK_STR(messages("{\"extra\":{\"a\":[1,\"]}\"]},\"id\":1,\"msg\":[\"data\",{}]}"), "data");
	/* the server's shape is read without a pass: its message runs to the brace */
	CHECK_STR(messages("{\"id\":1,\"msg\":[\"data\",{}],\"extra\":{\"a\":[1,2]}}"), "data ERR");

	CHECK(!parse("", &frame), "empty");
	CHECK(!parse("[\"data\",{}]", &frame), "a bare message");
	CHECK(!parse("{\"id\":1}", &frame), "no body");
	CHECK(!parse("{\"msg\":[\"data\",{}]}", &frame), "no id");
	CHECK(refused("{\"id\":1,\"msg\":[\"data\",{}],\"batch\":[]}"), "both bodies");
	CHECK(!parse("{\"msg\":[\"data\",{}],\"id\":1,\"batch\":[]}", &frame), "both bodies, other order");
	CHECK(!parse("{\"msg\":[\"data\",{]},\"id\":1}", &frame), "mismatched brackets, other order");
	CHECK(!parse("{\"msg\":[\"data\",{}],\"id\":1,}", &frame), "trailing comma, other order");
	CHECK(!parse("{\"id\":1,\"id\":2,\"msg\":[\"data\",{}]}", &frame), "two ids");
	CHECK(!parse("{\"id\":1,\"ack\":2}", &frame), "an ack with an id");
	CHECK(!parse("{\"id\":\"1\",\"msg\":[\"data\",{}]}", &frame), "a string id");
	CHECK(!parse("{\"id\":1.5,\"msg\":[\"data\",{}]}", &frame), "a fractional id");
	CHECK(!parse("{\"id\":9223372036854775808,\"msg\":[\"data\",{}]}", &frame), "id beyond int64");
	CHECK(!parse("{\"id\":99999999999999999999,\"msg\":[\"data\",{}]}", &frame), "id beyond uint64");
	CHECK(!parse("{\"id\":1,\"batch\":{}}", &frame), "a batch that is no array");
	CHECK(refused("{\"id\":1,\"msg\":[\"data\",{}],}"), "trailing comma");
	CHECK(!parse("{\"id\":1,\"msg\":[\"data\",{}]", &frame), "unterminated");
	CHECK(refused("{\"id\":1,\"msg\":[\"data\",{]}"), "mismatched brackets");
	CHECK(!parse("{\"id\":1,\"msg\":[\"data\",{}]} x", &frame), "text after the frame");
	CHECK(!parse("{\"id\":1 \"msg\":[\"data\",{}]}", &frame), "no comma between members");
	CHECK(refused("{\"id\":1,\"msg\":[\"data\",\"open]}"), "unterminated string");

	/* messages as change_message.c builds them */
	initStringInfo(&built);
	appendStringInfoString(&built, "{\"id\":1,\"batch\":[");
	append_change(&built, "{\"tag\":\"begin\",\"json\":\"s\"}");
	appendStringInfoChar(&built, ',');
	append_change(&built, "{\"tag\":\"insert\",\"new\":{\"v\":\"],[\\\"commit\\\"\"}}");
	appendStringInfoChar(&built, ',');
	append_change(&built, "{\"tag\":\"commit\"}");
	appendStringInfoString(&built, "]}");
	CHECK_STR(messages(built.data), "begin:0a data commit:0a");

	CHECK_STR(messages("{\"id\":1,\"msg\":[\"begin\",{\"tag\":\"begin\"},{\"commitWatermark\":\"4dede0\"}]}"),
			  "begin:4dede0");
	CHECK_STR(messages("{\"id\":2,\"msg\":[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"4dede0.01\"}]}"),
			  "commit:4dede0.01");
	CHECK_STR(messages("{\"id\":2,\"msg\":[ \"commit\" , {\"tag\":\"commit\"} , { \"watermark\" : \"0b\" } ]}"),
			  "commit:0b");
	CHECK_STR(messages("{\"id\":3,\"msg\":[\"rollback\",{\"tag\":\"rollback\"}]}"), "rollback");
	CHECK_STR(messages("{\"id\":4,\"msg\":[\"status\",{\"tag\":\"status\"}]}"), "status");
	CHECK_STR(messages("{\"id\":5,\"msg\":[\"error\",{\"type\":1,\"message\":\"too old\"}]}"), "error");
	CHECK_STR(messages("{\"id\":6,\"msg\":[\"control\",{}]}"), "other");
	CHECK_STR(messages("{\"id\":6,\"msg\":[\"data\",{\"v\":[[1,[2]],{\"a\":\"}\"}],\"n\":-1e+64,\"t\":true}]}"),
			  "data");
	CHECK_STR(messages("{\"id\":7,\"batch\":[]}"), "");
	/* escapes: a backslash before the closing quote, an escaped quote before a bracket */
	CHECK_STR(messages("{\"id\":7,\"batch\":[[\"data\",{\"v\":\"x\\\\\"}],[\"data\",{\"v\":\"x\\\"]\"}]]}"),
			  "data data");
	CHECK_STR(messages("{\"id\":7,\"msg\":[\"data\",{\"v\":\"x\\\"}]}"), "ERR");
	CHECK_STR(messages("{\"id\":7,\"batch\":[ [\"data\",{}] , [\"data\",{}] ]}"), "data data");
	CHECK_STR(messages("{\"ack\":7}"), "");

	/* malformed messages */
	CHECK_STR(messages("{\"id\":8,\"msg\":{\"tag\":\"begin\"}}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[1,{}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"begin\",{\"tag\":\"begin\"}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"commit\",{\"tag\":\"commit\"},{\"commitWatermark\":\"0b\"}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"commit\",{},{\"watermark\":\"\"}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"commit\",{},{\"watermark\":\"0\\\"b\"}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"commit\",{},{\"watermark\":\"0b\",\"x\":1}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"msg\":[\"commit\",{},{\"watermark\":7}]}"), "ERR");
	CHECK_STR(messages("{\"id\":8,\"batch\":[[\"data\",{}],]}"), "data ERR");
	CHECK_STR(messages("{\"id\":8,\"batch\":[[\"data\",{}] [\"data\",{}]]}"), "data ERR");
	CHECK_STR(messages("{\"id\":8,\"batch\":[[\"data\",{}],\"x\"]}"), "data ERR");

	/* a message's text is the whole message */
	CHECK(parse("{\"id\":1,\"msg\":[\"data\",{\"a\":1}]}", &frame) &&
		  zs_stream_frame_next_message(&frame, &msg) == 1 &&
		  msg.len == 16 && strncmp(msg.text, "[\"data\",{\"a\":1}]", msg.len) == 0,
		  "message text");

	/* nesting: deep but bounded */
	{
		StringInfoData deep;

		initStringInfo(&deep);
		appendStringInfoString(&deep, "{\"id\":1,\"msg\":[\"data\",");
		for (int i = 0; i < 300; i++)
			appendStringInfoChar(&deep, '[');
		for (int i = 0; i < 300; i++)
			appendStringInfoChar(&deep, ']');
		appendStringInfoString(&deep, "]}");
		CHECK(refused(deep.data), "nesting beyond the limit is refused");
	}

	return unit_report("test_stream_frame");
}
