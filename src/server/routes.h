/*-------------------------------------------------------------------------
 * routes.h
 *	  What a request or a message on a connection leads to: the one place
 *	  that routes the server's HTTP paths and checks Basic auth. These are
 *	  the connections' handlers (ZsConnHandlers), which server_worker.c
 *	  installs.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_ROUTES_H
#define ZS_ROUTES_H

#include "codec/http.h"
#include "server/server.h"

/* A complete request head. */
extern void zs_route_request(ZsServer *server, ZsConn *c, const ZsHttpRequest *req);

/* A request head that could not be parsed: status and error from the parser. */
extern void zs_route_bad_request(ZsServer *server, ZsConn *c, int status, const char *error);

/* A WebSocket text message. */
extern void zs_route_message(ZsServer *server, ZsConn *c, const char *text, int len);

#endif							/* ZS_ROUTES_H */
