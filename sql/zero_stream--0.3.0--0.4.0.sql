-- zero_stream 0.3.0 -> 0.4.0 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.4.0'" to load this file. \quit

-- 0.4.0 stores the change log in compressed chunks: its decoder converts a
-- log of rows when it starts (before this script runs or after: the
-- change log is the decoder's, not the extension's), keeping the lineage
-- and every subscriber's position. The SQL objects change only here:

-- status() tells how many chunks hold the log, and how much change text
ALTER EXTENSION zero_stream DROP FUNCTION status();
DROP FUNCTION status();

CREATE FUNCTION status(
    OUT state text,
    OUT pid integer,
    OUT database text,
    OUT slot_name text,
    OUT confirmed_lsn pg_lsn,
    OUT restart_lsn pg_lsn,
    OUT retained_wal_bytes bigint,
    OUT lag_bytes bigint,
    OUT replica_version text,
    OUT last_watermark text,
    OUT transactions_stored bigint,
    OUT changes_stored bigint,
    OUT local_commits bigint,
    OUT last_store_time timestamptz,
    OUT last_upstream_commit_time timestamptz,
    OUT lag interval,
    OUT change_log_schema text,
    OUT initial_copy text,
    OUT backfill text,
    OUT backup_state text,
    OUT backup_detail text,
    OUT backup_hint text,
    OUT backup_watermark text,
    OUT last_error text,
    OUT last_error_time timestamptz,
    OUT value_errors bigint,
    OUT last_value_error text,
    OUT retained_rows bigint,
    OUT retained_bytes bigint,
    OUT purge_floor text,
    OUT purge_held_by text,
    OUT purged_rows bigint,
    OUT purged_bytes bigint,
    OUT last_purge_time timestamptz,
    OUT last_reset text,
    OUT last_reset_time timestamptz,
    OUT retained_subscribers integer,
    OUT slot_warning text,
    OUT failover text,
    OUT failover_standbys text,
    OUT failover_synced boolean,
    OUT failover_warning text,
    OUT failover_hint text,
    OUT extension_version text,
    OUT library_version text,
    OUT timeline integer,
    OUT promoted_at timestamptz,
    OUT promoted_from_timeline integer,
    OUT retained_chunks bigint,
    OUT retained_change_bytes bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_status'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION status() IS
  'State of the zero_stream decoder: slot positions, change-log head, counters, lag, last error, the versions of the SQL objects and of the library, the timeline and this server''s promotion, the change log''s chunks and the change text they hold';

REVOKE ALL ON FUNCTION status() FROM PUBLIC;
