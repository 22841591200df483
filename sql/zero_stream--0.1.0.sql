-- zero_stream 0.1.0 install script
\echo Use "CREATE EXTENSION zero_stream" to load this file. \quit

-- The change log itself lives in "<app_id>_<shard_num>/cdc" and is created by
-- the decoder worker (its name depends on postmaster settings); this script
-- provides the SQL interface.

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
    OUT backup_state text,
    OUT backup_watermark text,
    OUT last_error text,
    OUT last_error_time timestamptz,
    OUT value_errors bigint,
    OUT last_value_error text)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_status'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION status() IS
  'State of the zero_stream decoder: slot positions, change-log head, counters, lag and last error';

REVOKE ALL ON FUNCTION status() FROM PUBLIC;

-- Wait until everything committed before the call is in the change log (or
-- was not published). Returns false on timeout. Useful in scripts and tests.
CREATE FUNCTION wait_for_catchup(timeout interval DEFAULT '30 seconds')
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    target pg_lsn := pg_current_wal_flush_lsn();
    deadline timestamptz := clock_timestamp() + timeout;
BEGIN
    LOOP
        IF (SELECT s.confirmed_lsn >= target AND s.state = 'streaming'
              FROM zero_stream.status() s) THEN
            RETURN true;
        END IF;
        IF clock_timestamp() >= deadline THEN
            RETURN false;
        END IF;
        PERFORM pg_sleep(0.02);
    END LOOP;
END
$$;

COMMENT ON FUNCTION wait_for_catchup(interval) IS
  'Wait until the decoder has stored every transaction committed before the call; false on timeout';

REVOKE ALL ON FUNCTION wait_for_catchup(interval) FROM PUBLIC;

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
    OUT connected_since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zs_subscribers'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION subscribers() IS
  'Connections of the zero_stream subscriber server: position sent and acknowledged, backlog, state';

REVOKE ALL ON FUNCTION subscribers() FROM PUBLIC;

CREATE FUNCTION workers(
    OUT worker text,
    OUT pid integer,
    OUT restarts bigint,
    OUT last_error text,
    OUT last_error_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zs_workers'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION workers() IS
  'The zero_stream background workers: pid, restarts since the server started, the error each last stopped on';

REVOKE ALL ON FUNCTION workers() FROM PUBLIC;

CREATE FUNCTION resync()
RETURNS void
AS 'MODULE_PATHNAME', 'zs_resync'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION resync() IS
  'Start a new lineage: new slot, new initial copy into the backup replica, new replicaVersion (subscribers restore)';

REVOKE ALL ON FUNCTION resync() FROM PUBLIC;
