/*-------------------------------------------------------------------------
 * replica_cli.c
 *	  zero-stream-replica's reporting and shared state (replica_cli.h): the
 *	  usage message, notes and exits on stderr, the stop flag and the error
 *	  buffer.
 *
 * Every note starts "zero-stream-replica: " and keeps the errno of the
 * failure it reports, so that %m in its format names that failure. An exit
 * through zs_replica_cli_die removes a download's temporary file first, so
 * that an early exit never leaves a partial replica behind.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sys/time.h>
#include <unistd.h>

#include "client/replica_cli.h"
#include "replica/replica_apply.h"

volatile sig_atomic_t zs_replica_cli_stop_requested = 0;
char		zs_replica_cli_err[ZS_CLIENT_ERR_LEN];
const char *zs_replica_cli_download_tmp = NULL;

void
zs_replica_cli_usage(void)
{
	fprintf(stderr,
			"usage: zero-stream-replica sync [--task-id ID] [--id ID] [--change-log] [--idle SECS] [--ca-file FILE] [--no-verify] ws[s]://[user:password@]host:port FILE\n"
			"       zero-stream-replica restore [-if-db-not-exists] [-if-replica-exists] [-o PATH] [-parallelism N] [-ca-file FILE] [-no-verify] FILE\n"
			"           (the backup from $ZERO_LITESTREAM_BACKUP_URL; also: restore [flags] -o PATH http[s]://host:port/replica/TASK)\n"
			"       zero-stream-replica status FILE\n");
	exit(1);
}

/* %m in fmt is the errno of the caller's failure, whatever fputs does */
void
zs_replica_cli_vnote(const char *fmt, va_list args)
{
	int			save_errno = errno;

	fputs("zero-stream-replica: ", stderr);
	errno = save_errno;
	vfprintf(stderr, fmt, args);
	fputc('\n', stderr);
}

void
zs_replica_cli_note(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	zs_replica_cli_vnote(fmt, args);
	va_end(args);
}

void
zs_replica_cli_die(int code, const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	zs_replica_cli_vnote(fmt, args);
	va_end(args);
	if (zs_replica_cli_download_tmp != NULL)
		(void) zs_replica_remove_files(zs_replica_cli_download_tmp, zs_replica_cli_err,
									   sizeof(zs_replica_cli_err));
	exit(code);
}

double
zs_replica_cli_now_seconds(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

bool
zs_replica_cli_write_fully(int fd, const char *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
		{
			/* nothing written and no errno: as PostgreSQL assumes, no space */
			errno = ENOSPC;
			return false;
		}
		data += n;
		len -= (size_t) n;
	}
	return true;
}
