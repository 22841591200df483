/*-------------------------------------------------------------------------
 * subscriber_positions.c
 *	  The positions that hold the purge floor, kept across restarts and
 *	  crashes: the table zero_stream.subscriber_positions.
 *
 * The server publishes its connections (server/subscriber_slots.c) and the
 * subscribers that left (shmem.c's departed entries) in shared memory,
 * which a restart or a crash empties; the decoder, which purges, keeps a
 * copy of them in a table:
 *   - saved at most once per SAVE_INTERVAL_MS, and only when something
 *     changed (a subscriber came, acked or left, a reservation was taken, a
 *     departed one expired), by one transaction that replaces the table's
 *     rows. It is written under the decoder's replication origin, like the
 *     change log, so a publication FOR ALL TABLES does not stream it back;
 *   - read back once per shared-memory lifetime (the postmaster's start,
 *     or its restart after a crash), before the decoder's first purge: a
 *     subscriber that had left is retained until subscriber_retention after
 *     it left, as without the restart; one that was still connected when
 *     the server stopped, or a reservation's connection, is retained for
 *     subscriber_retention from the restart, since it could not come back
 *     while the server was down.
 * A saved position is never ahead of the one in shared memory (acks only
 * move forward), so the floor read back is never above what a subscriber
 * has; while the decoder loop runs it is at most SAVE_INTERVAL_MS older
 * (a decoder held back, by a lock or a long initial copy, saves nothing
 * meanwhile, and purges nothing either). A subscriber that first connected
 * after the last save before a crash is missing from the table; it
 * restores from the backup replica if the first purge passed its position.
 * Positions of another lineage than the change log's are not read back.
 *
 * Ids are the subscribers' own bytes, cut at ZS_NAME_LEN: the table holds
 * them escaped one-to-one into valid text (a backslash doubled, a byte that
 * does not begin a valid character as \xNN), and they are unescaped when
 * read back.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "changelog/changelog.h"
#include "changelog/changelog_writer.h"
#include "decoder/subscriber_positions.h"
#include "guc.h"
#include "shmem.h"
#include "spi_xact.h"
#include "standby_hold.h"

#define SAVE_INTERVAL_MS	1000
#define POSITIONS_TABLE		"subscriber_positions"

/* one row of the table */
typedef struct Position
{
	char		id[ZS_NAME_LEN];
	ZsSubscriberMode mode;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	bool		connected;		/* else departed at departed_at */
	char		watermark[ZS_WATERMARK_MAXLEN];
	TimestampTz departed_at;
} Position;

static Position *saved = NULL;	/* what the table holds, as last written */
static int	nsaved = -1;		/* -1: not known, write at the next save */
static Position *current = NULL;
static int	capacity = 0;
static TimestampTz last_save = 0;

static bool
mode_from_name(const char *name, ZsSubscriberMode *mode)
{
	for (ZsSubscriberMode m = ZS_SUB_MODE_SERVING; m <= ZS_SUB_MODE_SNAPSHOT; m++)
		if (strcmp(name, zs_subscriber_mode_name(m)) == 0)
		{
			*mode = m;
			return true;
		}
	return false;
}

static int
position_cmp(const void *a, const void *b)
{
	const Position *pa = a;
	const Position *pb = b;

	if (pa->mode != pb->mode)
		return pa->mode < pb->mode ? -1 : 1;
	return strcmp(pa->id, pb->id);
}

/* The table's oid, or InvalidOid (the extension is being dropped). */
static Oid
positions_table(void)
{
	Oid			schema = get_namespace_oid("zero_stream", true);

	return OidIsValid(schema) ? get_relname_relid(POSITIONS_TABLE, schema) : InvalidOid;
}

/* An id as a literal of valid text: escaped one-to-one (see the header). */
static char *
id_literal(const char *id)
{
	StringInfoData buf;
	int			encoding = GetDatabaseEncoding();
	int			len = strlen(id);

	initStringInfo(&buf);
	while (len > 0)
	{
		int			l = pg_encoding_verifymbchar(encoding, id, len);

		if (l <= 0)
		{
			appendStringInfo(&buf, "\\x%02x", (unsigned char) *id);
			l = 1;
		}
		else if (*id == '\\')
			appendStringInfoString(&buf, "\\\\");
		else
			appendBinaryStringInfo(&buf, id, l);
		id += l;
		len -= l;
	}
	return quote_literal_cstr(buf.data);
}

