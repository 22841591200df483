/*-------------------------------------------------------------------------
 * http.h
 *	  Minimal HTTP/1.1 request parsing for the subscriber endpoint: the
 *	  request head, header lookup, query parameters, Basic credentials and
 *	  Zero's /replication/v{N}/{action} routes.
 *
 * Pure code, no I/O; compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_HTTP_H
#define ZS_HTTP_H

#include "lib/stringinfo.h"

#define ZS_HTTP_MAX_HEADERS 64

typedef struct ZsHttpRequest
{
	char	   *method;
	char	   *target;			/* as sent: path plus optional ?query */
	char	   *path;			/* target before '?' */
	char	   *query;			/* after '?', or "" */
	int			nheaders;
	char	   *names[ZS_HTTP_MAX_HEADERS];
	char	   *values[ZS_HTTP_MAX_HEADERS];
	char	   *storage;		/* palloc'd copy of the head that the above point into */
} ZsHttpRequest;

typedef enum ZsHttpParseResult
{
	ZS_HTTP_NEED_MORE,
	ZS_HTTP_COMPLETE,
	ZS_HTTP_BAD_REQUEST
} ZsHttpParseResult;

/*
 * Parse a request head from buf. On COMPLETE, *head_len is the number of
 * bytes it took (through the blank line). A head longer than max_head, or
 * malformed, is BAD_REQUEST with *error (static text) and *status set.
 */
extern ZsHttpParseResult zs_http_parse_request(const char *buf, int len, int max_head,
											   ZsHttpRequest *req, int *head_len,
											   int *status, const char **error);
extern void zs_http_request_free(ZsHttpRequest *req);

/* Header value (case-insensitive name), or NULL. */
extern const char *zs_http_header(const ZsHttpRequest *req, const char *name);

/* Does a comma-separated header value contain token (case-insensitive)? */
extern bool zs_http_has_token(const char *value, const char *token);

/*
 * Percent-decoded value of a query parameter; false if absent. A parameter
 * given several times yields the first.
 */
extern bool zs_http_query_param(const char *query, const char *name, StringInfo value);

/* user and password of an "Authorization: Basic ..." value; false if not Basic or malformed */
extern bool zs_http_basic_credentials(const char *authorization, StringInfo user,
									  StringInfo password);

typedef enum ZsRouteAction
{
	ZS_ROUTE_NONE,
	ZS_ROUTE_CHANGES,
	ZS_ROUTE_SNAPSHOT,
	ZS_ROUTE_SUBSCRIBE
} ZsRouteAction;

/*
 * Match Zero's /replication/v(\d+)/(changes|snapshot|subscribe)$ (any
 * prefix allowed, as zero-cache's dispatcher adds one). Returns NONE if
 * the path does not match; *version is set otherwise.
 */
extern ZsRouteAction zs_http_route(const char *path, int *version);

#endif							/* ZS_HTTP_H */
