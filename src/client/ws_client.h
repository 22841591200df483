/*-------------------------------------------------------------------------
 * ws_client.h
 *	  The client side of the subscriber protocol, shared by the project's
 *	  command-line tools: URLs, TCP connect with optional TLS (wss://,
 *	  https://), the WebSocket upgrade with optional Basic credentials,
 *	  masked frames, and HTTP GET.
 *
 * Failures return false (or -1) with a message in err; the caller decides
 * how to report and exit.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_WS_CLIENT_H
#define ZS_WS_CLIENT_H

#include "lib/stringinfo.h"

#define ZS_CLIENT_ERR_LEN 512

typedef struct ZsUrl
{
	char	   *scheme;			/* "ws", "wss", "http" or "https" */
	bool		tls;			/* wss:// or https:// */
	char	   *host;
	char	   *port;
	char	   *target;			/* path and query, at least "/" */
	char	   *userinfo;		/* "user:password" or NULL */
} ZsUrl;

/*
 * ws[s]://[user:password@]host[:port][/path] or http[s]://...; false if
 * malformed. The port defaults to 80, or 443 with TLS.
 */
extern bool zs_url_parse(const char *text, ZsUrl *url);

/* A WebSocket (ws://, wss://) or a plain HTTP (http://, https://) URL? */
extern bool zs_url_is_websocket(const ZsUrl *url);
extern bool zs_url_is_http(const ZsUrl *url);

struct ssl_st;

/* A connection to the server: a TCP socket, with a TLS session for wss:// and https:// */
typedef struct ZsClientConn
{
	int			sock;			/* -1 when not connected */
	struct ssl_st *ssl;
	bool		nonblocking;	/* zs_client_set_nonblocking was called */
} ZsClientConn;

/*
 * How TLS connections verify the server: against the CA certificates in
 * ca_file (PEM), or else ZS_SSL_CA_FILE's, or else the system's; the
 * certificate must name the URL's host. no_verify (or ZS_SSL_NO_VERIFY=1)
 * skips both, and is only for when it is explicitly asked for. Without a
 * call, the environment's settings apply.
 */
extern void zs_client_tls_configure(const char *ca_file, bool no_verify);

/* Connect (and, for wss:// and https://, do the TLS handshake); false with err. */
extern bool zs_client_connect(const ZsUrl *url, ZsClientConn *conn, char *err);

/* Close the connection (a TLS close_notify first); conn->sock becomes -1. */
extern void zs_client_close(ZsClientConn *conn);

/*
 * Wait up to timeout_ms (-1: forever) until something can be read: 1 if
 * so, 0 on timeout, -1 if interrupted by a signal (errno EINTR).
 */
extern int	zs_client_wait(ZsClientConn *conn, int timeout_ms);

/*
 * Read what is there (blocking until something is): bytes read (> 0), 0
 * if the server closed the connection, -1 with errno EINTR if interrupted,
 * or -1 with a message in err.
 */
extern ssize_t zs_client_read(ZsClientConn *conn, void *buf, size_t len, char *err);

/* Send everything; false if the connection is lost. */
extern bool zs_client_write_all(ZsClientConn *conn, const char *data, size_t len, char *err);

/*
 * Non-blocking use, after the handshake (a client that holds many
 * connections): zs_client_set_nonblocking makes the socket non-blocking;
 * then zs_client_read returns -1 with errno EAGAIN when nothing can be
 * read yet, and zs_client_write_some sends what the socket takes (bytes
 * sent, possibly 0; -1 with err if the connection is lost). A TLS write
 * that could not finish must be retried with the same bytes first (they
 * may have moved: the caller's buffer may grow).
 */
extern bool zs_client_set_nonblocking(ZsClientConn *conn, char *err);
extern ssize_t zs_client_write_some(ZsClientConn *conn, const char *data, size_t len, char *err);

/* Decrypted bytes already read from the socket, which poll() does not see */
extern bool zs_client_pending(ZsClientConn *conn);

/*
 * The WebSocket upgrade for url->target (or target, if not NULL). Bytes
 * that arrived after the response head are appended to leftover. On a
 * refused upgrade, *http_status holds the status code.
 */
extern bool zs_client_ws_handshake(ZsClientConn *conn, const ZsUrl *url, const char *target,
								   StringInfo leftover, int *http_status, char *err);

/* One masked client frame. */
extern bool zs_client_send_frame(ZsClientConn *conn, uint8 opcode, const char *payload,
								 int len, char *err);

/*
 * GET target over HTTP/1.1. On success *http_status and the response head
 * are filled; body bytes that came with the head are in leftover.
 */
extern bool zs_client_http_get(ZsClientConn *conn, const ZsUrl *url, const char *target,
							   int *http_status, StringInfo head, StringInfo leftover,
							   char *err);

/* Value of a response header (case-insensitive name), or false. */
extern bool zs_client_header(const char *head, const char *name, StringInfo value);

#endif							/* ZS_WS_CLIENT_H */
