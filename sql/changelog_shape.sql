-- The change log's table: the watermark's collation, and rows written
-- through the table AM's multi-insert, or through SPI once the table was
-- altered (a column with a default, a trigger: PostgreSQL applies them).
SELECT c.collname AS watermark_collation
  FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
 WHERE a.attrelid = '"zero_0/cdc"."changeLog"'::regclass AND a.attname = 'watermark';

-- purged in bulk from its start: autovacuum reclaims the space unthrottled
SELECT reloptions FROM pg_class WHERE oid = '"zero_0/cdc"."changeLog"'::regclass;

-- everything before is stored: the table's creation and its rows come after
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS start FROM zero_stream.status() \gset
CREATE TABLE shape (id integer PRIMARY KEY, v text);

-- as created: multi-insert (TOASTed values and all)
INSERT INTO shape SELECT g, repeat('x', 10 * g) FROM generate_series(1, 300) g;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS rows_stored, count(DISTINCT watermark) AS transactions,
       sum(length(change->'new'->>'v')) AS value_bytes
  FROM "zero_0/cdc"."changeLog" WHERE watermark > :'start' COLLATE "C";

-- altered: a new column with a default and an insert trigger
CREATE SCHEMA unpublished;
CREATE TABLE unpublished.stored_counts (n bigint);
INSERT INTO unpublished.stored_counts VALUES (0);
CREATE FUNCTION count_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE unpublished.stored_counts SET n = n + 1;
  RETURN NEW;
END $$;
ALTER TABLE "zero_0/cdc"."changeLog" ADD COLUMN "storedBy" text DEFAULT 'spi';
-- (the ALTER's own transaction stored before the trigger counts)
SELECT zero_stream.wait_for_catchup();
CREATE TRIGGER count_stored AFTER INSERT ON "zero_0/cdc"."changeLog"
  FOR EACH ROW EXECUTE FUNCTION count_stored();
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS altered FROM zero_stream.status() \gset
INSERT INTO shape VALUES (1001, 'a'), (1002, 'b');
UPDATE shape SET v = 'c' WHERE id = 1001;
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS rows_stored, count(*) FILTER (WHERE "storedBy" = 'spi') AS with_default
  FROM "zero_0/cdc"."changeLog" WHERE watermark > :'altered' COLLATE "C";
SELECT n AS trigger_saw FROM unpublished.stored_counts;

-- and back: the trigger gone, the column dropped (still not the created
-- shape: a dropped column stays in the descriptor, so SPI goes on)
DROP TRIGGER count_stored ON "zero_0/cdc"."changeLog";
ALTER TABLE "zero_0/cdc"."changeLog" DROP COLUMN "storedBy";
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
