-- Schema changes: the stored JSON of every schema-change tag, in zero-cache's
-- order and fields (oids and the schema's oid vary, so they are masked; so do
-- the backfill's snapshot watermark and the now() it backfills).
CREATE TYPE ddl_mood AS ENUM ('sad', 'ok');
SELECT last_watermark AS start FROM zero_stream.status() \gset

CREATE VIEW ddl_log AS
  SELECT dense_rank() OVER (ORDER BY watermark COLLATE "C") AS tx, pos,
         regexp_replace(regexp_replace(regexp_replace(regexp_replace(change::text,
           '"(oid|relationOID|relationOid|typeOID)":[0-9]{5,}', '"\1":<oid>', 'g'),
           '"schemaOID":[0-9]+', '"schemaOID":<oid>', 'g'),
           '"watermark":"[0-9a-z.]+"', '"watermark":<snapshot>', 'g'),
           '\[(\d+),\d+(\.\d+)?\]', '[\1,<now>]', 'g') AS change
    FROM "zero_0/cdc"."changeLog"
   WHERE watermark > :'start' COLLATE "C"
     AND change->>'tag' NOT IN ('begin', 'commit', 'insert');

-- until the backfills are stored (they follow their DDL asynchronously)
CREATE FUNCTION ddl_wait_for_backfills() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  -- the DDL is stored (and with it its "backfilling" rows) ...
  PERFORM zero_stream.wait_for_catchup();
  -- ... then its backfill
  FOR i IN 1 .. 600 LOOP
    IF NOT EXISTS (SELECT FROM "zero_0/cdc"."backfilling") THEN
      RETURN zero_stream.wait_for_catchup();
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;

-- create-table and create-index (its primary key)
CREATE TABLE ddl_t (id int PRIMARY KEY, a text NOT NULL DEFAULT 'x', m ddl_mood, v varchar(8), tags text[]);
INSERT INTO ddl_t VALUES (1, 'one'), (2, 'two');
-- add-column: a default SQLite takes is kept; now() is backfilled (default
-- dropped): a synthetic transaction with the rows, then backfill-completed
ALTER TABLE ddl_t ADD COLUMN b int4 NOT NULL DEFAULT 7;
ALTER TABLE ddl_t ADD COLUMN c timestamptz DEFAULT now();
SELECT ddl_wait_for_backfills();
-- update-column: a rename, then a type change
ALTER TABLE ddl_t RENAME COLUMN a TO a2;
ALTER TABLE ddl_t ALTER COLUMN b TYPE int8;
-- drop-column
ALTER TABLE ddl_t DROP COLUMN v;
-- create-index (DESC), drop-index, rename-table
CREATE INDEX ddl_t_b_idx ON ddl_t (b DESC, id);
DROP INDEX ddl_t_b_idx;
ALTER TABLE ddl_t RENAME TO ddl_u;
-- update-table-metadata: the replica identity moves to another unique index
CREATE UNIQUE INDEX ddl_u_a2 ON ddl_u (a2);
ALTER TABLE ddl_u REPLICA IDENTITY USING INDEX ddl_u_a2;
-- drop-table (its indexes first)
DROP TABLE ddl_u;
SELECT zero_stream.wait_for_catchup();
SELECT tx, pos, change FROM ddl_log ORDER BY tx, pos;

-- nothing for unpublished tables, nothing for an empty DDL
CREATE SCHEMA ddl_private;
CREATE TABLE ddl_private.t (id int PRIMARY KEY);
ALTER TABLE ddl_private.t ADD COLUMN x int;
COMMENT ON TABLE ddl_private.t IS 'not published';
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS schema_rows_after FROM ddl_log;
