/*-------------------------------------------------------------------------
 * fuzz_change_message.c
 *	  libFuzzer target for src/codec/change_message.c: a stored change of any
 *	  bytes, rebuilt into its wire message.
 *
 * Input: 8 bytes of a commit LSN (encoded as the watermark), then the
 * change text. The message is the change wrapped verbatim, of the type its
 * leading tag names; when the change is one JSON value the message is a
 * JSON array of 2 or 3 elements whose second is the change, byte for byte,
 * and whose third names the watermark.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/change_message.h"
#include "codec/json_read.h"
#include "codec/watermark.h"
#include "fuzz.h"

static ZsJsonDoc doc;
static bool ready = false;

static const char *const type_names[] = {"begin", "data", "commit", "rollback"};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		watermark[ZS_WATERMARK_MAXLEN];
	uint64_t	lsn = 0;
	const char *change;
	int			len;
	StringInfoData out;
	ZsMessageType type;
	const char *name;
	int			prefix;

	if (size < 8)
		return 0;
	if (!ready)
	{
		zs_json_doc_init(&doc);
		ready = true;
	}
	for (int i = 0; i < 8; i++)
		lsn = (lsn << 8) | data[i];
	zs_watermark_encode(lsn, watermark);
	change = (const char *) data + 8;
	len = (int) size - 8;

	initStringInfo(&out);
	type = zs_change_message_append(&out, watermark, change, len);
	FUZZ_CHECK(type == zs_change_message_type(change, len), "the type is the change's");
	FUZZ_CHECK(type >= ZS_MSG_BEGIN && type <= ZS_MSG_ROLLBACK, "a known type");
	name = type_names[type];
	if (type != ZS_MSG_DATA)
	{
		char		tag[32];

		snprintf(tag, sizeof(tag), "{\"tag\":\"%s\"", name);
		FUZZ_CHECK(len >= (int) strlen(tag) && memcmp(change, tag, strlen(tag)) == 0,
				   "the type comes from the leading tag");
	}

	/* ["<name>",<change>...] */
	prefix = (int) strlen(name) + 4;
	FUZZ_CHECK(out.len > prefix + len && out.data[0] == '[' && out.data[1] == '"' &&
			   memcmp(out.data + 2, name, strlen(name)) == 0 &&
			   memcmp(out.data + prefix - 2, "\",", 2) == 0 &&
			   memcmp(out.data + prefix, change, len) == 0 &&
			   out.data[out.len - 1] == ']', "the change is wrapped verbatim");

	if (zs_json_parse(&doc, change, len))
	{
		int			elem;
		int			third;

		FUZZ_CHECK(zs_json_parse(&doc, out.data, out.len), "a JSON change makes a JSON message");
		FUZZ_CHECK(doc.nodes[0].type == ZS_JSON_ARRAY &&
				   doc.nodes[0].count == ((type == ZS_MSG_BEGIN || type == ZS_MSG_COMMIT) ? 3 : 2),
				   "the message is an array of 2 or 3");
		FUZZ_CHECK(zs_json_str_eq(&doc, zs_json_at(&doc, 0, 0), name), "the message names its type");
		elem = zs_json_at(&doc, 0, 1);
		/* the change's own text, less the whitespace around it */
		FUZZ_CHECK(doc.nodes[elem].raw_start >= prefix &&
				   doc.nodes[elem].raw_start + doc.nodes[elem].raw_len <= prefix + len,
				   "the second element is the change");
		third = zs_json_at(&doc, 0, 2);
		if (type == ZS_MSG_BEGIN)
			FUZZ_CHECK(zs_json_str_eq(&doc, zs_json_get(&doc, third, "commitWatermark"), watermark),
					   "begin names its commit watermark");
		if (type == ZS_MSG_COMMIT)
			FUZZ_CHECK(zs_json_str_eq(&doc, zs_json_get(&doc, third, "watermark"), watermark),
					   "commit names its watermark");
	}
	pfree(out.data);
	return 0;
}
