-- zero_stream 0.5.0 -> 0.5.1 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.5.1'" to load this file. \quit

-- 0.5.1: the DDL capture's messages are signed, and the decoder takes only
-- those that verify: before, any role that can call
-- pg_logical_emit_message (PUBLIC, by default) could write rows or schema
-- changes into every replica, or stop the decoder with a malformed one.
-- The messages already in the WAL before this update stay readable (the
-- decoder takes unsigned ones only where the stream has no capture_key).
-- The three functions that emit them are replaced as 0.5.1's install script
-- defines them (their grants stay).
--
-- And a TRUNCATE of a partition of a table published through its root
-- reaches the replicas (carry_truncated_partitions, called by the
-- library's hook before the command): pgoutput sends no truncate for it,
-- and replicas kept its rows for good.

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

CREATE OR REPLACE FUNCTION carry_partition_rows(root oid, leaf oid, op text, publications text[])
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

CREATE OR REPLACE FUNCTION carry_leaving_partitions(targets oid[], session_scope boolean)
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
