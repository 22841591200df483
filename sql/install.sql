-- Installing the extension starts the stream: slot, publication, change-log
-- schema with zero-cache's tables, seed transaction, status.
CREATE EXTENSION zero_stream;

-- wait for the decoder (it polls for the extension and the database)
DO $$
BEGIN
    FOR i IN 1..1500 LOOP
        EXIT WHEN (SELECT state = 'streaming' FROM zero_stream.status());
        PERFORM pg_sleep(0.02);
    END LOOP;
END $$;

SELECT state, database, slot_name, change_log_schema, last_error,
       replica_version ~ '^[0-9a-z]+$' AS lexi_version,
       replica_version = last_watermark AS at_seed,
       pid > 0 AS has_pid
  FROM zero_stream.status();

-- the slot is a persistent logical slot using our pgoutput wrapper
SELECT slot_name, plugin, slot_type, temporary
  FROM pg_replication_slots;

-- failover (zero_stream.failover is on by default): from 17 a failover slot,
-- with a warning while synchronized_standby_slots names no standby
SELECT CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN s.failover = 'on' AND r.failover
                 AND s.failover_standbys IS NULL AND s.failover_synced IS NULL
                 AND s.failover_warning LIKE '%synchronized_standby_slots names no standby%'
                 AND s.failover_hint IS NOT NULL
            ELSE s.failover = 'unsupported' AND s.failover_warning IS NULL
       END AS failover_as_the_version_has_it
  FROM zero_stream.status() s,
       (SELECT to_jsonb(r) ->> 'failover' = 'true' AS failover FROM pg_replication_slots r) r;

-- the default publication, as zero-cache creates it
SELECT pubname, puballtables FROM pg_publication ORDER BY pubname;
SELECT pubname, nspname FROM pg_publication_namespace pn
  JOIN pg_publication p ON p.oid = pn.pnpubid
  JOIN pg_namespace n ON n.oid = pn.pnnspid;
-- Zero's metadata, as zero-cache's shard setup creates it, and its publication
SELECT pubname, schemaname, tablename FROM pg_publication_tables
 WHERE pubname = '_zero_metadata_0' ORDER BY 2, 3;
SELECT permissions, hash, lock FROM zero.permissions;
SELECT count(*) AS clients FROM zero_0.clients;
SELECT count(*) AS mutations FROM zero_0.mutations;

-- zero-cache's change-log schema, version 6
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'zero_0/cdc' AND c.relkind = 'r' ORDER BY 1;
\d "zero_0/cdc"."changeLog"
\d "zero_0/cdc"."changeLogChunks"
\d "zero_0/cdc"."replicationState"
\d "zero_0/cdc"."replicationConfig"
\d "zero_0/cdc"."tableMetadata"
\d "zero_0/cdc"."backfilling"
SELECT "dataVersion", "schemaVersion", "minSafeVersion" FROM "zero_0/cdc"."versionHistory";

-- lineage and ownership
SELECT c."replicaVersion" = s.replica_version AS config_matches, c."publications", c."resetRequired"
  FROM "zero_0/cdc"."replicationConfig" c, zero_stream.status() s;
-- the owner: task_id @ system identifier / timeline / slot
SELECT "lastWatermark" = (SELECT replica_version FROM zero_stream.status()) AS head_is_seed,
       "owner" = format('zero_stream@%s/%s/zero_stream_zero_0', (SELECT system_identifier FROM pg_control_system()),
                        (SELECT timeline_id FROM pg_control_checkpoint())) AS owner_is_us,
       "ownerAddress"
  FROM "zero_0/cdc"."replicationState";

-- the seed transaction at replicaVersion
SELECT watermark = (SELECT replica_version FROM zero_stream.status()) AS at_replica_version,
       pos, change::text, precommit
  FROM "zero_0/cdc"."changeLog" ORDER BY watermark COLLATE "C", pos;

-- every extension-created table has a primary key (needed under FOR ALL TABLES publications)
SELECT c.relname, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS has_pk
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'zero_0/cdc' AND c.relkind = 'r' ORDER BY 1;

-- catch-up waits for the decoder
CREATE TABLE t_install (id int PRIMARY KEY);
INSERT INTO t_install VALUES (1);
SELECT zero_stream.wait_for_catchup();
SELECT transactions_stored >= 1 AS stored, last_watermark > replica_version COLLATE "C" AS advanced
  FROM zero_stream.status();

-- the worker's parameters are reserved and validated
SET zero_stream.no_such_setting = 1;
SHOW zero_stream.app_id;
SHOW zero_stream.changelog_chunk_size;
SHOW zero_stream.changelog_compression;
SET zero_stream.changelog_compression = 'zstd';

