/*-------------------------------------------------------------------------
 * reservation_offer.c
 *	  What a snapshot reservation answers (docs/zero-protocol.md §2.5).
 *
 * A reservation answers "where do I restore from": a backupURL on this
 * server, the replicaVersion, and minWatermark, the oldest watermark the
 * change log still holds (zero-cache 1.9.0's meaning): a replica of the
 * same replicaVersion at or after it can catch up from the log and need not
 * restore. The reservation pins the log at the backup watermark of the
 * moment, the position a restored copy resumes from; the caller keeps that
 * watermark with the reservation (ZsUpstream), for the purge floor.
 *
 * The offer is the same for a legacy /snapshot connection (reservations.c)
 * and a v7 reserve-snapshot message (upstream.c); it reads the backup
 * replicator's state in shared memory and the change log, and knows
 * nothing of connections.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "changelog/changelog.h"
#include "codec/json_out.h"
#include "guc.h"
#include "replica/backup_file.h"
#include "server/reservation_offer.h"
#include "server/tls.h"
#include "shmem.h"
#include "spi_xact.h"

/* The oldest watermark in the change log ("" if it is empty). */
static void
read_log_floor(char *floor)
{
	zs_spi_xact_begin(NULL);
	zs_changelog_read_floor(floor);
	zs_spi_xact_commit();
}

/*
 * http://<host>/replica/<taskID> (https:// with zero_stream.ssl), the task
 * percent-encoded, as a JSON string
 */
static void
append_backup_url(StringInfo body, const char *host, const char *task_id)
{
	StringInfoData url;

	initStringInfo(&url);
	appendStringInfo(&url, "%s://%s" ZS_REPLICA_PATH_PREFIX,
					 zs_tls_enabled() ? "https" : "http", host ? host : psprintf("127.0.0.1:%d", zs_port));
	for (const char *p = task_id; *p; p++)
	{
		if (isalnum((unsigned char) *p) || strchr("-_.~", *p))
			appendStringInfoChar(&url, *p);
		else
			appendStringInfo(&url, "%%%02X", (unsigned char) *p);
	}
	zs_json_append_cstring(body, url.data);
}

bool
zs_reservation_offer_make(const char *host, const char *task_id, const char *tag,
						  StringInfo body, char *watermark, char **error)
{
	char	   *path = zs_replica_file_path();
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		floor[ZS_WATERMARK_MAXLEN];
	struct stat st;
	bool		following;

	if (path == NULL)
	{
		*error = pstrdup("backups are not configured");
		return false;
	}
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	following = (zs_shared->backup_state == ZS_BACKUP_FOLLOWING);
	strlcpy(watermark, zs_shared->backup_watermark, ZS_WATERMARK_MAXLEN);
	strlcpy(replica_version, zs_shared->replica_version, sizeof(replica_version));
	LWLockRelease(zs_shared->lock);
	if (!following || watermark[0] == '\0' || stat(path, &st) != 0)
	{
		*error = pstrdup("the backup replica is not ready: it does not follow the change log yet (see zero_stream.status().backup_state)");
		return false;
	}
	read_log_floor(floor);
	if (floor[0] == '\0')
		strlcpy(floor, replica_version, sizeof(floor));

	appendStringInfoString(body, "{\"tag\":");
	zs_json_append_cstring(body, tag);
	appendStringInfoString(body, ",\"backupURL\":");
	append_backup_url(body, host, task_id);
	appendStringInfoString(body, ",\"replicaVersion\":");
	zs_json_append_cstring(body, replica_version);
	appendStringInfoString(body, ",\"minWatermark\":");
	zs_json_append_cstring(body, floor);
	appendStringInfo(body, ",\"replicaSize\":" INT64_FORMAT "}", (int64) st.st_size);
	return true;
}
