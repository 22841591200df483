/*-------------------------------------------------------------------------
 * http.c
 *	  Request-head parsing for the subscriber server.
 *
 * Only what a WebSocket upgrade and the health checks need: GET requests
 * without bodies. Everything is bounded: the head size, the number of
 * headers, and the characters allowed in the request line.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif


#include "compat/base64.h"
#include "codec/hex.h"
#include "codec/http.h"

static char *
find_head_end(const char *buf, int len)
{
	for (int i = 3; i < len; i++)
	{
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return (char *) buf + i + 1;
	}
	return NULL;
}

static char *
trim(char *s)
{
	char	   *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

static ZsHttpParseResult
bad(int *status, const char **error, int code, const char *message)
{
	*status = code;
	*error = message;
	return ZS_HTTP_BAD_REQUEST;
}

ZsHttpParseResult
zs_http_parse_request(const char *buf, int len, int max_head, ZsHttpRequest *req,
					  int *head_len, int *status, const char **error)
{
	const char *end = find_head_end(buf, Min(len, max_head));
	char	   *line;
	char	   *next;
	char	   *sp1;
	char	   *sp2;

	memset(req, 0, sizeof(*req));
	if (end == NULL)
	{
		if (len >= max_head)
			return bad(status, error, 431, "request head too large");
		return ZS_HTTP_NEED_MORE;
	}
	*head_len = (int) (end - buf);
	req->storage = pnstrdup(buf, *head_len);
	for (int i = 0; i < *head_len; i++)
	{
		if (req->storage[i] == '\0')
			return bad(status, error, 400, "NUL byte in request head");
	}

	/* request line: METHOD SP target SP HTTP/1.x */
	line = req->storage;
	next = strstr(line, "\r\n");
	*next = '\0';
	next += 2;
	sp1 = strchr(line, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (sp1 == NULL || sp2 == NULL || strchr(sp2 + 1, ' ') != NULL)
		return bad(status, error, 400, "malformed request line");
	*sp1 = '\0';
	*sp2 = '\0';
	req->method = line;
	req->target = sp1 + 1;
	if (strcmp(sp2 + 1, "HTTP/1.1") != 0 && strcmp(sp2 + 1, "HTTP/1.0") != 0)
		return bad(status, error, 505, "unsupported HTTP version");
	if (req->target[0] != '/')
		return bad(status, error, 400, "request target is not an absolute path");
	for (const char *p = req->target; *p; p++)
	{
		if ((unsigned char) *p <= 0x20 || (unsigned char) *p >= 0x7F)
			return bad(status, error, 400, "invalid character in request target");
	}
	req->path = pstrdup(req->target);
	req->query = strchr(req->path, '?');
	if (req->query != NULL)
		*req->query++ = '\0';
	else
		req->query = "";

	/* header fields, up to the blank line */
	for (line = next; *line != '\0' && strncmp(line, "\r\n", 2) != 0; line = next)
	{
		char	   *colon;

		next = strstr(line, "\r\n");
		*next = '\0';
		next += 2;
		if (*line == ' ' || *line == '\t')
			return bad(status, error, 400, "obsolete header line folding");
		colon = strchr(line, ':');
		if (colon == NULL || colon == line)
			return bad(status, error, 400, "malformed header field");
		*colon = '\0';
		for (const char *p = line; *p; p++)
		{
			if (*p == ' ' || *p == '\t')
				return bad(status, error, 400, "whitespace in header name");
		}
		if (req->nheaders >= ZS_HTTP_MAX_HEADERS)
			return bad(status, error, 431, "too many header fields");
		req->names[req->nheaders] = line;
		req->values[req->nheaders] = trim(colon + 1);
		req->nheaders++;
	}
	return ZS_HTTP_COMPLETE;
}

void
zs_http_request_free(ZsHttpRequest *req)
{
	if (req->storage)
		pfree(req->storage);
	if (req->path)
		pfree(req->path);
	memset(req, 0, sizeof(*req));
}

const char *
zs_http_header(const ZsHttpRequest *req, const char *name)
{
	for (int i = 0; i < req->nheaders; i++)
	{
		if (pg_strcasecmp(req->names[i], name) == 0)
			return req->values[i];
	}
	return NULL;
}

