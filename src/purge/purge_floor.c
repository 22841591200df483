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
 * If nothing vouches for any watermark, nothing is purged. The holder text
 * is what zero_stream.status().purge_held_by and zero_stream.purge() show.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "purge/purge_floor.h"
#include "shmem.h"

/* a timestamp as text, in buf (timestamptz_to_str's is static) */
static const char *
timestamp_text(TimestampTz t, char *buf)
{
	strlcpy(buf, timestamptz_to_str(t), MAXDATELEN + 1);
	return buf;
}

static void
lower_floor(char *floor, char *holder, int holder_len, const char *watermark, const char *who)
{
	if (watermark[0] == '\0')
		return;
	if (floor[0] == '\0' || strcmp(watermark, floor) < 0)
	{
		strlcpy(floor, watermark, ZS_WATERMARK_MAXLEN);
		strlcpy(holder, who, holder_len);
	}
}

/*
 * With the lock held: if the backup replica will vouch for the gate soon
 * (it opens, is replaced or catches up), why it does not yet, for the
 * holder text; else NULL.
 */
static const char *
backup_pending(const char *gate, char *buf, int buf_len)
{
	switch (zs_shared->backup_state)
	{
		case ZS_BACKUP_NOT_STARTED:
			return "the replicator has not opened it yet";
		case ZS_BACKUP_WAITING_FOR_DECODER:
			return "the replicator waits for the decoder";
		case ZS_BACKUP_REPLACED:
			return "a new initial copy replaces it";
		case ZS_BACKUP_RESTORING:
			return "it is copied from the primary's";
		case ZS_BACKUP_FOLLOWING:
			if (zs_shared->backup_watermark[0] != '\0' &&
				strcmp(zs_shared->backup_watermark, gate) >= 0)
				return NULL;	/* it vouches */
			snprintf(buf, buf_len, "at %s",
					 zs_shared->backup_watermark[0] ? zs_shared->backup_watermark : "nothing yet");
			return buf;
		case ZS_BACKUP_MISSING:
		case ZS_BACKUP_STALE:
		case ZS_BACKUP_FAILED:
			break;
	}
	return NULL;
}

/* With the lock held: why a backup replica that cannot be served from holds nothing. */
static const char *
backup_unusable(void)
{
	switch (zs_shared->backup_state)
	{
		case ZS_BACKUP_MISSING:
			return "the backup replica is missing";
		case ZS_BACKUP_STALE:
			return "the backup replica is of another lineage";
		case ZS_BACKUP_FAILED:
			return "the replicator is failing";
		default:
			return NULL;
	}
}

ZsPurgeFloor
zs_purge_floor(const char *gate, int retention_ms, char *floor, char *holder, int holder_len)
{
	TimestampTz now = GetCurrentTimestamp();
	char		since[MAXDATELEN + 1];
	char		until[MAXDATELEN + 1];
	bool		backup_wanted = zs_replica_file != NULL && zs_replica_file[0] != '\0';
	const char *unusable = NULL;

	floor[0] = '\0';
	holder[0] = '\0';
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	if (backup_wanted)
	{
		char		at[ZS_WATERMARK_MAXLEN + 8];
		const char *pending = backup_pending(gate, at, sizeof(at));

		if (pending != NULL)
		{
			LWLockRelease(zs_shared->lock);
			snprintf(holder, holder_len, "waiting for the backup replica to reach %s (%s)",
					 gate, pending);
			return ZS_PURGE_FLOOR_WAITING;
		}
		unusable = backup_unusable();
		if (unusable == NULL)
			lower_floor(floor, holder, holder_len, zs_shared->backup_watermark, "backup replica");
	}
	for (int i = 0; i < zs_shared->max_subscribers; i++)
	{
		ZsSubscriberSlot *s = &zs_shared->subscribers[i];
		char		who[2 * ZS_NAME_LEN + 32];

		if (!zs_slot_holds_floor(s))
			continue;
		snprintf(who, sizeof(who), "%s %s (%s)",
				 s->mode == ZS_SUB_MODE_SNAPSHOT ? "reservation" : "subscriber", s->id, s->address);
		lower_floor(floor, holder, holder_len, s->watermark_acked, who);
	}
	for (int i = 0; i < zs_shared->max_departed; i++)
	{
		ZsDepartedSubscriber *d = &zs_departed_entries()[i];
		char		who[ZS_NAME_LEN + 160];

		if (!zs_departed_is_retained(d, zs_shared->replica_version, now, retention_ms))
			continue;
		snprintf(who, sizeof(who), "%s %s, disconnected at %s%s, retained until %s",
				 d->mode == ZS_SUB_MODE_SNAPSHOT ? "reservation" : "subscriber", d->id,
				 timestamp_text(d->departed_at, since),
				 d->restored ? " (before the restart)" : "",
				 timestamp_text(TimestampTzPlusMilliseconds(d->departed_at, retention_ms), until));
		lower_floor(floor, holder, holder_len, d->watermark, who);
	}
	LWLockRelease(zs_shared->lock);
	if (floor[0] != '\0')
		return ZS_PURGE_FLOOR_HELD;
	if (unusable != NULL)
		snprintf(holder, holder_len, "no subscriber to vouch for a watermark, and %s", unusable);
	else
		strlcpy(holder, "no backup replica and no subscriber to vouch for a watermark", holder_len);
	return ZS_PURGE_FLOOR_NONE;
}
