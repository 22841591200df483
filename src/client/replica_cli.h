/*-------------------------------------------------------------------------
 * replica_cli.h
 *	  What the files of zero-stream-replica share: how it reports (notes
 *	  and exits, all on stderr as "zero-stream-replica: ..."), its usage
 *	  message, the stop flag its signal handler sets, and the error buffer
 *	  the client functions (ws_client.h) fill.
 *
 * The tool's files: zero_stream_replica.c (main, status),
 * replica_sync.c (sync's loop), replica_frame.c (a frame applied),
 * subscribe_connection.c (the /replication/v7/subscribe connection),
 * replica_download.c (a backup replica downloaded into place) and
 * litestream_restore.c (restore, litestream's command).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_CLI_H
#define ZS_REPLICA_CLI_H

#include <signal.h>

#include "compat/noreturn.h"
#include "client/ws_client.h"

/* Set by SIGINT and SIGTERM: stop at the next chance, exit 0 */
extern volatile sig_atomic_t zs_replica_cli_stop_requested;

/* The reason of the last failure of a client function */
extern char zs_replica_cli_err[ZS_CLIENT_ERR_LEN];

/* A download's temporary file, removed by zs_replica_cli_die (NULL: none) */
extern const char *zs_replica_cli_download_tmp;

/* The usage message; exits 1. */
extern void zs_replica_cli_usage(void) zs_noreturn;

/* A note on stderr; %m in fmt is the errno of the caller's failure. */
extern void zs_replica_cli_vnote(const char *fmt, va_list args) pg_attribute_printf(1, 0);
extern void zs_replica_cli_note(const char *fmt,...) pg_attribute_printf(1, 2);

/* A note, then exit with code (a download's temporary file removed first). */
extern void zs_replica_cli_die(int code, const char *fmt,...) pg_attribute_printf(2, 3) zs_noreturn;

/* Seconds since the Unix epoch, with microseconds. */
extern double zs_replica_cli_now_seconds(void);

/*
 * Write all of data, in as many writes as it takes: a write may take part
 * of it (a full disk, a file size limit) and only the next one says why.
 * False with errno set.
 */
extern bool zs_replica_cli_write_fully(int fd, const char *data, size_t len);

#endif							/* ZS_REPLICA_CLI_H */
