/*-------------------------------------------------------------------------
 * subscriber_slots.c
 *	  Publishing the server's connections to shared memory, where
 *	  zero_stream.subscribers() reads them.
 *
 * Once per loop iteration every open connection is copied into one
 * ZsSubscriberSlot, in accept order, and the remaining slots are marked
 * free, all under the shared lock. There are max_subscribers slots: the
 * connections holding a subscriber slot come first, then those still in
 * their HTTP request while slots are left. A subscription shows its own progress;
 * a connection holding a snapshot reservation shows the task and the
 * watermark it pins (mode snapshot, state reserved); any other is
 * connecting, sending a snapshot, or closing.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/lwlock.h"

#include "server/connection.h"
#include "server/subscriber_slots.h"
#include "shmem.h"

static void
describe_subscription(ZsConn *c, const char *head, ZsSubscriberSlot *slot)
{
	ZsSubscriberInfo info;

	zs_subscriber_describe(c->sub, head, &info);
	strlcpy(slot->id, info.id, sizeof(slot->id));
	strlcpy(slot->replica_version, info.replica_version, sizeof(slot->replica_version));
	slot->mode = info.backup_mode ? ZS_SUB_MODE_BACKUP : ZS_SUB_MODE_SERVING;
	slot->protocol = info.protocol;
	strlcpy(slot->watermark_sent, info.watermark_sent, sizeof(slot->watermark_sent));
	strlcpy(slot->watermark_acked, info.watermark_acked, sizeof(slot->watermark_acked));
	slot->messages_sent = info.messages_sent;
	slot->messages_acked = info.messages_acked;
	slot->state = c->close_after_flush ? ZS_SUB_CLOSING : info.state;
	/* back, at a position of its own: what it left behind holds nothing */
	if (slot->id[0] != '\0' && slot->state != ZS_SUB_FAILED)
		zs_forget_departed_locked(slot->id, slot->mode);
}

/* a reservation pins the change log at its watermark, of the current lineage */
static void
describe_reservation(ZsConn *c, ZsSubscriberSlot *slot)
{
	strlcpy(slot->id, c->up.reserved_task, sizeof(slot->id));
	strlcpy(slot->replica_version, zs_shared->replica_version, sizeof(slot->replica_version));
	slot->mode = ZS_SUB_MODE_SNAPSHOT;
	slot->protocol = c->protocol;
	slot->state = ZS_SUB_RESERVED;
	strlcpy(slot->watermark_sent, c->up.reserved_watermark, sizeof(slot->watermark_sent));
	strlcpy(slot->watermark_acked, c->up.reserved_watermark, sizeof(slot->watermark_acked));
}

void
zs_publish_subscriber_slots(ZsServer *server, const char *head)
{
	int			n = 0;
	int			nconns = server->nconns;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < 2 * nconns && n < zs_shared->max_subscribers; i++)
	{
		/* admitted connections in the first pass, the others in the second */
		ZsConn	   *c = server->conns[i % nconns];
		ZsSubscriberSlot *slot = &zs_shared->subscribers[n];

		if (c->closed || c->admitted != (i < nconns))
			continue;
		memset(slot, 0, sizeof(*slot));
		slot->in_use = true;
		strlcpy(slot->address, c->address, sizeof(slot->address));
		slot->backlog_bytes = zs_conn_pending(c);
		slot->connected_since = c->connected_since;
		if (c->sub != NULL)
			describe_subscription(c, head, slot);
		else if (c->up.reserved_task != NULL)
			describe_reservation(c, slot);
		else
			slot->state = c->file_fd >= 0 || c->copy != NULL ? ZS_SUB_SENDING_SNAPSHOT :
				c->state == ZS_CONN_HTTP ? ZS_SUB_CONNECTING : ZS_SUB_CLOSING;
		n++;
	}
	for (int i = n; i < zs_shared->max_subscribers; i++)
		zs_shared->subscribers[i].in_use = false;
	LWLockRelease(zs_shared->lock);
}
