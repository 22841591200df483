/*-------------------------------------------------------------------------
 * server.h
 *	  The subscriber server's state, made once by the server worker
 *	  (server_worker.c) and handed to whatever works on it: the listener,
 *	  admission, the connections, flow control and reservations.
 *
 * Its connections are an array in accept order, not a list: flow control
 * takes turns over them by index, and admission counts them by kind. A
 * connection closed during a round of the loop stays in the array until
 * the round's end, so that an index taken in the round stays valid.
 * What the connections receive goes to the handlers the worker installs
 * (routes.c's), each given the server, so that the connection layer does
 * not know what a request means.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SERVER_H
#define ZS_SERVER_H

#include "codec/http.h"
#include "server/conn.h"
#include "server/flow_schedule.h"

#define ZS_MAX_LISTENERS 16

/*
 * What the server does with what a connection receives: a complete request
 * head; a request head that could not be parsed (status and error from the
 * parser); a WebSocket text message. Each may queue output and close.
 */
typedef struct ZsConnHandlers
{
	void		(*request) (ZsServer *server, ZsConn *c, const ZsHttpRequest *req);
	void		(*bad_request) (ZsServer *server, ZsConn *c, int status, const char *error);
	void		(*message) (ZsServer *server, ZsConn *c, const char *text, int len);
} ZsConnHandlers;

struct ZsServer
{
	/*
	 * every connection, in accept order: at most zero_stream.max_subscribers
	 * admitted and zero_stream.max_pending_connections pending ones are open
	 */
	ZsConn	  **conns;
	int			nconns;
	int			conns_capacity;
	bool		conns_changed;	/* one was added or closed: the worker
								 * rebuilds its wait-event set */
	const ZsConnHandlers *handlers;

	/* memory freed since it was last given back to the system */
	Size		freed_since_trim;
	TimestampTz last_trim;

	pgsocket	listeners[ZS_MAX_LISTENERS];
	int			nlisteners;

	ZsFlowState flow;			/* flow control between rounds */
	MemoryContext page_context; /* the page being handed out (reset after
								 * each) */
};

#endif							/* ZS_SERVER_H */
