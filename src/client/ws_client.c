/*-------------------------------------------------------------------------
 * ws_client.c
 *	  Client side of the subscriber protocol (see ws_client.h).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base64.h"

#include "codec/websocket.h"
#include "client/ws_client.h"

#define MAX_RESPONSE_HEAD 65536

bool
zs_url_parse(const char *text, ZsUrl *url)
{
	const char *p;
	const char *slash;
	const char *at;
	const char *colon;
	char	   *hostport;

	if (strncmp(text, "ws://", 5) == 0)
	{
		url->scheme = "ws";
		p = text + 5;
	}
	else if (strncmp(text, "http://", 7) == 0)
	{
		url->scheme = "http";
		p = text + 7;
	}
	else
		return false;
	slash = strchr(p, '/');
	if (slash == NULL)
		slash = p + strlen(p);
	hostport = pnstrdup(p, slash - p);
	at = strrchr(hostport, '@');
	url->userinfo = at ? pnstrdup(hostport, at - hostport) : NULL;
	if (at)
		hostport = (char *) at + 1;
	colon = strrchr(hostport, ':');
	url->host = colon ? pnstrdup(hostport, colon - hostport) : pstrdup(hostport);
	url->port = colon ? pstrdup(colon + 1) : pstrdup("80");
	url->target = *slash ? pstrdup(slash) : pstrdup("/");
	return url->host[0] != '\0' && url->port[0] != '\0';
}

int
zs_client_connect(const ZsUrl *url, char *err)
{
	struct addrinfo hints = {0};
	struct addrinfo *res;
	int			rc;
	int			sock = -1;
	int			saved_errno = 0;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(url->host, url->port, &hints, &res);
	if (rc != 0)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "could not resolve \"%s\": %s", url->host, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
	{
		sock = socket(ai->ai_family, SOCK_STREAM, 0);
		if (sock >= 0 && connect(sock, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved_errno = errno;
		if (sock >= 0)
			close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	if (sock < 0)
	{
		errno = saved_errno;
		snprintf(err, ZS_CLIENT_ERR_LEN, "could not connect to %s:%s: %m", url->host, url->port);
	}
	return sock;
}

bool
zs_client_write_all(int sock, const char *data, size_t len, char *err)
{
	while (len > 0)
	{
		ssize_t		n = send(sock, data, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			snprintf(err, ZS_CLIENT_ERR_LEN, "connection lost while sending: %m");
			return false;
		}
		data += n;
		len -= n;
	}
	return true;
}

bool
zs_client_send_frame(int sock, uint8 opcode, const char *payload, int len, char *err)
{
	StringInfoData f;
	uint8		mask[4];
	int			start;
	bool		ok;

	if (!pg_strong_random(mask, sizeof(mask)))
		memset(mask, 0x5a, sizeof(mask));
	initStringInfo(&f);
	zs_ws_append_header(&f, true, opcode, (uint64) len, mask);
	start = f.len;
	appendBinaryStringInfo(&f, payload, len);
	zs_ws_mask(f.data + start, len, mask, 0);
	ok = zs_client_write_all(sock, f.data, f.len, err);
	pfree(f.data);
	return ok;
}

static void
append_request_head(StringInfo req, const ZsUrl *url, const char *target)
{
	appendStringInfo(req, "GET %s HTTP/1.1\r\nHost: %s:%s\r\n", target, url->host, url->port);
	if (url->userinfo)
	{
		int			enc = pg_b64_enc_len(strlen(url->userinfo));
		char	   *b64 = palloc(enc + 1);
		int			len = pg_b64_encode(url->userinfo, strlen(url->userinfo), b64, enc);

		b64[len] = '\0';
		appendStringInfo(req, "Authorization: Basic %s\r\n", b64);
		pfree(b64);
	}
}

/* Read until the end of the response head; split off what follows it. */
static bool
read_response_head(int sock, StringInfo head, StringInfo leftover, int *http_status, char *err)
{
	char	   *end;

	resetStringInfo(head);
	while ((end = strstr(head->data, "\r\n\r\n")) == NULL)
	{
		char		buf[4096];
		ssize_t		got = recv(sock, buf, sizeof(buf), 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
		{
			snprintf(err, ZS_CLIENT_ERR_LEN, "connection closed before a complete HTTP response");
			return false;
		}
		appendBinaryStringInfo(head, buf, (int) got);
		if (head->len > MAX_RESPONSE_HEAD)
		{
			snprintf(err, ZS_CLIENT_ERR_LEN, "oversized HTTP response head");
			return false;
		}
	}
	end += 4;
	appendBinaryStringInfo(leftover, end, head->len - (int) (end - head->data));
	head->len = (int) (end - head->data);
	head->data[head->len] = '\0';
	if (sscanf(head->data, "HTTP/1.1 %d", http_status) != 1)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "not an HTTP/1.1 response: %.40s", head->data);
		return false;
	}
	return true;
}

bool
zs_client_ws_handshake(int sock, const ZsUrl *url, const char *target,
					   StringInfo leftover, int *http_status, char *err)
{
	uint8		nonce[16];
	char		key[32];
	char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];
	StringInfoData req;
	StringInfoData head;
	int			n;
	bool		ok = false;

	*http_status = 0;
	if (!pg_strong_random(nonce, sizeof(nonce)))
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "no random source");
		return false;
	}
	n = pg_b64_encode((const char *) nonce, sizeof(nonce), key, sizeof(key));
	key[n] = '\0';
	initStringInfo(&req);
	append_request_head(&req, url, target ? target : url->target);
	appendStringInfo(&req, "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n", key);
	initStringInfo(&head);
	if (!zs_client_write_all(sock, req.data, req.len, err) ||
		!read_response_head(sock, &head, leftover, http_status, err))
		goto done;
	if (*http_status != 101)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "server refused the upgrade: %.*s",
				 (int) (strchr(head.data, '\r') - head.data), head.data);
		goto done;
	}
	if (!zs_ws_accept_key(key, accept) || strstr(head.data, accept) == NULL)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "wrong Sec-WebSocket-Accept in the response");
		goto done;
	}
	ok = true;
done:
	pfree(req.data);
	pfree(head.data);
	return ok;
}

bool
zs_client_http_get(int sock, const ZsUrl *url, const char *target, int *http_status,
				   StringInfo head, StringInfo leftover, char *err)
{
	StringInfoData req;
	bool		ok;

	initStringInfo(&req);
	append_request_head(&req, url, target);
	appendStringInfoString(&req, "Connection: close\r\n\r\n");
	ok = zs_client_write_all(sock, req.data, req.len, err) &&
		read_response_head(sock, head, leftover, http_status, err);
	pfree(req.data);
	return ok;
}

bool
zs_client_header(const char *head, const char *name, StringInfo value)
{
	size_t		nlen = strlen(name);

	for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line, "\r\n"))
	{
		const char *end;

		line += 2;
		if (pg_strncasecmp(line, name, nlen) != 0 || line[nlen] != ':')
			continue;
		line += nlen + 1;
		while (*line == ' ')
			line++;
		end = strstr(line, "\r\n");
		if (end == NULL)
			return false;
		resetStringInfo(value);
		appendBinaryStringInfo(value, line, (int) (end - line));
		return true;
	}
	return false;
}