bool
zs_http_has_token(const char *value, const char *token)
{
	size_t		toklen = strlen(token);
	const char *p = value;

	if (value == NULL)
		return false;
	while (*p)
	{
		const char *start;
		const char *end;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		start = p;
		while (*p && *p != ',')
			p++;
		end = p;
		while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if ((size_t) (end - start) == toklen && pg_strncasecmp(start, token, toklen) == 0)
			return true;
	}
	return false;
}

/* append the percent-decoded text of s[0..len-1] ('+' is a space) */
static void
append_decoded(StringInfo out, const char *s, int len)
{
	for (int i = 0; i < len; i++)
	{
		int			hi,
					lo;

		if (s[i] == '+')
			appendStringInfoChar(out, ' ');
		else if (s[i] == '%' && i + 2 < len &&
				 (hi = zs_hex_value(s[i + 1])) >= 0 && (lo = zs_hex_value(s[i + 2])) >= 0)
		{
			appendStringInfoChar(out, (char) (hi * 16 + lo));
			i += 2;
		}
		else
			appendStringInfoChar(out, s[i]);
	}
}

bool
zs_http_query_param(const char *query, const char *name, StringInfo value)
{
	const char *p = query;
	StringInfoData key;
	bool		found = false;

	initStringInfo(&key);
	while (*p && !found)
	{
		const char *amp = strchr(p, '&');
		const char *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', end - p);
		const char *key_end = eq ? eq : end;

		resetStringInfo(&key);
		append_decoded(&key, p, (int) (key_end - p));
		if (strcmp(key.data, name) == 0)
		{
			resetStringInfo(value);
			if (eq)
				append_decoded(value, eq + 1, (int) (end - eq - 1));
			found = true;
		}
		p = amp ? amp + 1 : end;
	}
	pfree(key.data);
	return found;
}

bool
zs_http_basic_credentials(const char *authorization, StringInfo user, StringInfo password)
{
	const char *b64;
	int			len;
	char	   *decoded;
	int			n;
	char	   *colon;

	if (authorization == NULL || pg_strncasecmp(authorization, "Basic ", 6) != 0)
		return false;
	b64 = authorization + 6;
	while (*b64 == ' ')
		b64++;
	len = (int) strlen(b64);
	if (len == 0 || len > 4096)
		return false;
	decoded = palloc(pg_b64_dec_len(len) + 1);
	n = zs_b64_decode(b64, len, decoded, pg_b64_dec_len(len));
	if (n < 0)
	{
		pfree(decoded);
		return false;
	}
	decoded[n] = '\0';
	colon = memchr(decoded, ':', n);
	if (colon == NULL)
	{
		pfree(decoded);
		return false;
	}
	resetStringInfo(user);
	resetStringInfo(password);
	appendBinaryStringInfo(user, decoded, (int) (colon - decoded));
	appendBinaryStringInfo(password, colon + 1, (int) (n - (colon + 1 - decoded)));
	pfree(decoded);
	return true;
}

ZsRouteAction
zs_http_route(const char *path, int *version)
{
	static const struct
	{
		const char *name;
		ZsRouteAction action;
	}			actions[] = {
		{"changes", ZS_ROUTE_CHANGES},
		{"snapshot", ZS_ROUTE_SNAPSHOT},
		{"subscribe", ZS_ROUTE_SUBSCRIBE},
	};
	const char *marker = "/replication/v";
	const char *p = path;
	const char *found = NULL;

	/* the last occurrence, so any prefix is allowed */
	while ((p = strstr(p, marker)) != NULL)
		found = p++;
	if (found == NULL)
		return ZS_ROUTE_NONE;
	p = found + strlen(marker);
	if (*p < '0' || *p > '9')
		return ZS_ROUTE_NONE;
	*version = 0;
	while (*p >= '0' && *p <= '9')
	{
		if (*version > 100000)
			return ZS_ROUTE_NONE;
		*version = *version * 10 + (*p++ - '0');
	}
	if (*p++ != '/')
		return ZS_ROUTE_NONE;
	for (int i = 0; i < (int) lengthof(actions); i++)
	{
		if (strcmp(p, actions[i].name) == 0)
			return actions[i].action;
	}
	return ZS_ROUTE_NONE;
}
