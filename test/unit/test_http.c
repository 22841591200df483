/*
 * Unit tests for request-head parsing, headers, query parameters, Basic
 * credentials and Zero's replication routes, with malformed and oversized
 * input.
 */
#include "postgres_fe.h"

#include "codec/http.h"
#include "unit.h"

static ZsHttpParseResult
parse(const char *text, ZsHttpRequest *req, int *status, const char **error)
{
	int			head_len;

	return zs_http_parse_request(text, (int) strlen(text), 8192, req, &head_len, status, error);
}

static void
expect_bad(const char *text, int expected_status, const char *what)
{
	ZsHttpRequest req;
	int			status = 0;
	const char *error = NULL;

	CHECK(parse(text, &req, &status, &error) == ZS_HTTP_BAD_REQUEST && status == expected_status,
		  "%s: status %d (%s)", what, status, error ? error : "accepted");
	zs_http_request_free(&req);
}

static void
test_upgrade_request(void)
{
	const char *text =
		"GET /replication/v6/changes?taskID=task-a&id=serving-replicator-42&mode=serving"
		"&replicaVersion=718sh0nk8&watermark=71a2b3c4d&initial=true HTTP/1.1\r\n"
		"Host: 127.0.0.1:4849\r\n"
		"Connection: keep-alive, Upgrade\r\n"
		"Upgrade: websocket\r\n"
		"Sec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Key:   dGhlIHNhbXBsZSBub25jZQ==  \r\n"
		"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
		"\r\n"
		"\x81\x85";				/* a frame that follows the head */
	ZsHttpRequest req;
	int			status,
				head_len;
	const char *error;
	StringInfoData v;
	int			version = 0;

	CHECK(zs_http_parse_request(text, (int) strlen(text), 8192, &req, &head_len, &status,
								&error) == ZS_HTTP_COMPLETE, "upgrade request parses");
	CHECK(head_len == (int) strlen(text) - 2, "head length excludes the following frame");
	CHECK_STR(req.method, "GET");
	CHECK_STR(req.path, "/replication/v6/changes");
	CHECK(zs_http_has_token(zs_http_header(&req, "connection"), "upgrade"), "Connection: upgrade");
	CHECK(zs_http_has_token(zs_http_header(&req, "UPGRADE"), "WebSocket"), "Upgrade: websocket");
	CHECK_STR(zs_http_header(&req, "sec-websocket-key"), "dGhlIHNhbXBsZSBub25jZQ==");
	CHECK(zs_http_header(&req, "Authorization") == NULL, "absent header");

	initStringInfo(&v);
	CHECK(zs_http_query_param(req.query, "watermark", &v) && strcmp(v.data, "71a2b3c4d") == 0,
		  "watermark param");
	CHECK(zs_http_query_param(req.query, "taskID", &v) && strcmp(v.data, "task-a") == 0,
		  "taskID param");
	CHECK(!zs_http_query_param(req.query, "wsBatched", &v), "absent param");
	CHECK(zs_http_route(req.path, &version) == ZS_ROUTE_CHANGES && version == 6, "route");
	zs_http_request_free(&req);

	/* incomplete heads wait for more */
	CHECK(zs_http_parse_request(text, 40, 8192, &req, &head_len, &status, &error) ==
		  ZS_HTTP_NEED_MORE, "partial head needs more");
	zs_http_request_free(&req);
}

