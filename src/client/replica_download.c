/*-------------------------------------------------------------------------
 * replica_download.c
 *	  zero-stream-replica's download of a backup replica
 *	  (replica_download.h): GET the backupURL, write the body to FILE.tmp
 *	  with progress notes, check that it is the replica the server
 *	  announced, then rename it over FILE durably.
 *
 * FILE.tmp is the name litestream restores to, which zero-cache's
 * view-syncer clears before and after each restore. Writes take as many
 * calls as they need, so a full disk or a file size limit reports the
 * write's own reason; zs_replica_cli_die removes FILE.tmp on every early
 * exit, so no partial replica is ever left at FILE or beside it.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <unistd.h>

#include "client/replica_cli.h"
#include "client/replica_download.h"
#include "replica/replica_apply.h"

#define PROGRESS_INTERVAL_S 2.0

static void
remove_replica_files(const char *path)
{
	if (!zs_replica_remove_files(path, zs_replica_cli_err, sizeof(zs_replica_cli_err)))
		zs_replica_cli_die(3, "%s", zs_replica_cli_err);
}

/*
 * Rename tmp over file and make the rename durable (the directory fsynced);
 * tmp's contents are already. Exits with the failed step's reason.
 */
static void
move_into_place(const char *tmp, const char *file)
{
	char	   *dir = pstrdup(file);
	int			fd;

	if (rename(tmp, file) != 0)
		zs_replica_cli_die(3, "could not rename \"%s\" to \"%s\": %m", tmp, file);
	zs_replica_cli_download_tmp = NULL;
	get_parent_directory(dir);
	if (dir[0] == '\0')
		strlcpy(dir, ".", 2);
	fd = open(dir, O_RDONLY);
	if (fd < 0)
		zs_replica_cli_die(3, "could not open directory \"%s\": %m", dir);
	/* some systems cannot fsync a directory (PostgreSQL's fsync_fname) */
	if (fsync(fd) != 0 && errno != EBADF && errno != EINVAL)
		zs_replica_cli_die(3, "could not fsync directory \"%s\": %m", dir);
	if (close(fd) != 0)
		zs_replica_cli_die(3, "could not close directory \"%s\": %m", dir);
	pfree(dir);
}

static void
progress(double done, double total, double started, bool final)
{
	static double last = 0;
	double		now = zs_replica_cli_now_seconds();
	double		rate = done / 1048576.0 / Max(now - started, 1e-6);

	if (!final && now - last < (isatty(2) ? 0.2 : PROGRESS_INTERVAL_S))
		return;
	last = now;
	if (isatty(2))
		fprintf(stderr, "\rrestoring snapshot: %.1f of %.1f MB (%3.0f%%), %.1f MB/s%s",
				done / 1048576.0, total / 1048576.0, total > 0 ? 100.0 * done / total : 100.0,
				rate, final ? "\n" : "");
	else if (!final)
		fprintf(stderr, "zero-stream-replica: restoring snapshot: %.1f of %.1f MB (%.0f%%)\n",
				done / 1048576.0, total / 1048576.0, total > 0 ? 100.0 * done / total : 100.0);
}

/* The response's status line, for messages. */
static char *
status_line(const char *head)
{
	const char *end = strchr(head, '\r');

	return pnstrdup(head, end ? end - head : strlen(head));
}

/* A header's value, or NULL. */
static char *
header_value(const char *head, const char *name)
{
	StringInfoData value;

	initStringInfo(&value);
	if (zs_client_header(head, name, &value))
		return value.data;
	pfree(value.data);
	return NULL;
}

/*
 * A download that failed on the way (the server restarted, the connection
 * broke, the backup was not ready): with transient_ok, the reason is left
 * in zs_replica_cli_err and the caller tries again; otherwise it is fatal.
 */
static bool
download_failed(bool transient_ok, ZsClientConn *link, const char *fmt,...) pg_attribute_printf(3, 4);

static bool
download_failed(bool transient_ok, ZsClientConn *link, const char *fmt,...)
{
	va_list		args;
	char		reason[ZS_CLIENT_ERR_LEN];

	va_start(args, fmt);
	vsnprintf(reason, sizeof(reason), fmt, args);
	va_end(args);
	if (!transient_ok)
		zs_replica_cli_die(2, "%s", reason);
	strlcpy(zs_replica_cli_err, reason, sizeof(zs_replica_cli_err));
	if (link != NULL)
		zs_client_close(link);
	if (zs_replica_cli_download_tmp != NULL)
	{
		remove_replica_files(zs_replica_cli_download_tmp);
		zs_replica_cli_download_tmp = NULL;
	}
	return false;
}