/* id_literal's text back to the id's bytes, in id (ZS_NAME_LEN) */
static void
unescape_id(const char *text, char *id)
{
	int			n = 0;

	while (*text != '\0' && n < ZS_NAME_LEN - 1)
	{
		if (text[0] == '\\' && text[1] == '\\')
		{
			id[n++] = '\\';
			text += 2;
		}
		else if (text[0] == '\\' && text[1] == 'x' && isxdigit((unsigned char) text[2]) &&
				 isxdigit((unsigned char) text[3]))
		{
			char		hex[3] = {text[2], text[3], '\0'};

			id[n++] = (char) strtol(hex, NULL, 16);
			text += 4;
		}
		else
			id[n++] = *text++;
	}
	id[n] = '\0';
}

/*
 * What holds the floor now, in shared memory: connected subscribers and
 * reservations, and departed ones still retained, one position per (mode,
 * id), sorted; the lowest watermark where an id appears more than once.
 */
static int
collect(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = 0;
	int			merged = 0;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	for (int i = 0; i < zs_shared->max_subscribers && n < capacity; i++)
	{
		ZsSubscriberSlot *s = &zs_shared->subscribers[i];
		Position   *p = &current[n];

		if (!zs_slot_holds_floor(s) || s->watermark_acked[0] == '\0' || s->id[0] == '\0')
			continue;
		memset(p, 0, sizeof(*p));
		strlcpy(p->id, s->id, sizeof(p->id));
		p->mode = s->mode;
		strlcpy(p->replica_version, s->replica_version, sizeof(p->replica_version));
		p->connected = true;
		strlcpy(p->watermark, s->watermark_acked, sizeof(p->watermark));
		n++;
	}
	for (int i = 0; i < zs_shared->max_departed && n < capacity; i++)
	{
		ZsDepartedSubscriber *d = &zs_departed_entries()[i];
		Position   *p = &current[n];

		if (!zs_departed_is_retained(d, zs_shared->replica_version, now, zs_subscriber_retention_ms))
			continue;
		memset(p, 0, sizeof(*p));
		strlcpy(p->id, d->id, sizeof(p->id));
		p->mode = d->mode;
		strlcpy(p->replica_version, d->replica_version, sizeof(p->replica_version));
		strlcpy(p->watermark, d->watermark, sizeof(p->watermark));
		p->departed_at = d->departed_at;
		n++;
	}
	LWLockRelease(zs_shared->lock);

	qsort(current, n, sizeof(Position), position_cmp);
	for (int i = 0; i < n; i++)
	{
		Position   *m;

		if (merged == 0 || position_cmp(&current[merged - 1], &current[i]) != 0)
		{
			if (merged != i)
				memcpy(&current[merged], &current[i], sizeof(Position));
			merged++;
			continue;
		}
		/*
		 * Connected again after it left, or two connections of one id: the
		 * newer lineage's position (replicaVersions grow), the lowest of one.
		 */
		m = &current[merged - 1];
		if (strcmp(current[i].replica_version, m->replica_version) != 0)
		{
			if (strcmp(current[i].replica_version, m->replica_version) > 0)
				memcpy(m, &current[i], sizeof(Position));
			continue;
		}
		if (strcmp(current[i].watermark, m->watermark) < 0)
			strlcpy(m->watermark, current[i].watermark, sizeof(m->watermark));
		m->connected |= current[i].connected;
		m->departed_at = m->connected ? 0 : Max(m->departed_at, current[i].departed_at);
	}
	return merged;
}

