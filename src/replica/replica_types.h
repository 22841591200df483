/*-------------------------------------------------------------------------
 * replica_types.h
 *	  The replica library's handle, open flags and column description:
 *	  what its API (replica_apply.h) and its files (replica_internal.h)
 *	  both name, so that neither header includes the other.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_TYPES_H
#define ZS_REPLICA_TYPES_H

typedef struct ZsReplica ZsReplica;

#define ZS_MAX_KEY_COLUMNS 32	/* INDEX_MAX_KEYS */

/* open flags */
#define ZS_REPLICA_CREATE		0x01	/* create the file if missing */
#define ZS_REPLICA_LOG_CHANGES	0x02	/* serving replica: keep changeLog2 */

typedef struct ZsReplicaColumn
{
	const char *name;
	const char *upstream_type;	/* pg type name, "[]" per array dimension */
	bool		not_null;
	bool		is_enum;
	bool		is_array;
	int			char_max_length;	/* -1 if none */
	const char *backfill;		/* BackfillID JSON while being backfilled, or NULL */
} ZsReplicaColumn;

#endif							/* ZS_REPLICA_TYPES_H */