bool
zs_replica_download(const ZsUrl *url, const char *expect_rv, const char *min_sv,
					bool none_ok, bool transient_ok, const char *file)
{
	/* the URL without its credentials, for messages */
	char	   *url_text = psprintf("%s://%s:%s%s", url->scheme, url->host, url->port, url->target);
	ZsClientConn link;
	int			http_status;
	StringInfoData head;
	StringInfoData body;
	char	   *value;
	char	   *served_rv;
	char	   *served_sv;
	char	   *tmp = psprintf("%s.tmp", file);
	int			fd;
	int64		length,
				done = 0;
	double		started = zs_replica_cli_now_seconds();
	char		rv[ZS_WATERMARK_MAXLEN],
				sv[ZS_WATERMARK_MAXLEN];
	ZsReplica  *check;

	initStringInfo(&head);
	initStringInfo(&body);
	if (!zs_client_connect(url, &link, zs_replica_cli_err))
	{
		download_failed(transient_ok, NULL, "could not download the backup from %s: %s", url_text, zs_replica_cli_err);
		goto failed_on_the_way;
	}
	if (!zs_client_http_get(&link, url, url->target, &http_status, &head, &body, zs_replica_cli_err))
	{
		download_failed(transient_ok, &link, "could not download the backup from %s: %s", url_text, zs_replica_cli_err);
		goto failed_on_the_way;
	}
	if (http_status == 401)
		zs_replica_cli_die(2, "the server refused the credentials for %s (HTTP 401): check the password", url_text);
	if ((http_status == 404 || http_status == 503) && none_ok)
	{
		/* the reason, if it came with the head */
		while (body.len > 0 && (body.data[body.len - 1] == '\n' || body.data[body.len - 1] == '\r'))
			body.data[--body.len] = '\0';
		zs_replica_cli_note("no backup available at %s (%s%s%.200s): nothing restored",
							url_text, status_line(head.data), body.len > 0 ? ": " : "", body.data);
		zs_client_close(&link);
		return false;
	}
	/*
	 * With transient_ok the URL came with a reservation: a 404 means the
	 * reservation ended before the download (another connection of the same
	 * task took it over), so a new one is asked for.
	 */
	if (http_status == 502 || http_status == 503 || http_status == 504 ||
		(http_status == 404 && transient_ok))
	{
		char	   *line = status_line(head.data);

		while (body.len > 0 && (body.data[body.len - 1] == '\n' || body.data[body.len - 1] == '\r'))
			body.data[--body.len] = '\0';
		if (body.len > 0)
			line = psprintf("%s: %.200s", line, body.data);
		download_failed(transient_ok, &link, "could not download the backup from %s: %s", url_text, line);
		pfree(line);
		goto failed_on_the_way;
	}
	if (http_status != 200)
		zs_replica_cli_die(2, "could not download the backup from %s: %s", url_text, status_line(head.data));
	value = header_value(head.data, "Content-Length");
	if (value == NULL)
		zs_replica_cli_die(2, "the backup response from %s has no Content-Length", url_text);
	length = strtoll(value, NULL, 10);
	served_rv = header_value(head.data, "X-Replica-Version");
	served_sv = header_value(head.data, "X-Replica-Watermark");

	remove_replica_files(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		zs_replica_cli_die(3, "could not create \"%s\": %m", tmp);
	zs_replica_cli_download_tmp = tmp;
	for (;;)
	{
		if (body.len > 0)
		{
			int			n = (int) Min((int64) body.len, length - done);

			if (!zs_replica_cli_write_fully(fd, body.data, n))
				zs_replica_cli_die(3, "could not write \"%s\" after " INT64_FORMAT " of " INT64_FORMAT " bytes: %m",
								   tmp, done, length);
			done += n;
			resetStringInfo(&body);
			progress((double) done, (double) length, started, false);
		}
		if (done >= length)
			break;
		if (zs_replica_cli_stop_requested)
			zs_replica_cli_die(130, "interrupted while restoring the snapshot");
		enlargeStringInfo(&body, 1 << 20);
		{
			ssize_t		got = zs_client_read(&link, body.data, 1 << 20, zs_replica_cli_err);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
			{
				close(fd);
				if (got < 0)
					download_failed(transient_ok, &link,
									"the backup download from %s failed after " INT64_FORMAT " of " INT64_FORMAT " bytes: %s",
									url_text, done, length, zs_replica_cli_err);
				else
					download_failed(transient_ok, &link,
									"the backup download from %s ended after " INT64_FORMAT " of " INT64_FORMAT " bytes",
									url_text, done, length);
				goto failed_on_the_way;
			}
			body.len = (int) got;
		}
	}
	zs_client_close(&link);
	if (fsync(fd) != 0)
		zs_replica_cli_die(3, "could not fsync \"%s\": %m", tmp);
	if (close(fd) != 0)
		zs_replica_cli_die(3, "could not close \"%s\": %m", tmp);
	progress((double) done, (double) length, started, true);

	/* the file must be the replica the server announced */
	check = zs_replica_open(tmp, 0, zs_replica_cli_err, sizeof(zs_replica_cli_err));
	if (check == NULL)
		zs_replica_cli_die(2, "the downloaded backup is not usable: %s", zs_replica_cli_err);
	if (!zs_replica_read_state(check, rv, sv))
		zs_replica_cli_die(2, "the downloaded backup is not a replica: %s", zs_replica_error(check));
	zs_replica_close(check);
	if ((served_rv != NULL && strcmp(rv, served_rv) != 0) ||
		(served_sv != NULL && strcmp(sv, served_sv) != 0))
		zs_replica_cli_die(2, "the downloaded backup (replicaVersion %s at %s) is not the one the server announced (%s at %s)",
						   rv, sv, served_rv ? served_rv : "?", served_sv ? served_sv : "?");
	if ((expect_rv != NULL && strcmp(rv, expect_rv) != 0) ||
		(min_sv != NULL && strcmp(sv, min_sv) < 0))
		zs_replica_cli_die(2, "the downloaded backup (replicaVersion %s at %s) does not match the reservation (%s at %s or later)",
						   rv, sv, expect_rv ? expect_rv : "?", min_sv ? min_sv : "?");
	remove_replica_files(file);
	move_into_place(tmp, file);
	zs_replica_cli_note("restored replicaVersion %s at %s into \"%s\": %.1f MB in %.2f s (%.1f MB/s)",
						rv, sv, file, done / 1048576.0, zs_replica_cli_now_seconds() - started,
						done / 1048576.0 / Max(zs_replica_cli_now_seconds() - started, 1e-6));
	pfree(head.data);
	pfree(body.data);
	return true;

	/* download_failed has reported it (transient_ok) and cleaned up the transfer */
failed_on_the_way:
	pfree(head.data);
	pfree(body.data);
	pfree(url_text);
	pfree(tmp);
	return false;
}
