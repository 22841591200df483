/*-------------------------------------------------------------------------
 * worker_replicator.h
 *	  The replicator worker, which keeps the backup replica current.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_WORKER_REPLICATOR_H
#define ZS_WORKER_REPLICATOR_H

/*
 * Called by the decoder before it replaces the replica file: asks the
 * replicator to close the file and waits until it has.
 */
extern void zs_backup_replica_release(void);

#endif							/* ZS_WORKER_REPLICATOR_H */
