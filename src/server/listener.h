/*-------------------------------------------------------------------------
 * listener.h
 *	  The server's listening sockets: opened from zero_stream.listen_addresses
 *	  and zero_stream.port, accepting into connections.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LISTENER_H
#define ZS_LISTENER_H

#include "server/server.h"

/*
 * Connections one listener event may accept, so that a flood of them cannot
 * stretch a round of the server's loop: the listening socket stays readable.
 */
#define ZS_ACCEPT_BUDGET	64

/*
 * Open a non-blocking listening socket on every address of
 * zero_stream.listen_addresses (ZS_MAX_LISTENERS at most) into socks;
 * returns how many. ERROR if one cannot be opened or there is none.
 */
extern int	zs_listeners_open(pgsocket *socks);

/*
 * Accept the pending connections on a listening socket, at most *budget of
 * them (counted down). Unless requests_read, it stops at a full pool of
 * pending connections and returns true: the caller reads the requests that
 * have arrived, then calls again with requests_read, which makes room for
 * each new connection or refuses it.
 */
extern bool zs_listener_accept(ZsServer *server, pgsocket listener, bool requests_read,
							   int *budget);

#endif							/* ZS_LISTENER_H */
