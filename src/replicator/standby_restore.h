/*-------------------------------------------------------------------------
 * standby_restore.h
 *	  A standby's backup replica and its primary (see standby_restore.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_STANDBY_RESTORE_H
#define ZS_STANDBY_RESTORE_H

/*
 * Is the replica file at path one this standby restored from its primary,
 * and not, say, a base backup's copy of the primary's file (which may be
 * torn)? Only such a file is followed on a standby. zs_standby_untrust
 * forgets it (the marker goes; the file is the caller's).
 */
extern bool zs_standby_restore_trusted(const char *path);
extern void zs_standby_untrust(const char *path);

/*
 * Replace the file at path with a consistent copy of the primary's backup
 * replica of lineage, and say which replicaVersion and stateVersion it has.
 * The primary holds its purge floor at that stateVersion from then on.
 * False with *error when the primary cannot be reached, refuses (its
 * backup replica is not following that lineage) or the copy breaks off;
 * a local file that cannot be written is an ERROR.
 */
extern bool zs_standby_restore(const char *path, const char *lineage, char *replica_version,
							   char *watermark, char **error);

/* Close the connection to the primary (after a promotion). */
extern void zs_standby_disconnect(void);

/*
 * Tell the primary where this standby's backup replica is, at most once a
 * second (the primary keeps it for zero_stream.subscriber_retention). A
 * failure is logged at most once a minute, never raised: the replica goes
 * on following meanwhile.
 */
extern void zs_standby_report_position(const char *replica_version, const char *watermark);

#endif							/* ZS_STANDBY_RESTORE_H */
