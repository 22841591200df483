-- zero_stream 0.5.1 install script
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

CREATE FUNCTION purge(timeout interval DEFAULT '60 seconds',
    OUT rows bigint, OUT bytes bigint, OUT floor text, OUT held_by text)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_purge'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION purge(interval) IS
  'Have the decoder purge the change log now: rows and bytes deleted, the floor, and what holds it';

REVOKE ALL ON FUNCTION purge(interval) FROM PUBLIC;

-- A standby's backup replica (called by the standby's replicator over its
-- primary_conninfo; grant EXECUTE to that role): where it stands, held in the
-- purge floor for subscriber_retention after the last report, and a copy of
-- this server's backup replica to rebuild it from, read by the same session.
CREATE FUNCTION hold_backup_position(standby text, replica_version text, watermark text)
RETURNS void
AS 'MODULE_PATHNAME', 'zs_hold_backup_position'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION hold_backup_position(text, text, text) IS
  'A standby''s backup replica is at watermark: keep the change log from there for subscriber_retention';

REVOKE ALL ON FUNCTION hold_backup_position(text, text, text) FROM PUBLIC;

CREATE FUNCTION backup_replica_copy(standby text, lineage text,
    OUT size bigint, OUT replica_version text, OUT watermark text)
RETURNS record
AS 'MODULE_PATHNAME', 'zs_backup_replica_copy'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION backup_replica_copy(text, text) IS
  'A consistent copy of the backup replica of that replicaVersion for a standby, kept open by this session until read (backup_replica_read)';

REVOKE ALL ON FUNCTION backup_replica_copy(text, text) FROM PUBLIC;

CREATE FUNCTION backup_replica_read("offset" bigint, length integer)
RETURNS bytea
AS 'MODULE_PATHNAME', 'zs_backup_replica_read'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION backup_replica_read(bigint, integer) IS
  'Bytes of the copy of the backup replica that backup_replica_copy made in this session';

REVOKE ALL ON FUNCTION backup_replica_read(bigint, integer) FROM PUBLIC;

-- -------------------------------------------------------------------------
-- Schema changes. Every DDL command that changes what the streamed
-- publications publish is captured in its own transaction as a transactional
-- logical message ("zero_stream/ddl") carrying the new published schema; the
-- decoder compares it with the schema it last saw at that point of the
-- stream and writes zero-cache's schema-change messages (create-table,
-- add-column, ...). DDL that changes nothing published emits nothing.

-- The publications the decoder streams (zero_stream.publications, or the
-- default one), from the server's settings.
CREATE FUNCTION stream_publications()
RETURNS text[]
AS 'MODULE_PATHNAME', 'zs_stream_publications'
LANGUAGE C STRICT STABLE;

-- The published tables, their columns and indexes, as zero-cache describes
-- them (its publishedSchemaQuery, same fields and order).
CREATE FUNCTION published_schema(publications text[])
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
-- its estimated cost passes jit_above_cost; compiling a catalog query costs far
-- more than running it (and loads LLVM into the decoder and every DDL session)
SET jit = off
AS $$
WITH published_columns AS (SELECT
  pc.oid::int8 AS "oid",
  nspname AS "schema",
  pc.relnamespace::int8 AS "schemaOID",
  pc.relname AS "name",
  pc.relreplident AS "replicaIdentity",
  attnum AS "pos",
  attname AS "col",
  pt.typname AS "type",
  atttypid::int8 AS "typeOID",
  pt.typtype,
  elem_pt.typtype AS "elemTyptype",
  NULLIF(atttypmod, -1) AS "maxLen",
  attndims "arrayDims",
  attnotnull AS "notNull",
  pg_get_expr(pd.adbin, pd.adrelid) as "dflt",
  NULLIF(ARRAY_POSITION(conkey, attnum), -1) AS "keyPos",
  pb.rowfilter as "rowFilter",
  pb.pubname as "publication",
  attidentity <> '' AS "identity"
FROM pg_attribute
JOIN pg_class pc ON pc.oid = attrelid
JOIN pg_namespace pns ON pns.oid = relnamespace
JOIN pg_type pt ON atttypid = pt.oid
LEFT JOIN pg_type elem_pt ON elem_pt.oid = pt.typelem
JOIN pg_publication_tables as pb ON
  pb.schemaname = nspname AND
  pb.tablename = pc.relname AND
  attname = ANY(pb.attnames)
LEFT JOIN pg_constraint pk ON pk.contype = 'p' AND pk.connamespace = relnamespace AND pk.conrelid = attrelid
LEFT JOIN pg_attrdef pd ON pd.adrelid = attrelid AND pd.adnum = attnum
-- a stored generated column only where PostgreSQL 18 publishes it
-- (publish_generated_columns, or a column list that names it): attnames
-- says which; before 18 it would list columns pgoutput never sends
WHERE pb.pubname = ANY (publications)
  AND (attgenerated = '' OR (attgenerated = 's' AND current_setting('server_version_num')::int >= 180000))
ORDER BY nspname, pc.relname),

