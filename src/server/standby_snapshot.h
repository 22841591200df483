/*-------------------------------------------------------------------------
 * standby_snapshot.h
 *	  The primary's side of a standby's backup replica: SQL functions a
 *	  standby's replicator calls over primary_conninfo (see
 *	  standby_snapshot.c). Their names are the SQL functions'.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STANDBY_SNAPSHOT_H
#define ZS_STANDBY_SNAPSHOT_H

#endif							/* ZS_STANDBY_SNAPSHOT_H */