static void
test_query_and_credentials(void)
{
	StringInfoData v,
				user,
				pass;

	initStringInfo(&v);
	initStringInfo(&user);
	initStringInfo(&pass);
	CHECK(zs_http_query_param("id=a%2Fb%20c+d&x=1", "id", &v) && strcmp(v.data, "a/b c d") == 0,
		  "percent-decoding: <%s>", v.data);
	CHECK(zs_http_query_param("flag&x=1", "flag", &v) && v.len == 0, "param without value");
	CHECK(zs_http_query_param("a=1&a=2", "a", &v) && strcmp(v.data, "1") == 0, "first wins");
	CHECK(zs_http_query_param("bad=%zz%4", "bad", &v) && strcmp(v.data, "%zz%4") == 0,
		  "malformed escapes kept: <%s>", v.data);
	CHECK(!zs_http_query_param("", "a", &v), "empty query");

	/* "user:pa:ss" */
	CHECK(zs_http_basic_credentials("Basic dXNlcjpwYTpzcw==", &user, &pass) &&
		  strcmp(user.data, "user") == 0 && strcmp(pass.data, "pa:ss") == 0, "basic credentials");
	CHECK(!zs_http_basic_credentials("Bearer abc", &user, &pass), "not Basic");
	CHECK(!zs_http_basic_credentials("Basic !!!!", &user, &pass), "bad base64");
	CHECK(!zs_http_basic_credentials("Basic dXNlcg==", &user, &pass), "no colon");
	CHECK(!zs_http_basic_credentials(NULL, &user, &pass), "no header");
}

static void
test_routes(void)
{
	int			v = -1;

	CHECK(zs_http_route("/replication/v7/subscribe", &v) == ZS_ROUTE_SUBSCRIBE && v == 7, "v7 subscribe");
	CHECK(zs_http_route("/replication/v3/snapshot", &v) == ZS_ROUTE_SNAPSHOT && v == 3, "snapshot");
	CHECK(zs_http_route("/base/replication/v12/changes", &v) == ZS_ROUTE_CHANGES && v == 12, "prefixed");
	CHECK(zs_http_route("/replication/v6/changes/", &v) == ZS_ROUTE_NONE, "trailing slash");
	CHECK(zs_http_route("/replication/vx/changes", &v) == ZS_ROUTE_NONE, "no version");
	CHECK(zs_http_route("/replication/v6/other", &v) == ZS_ROUTE_NONE, "unknown action");
	CHECK(zs_http_route("/", &v) == ZS_ROUTE_NONE, "root");
	CHECK(zs_http_route("/replication/v99999999999/changes", &v) == ZS_ROUTE_NONE, "absurd version");
}

static void
test_malformed(void)
{
	char		big[9000];
	ZsHttpRequest req;
	int			status = 0,
				head_len;
	const char *error;

	expect_bad("GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0");
	expect_bad("GET /\r\n\r\n", 400, "no version");
	expect_bad("GET  / HTTP/1.1\r\n\r\n", 400, "double space");
	expect_bad("GET http://x/ HTTP/1.1\r\n\r\n", 400, "absolute-form target");
	expect_bad("GET /a\x01 HTTP/1.1\r\n\r\n", 400, "control char in target");
	expect_bad("GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "header without colon");
	expect_bad("GET / HTTP/1.1\r\n: empty\r\n\r\n", 400, "empty header name");
	expect_bad("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", 400, "folded header");
	expect_bad("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n", 400, "space in header name");

	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	CHECK(zs_http_parse_request(big, sizeof(big), 8192, &req, &head_len, &status, &error) ==
		  ZS_HTTP_BAD_REQUEST && status == 431, "oversized head");
	zs_http_request_free(&req);

	{
		StringInfoData many;

		initStringInfo(&many);
		appendStringInfoString(&many, "GET / HTTP/1.1\r\n");
		for (int i = 0; i < ZS_HTTP_MAX_HEADERS + 1; i++)
			appendStringInfo(&many, "H%d: v\r\n", i);
		appendStringInfoString(&many, "\r\n");
		expect_bad(many.data, 431, "too many headers");
	}
	{
		const char	nul[] = "GET /\0 HTTP/1.1\r\n\r\n";

		CHECK(zs_http_parse_request(nul, sizeof(nul) - 1, 8192, &req, &head_len, &status, &error) ==
			  ZS_HTTP_BAD_REQUEST && status == 400, "NUL in head");
		zs_http_request_free(&req);
	}
}

int
main(void)
{
	test_upgrade_request();
	test_query_and_credentials();
	test_routes();
	test_malformed();
	return unit_report("test_http");
}
