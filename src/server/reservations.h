/*-------------------------------------------------------------------------
 * reservations.h
 *	  Snapshot reservations: which connection holds one for which task,
 *	  what a reservation answers, and the snapshots served under them
 *	  (docs/zero-protocol.md §2.5-2.6).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_RESERVATIONS_H
#define ZS_RESERVATIONS_H

#include "lib/stringinfo.h"

#include "server/connection.h"

/*
 * The body of a reservation's status: {"tag":<tag>,"backupURL":...,
 * "replicaVersion":...,"minWatermark":...,"replicaSize":n}. backupURL
 * points at this server (host as the client addressed it); minWatermark is
 * the oldest watermark of the change log. The backup watermark now, where
 * a restored copy resumes, is returned in *watermark: the reservation pins
 * the change log there. Runs a short transaction of its own. False with
 * *error if there is no backup replica to serve.
 */
extern bool zs_reservation_take(const char *host, const char *task_id, const char *tag,
								StringInfo body, char *watermark, char **error);

/* A legacy /snapshot connection for task: one status message, then held open. */
extern void zs_reservation_open(ZsConn *c, const char *task);

/* A subscription or a newer reservation for task: other connections' reservations for it end. */
extern void zs_reservation_release(const char *task, ZsConn *except);

/*
 * GET /replica/<task> (authorized): start a consistent copy of the backup
 * replica if task holds a reservation (404 otherwise).
 */
extern void zs_reservation_serve_snapshot(ZsConn *c, const char *task);

/* The next step of every snapshot being made; true while any is unfinished. */
extern bool zs_reservation_advance_copies(void);

#endif							/* ZS_RESERVATIONS_H */
