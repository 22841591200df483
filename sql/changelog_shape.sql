-- The change log's chunks: the watermark's collation, the view that shows
-- zero-cache's changeLog over them, chunks written through the table AM,
-- or through SPI once the table was altered (a column with a default, a
-- trigger: PostgreSQL applies them), and compressed.
SELECT a.attrelid::regclass AS relation, c.collname AS watermark_collation
  FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
 WHERE a.attrelid IN ('"zero_0/cdc"."changeLog"'::regclass, '"zero_0/cdc"."changeLogChunks"'::regclass)
   AND a.attname IN ('watermark', 'firstWatermark')
 ORDER BY 1, a.attname;
SELECT relkind FROM pg_class WHERE oid = '"zero_0/cdc"."changeLog"'::regclass;

-- purged in bulk from its start: autovacuum reclaims the space unthrottled;
-- the chunk is compressed already: stored out of line without compression
SELECT reloptions FROM pg_class WHERE oid = '"zero_0/cdc"."changeLogChunks"'::regclass;
SELECT attstorage FROM pg_attribute
 WHERE attrelid = '"zero_0/cdc"."changeLogChunks"'::regclass AND attname = 'chunk';
SHOW zero_stream.changelog_chunk_size;

-- everything before is stored: the table's creation and its rows come after
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS start FROM zero_stream.status() \gset
CREATE TABLE shape (id integer PRIMARY KEY, v text);

-- as created: direct inserts (TOASTed values and all), one chunk
INSERT INTO shape SELECT g, repeat('x', 10 * g) FROM generate_series(1, 300) g;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS rows_stored, count(DISTINCT watermark) AS transactions,
       sum(length(change->'new'->>'v')) AS value_bytes
  FROM "zero_0/cdc"."changeLog" WHERE watermark > :'start' COLLATE "C";
SELECT count(*) AS chunks, sum("rows") AS chunk_rows,
       sum("size") > 20 * sum(pg_column_size("chunk")) AS compressed_20x
  FROM "zero_0/cdc"."changeLogChunks" WHERE watermark > :'start' COLLATE "C";

-- a transaction larger than a chunk is split, its rows in order
ALTER SYSTEM SET zero_stream.changelog_chunk_size = '8kB';
SELECT pg_reload_conf();
SELECT pg_sleep(0.2);
SELECT last_watermark AS before_split FROM zero_stream.status() \gset
INSERT INTO shape SELECT g, md5(g::text) FROM generate_series(301, 600) g;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) > 5 AS split, sum("rows") AS chunk_rows, max("size") < 9 * 1024 AS bounded,
       bool_and("firstWatermark" = watermark) AS one_transaction
  FROM "zero_0/cdc"."changeLogChunks" WHERE watermark > :'before_split' COLLATE "C";
SELECT count(*) AS rows_stored,
       bool_and(pos = n - 1) AS positions_in_order
  FROM (SELECT pos, row_number() OVER (ORDER BY pos) AS n
          FROM "zero_0/cdc"."changeLog" WHERE watermark > :'before_split' COLLATE "C") r;
ALTER SYSTEM RESET zero_stream.changelog_chunk_size;
SELECT pg_reload_conf();

-- altered: a new column with a default and an insert trigger
CREATE SCHEMA unpublished;
CREATE TABLE unpublished.stored_counts (n bigint);
INSERT INTO unpublished.stored_counts VALUES (0);
CREATE FUNCTION count_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE unpublished.stored_counts SET n = n + 1;
  RETURN NEW;
END $$;
ALTER TABLE "zero_0/cdc"."changeLogChunks" ADD COLUMN "storedBy" text DEFAULT 'spi';
-- (the ALTER's own transaction stored before the trigger counts)
SELECT zero_stream.wait_for_catchup();
CREATE TRIGGER count_stored AFTER INSERT ON "zero_0/cdc"."changeLogChunks"
  FOR EACH ROW EXECUTE FUNCTION count_stored();
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS altered FROM zero_stream.status() \gset
INSERT INTO shape VALUES (1001, 'a'), (1002, 'b');
UPDATE shape SET v = 'c' WHERE id = 1001;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS rows_stored FROM "zero_0/cdc"."changeLog" WHERE watermark > :'altered' COLLATE "C";
SELECT count(*) = (SELECT n FROM unpublished.stored_counts) AS trigger_saw_every_chunk,
       bool_and("storedBy" = 'spi') AS with_default
  FROM "zero_0/cdc"."changeLogChunks" WHERE watermark > :'altered' COLLATE "C";

-- and back: the trigger gone, the column dropped (still not the created
-- shape: a dropped column stays in the descriptor, so SPI goes on)
DROP TRIGGER count_stored ON "zero_0/cdc"."changeLogChunks";
ALTER TABLE "zero_0/cdc"."changeLogChunks" DROP COLUMN "storedBy";
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS dropped FROM zero_stream.status() \gset
DELETE FROM shape WHERE id > 1000;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS rows_stored, string_agg(change->>'tag', ',' ORDER BY watermark COLLATE "C", pos) AS tags
  FROM "zero_0/cdc"."changeLog" WHERE watermark > :'dropped' COLLATE "C";
SELECT state, last_error IS NULL AS no_error FROM zero_stream.status();
DROP TABLE shape;
DROP SCHEMA unpublished CASCADE;
DROP FUNCTION count_stored();
