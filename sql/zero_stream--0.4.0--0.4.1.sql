-- zero_stream 0.4.0 -> 0.4.1 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.4.1'" to load this file. \quit

-- 0.4.1: on PostgreSQL 19 with wal_level = replica (logical decoding turned
-- on by the decoder's slot: effective_wal_level), the DDL capture announces
-- schema changes; 0.4.0's looked at wal_level only and announced nothing
-- there. The three functions are replaced as 0.4.1's install script defines
-- them (their grants and event triggers stay).

-- Announce the published schema in the stream if it differs from the last
-- one announced: a transactional logical message the decoder turns into
-- zero's schema-change messages at this point of the stream. tag is the DDL
-- command's (it decides what zero-cache backfills). Returns whether it
-- announced. Used by the event trigger below, and by the decoder at start
-- for changes made without it.
CREATE OR REPLACE FUNCTION announce_published_schema(tag text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current text;
    previous text;
    empty_leaves json;
BEGIN
    -- one DDL transaction at a time from here (see capture_ddl_start): the
    -- schema read below is every committed one's, so the state and the
    -- stream's messages follow commit order
    PERFORM pg_advisory_xact_lock(2053468783, 1);
    current := zero_stream.published_schema(zero_stream.stream_publications())::text;
    previous := (SELECT snapshot FROM zero_stream.published_schema_state);
    IF previous = current THEN
        RETURN false;
    END IF;
    -- no logical message without logical WAL (a DDL must not fail for it):
    -- the decoder announces the schema when it starts. From PostgreSQL 19
    -- wal_level = replica writes it too while a logical slot exists
    -- (effective_wal_level)
    IF COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) <> 'logical' THEN
        RETURN false;
    END IF;
    -- the leaf partitions that are new here and hold no row: joining the
    -- root changes none of its rows (a table created as a partition, or one
    -- attached empty; the command's lock keeps them so until it commits)
    SELECT COALESCE(json_agg(leaf), '[]'::json) INTO empty_leaves
      FROM (SELECT DISTINCT l.leaf::int8 AS leaf
              FROM json_array_elements(current::json->'partitions') p,
                   json_array_elements_text(p->'leaves') l(leaf)
             WHERE l.leaf NOT IN (SELECT pl
                                    FROM json_array_elements(COALESCE(previous::json->'partitions', '[]')) pp,
                                         json_array_elements_text(pp->'leaves') pl)) n
     WHERE NOT zero_stream.relation_has_rows(n.leaf::oid);
    UPDATE zero_stream.published_schema_state SET snapshot = current;
    PERFORM pg_logical_emit_message(true, 'zero_stream/ddl',
        json_build_object('tag', tag, 'schema', current::json, 'emptyLeaves', empty_leaves)::text);
    RETURN true;
END
$$;

-- Runs at the end of every DDL command, as its owner (the superuser who
-- created the extension), so DDL by any role is captured.
CREATE OR REPLACE FUNCTION capture_schema_change()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the extension may exist in a database the decoder does not stream
    IF current_database() <> current_setting('zero_stream.database', true) THEN
        RETURN;
    END IF;
    PERFORM zero_stream.announce_published_schema(tg_tag);
    -- COMMENT ON one of the streamed publications is stored as zero-cache
    -- stores it (its trigger sends a schema snapshot for it): an empty
    -- begin/commit, like the commands capture_ddl_start() announces
    IF tg_tag = 'COMMENT'
       AND COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) = 'logical'
       AND EXISTS (
        SELECT FROM pg_event_trigger_ddl_commands() c
         WHERE c.object_type = 'publication'
           AND c.object_identity = ANY (zero_stream.stream_publications())) THEN
        PERFORM pg_logical_emit_message(true, 'zero_stream/ddl-start', tg_tag);
    END IF;
END
$$;

-- At the start of the DDL commands zero-cache's own trigger watches, a
-- message that is no schema change: as in zero-cache's change log, the
-- command's transaction is then stored (an empty begin/commit if nothing
-- published changed), whatever it touches (an unpublished schema, a
-- temporary table, a storage parameter, the first transaction of CREATE
-- INDEX CONCURRENTLY).
CREATE OR REPLACE FUNCTION capture_ddl_start()
RETURNS event_trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_database() <> current_setting('zero_stream.database', true) THEN
        RETURN;
    END IF;
    -- nor for the decoder's own set-up (CREATE TABLE IF NOT EXISTS of the
    -- change log's tables at each start): zero-cache's is not in its log
    IF COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) <> 'logical' OR
       (SELECT backend_type LIKE 'zero\_stream %' FROM pg_stat_get_activity(pg_backend_pid())) THEN
        RETURN;
    END IF;
    -- serialize DDL, as zero-cache's trigger does: a command's schema
    -- change is announced against every other one committed before it
    -- (announce_published_schema takes the same lock, for other commands)
    PERFORM pg_advisory_xact_lock(2053468783, 1);
    PERFORM pg_logical_emit_message(true, 'zero_stream/ddl-start', tg_tag);
END
$$;
