/*-------------------------------------------------------------------------
 * backup_file.h
 *	  The backup replica's file: where it is, and how the decoder replaces
 *	  it while the replicator has it open (see backup_file.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_BACKUP_FILE_H
#define ZS_BACKUP_FILE_H

/* zero_stream.replica_file resolved against the data directory; NULL if disabled */
extern char *zs_replica_file_path(void);

/*
 * Decoder side, before it replaces the file: ask the replicator to close
 * it, and wait until it has (or is not running).
 */
extern void zs_backup_file_release(void);

/* Replicator side: the generation of the file (bumped by each release). */
extern uint32 zs_backup_file_generation(void);

/* Replicator side: the file of that generation is closed. */
extern void zs_backup_file_released(uint32 generation);

#endif							/* ZS_BACKUP_FILE_H */
