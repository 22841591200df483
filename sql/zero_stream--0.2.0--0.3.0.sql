-- zero_stream 0.2.0 -> 0.3.0 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.3.0'" to load this file. \quit

-- Nothing the decoder writes changes: the change log, the slot and every
-- subscriber's position are left as they are, and a 0.3.0 library streams
-- before and after this script.

-- status() tells the timeline and when this server was promoted (a Zero
-- app's view-syncers are restarted after a promotion: README)
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
    OUT promoted_from_timeline integer)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_status'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION status() IS
  'State of the zero_stream decoder: slot positions, change-log head, counters, lag, last error, the versions of the SQL objects and of the library, the timeline and this server''s promotion';

REVOKE ALL ON FUNCTION status() FROM PUBLIC;

-- subscribers() says why each retained position is retained
ALTER EXTENSION zero_stream DROP FUNCTION subscribers();
DROP FUNCTION subscribers();

CREATE FUNCTION subscribers(
    OUT id text,
    OUT address text,
    OUT mode text,
    OUT protocol integer,
    OUT state text,
    OUT watermark_sent text,
    OUT watermark_acked text,
    OUT messages_sent bigint,
    OUT messages_acked bigint,
    OUT backlog_bytes bigint,
    OUT connected_since timestamptz,
    OUT disconnected_at timestamptz,
    OUT retained_until timestamptz,
    OUT retained_because text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zs_subscribers'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION subscribers() IS
  'Connections of the zero_stream subscriber server (position sent and acknowledged, backlog, state), then the positions retained for subscribers that left (state departed, or restored after a restart) until retained_until, and why (retained_because: disconnected, restarted, standby, reservation)';

REVOKE ALL ON FUNCTION subscribers() FROM PUBLIC;
