-- zero_stream 0.1.0 -> 0.2.0 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.2.0'" to load this file. \quit

-- Nothing the decoder writes changes: the change log, the slot and every
-- subscriber's position are left as they are, and a 0.2.0 library streams
-- before and after this script.

-- status() tells the versions of the SQL objects and of the library apart
-- (a new package's library runs with the old SQL until this update).
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
    OUT library_version text)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_status'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION status() IS
  'State of the zero_stream decoder: slot positions, change-log head, counters, lag, last error, and the versions of the SQL objects and of the library';

REVOKE ALL ON FUNCTION status() FROM PUBLIC;

-- Prometheus's text exposition of status() and subscribers(), as the
-- subscriber server answers GET /metrics (docs/metrics.md): for a scrape
-- through SQL. The monitoring role may read it.
CREATE FUNCTION metrics()
RETURNS text
AS 'MODULE_PATHNAME', 'zs_sql_metrics'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION metrics() IS
  'zero_stream''s state in Prometheus''s text exposition format (the subscriber server''s GET /metrics)';

REVOKE ALL ON FUNCTION metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION metrics() TO pg_monitor;
