/*-------------------------------------------------------------------------
 * ws_client.c
 *	  Client side of the subscriber protocol (see ws_client.h).
 *
 * TLS (wss://, https://) uses OpenSSL, which PostgreSQL links too, on the
 * same socket (blocking; non-blocking after the handshake for a client of
 * many connections, zs_client_set_nonblocking): the server's certificate
 * is verified against --ca-file / ZS_SSL_CA_FILE or the system's CA
 * certificates and must name the URL's host (DNS name or IP address),
 * unless verification is explicitly turned off. A zero_stream server sends
 * no session tickets, so a readable socket always has a record of data, a
 * close_notify or an alert for SSL_read, and a read never blocks on
 * handshake traffic alone (non-blocking, a partial record is EAGAIN).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>


#include "compat/base64.h"
#include "codec/websocket.h"
#include "client/ws_client.h"

#define MAX_RESPONSE_HEAD 65536

/* how TLS connections verify the server */
static bool tls_configured = false;	/* else the environment's settings */
static const char *tls_ca_file = NULL;
static bool tls_no_verify = false;
static SSL_CTX *tls_context = NULL;

static int	connect_tcp(const ZsUrl *url, char *err);

bool
zs_url_parse(const char *text, ZsUrl *url)
{
	static const char *const schemes[] = {"ws", "wss", "http", "https"};
	const char *p = NULL;
	const char *slash;
	const char *at;
	const char *colon;
	char	   *hostport;

	for (int i = 0; i < (int) lengthof(schemes); i++)
	{
		size_t		len = strlen(schemes[i]);

		if (strncmp(text, schemes[i], len) == 0 && strncmp(text + len, "://", 3) == 0)
		{
			url->scheme = (char *) schemes[i];
			url->tls = strcmp(schemes[i], "wss") == 0 || strcmp(schemes[i], "https") == 0;
			p = text + len + 3;
			break;
		}
	}
	if (p == NULL)
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
	url->port = colon ? pstrdup(colon + 1) : pstrdup(url->tls ? "443" : "80");
	url->target = *slash ? pstrdup(slash) : pstrdup("/");
	return url->host[0] != '\0' && url->port[0] != '\0';
}

bool
zs_url_is_websocket(const ZsUrl *url)
{
	return strcmp(url->scheme, "ws") == 0 || strcmp(url->scheme, "wss") == 0;
}

bool
zs_url_is_http(const ZsUrl *url)
{
	return strcmp(url->scheme, "http") == 0 || strcmp(url->scheme, "https") == 0;
}

/* ---------------------------------------------------------------- TLS */

void
zs_client_tls_configure(const char *ca_file, bool no_verify)
{
	const char *env_no_verify = getenv("ZS_SSL_NO_VERIFY");

	if (ca_file == NULL)
		ca_file = getenv("ZS_SSL_CA_FILE");
	tls_ca_file = ca_file != NULL && ca_file[0] != '\0' ? ca_file : NULL;
	tls_no_verify = no_verify || (env_no_verify != NULL && strcmp(env_no_verify, "1") == 0);
	tls_configured = true;
}

/* the first OpenSSL error queued, as text */
static const char *
tls_error_text(void)
{
	unsigned long ecode = ERR_get_error();
	const char *reason;

	ERR_clear_error();
	if (ecode == 0)
		return "the connection was closed";
	reason = ERR_reason_error_string(ecode);
	return reason != NULL ? reason : "unknown OpenSSL error";
}

static SSL_CTX *
tls_client_context(char *err)
{
	SSL_CTX    *ctx;

	if (tls_context != NULL)
		return tls_context;
	if (!tls_configured)
		zs_client_tls_configure(NULL, false);
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "could not create a TLS context: %s", tls_error_text());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (tls_no_verify)
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	else
	{
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (tls_ca_file != NULL
			? SSL_CTX_load_verify_locations(ctx, tls_ca_file, NULL) != 1
			: SSL_CTX_set_default_verify_paths(ctx) != 1)
		{
			if (tls_ca_file != NULL)
				snprintf(err, ZS_CLIENT_ERR_LEN,
						 "could not read the CA certificates in \"%s\" (--ca-file or ZS_SSL_CA_FILE): %s",
						 tls_ca_file, tls_error_text());
			else
				snprintf(err, ZS_CLIENT_ERR_LEN,
						 "could not read the system's CA certificates: %s", tls_error_text());
			SSL_CTX_free(ctx);
			return NULL;
		}
	}
	tls_context = ctx;
	return ctx;
}