/* Replace the table's rows by current[0..n-1], in the transaction. */
static void
write_positions(int n)
{
	StringInfoData sql;

	if (SPI_execute("DELETE FROM zero_stream." POSITIONS_TABLE, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not clear zero_stream." POSITIONS_TABLE);
	if (n == 0)
		return;
	initStringInfo(&sql);
	appendStringInfoString(&sql, "INSERT INTO zero_stream." POSITIONS_TABLE
						   " (id, mode, replica_version, watermark, connected, last_seen) VALUES ");
	for (int i = 0; i < n; i++)
	{
		Position   *p = &current[i];

		appendStringInfo(&sql, "%s(%s, '%s', %s, %s, %s, %s)", i > 0 ? ", " : "",
						 id_literal(p->id), zs_subscriber_mode_name(p->mode),
						 quote_literal_cstr(p->replica_version), quote_literal_cstr(p->watermark),
						 p->connected ? "true" : "false",
						 p->connected ? "now()" :
						 quote_literal_cstr(timestamptz_to_str(p->departed_at)));
	}
	if (SPI_execute(sql.data, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not save the subscriber positions");
}

static void
ensure_buffers(void)
{
	if (current != NULL)
		return;
	capacity = zs_shared->max_subscribers + zs_shared->max_departed;
	current = MemoryContextAllocZero(TopMemoryContext, sizeof(Position) * capacity);
	saved = MemoryContextAllocZero(TopMemoryContext, sizeof(Position) * capacity);
}

void
zs_positions_save_step(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n;

	if (!TimestampDifferenceExceeds(last_save, now, SAVE_INTERVAL_MS))
		return;
	ensure_buffers();
	last_save = now;
	n = collect();
	if (n == nsaved && memcmp(current, saved, sizeof(Position) * n) == 0)
		return;

	zs_spi_xact_begin("zero_stream: saving the subscriber positions");
	if (!OidIsValid(positions_table()))
	{
		zs_spi_xact_commit();
		nsaved = -1;			/* the extension is being dropped: nothing saved */
		return;
	}
	zs_changelog_check_sql_version();
	write_positions(n);
	zs_spi_xact_commit();

	memcpy(saved, current, sizeof(Position) * n);
	nsaved = n;
}

void
zs_positions_restore(const char *replica_version)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		restored;
	int			nrows = 0;
	int			nretained = 0;

	LWLockAcquire(zs_shared->lock, LW_SHARED);
	restored = zs_shared->positions_restored;
	LWLockRelease(zs_shared->lock);
	if (restored)
		return;					/* this decoder's predecessor did, since the start */

	zs_spi_xact_begin("zero_stream: reading the saved subscriber positions");
	if (OidIsValid(positions_table()))
	{
		if (SPI_execute("SELECT id, mode, replica_version, watermark, connected, last_seen"
						" FROM zero_stream." POSITIONS_TABLE, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read zero_stream." POSITIONS_TABLE);
		nrows = (int) SPI_processed;
		for (int r = 0; r < nrows; r++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[r];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			ZsDepartedSubscriber entry;
			char	   *mode = SPI_getvalue(tuple, desc, 2);
			char	   *watermark = SPI_getvalue(tuple, desc, 4);
			bool		isnull;
			bool		connected;

			memset(&entry, 0, sizeof(entry));
			if (mode == NULL || !mode_from_name(mode, &entry.mode) || watermark == NULL)
				continue;
			unescape_id(SPI_getvalue(tuple, desc, 1), entry.id);
			strlcpy(entry.replica_version, SPI_getvalue(tuple, desc, 3), sizeof(entry.replica_version));
			strlcpy(entry.watermark, watermark, sizeof(entry.watermark));
			connected = DatumGetBool(SPI_getbinval(tuple, desc, 5, &isnull));
			entry.departed_at = connected ? now :
				DatumGetTimestampTz(SPI_getbinval(tuple, desc, 6, &isnull));
			entry.restored = true;
			if (!zs_departed_is_retained(&entry, replica_version, now, zs_subscriber_retention_ms))
				continue;
			/* a promoted server's own hold as its primary's standby */
			if (zs_standby_hold_is_own(entry.id))
			{
				ereport(LOG,
						(errmsg("zero_stream does not retain \"%s\" at %s: it is this server's own position from when it was a standby",
								entry.id, entry.watermark)));
				continue;
			}
			zs_restore_departed_subscriber(&entry);
			nretained++;
		}
	}
	zs_spi_xact_commit();

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	zs_shared->positions_restored = true;
	LWLockRelease(zs_shared->lock);
	/* the next save writes what shared memory holds now */
	nsaved = -1;
	last_save = 0;
	if (nrows > 0)
		ereport(LOG,
				(errmsg_plural("zero_stream read back %d saved subscriber position",
							   "zero_stream read back %d saved subscriber positions",
							   nrows, nrows),
				 errdetail("%d of them are of this lineage and still within zero_stream.subscriber_retention.",
						   nretained)));
}
