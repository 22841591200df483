/*-------------------------------------------------------------------------
 * listener.h
 *	  The server's listening sockets: opened from zero_stream.listen_addresses
 *	  and zero_stream.port, accepting into connections.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LISTENER_H
#define ZS_LISTENER_H

#define ZS_MAX_LISTENERS 16

/*
 * Open a non-blocking listening socket on every address of
 * zero_stream.listen_addresses (ZS_MAX_LISTENERS at most) into socks;
 * returns how many. ERROR if one cannot be opened or there is none.
 */
extern int	zs_listeners_open(pgsocket *socks);

/* Accept every pending connection on a listening socket. */
extern void zs_listener_accept(pgsocket listener);

#endif							/* ZS_LISTENER_H */
