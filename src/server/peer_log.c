/*-------------------------------------------------------------------------
 * peer_log.c
 *	  Rate-limited log lines about what peers of the subscriber server do
 *	  wrong.
 *
 * A client that is refused, fails authentication, times out in its
 * handshake, fails its TLS handshake or is closed for a policy violation
 * is logged with its address, as PostgreSQL logs failed logins; but a
 * client doing it in a loop must not flood the log. So each kind of event is logged at most
 * once per peer host (the address without its port: every connection has
 * a new port) every ZS_PEER_LOG_INTERVAL_S seconds. Events in between are
 * counted: the next line about that kind and host carries the count in
 * its detail, and a sweep once a second logs the count of an interval
 * that ended without a next line, so every event is accounted for.
 *
 * The table has a fixed size. A host that finds it full of hosts logged
 * within the interval is counted in one entry per kind, "other addresses",
 * which only the sweep logs, so that many addresses cannot raise the
 * number of lines either. Every event is also counted in shared memory,
 * by kind, for the metrics.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/timestamp.h"

#include "server/peer_log.h"
#include "shmem.h"

#define PEER_LOG_ENTRIES	256
#define HOST_LEN			64
#define OTHER_HOSTS			"other addresses"

typedef struct PeerLogEntry
{
	bool		used;
	bool		shared;			/* the "other addresses" entry of its kind */
	ZsPeerEvent event;
	char		host[HOST_LEN];
	TimestampTz logged_at;		/* the last line about this event and host */
	int64		suppressed;		/* events since then, not logged */
} PeerLogEntry;

static PeerLogEntry entries[PEER_LOG_ENTRIES];
static PeerLogEntry others[ZS_PEER_EVENT_KINDS];
static TimestampTz last_sweep = 0;

/* what the summary line calls one and several events of a kind, and its SQLSTATE */
static const char *const event_names[ZS_PEER_EVENT_KINDS][2] = {
	{"refused connection", "refused connections"},
	{"authentication failure", "authentication failures"},
	{"handshake timeout", "handshake timeouts"},
	{"policy violation", "policy violations"},
	{"failed TLS handshake", "failed TLS handshakes"},
};

static const int event_codes[ZS_PEER_EVENT_KINDS] = {
	ERRCODE_TOO_MANY_CONNECTIONS,
	ERRCODE_INVALID_PASSWORD,
	ERRCODE_CONNECTION_FAILURE,
	ERRCODE_PROTOCOL_VIOLATION,
	ERRCODE_PROTOCOL_VIOLATION,
};

static bool
interval_passed(const PeerLogEntry *e, TimestampTz now)
{
	return TimestampDifferenceExceeds(e->logged_at, now, ZS_PEER_LOG_INTERVAL_S * 1000);
}

/* One line for the events an entry counted but did not log. */
static void
log_suppressed(PeerLogEntry *e, TimestampTz now)
{
	ereport(LOG,
			(errcode(event_codes[e->event]),
			 errmsg_plural(INT64_FORMAT " more %s from %s was not logged",
						   INT64_FORMAT " more %s from %s were not logged",
						   (unsigned long) e->suppressed,
						   e->suppressed, event_names[e->event][e->suppressed == 1 ? 0 : 1],
						   e->host),
			 errdetail("At most one message per kind of event and address is logged every %d s.",
					   ZS_PEER_LOG_INTERVAL_S)));
	e->suppressed = 0;
	e->logged_at = now;
}

/* The entry for event and host: found, a free or stale one reused, or the shared one. */
static PeerLogEntry *
entry_for(ZsPeerEvent event, const char *address, TimestampTz now)
{
	PeerLogEntry *reuse = NULL;
	char		host[HOST_LEN];

	/* as stored: a longer address is known by its beginning */
	strlcpy(host, address, sizeof(host));

	for (int i = 0; i < PEER_LOG_ENTRIES; i++)
	{
		PeerLogEntry *e = &entries[i];

		if (!e->used)
		{
			if (reuse == NULL || reuse->used)
				reuse = e;
			continue;
		}
		if (e->event == event && strcmp(e->host, host) == 0)
			return e;
		if (reuse == NULL && interval_passed(e, now))
			reuse = e;
	}
	if (reuse == NULL)
	{
		PeerLogEntry *e = &others[event];

		if (!e->used)
		{
			e->used = true;
			e->shared = true;
			e->event = event;
			strlcpy(e->host, OTHER_HOSTS, sizeof(e->host));
		}
		return e;
	}
	if (reuse->used && reuse->suppressed > 0)
		log_suppressed(reuse, now);
	reuse->used = true;
	reuse->event = event;
	strlcpy(reuse->host, host, sizeof(reuse->host));
	reuse->logged_at = 0;
	reuse->suppressed = 0;
	return reuse;
}

bool
zs_peer_log_allowed(ZsPeerEvent event, const char *host, int64 *suppressed)
{
	TimestampTz now = GetCurrentTimestamp();
	PeerLogEntry *e = entry_for(event, host, now);

	StaticAssertStmt(ZS_PEER_EVENT_KINDS == ZS_SERVER_REFUSAL_KINDS,
					 "every kind of peer event has its counter in shared memory");
	/* every event is counted, logged or not (the metrics' refusals) */
	zs_count_server_refusal(event);

	/* the shared entry is only ever summed up by the sweep */
	if (e->shared || (e->logged_at != 0 && !interval_passed(e, now)))
	{
		e->suppressed++;
		return false;
	}
	*suppressed = e->suppressed;
	e->suppressed = 0;
	e->logged_at = now;
	return true;
}

int
zs_peer_log_detail(int64 suppressed)
{
	if (suppressed <= 0)
		return 0;
	return errdetail_plural(INT64_FORMAT " more such event from this address was not logged before this one.",
							INT64_FORMAT " more such events from this address were not logged before this one.",
							(unsigned long) suppressed, suppressed);
}

void
zs_peer_log_sweep(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!TimestampDifferenceExceeds(last_sweep, now, 1000))
		return;
	last_sweep = now;
	for (int i = 0; i < PEER_LOG_ENTRIES; i++)
	{
		if (entries[i].used && entries[i].suppressed > 0 && interval_passed(&entries[i], now))
			log_suppressed(&entries[i], now);
	}
	for (int i = 0; i < ZS_PEER_EVENT_KINDS; i++)
	{
		if (others[i].used && others[i].suppressed > 0 && interval_passed(&others[i], now))
			log_suppressed(&others[i], now);
	}
}
