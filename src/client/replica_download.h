/*-------------------------------------------------------------------------
 * replica_download.h
 *	  A backup replica downloaded from a zero_stream server into place
 *	  (zero-stream-replica's sync and restore).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_DOWNLOAD_H
#define ZS_REPLICA_DOWNLOAD_H

#include "client/ws_client.h"

/*
 * Download the backup replica at url into FILE: written to FILE.tmp,
 * checked, then renamed over FILE. The file must be the replica the
 * response announces in X-Replica-Version and X-Replica-Watermark, of
 * replicaVersion expect_rv (if not NULL) and at min_sv or later (if not
 * NULL).
 *
 * Returns false, leaving no file behind, when none_ok and the server has no
 * backup to serve (404: no reservation for the task; 503: none ready or no
 * free slot), and with transient_ok when the transfer failed on the way
 * (no connection, a 502, 503 or 504 answer, a connection lost mid-body),
 * with the reason in zs_replica_cli_err. Any other failure exits (2: the
 * server or the download, 3: the local file) and removes FILE.tmp.
 */
extern bool zs_replica_download(const ZsUrl *url, const char *expect_rv, const char *min_sv,
								bool none_ok, bool transient_ok, const char *file);

#endif							/* ZS_REPLICA_DOWNLOAD_H */
