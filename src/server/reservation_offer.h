/*-------------------------------------------------------------------------
 * reservation_offer.h
 *	  What a snapshot reservation answers: the backup replica to restore
 *	  from, and where this server serves it (docs/zero-protocol.md §2.5).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_RESERVATION_OFFER_H
#define ZS_RESERVATION_OFFER_H

#include "lib/stringinfo.h"

/* where GET /replica/<taskID> serves snapshots (the backupURL's path) */
#define ZS_REPLICA_PATH_PREFIX "/replica/"

/*
 * The body of a reservation's status: {"tag":<tag>,"backupURL":...,
 * "replicaVersion":...,"minWatermark":...,"replicaSize":n}. backupURL
 * points at this server (host as the client addressed it); minWatermark is
 * the oldest watermark of the change log. The backup watermark now, where
 * a restored copy resumes, is returned in *watermark: the reservation pins
 * the change log there. Runs a short transaction of its own. False with
 * *error if there is no backup replica to serve.
 */
extern bool zs_reservation_offer_make(const char *host, const char *task_id, const char *tag,
									  StringInfo body, char *watermark, char **error);

#endif							/* ZS_RESERVATION_OFFER_H */