tables AS (SELECT json_build_object(
  'oid', "oid",
  'schema', "schema",
  'schemaOID', "schemaOID",
  'name', "name",
  'replicaIdentity', "replicaIdentity",
  'columns', json_object_agg(
    DISTINCT
    col,
    jsonb_build_object(
      'pos', "pos",
      'dataType', CASE WHEN "arrayDims" = 0
                       THEN "type"
                       ELSE substring("type" from 2) || repeat('[]', "arrayDims") END,
      'pgTypeClass', "typtype",
      'elemPgTypeClass', "elemTyptype",
      'typeOID', "typeOID",
      'characterMaximumLength', CASE WHEN "typeOID" = 1043 OR "typeOID" = 1042
                                     THEN "maxLen" - 4
                                     ELSE "maxLen" END,
      'notNull', "notNull",
      'dflt', "dflt"
    )
  ),
  'primaryKey', ARRAY( SELECT json_object_keys(
    json_strip_nulls(
      json_object_agg(
        DISTINCT "col", "keyPos" ORDER BY "keyPos"
      )
    )
  )),
  'publications', json_object_agg(
    DISTINCT
    "publication",
    jsonb_build_object('rowFilter', "rowFilter")
  )
) AS "table" FROM published_columns
  GROUP BY "schema", "schemaOID", "name", "oid", "replicaIdentity"),

indexed_columns AS (SELECT
    pg_indexes.schemaname as "schema",
    pg_indexes.tablename as "tableName",
    pg_indexes.indexname as "name",
    index_column.name as "col",
    CASE WHEN pg_index.indoption[index_column.pos-1] & 1 = 1 THEN 'DESC' ELSE 'ASC' END as "dir",
    pg_index.indisunique as "unique",
    pg_index.indisprimary as "isPrimaryKey",
    pg_index.indisreplident as "isReplicaIdentity",
    pg_index.indimmediate as "isImmediate"
  FROM pg_indexes
  JOIN pg_namespace ON pg_indexes.schemaname = pg_namespace.nspname
  JOIN pg_class pc ON
    pc.relname = pg_indexes.indexname
    AND pc.relnamespace = pg_namespace.oid
  JOIN pg_publication_tables as pb ON
    pb.schemaname = pg_indexes.schemaname AND
    pb.tablename = pg_indexes.tablename
  JOIN pg_index ON pg_index.indexrelid = pc.oid
  JOIN LATERAL (
    SELECT array_agg(attname) as attnames, array_agg(attgenerated != '') as generated FROM pg_attribute
      WHERE attrelid = pg_index.indrelid
        AND attnum = ANY( (pg_index.indkey::smallint[] )[:pg_index.indnkeyatts - 1] )
  ) as indexed ON true
  JOIN LATERAL (
    SELECT pg_attribute.attname as name, col.index_pos as pos
      FROM UNNEST( (pg_index.indkey::smallint[])[:pg_index.indnkeyatts - 1] )
        WITH ORDINALITY as col(table_pos, index_pos)
      JOIN pg_attribute ON attrelid = pg_index.indrelid AND attnum = col.table_pos
  ) AS index_column ON true
  LEFT JOIN pg_constraint ON pg_constraint.conindid = pc.oid
  WHERE pb.pubname = ANY (publications)
    AND pg_index.indexprs IS NULL
    AND pg_index.indpred IS NULL
    AND (pg_constraint.contype IS NULL OR pg_constraint.contype IN ('p', 'u'))
    AND indexed.attnames <@ pb.attnames
    AND false = ALL(indexed.generated)
  ORDER BY
    pg_indexes.schemaname,
    pg_indexes.tablename,
    pg_indexes.indexname,
    index_column.pos ASC),

