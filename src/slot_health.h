/*-------------------------------------------------------------------------
 * slot_health.h
 *	  Whether the decoder's slot is about to be lost (see slot_health.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SLOT_HEALTH_H
#define ZS_SLOT_HEALTH_H

#include "access/xlogdefs.h"

/*
 * The slot's restart_lsn and confirmed_flush, InvalidXLogRecPtr for both if
 * name is empty or no such slot exists.
 */
extern void zs_slot_positions(const char *name, XLogRecPtr *restart_lsn,
							  XLogRecPtr *confirmed_lsn);

/*
 * Does a slot at restart_lsn, confirmed up to confirmed_lsn, risk losing
 * its WAL? True, with a sentence saying why in buf, when its wal_status is
 * unreserved, or when less WAL may be written before it is lost
 * (pg_replication_slots.safe_wal_size) than the decoder is behind, or than
 * a fifth of max_slot_wal_keep_size.
 */
extern bool zs_slot_at_risk(XLogRecPtr restart_lsn, XLogRecPtr confirmed_lsn,
							char *buf, size_t len);

/*
 * The same for the slot the decoder last published (shmem's slot_name):
 * a WARNING at most once a minute, a LOG once it is not at risk any more.
 * Called by the server's loop, which never waits for the decoder, so that
 * a decoder held back is reported too; by the decoder at its slot saves
 * when there is no server (zero_stream.port = 0).
 */
extern void zs_warn_if_slot_at_risk(void);

#endif							/* ZS_SLOT_HEALTH_H */
