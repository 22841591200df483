-- zero_stream 0.4.1 -> 0.5.0 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.5.0'" to load this file. \quit

-- 0.5.0: a partition attached with rows to, detached from or dropped from a
-- table published through its root no longer resets the root in the
-- stream: the DDL capture carries its rows (carry_partition_rows; for a
-- DROP before it runs, capture_leaving_partitions and carry_leaving_partitions),
-- and replicas change exactly those. announce_published_schema is replaced
-- as 0.5.0's install script defines it (its grants stay).

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
            PERFORM pg_logical_emit_message(true, 'zero_stream/rows',
                json_build_object('root', root::int8, 'op', op, 'relation', relation,
                                  'rows', array_to_json(batch))::text);
            batch := '{}';
            batch_bytes := 0;
        END IF;
    END LOOP;
    IF cardinality(batch) > 0 THEN
        PERFORM pg_logical_emit_message(true, 'zero_stream/rows',
            json_build_object('root', root::int8, 'op', op, 'relation', relation,
                              'rows', array_to_json(batch))::text);
    END IF;
    RETURN n;
END
$$;

REVOKE ALL ON FUNCTION carry_partition_rows(oid, oid, text, text[]) FROM PUBLIC;

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
    previous json;
    carry_limit bigint;
    carried text := NULLIF(current_setting('zero_stream.carried_leaves', true), '');
    r record;
    n bigint;
BEGIN
    -- (READ COMMITTED only, as announce_published_schema)
    IF COALESCE(current_setting('effective_wal_level', true), current_setting('wal_level')) <> 'logical' OR
       current_setting('transaction_isolation') <> 'read committed' OR
       (SELECT backend_type LIKE 'zero\_stream %' FROM pg_stat_get_activity(pg_backend_pid())) THEN
        RETURN;
    END IF;
    previous := (SELECT snapshot FROM zero_stream.published_schema_state)::json;
    carry_limit := current_setting('zero_stream.partition_carry_rows')::bigint;
    FOR r IN
        SELECT DISTINCT (p->>'oid')::oid AS root, t.relid::oid AS leaf
          FROM unnest(targets) target
         CROSS JOIN LATERAL pg_partition_tree(target) t
         CROSS JOIN json_array_elements(COALESCE(previous->'partitions', '[]')) p
         WHERE t.isleaf
           AND t.relid::oid::text IN (SELECT json_array_elements_text(p->'leaves'))
    LOOP
        EXECUTE format('SELECT count(*) FROM (SELECT FROM ONLY %s LIMIT %s) l',
                       r.leaf::regclass, carry_limit + 1) INTO n;
        IF n > carry_limit THEN
            RAISE WARNING 'partition % has more than % rows (zero_stream.partition_carry_rows): every replica gets table % again in full',
                r.leaf::regclass, carry_limit, r.root::regclass
              USING HINT = 'Replicas drop its rows and backfill them. To change only this partition''s rows, a superuser can SET zero_stream.partition_carry_rows above its row count in the session before the command; its rows are then written into the WAL in this transaction.';
            CONTINUE;
        END IF;
        PERFORM zero_stream.carry_partition_rows(r.root, r.leaf, 'delete', zero_stream.stream_publications());
        carried := concat_ws(',', carried, r.leaf::text);
    END LOOP;
    PERFORM set_config('zero_stream.carried_leaves', COALESCE(carried, ''), NOT session_scope);
END
$$;

REVOKE ALL ON FUNCTION carry_leaving_partitions(oid[], boolean) FROM PUBLIC;

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
    carried int8[] := '{}';
    carry_limit bigint;
    r record;
    n bigint;
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
        carry_limit := current_setting('zero_stream.partition_carry_rows')::bigint;
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
            EXECUTE format('SELECT count(*) FROM (SELECT FROM ONLY %s LIMIT %s) l',
                           r.leaf::regclass, carry_limit + 1) INTO n;
            IF n > carry_limit THEN
                RAISE WARNING 'partition % has more than % rows (zero_stream.partition_carry_rows): every replica gets table % again in full',
                    r.leaf::regclass, carry_limit, r.root::regclass
                  USING HINT = 'Replicas drop its rows and backfill them. To change only this partition''s rows, a superuser can SET zero_stream.partition_carry_rows above its row count in the session before the command; its rows are then written into the WAL in this transaction.';
                CONTINUE;
            END IF;
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
    PERFORM pg_logical_emit_message(true, 'zero_stream/ddl',
        json_build_object('tag', tag, 'schema', current::json,
                          'accountedLeaves', (SELECT COALESCE(json_agg(l), '[]'::json)
                                                FROM (SELECT json_array_elements_text(empty_leaves)::int8
                                                      UNION SELECT unnest(carried)) a(l)))::text);
    RETURN true;
END
$$;

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