indexes AS (SELECT json_build_object(
    'schema', "schema",
    'tableName', "tableName",
    'name', "name",
    'unique', "unique",
    'isPrimaryKey', "isPrimaryKey",
    'isReplicaIdentity', "isReplicaIdentity",
    'isImmediate', "isImmediate",
    'columns', json_object_agg("col", "dir")
  ) AS index FROM indexed_columns
    GROUP BY "schema", "tableName", "name", "unique",
       "isPrimaryKey", "isReplicaIdentity", "isImmediate")

-- and, beyond zero-cache's fields, the identity columns: their values
-- (given to every existing row when such a column is added) are never
-- streamed, so an added one is backfilled; and the leaf partitions of each
-- partitioned table published through its root: a leaf that joins with
-- rows, or leaves, changes the root's rows without a change in the stream
-- (read from pg_inherits, which locks nothing, unlike pg_partition_tree();
-- a partition being detached CONCURRENTLY has left already)
SELECT json_build_object(
  'tables', COALESCE((SELECT json_agg("table") FROM tables), '[]'::json),
  'indexes', COALESCE((SELECT json_agg("index") FROM indexes), '[]'::json),
  'identities', COALESCE((SELECT json_agg(DISTINCT jsonb_build_object('oid', "oid", 'pos', "pos"))
                            FROM published_columns WHERE "identity"), '[]'::json),
  'partitions', COALESCE((SELECT json_agg(json_build_object('oid', r.oid::int8, 'leaves', r.leaves) ORDER BY r.oid)
                            FROM (SELECT DISTINCT pc.oid,
                                         ARRAY(WITH RECURSIVE tree(relid) AS (
                                                 SELECT i.inhrelid FROM pg_inherits i
                                                  WHERE i.inhparent = pc.oid AND NOT i.inhdetachpending
                                                 UNION ALL
                                                 SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.relid
                                                  WHERE NOT i.inhdetachpending)
                                               SELECT t.relid::int8 FROM tree t JOIN pg_class l ON l.oid = t.relid
                                                WHERE l.relkind = 'r' ORDER BY t.relid) AS leaves
                                    FROM published_columns c JOIN pg_class pc ON pc.oid = c."oid"
                                   WHERE pc.relkind = 'p') r), '[]'::json)
)
$$;

-- The positions that hold the purge floor, so that a restart or a crash does
-- not make the purge forget them: every connected subscriber's acked
-- watermark (mode serving or backup), every snapshot reservation's (mode
-- snapshot), and every subscriber that left less than
-- zero_stream.subscriber_retention ago. The decoder replaces the rows when
-- they change, at most once a second, and reads them back after a restart;
-- see zero_stream.subscribers() for what they hold now.
CREATE TABLE subscriber_positions (
    id text NOT NULL,
    mode text NOT NULL CHECK (mode IN ('serving', 'backup', 'snapshot')),
    replica_version text NOT NULL,
    watermark text NOT NULL,
    connected boolean NOT NULL,
    last_seen timestamptz NOT NULL,
    PRIMARY KEY (id, mode)
);
COMMENT ON TABLE subscriber_positions IS
  'Written by the zero_stream decoder: the purge floor''s subscriber positions, read back after a restart';
COMMENT ON COLUMN subscriber_positions.last_seen IS
  'When it disconnected; for a connected subscriber, when it was saved (a restart counts as its departure)';

