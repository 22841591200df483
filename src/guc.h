/*-------------------------------------------------------------------------
 * guc.h
 *	  zero_stream.* configuration parameters.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_GUC_H
#define ZS_GUC_H

#include "nodes/pg_list.h"

extern char *zs_database;
extern char *zs_app_id;
extern int	zs_shard_num;
extern char *zs_publications;
extern char *zs_slot_name;
extern char *zs_task_id;
extern int	zs_changelog_chunk_kb;
extern int	zs_changelog_compression;	/* a ZsChunkCompression */
extern int	zs_commit_batch_kb;
extern int	zs_poll_interval_ms;
extern int	zs_slot_save_interval_ms;
extern int	zs_purge_interval_ms;
extern int	zs_subscriber_retention_ms;
extern char *zs_listen_addresses;
extern char *zs_advertise_address;
extern int	zs_port;
extern int	zs_max_subscribers;
extern int	zs_max_pending_connections;
extern int	zs_handshake_timeout_ms;
extern int	zs_max_message_kb;
extern char *zs_subscriber_password;
extern bool zs_ssl;
extern bool zs_failover;
extern char *zs_ssl_cert_file;
extern char *zs_ssl_key_file;
extern int	zs_catchup_page_rows;
extern int	zs_catchup_share;
extern int	zs_slow_subscriber_grace_ms;
extern int	zs_backlog_limit_kb;
extern int	zs_live_buffer_kb;
extern int	zs_lag_report_interval_ms;
extern int	zs_partition_carry_rows;	/* read by the DDL capture (SQL) */
extern char *zs_carried_leaves;	/* written and read by the DDL capture */
extern char *zs_replica_file;

/* Fault injection for TAP 013 (a type OID the encoder pretends it cannot read; 0: none), see guc.c */
extern int	zs_test_unencodable_type;

extern void zs_define_gucs(void);

/*
 * The session settings of a worker that encodes values from their text
 * output (DateStyle, TimeZone, extra_float_digits, ...: one canonical text
 * per value), plus synchronous_commit on and JIT off.
 */
extern void zs_set_canonical_session(const char *application_name);

/* Name of an identity setting whose configured value was invalid, or NULL. */
extern const char *zs_rejected_identity_setting(void);

/* Derived names, computed from the GUCs (palloc'd in the current context). */
extern char *zs_cdc_schema_name(void);	/* "<app>_<shard>/cdc" */
extern char *zs_effective_slot_name(void);
extern char *zs_origin_name(void);
extern char *zs_default_publication_name(void);	/* "_<app>_public_<shard>" */
/*
 * The application's publications (zero_stream.publications, or the default
 * one), and all the decoder streams: those plus Zero's metadata publication.
 */
extern List *zs_app_publication_list(bool *is_default);
extern List *zs_publication_list(void);
extern char *zs_metadata_publication_name(void);	/* "_<app>_metadata_<shard>" */

/* The publications' names as a text[] Datum, for SPI and SQL functions */
extern Datum zs_publication_array(List *publications);

#endif							/* ZS_GUC_H */
