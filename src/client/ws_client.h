/*-------------------------------------------------------------------------
 * ws_client.h
 *	  The client side of the subscriber protocol, shared by the project's
 *	  command-line tools: URLs, TCP connect, the WebSocket upgrade with
 *	  optional Basic credentials, masked frames, and plain HTTP GET.
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
	char	   *scheme;			/* "ws" or "http" */
	char	   *host;
	char	   *port;
	char	   *target;			/* path and query, at least "/" */
	char	   *userinfo;		/* "user:password" or NULL */
} ZsUrl;

/* ws://[user:password@]host[:port][/path] or http://...; false if malformed */
extern bool zs_url_parse(const char *text, ZsUrl *url);

/* A connected TCP socket, or -1. */
extern int	zs_client_connect(const ZsUrl *url, char *err);

/* Send everything; false if the connection is lost. */
extern bool zs_client_write_all(int sock, const char *data, size_t len, char *err);

/*
 * The WebSocket upgrade for url->target (or target, if not NULL). Bytes
 * that arrived after the response head are appended to leftover. On a
 * refused upgrade, *http_status holds the status code.
 */
extern bool zs_client_ws_handshake(int sock, const ZsUrl *url, const char *target,
								   StringInfo leftover, int *http_status, char *err);

/* One masked client frame. */
extern bool zs_client_send_frame(int sock, uint8 opcode, const char *payload, int len,
								 char *err);

/*
 * GET target over plain HTTP/1.1. On success *http_status and the response
 * head are filled; body bytes that came with the head are in leftover.
 */
extern bool zs_client_http_get(int sock, const ZsUrl *url, const char *target,
							   int *http_status, StringInfo head, StringInfo leftover,
							   char *err);

/* Value of a response header (case-insensitive name), or false. */
extern bool zs_client_header(const char *head, const char *name, StringInfo value);

#endif							/* ZS_WS_CLIENT_H */