-- no subscriber server in this instance (zero_stream.port = 0): no connections,
-- no retained positions, nothing saved; a healthy slot
SELECT count(*) AS connections FROM zero_stream.subscribers();
SELECT retained_subscribers, slot_warning FROM zero_stream.status();
SELECT count(*) AS saved_positions FROM zero_stream.subscriber_positions;
-- the backup replica follows; with purge_interval = 0 nothing was purged, so
-- there is no floor and nothing holds it
DO $$
BEGIN
    FOR i IN 1..1500 LOOP
        EXIT WHEN (SELECT backup_state = 'following' FROM zero_stream.status());
        PERFORM pg_sleep(0.02);
    END LOOP;
END $$;
SELECT backup_state, backup_detail, backup_hint, purge_floor, purge_held_by
  FROM zero_stream.status();
-- a standby's backup replica, the primary's side: bad input is refused
SELECT zero_stream.hold_backup_position('', '4dv40f', '4dv40f');
SELECT zero_stream.hold_backup_position('sb', 'not a watermark', '4dv40f');
SELECT zero_stream.backup_replica_read(0, 16);
-- a copy of the backup replica, read in this session; the standby is held
-- at its stateVersion
SELECT c.size > 0 AS copied, c.replica_version = s.replica_version AS same_lineage,
       c.watermark = s.backup_watermark AS at_the_backup
  FROM zero_stream.status() s, zero_stream.backup_replica_copy('regress', s.replica_version) c;
SELECT substr(zero_stream.backup_replica_read(0, 16), 1, 15) = 'SQLite format 3'::bytea AS is_sqlite;
SELECT zero_stream.backup_replica_read(-1, 16);
-- reading to the end closes the copy
SELECT length(zero_stream.backup_replica_read(1::bigint << 40, 16)) AS read_past_the_end;
SELECT mode, state, watermark_acked = (SELECT backup_watermark FROM zero_stream.status()) AS held_at_the_copy
  FROM zero_stream.subscribers() WHERE id = 'standby regress';
SELECT zero_stream.hold_backup_position('regress', replica_version, replica_version) FROM zero_stream.status();
SELECT watermark_acked = (SELECT replica_version FROM zero_stream.status()) AS held_where_reported
  FROM zero_stream.subscribers() WHERE id = 'standby regress';
SELECT zero_stream.backup_replica_read(0, 16);
-- a copy of another lineage is refused
DO $$
BEGIN
    PERFORM zero_stream.backup_replica_copy('regress', '4dv40f');
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'refused: %', split_part(SQLERRM, ' (', 1);
END $$;
SELECT has_function_privilege('public', 'zero_stream.backup_replica_copy(text, text)', 'EXECUTE') AS public_may_copy;
-- the fault-injection setting is off
SHOW zero_stream.test_unencodable_type;
-- the positions table is the extension's: no one else may write it
SELECT has_table_privilege('public', 'zero_stream.subscriber_positions', 'INSERT') AS public_may_write;
-- the versions of the SQL objects and of the library
SELECT extension_version, library_version FROM zero_stream.status();
SELECT extversion FROM pg_extension WHERE extname = 'zero_stream';
-- metrics(): the Prometheus text, for the monitoring role too
SELECT m ~ '(^|\n)zero_stream_decoder_state\{state="streaming"\} 1\n' AS streaming,
       m ~ '(^|\n)# TYPE zero_stream_transactions_stored_total counter\n' AS counters_typed,
       m ~ 'zero_stream_info\{library_version="0.5.1",replica_version="[0-9a-z]+",slot="[a-z0-9_]+"\} 1' AS info
FROM zero_stream.metrics() m;
SELECT has_function_privilege('pg_monitor', 'zero_stream.metrics()', 'EXECUTE') AS monitor_may,
       has_function_privilege('public', 'zero_stream.metrics()', 'EXECUTE') AS public_may;
-- SQL objects of another version (fewer columns) get an error, not shifted values
CREATE FUNCTION pg_temp.status_of_another_version(OUT state text, OUT slot_name text)
    RETURNS record LANGUAGE c AS 'zero_stream', 'zs_status';
SELECT * FROM pg_temp.status_of_another_version();
-- (last: it writes a published table) the permissions hash is kept by a trigger
UPDATE zero.permissions SET permissions = '{"tables":{}}';
SELECT hash = md5('{"tables": {}}') AS hash_kept_by_trigger FROM zero.permissions;
