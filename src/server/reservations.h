/*-------------------------------------------------------------------------
 * reservations.h
 *	  Snapshot reservations: which connection holds one for which task,
 *	  and the snapshots served under them (docs/zero-protocol.md
 *	  §2.5-2.6). What a reservation answers is reservation_offer.h's.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_RESERVATIONS_H
#define ZS_RESERVATIONS_H

#include "server/server.h"

/* A legacy /snapshot connection for task: one status message, then held open. */
extern void zs_reservation_open(ZsServer *server, ZsConn *c, const char *task);

/* A subscription or a newer reservation for task: other connections' reservations for it end. */
extern void zs_reservation_release(ZsServer *server, const char *task, ZsConn *except);

/*
 * GET /replica/<task> (authorized): start a consistent copy of the backup
 * replica if task holds a reservation (404 otherwise).
 */
extern void zs_reservation_serve_snapshot(ZsServer *server, ZsConn *c, const char *task);

/* The next step of every snapshot being made; true while any is unfinished. */
extern bool zs_reservation_advance_copies(ZsServer *server);

#endif							/* ZS_RESERVATIONS_H */
