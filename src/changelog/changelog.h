/*-------------------------------------------------------------------------
 * changelog.h
 *	  The Zero-compatible change log in "<app>_<shard>/cdc" (zero-protocol.md
 *	  §6): schema set-up, lineage (replicaVersion), ownership, and the batched
 *	  writer. Every function runs inside the caller's transaction with SPI
 *	  connected.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_H
#define ZS_CHANGELOG_H

#include "nodes/pg_list.h"

#include "codec/watermark.h"

/* Create the schema and tables if missing; check an existing schema's version. */
extern void zs_changelog_ensure_schema(void);

/* replicationConfig.replicaVersion, or false if the log was never initialized. */
extern bool zs_changelog_read_replica_version(char *replica_version);

/* Start a new lineage: empty the log, write config, state and seed transaction. */
extern void zs_changelog_initialize(const char *replica_version, List *publications);

/* Take ownership (replicationState.owner = zero_stream.task_id). */
extern void zs_changelog_claim_ownership(void);

/* replicationState.lastWatermark */
extern void zs_changelog_read_head(char *last_watermark);

/*
 * Batched writer for one local transaction. zs_changelog_begin locks the
 * state row and verifies that we still own the log.
 */
extern void zs_changelog_begin(void);
extern void zs_changelog_add(const char *watermark, int64 pos,
							 const char *change, int change_len, bool is_commit);
extern void zs_changelog_finish(const char *last_watermark);

#endif							/* ZS_CHANGELOG_H */
