/*-------------------------------------------------------------------------
 * fuzz_http.c
 *	  libFuzzer target for src/codec/http.c: any bytes as the start of a
 *	  request.
 *
 * Input: one byte choosing the head size limit, then the bytes received.
 * A complete head must lie within both the input and the limit, end with
 * the blank line, and be NEED_MORE one byte shorter; its parts are run
 * through every helper the server uses on them: header lookup, tokens,
 * query parameters (including the names that the query itself holds),
 * Basic credentials and the route.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "codec/http.h"
#include "fuzz.h"

static const int head_limits[4] = {16, 256, 1024, 8192};

static void
check_helpers(const char *value)
{
	StringInfoData a,
				b;
	int			version = -1;

	initStringInfo(&a);
	initStringInfo(&b);
	(void) zs_http_has_token(value, "upgrade");
	(void) zs_http_has_token(value, "");
	(void) zs_http_query_param(value, "taskID", &a);
	(void) zs_http_query_param(value, "", &a);
	if (zs_http_basic_credentials(value, &a, &b))
		FUZZ_CHECK(a.data[a.len] == '\0' && b.data[b.len] == '\0', "credentials are strings");
	if (zs_http_route(value, &version) != ZS_ROUTE_NONE)
		FUZZ_CHECK(version >= 0, "route version");
	pfree(a.data);
	pfree(b.data);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ZsHttpRequest req;
	ZsHttpParseResult res;
	const char *buf;
	int			len;
	int			max_head;
	int			head_len = -1;
	int			status = 0;
	const char *error = NULL;

	if (size < 1)
		return 0;
	max_head = head_limits[data[0] & 3];
	buf = (const char *) data + 1;
	len = (int) size - 1;

	res = zs_http_parse_request(buf, len, max_head, &req, &head_len, &status, &error);
	if (res == ZS_HTTP_BAD_REQUEST)
		FUZZ_CHECK(error != NULL && status >= 400 && status < 600, "an error has a status");
	if (res == ZS_HTTP_COMPLETE)
	{
		ZsHttpRequest shorter;
		StringInfoData v;
		int			version = -1;
		int			h2;

		FUZZ_CHECK(head_len >= 4 && head_len <= len && head_len <= max_head, "head length");
		FUZZ_CHECK(memcmp(buf + head_len - 4, "\r\n\r\n", 4) == 0, "head ends with a blank line");
		FUZZ_CHECK(req.method && req.target && req.path && req.query, "request line parts");
		FUZZ_CHECK(req.path[0] == '/', "path is absolute");
		FUZZ_CHECK(req.nheaders >= 0 && req.nheaders <= ZS_HTTP_MAX_HEADERS, "header count");

		FUZZ_CHECK(zs_http_parse_request(buf, head_len - 1, max_head, &shorter, &h2, &status,
										 &error) == ZS_HTTP_NEED_MORE,
				   "one byte less is an incomplete head");
		zs_http_request_free(&shorter);

		for (int i = 0; i < req.nheaders; i++)
		{
			const char *found = zs_http_header(&req, req.names[i]);

			FUZZ_CHECK(found != NULL, "every header is found by its name");
			FUZZ_CHECK(req.names[i][0] != '\0', "header names are not empty");
			check_helpers(req.values[i]);
		}
		check_helpers(req.query);
		check_helpers(req.target);

		/* every parameter named in the query is found */
		initStringInfo(&v);
		for (const char *p = req.query; *p;)
		{
			const char *amp = strchr(p, '&');
			size_t		n = amp ? (size_t) (amp - p) : strlen(p);
			char	   *name = pnstrdup(p, strcspn(p, "=&"));

			/* only names that need no decoding can be looked up verbatim */
			if (strpbrk(name, "%+") == NULL)
				FUZZ_CHECK(zs_http_query_param(req.query, name, &v),
						   "a parameter in the query is found");
			pfree(name);
			p += n + (amp ? 1 : 0);
		}
		pfree(v.data);

		if (zs_http_route(req.path, &version) != ZS_ROUTE_NONE)
			FUZZ_CHECK(version >= 0 && strstr(req.path, "/replication/v") != NULL, "route");
	}
	zs_http_request_free(&req);

	/* the helpers on any text */
	{
		char	   *text = pnstrdup(buf, len);

		check_helpers(text);
		pfree(text);
	}
	return 0;
}
