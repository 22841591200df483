/*-------------------------------------------------------------------------
 * slot_health.h
 *	  Whether the decoder's slot is about to be lost (see slot_health.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SLOT_HEALTH_H
#define ZS_SLOT_HEALTH_H

#include "access/xlogdefs.h"

/*
 * Does a slot at restart_lsn, confirmed up to confirmed_lsn, risk losing
 * its WAL? True, with a sentence saying why in buf, when its wal_status is
 * unreserved, or when less WAL may be written before it is lost
 * (pg_replication_slots.safe_wal_size) than the decoder is behind, or than
 * a fifth of max_slot_wal_keep_size.
 */
extern bool zs_slot_at_risk(XLogRecPtr restart_lsn, XLogRecPtr confirmed_lsn,
							char *buf, size_t len);

#endif							/* ZS_SLOT_HEALTH_H */
