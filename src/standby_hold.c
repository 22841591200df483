/*-------------------------------------------------------------------------
 * standby_hold.c
 *	  The name under which a primary holds a standby's backup replica in its
 *	  purge floor, and a promoted server's own former hold.
 *
 * A standby's replicator reports where its backup replica is to the
 * primary (replicator/standby_restore.c), which keeps it as the departed
 * subscriber "standby <name>" (server/standby_snapshot.c) and saves it in
 * zero_stream.subscriber_positions with the others. That table is WAL, so
 * the standby holds a copy too, its own hold among the rows: after a
 * promotion the decoder reads the table back (decoder/subscriber_positions.c)
 * and must not keep itself as a standby that could come back, or it holds
 * its own purge floor for subscriber_retention after every failover.
 *
 * Names are not unique over time: a promoted server's own standby may
 * well use the slot name it used itself. So an entry is this server's own
 * only if this server was a standby since the postmaster started (the
 * read-back after a promotion); the name is the one it last reported
 * under, noted in shared memory (an operator may change primary_slot_name
 * at a promotion, as Patroni does). A promoted server saves its positions
 * within a second of reading them back, without its own hold.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlogrecovery.h"
#include "postmaster/postmaster.h"
#include "utils/guc.h"

#include "shmem.h"
#include "standby_hold.h"

const char *
zs_standby_name(void)
{
	char		host[256];

	if (PrimarySlotName != NULL && PrimarySlotName[0] != '\0')
		return PrimarySlotName;
	if (cluster_name != NULL && cluster_name[0] != '\0')
		return cluster_name;
	if (gethostname(host, sizeof(host)) != 0)
		strlcpy(host, "localhost", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	return psprintf("%.40s:%d", host, PostPortNumber);
}

void
zs_standby_hold_note(const char *name)
{
	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	strlcpy(zs_shared->standby_held_as, name, sizeof(zs_shared->standby_held_as));
	LWLockRelease(zs_shared->lock);
}

const char *
zs_standby_hold_name(const char *id)
{
	const size_t prefix = strlen(ZS_STANDBY_HOLD_PREFIX);

	return strncmp(id, ZS_STANDBY_HOLD_PREFIX, prefix) == 0 ? id + prefix : NULL;
}

bool
zs_standby_hold_is_own(const char *id)
{
	const char *name = zs_standby_hold_name(id);
	bool		own;

	if (name == NULL)
		return false;
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	own = zs_shared->standby_held_as[0] != '\0' &&
		strcmp(name, zs_shared->standby_held_as) == 0;
	LWLockRelease(zs_shared->lock);
	return own;
}
