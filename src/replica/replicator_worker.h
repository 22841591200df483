/*-------------------------------------------------------------------------
 * replicator_worker.h
 *	  The replicator worker, which keeps the backup replica current.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICATOR_WORKER_H
#define ZS_REPLICATOR_WORKER_H

/*
 * Called by the decoder before it replaces the replica file: asks the
 * replicator to close the file and waits until it has.
 */
extern void zs_backup_replica_release(void);

#endif							/* ZS_REPLICATOR_WORKER_H */