/* The TLS handshake on a connected socket; false with err. */
static bool
tls_connect(ZsClientConn *conn, const ZsUrl *url, char *err)
{
	SSL_CTX    *ctx = tls_client_context(err);
	unsigned char addr[sizeof(struct in6_addr)];
	bool		is_ip;
	SSL		   *ssl;
	int			rc;

	if (ctx == NULL)
		return false;
	ERR_clear_error();
	ssl = SSL_new(ctx);
	if (ssl == NULL || SSL_set_fd(ssl, conn->sock) != 1)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "could not start TLS: %s", tls_error_text());
		if (ssl != NULL)
			SSL_free(ssl);
		return false;
	}
	conn->ssl = ssl;
	is_ip = inet_pton(AF_INET, url->host, addr) == 1 || inet_pton(AF_INET6, url->host, addr) == 1;
	/* the certificate must name the host: an IP address, or a DNS name (also sent as SNI) */
	if (!tls_no_verify &&
		(is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url->host) != 1
		 : SSL_set1_host(ssl, url->host) != 1))
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "invalid host name \"%s\" for TLS", url->host);
		return false;
	}
	if (!is_ip)
		(void) SSL_set_tlsext_host_name(ssl, url->host);
	errno = 0;
	rc = SSL_connect(ssl);
	if (rc == 1)
		return true;
	if (SSL_get_verify_result(ssl) != X509_V_OK)
	{
		long		verify = SSL_get_verify_result(ssl);

		ERR_clear_error();
		if (tls_ca_file != NULL)
			snprintf(err, ZS_CLIENT_ERR_LEN,
					 "could not verify the server certificate of %s:%s against the CA certificates in \"%s\": %s",
					 url->host, url->port, tls_ca_file, X509_verify_cert_error_string(verify));
		else
			snprintf(err, ZS_CLIENT_ERR_LEN,
					 "could not verify the server certificate of %s:%s: %s (give the CA certificate that signed it with --ca-file or ZS_SSL_CA_FILE)",
					 url->host, url->port, X509_verify_cert_error_string(verify));
	}
	else
	{
		int			ssl_error = SSL_get_error(ssl, rc);
		int			save_errno = errno;
		const char *why = tls_error_text();

		if (ssl_error == SSL_ERROR_SYSCALL && save_errno != 0)
			why = strerror(save_errno);
		snprintf(err, ZS_CLIENT_ERR_LEN,
				 "TLS handshake with %s:%s failed: %s (does the server have zero_stream.ssl on? without it, use ws:// or http://)",
				 url->host, url->port, why);
	}
	return false;
}

/* ---------------------------------------------------------------- connection */

bool
zs_client_connect(const ZsUrl *url, ZsClientConn *conn, char *err)
{
	conn->ssl = NULL;
	conn->nonblocking = false;
	conn->sock = connect_tcp(url, err);
	if (conn->sock < 0)
		return false;
	if (url->tls && !tls_connect(conn, url, err))
	{
		zs_client_close(conn);
		return false;
	}
	return true;
}

void
zs_client_close(ZsClientConn *conn)
{
	if (conn->ssl != NULL)
	{
		if (SSL_is_init_finished(conn->ssl))
			(void) SSL_shutdown(conn->ssl);
		SSL_free(conn->ssl);
		ERR_clear_error();
		conn->ssl = NULL;
	}
	if (conn->sock >= 0)
		close(conn->sock);
	conn->sock = -1;
}

