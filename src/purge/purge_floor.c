/*-------------------------------------------------------------------------
 * purge_floor.c
 *	  The purge floor: the lowest watermark anything may still need, read
 *	  from what the workers publish in shared memory (docs/zero-protocol.md
 *	  §6.5; zero-cache's change-streamer cleanup).
 *
 * What holds the floor:
 *   - the backup replica, restored from by every new subscriber: its
 *     watermark counts once it covers the gate, the head of when the
 *     decoder started (a replica still catching up vouches for nothing
 *     yet). While it opens, is replaced by a new initial copy or catches
 *     up, the purge waits for it (WAITING); a backup that cannot be served
 *     from (missing, of another lineage, failing) does not hold the log
 *     forever;
 *   - every connected subscriber's acked watermark (where it started,
 *     until it acks) and every snapshot reservation's, as
 *     zs_slot_holds_floor() counts them;
 *   - every subscriber that left less than zero_stream.subscriber_retention
 *     ago, also across a restart (the departed entries).
 * If nothing vouches for any watermark, nothing is purged. The holder,
 * in words (zs_purge_holder_text, shmem.c), is what
 * zero_stream.status().purge_held_by, zero_stream.purge() and the purge's
 * LOG line show.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "guc.h"
#include "purge/purge_floor.h"
#include "shmem.h"

/* watermark vouched for by who: the floor if it is lower */
static void
lower_floor(char *floor, ZsPurgeHolder *holder, const char *watermark, const ZsPurgeHolder *who)
{
	if (watermark[0] == '\0')
		return;
	if (floor[0] == '\0' || strcmp(watermark, floor) < 0)
	{
		strlcpy(floor, watermark, ZS_WATERMARK_MAXLEN);
		*holder = *who;
	}
}

/*
 * With the lock held: will the backup replica vouch for the gate soon (it
 * opens, is replaced or catches up)?
 */
static bool
backup_pending(const char *gate)
{
	switch (zs_shared->backup_state)
	{
		case ZS_BACKUP_NOT_STARTED:
		case ZS_BACKUP_WAITING_FOR_DECODER:
		case ZS_BACKUP_REPLACED:
		case ZS_BACKUP_RESTORING:
			return true;
		case ZS_BACKUP_FOLLOWING:
			return zs_shared->backup_watermark[0] == '\0' ||
				strcmp(zs_shared->backup_watermark, gate) < 0;
		case ZS_BACKUP_MISSING:
		case ZS_BACKUP_STALE:
		case ZS_BACKUP_FAILED:
			break;
	}
	return false;
}

/* Can a backup replica in this state not be served from (so it holds nothing)? */
static bool
backup_unusable(ZsBackupState state)
{
	return state == ZS_BACKUP_MISSING || state == ZS_BACKUP_STALE || state == ZS_BACKUP_FAILED;
}

ZsPurgeFloor
zs_purge_floor(const char *gate, int retention_ms, char *floor, ZsPurgeHolder *holder)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		backup_wanted = zs_replica_file != NULL && zs_replica_file[0] != '\0';
	ZsBackupState backup_state = ZS_BACKUP_NOT_STARTED;
	ZsPurgeHolder who;

	floor[0] = '\0';
	memset(holder, 0, sizeof(*holder));
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	if (backup_wanted)
	{
		backup_state = zs_shared->backup_state;
		if (backup_pending(gate))
		{
			holder->kind = ZS_HOLDER_WAITING_FOR_BACKUP;
			holder->backup_state = backup_state;
			strlcpy(holder->watermark, gate, sizeof(holder->watermark));
			strlcpy(holder->backup_watermark, zs_shared->backup_watermark,
					sizeof(holder->backup_watermark));
			LWLockRelease(zs_shared->lock);
			return ZS_PURGE_FLOOR_WAITING;
		}
		if (!backup_unusable(backup_state))
		{
			memset(&who, 0, sizeof(who));
			who.kind = ZS_HOLDER_BACKUP;
			lower_floor(floor, holder, zs_shared->backup_watermark, &who);
		}
	}
	for (int i = 0; i < zs_shared->max_subscribers; i++)
	{
		ZsSubscriberSlot *s = &zs_shared->subscribers[i];

		if (!zs_slot_holds_floor(s))
			continue;
		memset(&who, 0, sizeof(who));
		who.kind = ZS_HOLDER_SUBSCRIBER;
		who.mode = s->mode;
		strlcpy(who.id, s->id, sizeof(who.id));
		strlcpy(who.address, s->address, sizeof(who.address));
		lower_floor(floor, holder, s->watermark_acked, &who);
	}
	for (int i = 0; i < zs_shared->max_departed; i++)
	{
		ZsDepartedSubscriber *d = &zs_departed_entries()[i];

		if (!zs_departed_is_retained(d, zs_shared->replica_version, now, retention_ms))
			continue;
		memset(&who, 0, sizeof(who));
		who.kind = ZS_HOLDER_DEPARTED;
		who.mode = d->mode;
		strlcpy(who.id, d->id, sizeof(who.id));
		who.departed_at = d->departed_at;
		who.restored = d->restored;
		who.retention_ms = retention_ms;
		lower_floor(floor, holder, d->watermark, &who);
	}
	LWLockRelease(zs_shared->lock);
	if (floor[0] != '\0')
		return ZS_PURGE_FLOOR_HELD;
	holder->kind = ZS_HOLDER_NOTHING;
	holder->backup_state = backup_wanted ? backup_state : ZS_BACKUP_NOT_STARTED;
	return ZS_PURGE_FLOOR_NONE;
}