-- The published schema as of the last captured change, so that DDL which
-- changes nothing published emits nothing.
CREATE TABLE published_schema_state (
    snapshot text NOT NULL,
    lock boolean PRIMARY KEY DEFAULT true CHECK (lock)
);
INSERT INTO published_schema_state (snapshot)
  VALUES (published_schema(stream_publications())::text);

-- The key that authenticates the DDL capture's messages to the decoder
-- (emit_capture_message): 32 random bytes, read only by the extension's
-- owner. A user catalog table, so that the decoder reads it as the stream
-- is at each message (src/decoder/capture_key.c).
CREATE TABLE capture_key (
    key bytea NOT NULL CHECK (octet_length(key) = 32),
    lock boolean PRIMARY KEY DEFAULT true CHECK (lock)
) WITH (user_catalog_table = true);
REVOKE ALL ON TABLE capture_key FROM PUBLIC;
-- (gen_random_uuid(): 122 bits of pg_strong_random() each)
INSERT INTO capture_key (key)
  VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
COMMENT ON TABLE capture_key IS
  'The key of the HMAC that signs the DDL capture''s messages; only messages that verify reach the change log';

-- Writes a message of the DDL capture into the stream (transactional): the
-- envelope {"mac": hex, "message": content}, where mac is the HMAC-SHA256
-- under capture_key of the prefix, the transaction's id and content, each
-- followed by a zero byte. Any role may call pg_logical_emit_message; the
-- decoder takes only messages that verify (src/decoding/capture_message.c),
-- so no role but the extension's owner writes rows or schema changes into
-- the stream, nor replays one of the capture's messages in another
-- transaction (until the transaction id wraps around).
CREATE FUNCTION emit_capture_message(prefix text, content text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k bytea := (SELECT key FROM zero_stream.capture_key);
    ipad bytea := decode(repeat('36', 64), 'hex');
    opad bytea := decode(repeat('5c', 64), 'hex');
    zero bytea := decode('00', 'hex');
    encoding name := getdatabaseencoding();
BEGIN
    IF k IS NULL THEN
        RAISE EXCEPTION 'zero_stream.capture_key holds no key'
          USING HINT = 'As the extension''s owner: INSERT INTO zero_stream.capture_key (key) VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, ''-'', ''''), ''hex''))';
    END IF;
    FOR i IN 0 .. octet_length(k) - 1 LOOP
        ipad := set_byte(ipad, i, get_byte(ipad, i) # get_byte(k, i));
        opad := set_byte(opad, i, get_byte(opad, i) # get_byte(k, i));
    END LOOP;
    PERFORM pg_logical_emit_message(true, prefix,
        '{"mac":"' || encode(sha256(opad || sha256(ipad
            || convert_to(prefix, encoding) || zero
            || convert_to(pg_current_xact_id()::xid::text, encoding) || zero
            || convert_to(content, encoding) || zero)), 'hex')
        || '","message":' || content || '}');
END
$$;

REVOKE ALL ON FUNCTION emit_capture_message(text, text) FROM PUBLIC;

-- Can the rows of leaf partition leaf of root be carried into the stream
-- (carry_partition_rows)? Not when it holds more than
-- zero_stream.partition_carry_rows rows: it says so, and the decoder resets
-- the root; nor when it is a foreign table (its rows are another server's,
-- read with the extension owner's user mapping).
CREATE FUNCTION partition_rows_carriable(root oid, leaf oid)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    carry_limit bigint := current_setting('zero_stream.partition_carry_rows')::bigint;
    n bigint;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = leaf) = 'f' THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT count(*) FROM (SELECT FROM ONLY %s LIMIT %s) l',
                   leaf::regclass, carry_limit + 1) INTO n;
    IF n > carry_limit THEN
        RAISE WARNING 'partition % has more than % rows (zero_stream.partition_carry_rows): every replica gets table % again in full',
            leaf::regclass, carry_limit, root::regclass
          USING HINT = 'Replicas drop its rows and backfill them. To change only this partition''s rows, a superuser can SET zero_stream.partition_carry_rows above its row count in the session before the command; its rows are then written into the WAL in this transaction.';
        RETURN false;
    END IF;
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION partition_rows_carriable(oid, oid) FROM PUBLIC;

-- Does a table hold a row (its own, not its partitions')?
CREATE FUNCTION relation_has_rows(rel oid)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT FROM ONLY %s)', rel::regclass) INTO found;
    RETURN found;
END
$$;

REVOKE ALL ON FUNCTION relation_has_rows(oid) FROM PUBLIC;

-- The rows of the leaf partition leaf that joined (op 'insert') or left (op
-- 'delete') the table root, published through its root by publications,
-- written into the stream in this transaction as "zero_stream/rows"
-- messages of at most 1,000 rows or ~4 MB (src/decoding/partition_rows.c has their
-- format): an insert carries a joined row's published values, the
-- publications' row filters applied; a delete a left row's key (every value
-- with REPLICA IDENTITY FULL). The decoder stores them as the root's changes
-- at this point of the stream. Called by announce_published_schema in the
-- DDL's transaction, where the command's lock on the partition keeps its
-- rows as they are read until it commits. Returns how many it carried.
CREATE FUNCTION carry_partition_rows(root oid, leaf oid, op text, publications text[])
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- the values as the decoder's session writes them (zs_set_canonical_session)
SET DateStyle = 'ISO, YMD'
SET TimeZone = 'UTC'
SET IntervalStyle = 'postgres'
SET extra_float_digits = 1
SET bytea_output = 'hex'
SET lc_monetary = 'C'
AS $$
DECLARE
    rel record;
    relation json;
    vals text;
    filter text;
    r record;
    batch json[] := '{}';
    batch_bytes bigint := 0;
    n bigint := 0;
BEGIN
    SELECT ns.nspname, c.relname, c.relreplident INTO rel
      FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
     WHERE c.oid = root;
    -- the root as pgoutput describes it: its published columns in order (the
    -- publications' column lists; a stored generated column where
    -- PostgreSQL 18 publishes it), the replica identity's flagged
    WITH published AS (
        SELECT DISTINCT unnest(pt.attnames) AS attname
          FROM pg_publication_tables pt
         WHERE pt.pubname = ANY (publications)
           AND pt.schemaname = rel.nspname AND pt.tablename = rel.relname),
    identity AS (
        SELECT unnest(i.indkey::int2[]) AS attnum
          FROM pg_index i
         WHERE i.indexrelid = pg_get_replica_identity_index(root)),
    cols AS (
        SELECT a.attnum, a.attname, a.atttypid, a.atttypmod,
               rel.relreplident = 'f' OR a.attnum IN (SELECT attnum FROM identity) AS key
          FROM pg_attribute a
         WHERE a.attrelid = root AND a.attnum > 0 AND NOT a.attisdropped
           AND a.attname IN (SELECT attname FROM published)
           AND (a.attgenerated = ''
                OR (a.attgenerated = 's' AND current_setting('server_version_num')::int >= 180000)))
    SELECT json_build_object('schema', rel.nspname, 'name', rel.relname,
                             'replicaIdentity', rel.relreplident,
                             'columns', COALESCE(json_agg(json_build_object(
                                 'name', attname, 'typeOID', atttypid::int8, 'typmod', atttypmod,
                                 'key', key) ORDER BY attnum), '[]')),
           string_agg(CASE WHEN op = 'delete' AND NOT key THEN 'NULL'
                           -- the type's output function, as pgoutput's text (num_nulls:
                           -- a composite of NULLs IS NULL, but is a value)
                           ELSE format('CASE WHEN pg_catalog.num_nulls(t.%1$I) = 1 THEN NULL ELSE pg_catalog.format(''%%s'', t.%1$I) END',
                                       attname) END,
                      ', ' ORDER BY attnum)
      INTO relation, vals
      FROM cols;
    IF op = 'insert' THEN
        SELECT CASE WHEN bool_or(pt.rowfilter IS NULL) THEN NULL
                    ELSE string_agg('(' || pt.rowfilter || ')', ' OR ') END
          INTO filter
          FROM pg_publication_tables pt
         WHERE pt.pubname = ANY (publications)
           AND pt.schemaname = rel.nspname AND pt.tablename = rel.relname;
    END IF;
    -- (an array, not json_build_array: a function takes at most 100 arguments)
    FOR r IN EXECUTE format('SELECT pg_catalog.to_json(ARRAY[%s]::text[]) AS v FROM ONLY %s t%s',
                            COALESCE(vals, ''), leaf::regclass,
                            CASE WHEN filter IS NULL THEN '' ELSE ' WHERE ' || filter END)
    LOOP
        batch := batch || r.v;
        batch_bytes := batch_bytes + octet_length(r.v::text);
        n := n + 1;
        -- messages of at most 1,000 rows or about 4 MB
        IF cardinality(batch) >= 1000 OR batch_bytes >= 4194304 THEN
            PERFORM zero_stream.emit_capture_message('zero_stream/rows',
                json_build_object('root', root::int8, 'op', op, 'relation', relation,
                                  'rows', array_to_json(batch))::text);
            batch := '{}';
            batch_bytes := 0;
        END IF;
    END LOOP;
    IF cardinality(batch) > 0 THEN
        PERFORM zero_stream.emit_capture_message('zero_stream/rows',
            json_build_object('root', root::int8, 'op', op, 'relation', relation,
                              'rows', array_to_json(batch))::text);
    END IF;
    RETURN n;
END
$$;

REVOKE ALL ON FUNCTION carry_partition_rows(oid, oid, text, text[]) FROM PUBLIC;

-- The leaf partitions of targets (the tables themselves, or their own
-- partitions) that the last announced published schema lists under a table
-- published through its root, with that root.
CREATE FUNCTION announced_leaves(targets oid[])
RETURNS TABLE (root oid, leaf oid)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT DISTINCT (p->>'oid')::oid, t.relid::oid
      FROM (SELECT snapshot::json AS s FROM zero_stream.published_schema_state) state
     CROSS JOIN unnest(targets) target
     CROSS JOIN LATERAL pg_partition_tree(target) t
     CROSS JOIN json_array_elements(COALESCE(state.s->'partitions', '[]')) p
     WHERE t.isleaf
       AND t.relid::oid::text IN (SELECT json_array_elements_text(p->'leaves'))
$$;

REVOKE ALL ON FUNCTION announced_leaves(oid[]) FROM PUBLIC;

-- The leaf partitions that a DROP TABLE or a DETACH PARTITION ...
-- CONCURRENTLY takes from a table published through its root (targets: the
-- partitions it names, locked as src/capture_leaving.c says), before it
-- runs: their rows' keys carried as the root's deletes
-- (carry_partition_rows), and the leaves noted in
-- zero_stream.carried_leaves for announce_published_schema at the end of
-- the command, for this transaction or, for DETACH CONCURRENTLY, whose end
-- is in its second transaction, for the session (session_scope). Called by
-- capture_leaving_partitions().
CREATE FUNCTION carry_leaving_partitions(targets oid[], session_scope boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    carried text := NULLIF(current_setting('zero_stream.carried_leaves', true), '');
    r record;
BEGIN
    -- (READ COMMITTED only, as announce_published_schema)
    IF COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) <> 'logical' OR
       current_setting('transaction_isolation') <> 'read committed' OR
       (SELECT backend_type LIKE 'zero\_stream %' FROM pg_stat_get_activity(pg_backend_pid())) THEN
        RETURN;
    END IF;
    FOR r IN SELECT * FROM zero_stream.announced_leaves(targets)
    LOOP
        CONTINUE WHEN NOT zero_stream.partition_rows_carriable(r.root, r.leaf);
        PERFORM zero_stream.carry_partition_rows(r.root, r.leaf, 'delete', zero_stream.stream_publications());
        carried := concat_ws(',', carried, r.leaf::text);
    END LOOP;
    PERFORM set_config('zero_stream.carried_leaves', COALESCE(carried, ''), NOT session_scope);
END
$$;

REVOKE ALL ON FUNCTION carry_leaving_partitions(oid[], boolean) FROM PUBLIC;

-- The leaf partitions that a TRUNCATE empties under a table published through
-- its root, before it runs (targets: the tables it names, locked as
-- src/capture_truncate.c says). pgoutput sends no truncate of a partition
-- published through its root, so the rows' keys of each such leaf, whose
-- root the command does not truncate too, are carried as the root's
-- deletes (carry_partition_rows). A leaf over zero_stream.partition_carry_rows,
-- or truncated in a transaction above READ COMMITTED (whose snapshot would
-- miss rows committed while the command waited for its lock), is listed as
-- emptied in a schema-change message instead: the decoder resets its root.
-- Called by the TRUNCATE hook as the extension's owner.
CREATE FUNCTION carry_truncated_partitions(targets oid[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    emptied int8[] := '{}';
    r record;
BEGIN
    IF COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) <> 'logical' OR
       (SELECT backend_type LIKE 'zero\_stream %' FROM pg_stat_get_activity(pg_backend_pid())) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT * FROM zero_stream.announced_leaves(targets) l
         -- a root truncated too: pgoutput sends its truncate
         WHERE NOT l.root = ANY (targets)
    LOOP
        IF current_setting('transaction_isolation') <> 'read committed'
           OR NOT zero_stream.partition_rows_carriable(r.root, r.leaf) THEN
            emptied := emptied || r.leaf::int8;
            CONTINUE;
        END IF;
        PERFORM zero_stream.carry_partition_rows(r.root, r.leaf, 'delete', zero_stream.stream_publications());
    END LOOP;
    IF cardinality(emptied) > 0 THEN
        PERFORM zero_stream.emit_capture_message('zero_stream/ddl',
            json_build_object('tag', 'TRUNCATE', 'emptiedLeaves', to_json(emptied))::text);
    END IF;
END
$$;

REVOKE ALL ON FUNCTION carry_truncated_partitions(oid[]) FROM PUBLIC;

-- Announce the published schema in the stream if it differs from the last
-- one announced: a transactional logical message the decoder turns into
-- zero's schema-change messages at this point of the stream. tag is the DDL
-- command's (it decides what zero-cache backfills). Returns whether it
-- announced. Used by the event trigger below, and by the decoder at start
-- for changes made without it.
CREATE FUNCTION announce_published_schema(tag text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current text;
    previous text;
    empty_leaves json;
    carried int8[] := '{}';
    r record;
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
    -- the leaves that joined with rows or left a root published in both:
    -- their rows, carried into the stream here (carry_partition_rows), so
    -- that replicas change exactly those; not when the decoder announces
    -- what changed while no capture ran (those rows are long since others),
    -- nor for a leaf that is gone (DROP) or holds more rows than
    -- zero_stream.partition_carry_rows: the decoder resets its root
    -- (only in READ COMMITTED: a higher isolation level's snapshot predates
    -- the command's lock, and would miss what committed while it waited)
    IF previous IS NOT NULL AND current_setting('transaction_isolation') = 'read committed'
       AND NOT COALESCE((SELECT backend_type LIKE 'zero\_stream %'
                         FROM pg_stat_get_activity(pg_backend_pid())), false) THEN
        FOR r IN
            SELECT (c->>'oid')::oid AS root, j.leaf::oid AS leaf, 'insert' AS op
              FROM json_array_elements(current::json->'partitions') c
              JOIN json_array_elements(previous::json->'partitions') p ON p->>'oid' = c->>'oid'
             CROSS JOIN LATERAL (SELECT json_array_elements_text(c->'leaves')
                                 EXCEPT SELECT json_array_elements_text(p->'leaves')) j(leaf)
            UNION ALL
            SELECT (c->>'oid')::oid, j.leaf::oid, 'delete'
              FROM json_array_elements(current::json->'partitions') c
              JOIN json_array_elements(previous::json->'partitions') p ON p->>'oid' = c->>'oid'
             CROSS JOIN LATERAL (SELECT json_array_elements_text(p->'leaves')
                                 EXCEPT SELECT json_array_elements_text(c->'leaves')) j(leaf)
        LOOP
            CONTINUE WHEN r.leaf::int8 IN (SELECT json_array_elements_text(empty_leaves)::int8)
                       OR NOT EXISTS (SELECT FROM pg_class WHERE oid = r.leaf);
            -- carried when the command started (DETACH ... CONCURRENTLY)
            IF r.op = 'delete' AND r.leaf::text = ANY (string_to_array(
                   NULLIF(current_setting('zero_stream.carried_leaves', true), ''), ',')) THEN
                carried := carried || r.leaf::int8;
                CONTINUE;
            END IF;
            CONTINUE WHEN NOT zero_stream.partition_rows_carriable(r.root, r.leaf);
            PERFORM zero_stream.carry_partition_rows(r.root, r.leaf, r.op, zero_stream.stream_publications());
            carried := carried || r.leaf::int8;
        END LOOP;
    END IF;
    UPDATE zero_stream.published_schema_state SET snapshot = current;
    -- the leaves noted at the start are accounted for below, once
    carried := carried || COALESCE(string_to_array(NULLIF(
        current_setting('zero_stream.carried_leaves', true), ''), ',')::int8[], '{}');
    IF current_setting('zero_stream.carried_leaves', true) <> '' THEN
        PERFORM set_config('zero_stream.carried_leaves', '', false);
    END IF;
    -- accountedLeaves: the leaves whose joining or leaving the stream
    -- accounts for (joined empty, or carried); the decoder resets the root
    -- of any other that joined or left (src/decoding/partition_diff.c)
    PERFORM zero_stream.emit_capture_message('zero_stream/ddl',
        json_build_object('tag', tag, 'schema', current::json,
                          'accountedLeaves', (SELECT COALESCE(json_agg(l), '[]'::json)
                                                FROM (SELECT json_array_elements_text(empty_leaves)::int8
                                                      UNION SELECT unnest(carried)) a(l)))::text);
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION announce_published_schema(text) FROM PUBLIC;

-- Runs at the end of every DDL command, as its owner (the superuser who
-- created the extension), so DDL by any role is captured.
CREATE FUNCTION capture_schema_change()
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

REVOKE ALL ON FUNCTION capture_schema_change() FROM PUBLIC;

CREATE EVENT TRIGGER zero_stream_capture_schema_change ON ddl_command_end
    EXECUTE FUNCTION capture_schema_change();

-- At the start of the DDL commands zero-cache's own trigger watches, a
-- message that is no schema change: as in zero-cache's change log, the
-- command's transaction is then stored (an empty begin/commit if nothing
-- published changed), whatever it touches (an unpublished schema, a
-- temporary table, a storage parameter, the first transaction of CREATE
-- INDEX CONCURRENTLY).
CREATE FUNCTION capture_ddl_start()
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

REVOKE ALL ON FUNCTION capture_ddl_start() FROM PUBLIC;

CREATE EVENT TRIGGER zero_stream_capture_ddl_start ON ddl_command_start
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE', 'CREATE INDEX', 'DROP TABLE',
                 'DROP INDEX', 'ALTER PUBLICATION', 'ALTER SCHEMA')
    EXECUTE FUNCTION capture_ddl_start();

-- At the start of a DROP TABLE or an ALTER TABLE (its DETACH PARTITION ...
-- CONCURRENTLY): the partitions it takes from a root published through it,
-- their rows carried before they are gone (src/capture_leaving.c,
-- carry_leaving_partitions). No search_path of its own: it resolves the
-- command's table names as the command does.
CREATE FUNCTION capture_leaving_partitions()
RETURNS event_trigger
LANGUAGE C
SECURITY DEFINER
AS 'MODULE_PATHNAME', 'zs_capture_leaving_partitions';

REVOKE ALL ON FUNCTION capture_leaving_partitions() FROM PUBLIC;

CREATE EVENT TRIGGER zero_stream_capture_leaving_partitions ON ddl_command_start
    WHEN TAG IN ('DROP TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION capture_leaving_partitions();