int
zs_client_wait(ZsClientConn *conn, int timeout_ms)
{
	struct pollfd pfd = {.fd = conn->sock,.events = POLLIN};
	int			rc;

	/* decrypted bytes already read from the socket */
	if (conn->ssl != NULL && SSL_pending(conn->ssl) > 0)
		return 1;
	rc = poll(&pfd, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? -1 : 1;	/* an error: the read will say which */
	return rc > 0 ? 1 : 0;
}

ssize_t
zs_client_read(ZsClientConn *conn, void *buf, size_t len, char *err)
{
	int			n;
	int			ssl_error;

	if (conn->ssl == NULL)
	{
		ssize_t		got = recv(conn->sock, buf, len, 0);

		if (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			snprintf(err, ZS_CLIENT_ERR_LEN, "could not read from the server: %m");
		return got;
	}
	ERR_clear_error();
	errno = 0;
	n = SSL_read(conn->ssl, buf, (int) Min(len, (size_t) INT_MAX));
	if (n > 0)
		return n;
	ssl_error = SSL_get_error(conn->ssl, n);
	switch (ssl_error)
	{
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			/* a signal interrupted the read, or nothing yet (non-blocking) */
			errno = conn->nonblocking ? EAGAIN : EINTR;
			return -1;
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		case SSL_ERROR_SYSCALL:
			if (errno == 0 && ERR_peek_error() == 0)
				return 0;		/* closed without close_notify */
			if (errno != 0)
			{
				snprintf(err, ZS_CLIENT_ERR_LEN, "could not read from the server: %m");
				return -1;
			}
			break;
		default:
			break;
	}
	snprintf(err, ZS_CLIENT_ERR_LEN, "TLS error reading from the server: %s", tls_error_text());
	return -1;
}

/* A connected TCP socket, or -1 with err. */
static int
connect_tcp(const ZsUrl *url, char *err)
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
	else
	{
		int			one = 1;

		/*
		 * Acks are small frames written while the server's data is in
		 * flight: with Nagle's algorithm each would wait for the server's
		 * delayed TCP ack of the previous one (up to 40 ms), and the server
		 * paces its pages by our acks. Node's sockets (zero-cache's
		 * clients) disable it too.
		 */
		(void) setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return sock;
}

bool
zs_client_write_all(ZsClientConn *conn, const char *data, size_t len, char *err)
{
	while (len > 0)
	{
		ssize_t		n;

		if (conn->ssl != NULL)
		{
			ERR_clear_error();
			errno = 0;
			n = SSL_write(conn->ssl, data, (int) Min(len, (size_t) INT_MAX));
			if (n <= 0)
			{
				int			ssl_error = SSL_get_error(conn->ssl, (int) n);

				if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE)
					continue;	/* interrupted by a signal */
				if (ssl_error != SSL_ERROR_SYSCALL || errno == 0)
				{
					snprintf(err, ZS_CLIENT_ERR_LEN, "connection lost while sending: %s",
							 tls_error_text());
					return false;
				}
			}
		}
		else
			n = send(conn->sock, data, len, MSG_NOSIGNAL);
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
zs_client_set_nonblocking(ZsClientConn *conn, char *err)
{
	int			flags = fcntl(conn->sock, F_GETFL);

	if (flags < 0 || fcntl(conn->sock, F_SETFL, flags | O_NONBLOCK) < 0)
	{
		snprintf(err, ZS_CLIENT_ERR_LEN, "could not make the socket non-blocking: %m");
		return false;
	}
	if (conn->ssl != NULL)
		SSL_set_mode(conn->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	conn->nonblocking = true;
	return true;
}

ssize_t
zs_client_write_some(ZsClientConn *conn, const char *data, size_t len, char *err)
{
	ssize_t		n;

	if (len == 0)
		return 0;
	if (conn->ssl != NULL)
	{
		int			ssl_error;

		ERR_clear_error();
		errno = 0;
		n = SSL_write(conn->ssl, data, (int) Min(len, (size_t) INT_MAX));
		if (n > 0)
			return n;
		ssl_error = SSL_get_error(conn->ssl, (int) n);
		if (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE)
			return 0;
		if (ssl_error == SSL_ERROR_SYSCALL && errno != 0)
			snprintf(err, ZS_CLIENT_ERR_LEN, "connection lost while sending: %m");
		else
			snprintf(err, ZS_CLIENT_ERR_LEN, "connection lost while sending: %s", tls_error_text());
		return -1;
	}
	n = send(conn->sock, data, len, MSG_NOSIGNAL);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	snprintf(err, ZS_CLIENT_ERR_LEN, "connection lost while sending: %m");
	return -1;
}

bool
zs_client_pending(ZsClientConn *conn)
{
	return conn->ssl != NULL && SSL_pending(conn->ssl) > 0;
}

bool
zs_client_send_frame(ZsClientConn *conn, uint8 opcode, const char *payload, int len, char *err)
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
	ok = zs_client_write_all(conn, f.data, f.len, err);
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
		int			len = zs_b64_encode(url->userinfo, strlen(url->userinfo), b64, enc);

		b64[len] = '\0';
		appendStringInfo(req, "Authorization: Basic %s\r\n", b64);
		pfree(b64);
	}
}

/* Read until the end of the response head; split off what follows it. */
static bool
read_response_head(ZsClientConn *conn, StringInfo head, StringInfo leftover, int *http_status, char *err)
{
	char	   *end;

	resetStringInfo(head);
	while ((end = strstr(head->data, "\r\n\r\n")) == NULL)
	{
		char		buf[4096];
		ssize_t		got = zs_client_read(conn, buf, sizeof(buf), err);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return false;
		if (got == 0)
		{
			snprintf(err, ZS_CLIENT_ERR_LEN, "connection closed before a complete HTTP response");
			/* closed before answering at all (a server shutting down): as a reset */
			errno = head->len == 0 ? ECONNRESET : 0;
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
zs_client_ws_handshake(ZsClientConn *conn, const ZsUrl *url, const char *target,
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
	n = zs_b64_encode(nonce, sizeof(nonce), key, sizeof(key));
	key[n] = '\0';
	initStringInfo(&req);
	append_request_head(&req, url, target ? target : url->target);
	appendStringInfo(&req, "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n", key);
	initStringInfo(&head);
	if (!zs_client_write_all(conn, req.data, req.len, err) ||
		!read_response_head(conn, &head, leftover, http_status, err))
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
zs_client_http_get(ZsClientConn *conn, const ZsUrl *url, const char *target, int *http_status,
				   StringInfo head, StringInfo leftover, char *err)
{
	StringInfoData req;
	bool		ok;

	initStringInfo(&req);
	append_request_head(&req, url, target);
	appendStringInfoString(&req, "Connection: close\r\n\r\n");
	ok = zs_client_write_all(conn, req.data, req.len, err) &&
		read_response_head(conn, head, leftover, http_status, err);
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
