-- Every DML kind, transaction framing, exactly-once storage and TOAST.
CREATE TABLE items (id bigint PRIMARY KEY, label text, qty integer);
CREATE TABLE toasty (id integer PRIMARY KEY, big text, n integer);
ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE SCHEMA private;
CREATE TABLE private.hidden (id integer PRIMARY KEY);

-- the DDL above is stored first (each its own transaction, as zero-cache
-- stores them)
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS start FROM zero_stream.status() \gset

-- stable rendering of the stored change log from :start on
CREATE VIEW log AS
  SELECT dense_rank() OVER (ORDER BY watermark COLLATE "C") AS tx, pos,
         regexp_replace(regexp_replace(regexp_replace(change::text,
           '"relationOid":[0-9]+', '"relationOid":<oid>', 'g'),
           '"(commitLsn|commitEndLsn)":"[0-9A-F]{8}/[0-9A-F]{8}"', '"\1":<lsn>', 'g'),
           '"(commitTime|commitTimeMs|xid)":[0-9]+', '"\1":<n>', 'g') AS change,
         precommit = watermark AS precommit_is_watermark
    FROM "zero_0/cdc"."changeLog"
   WHERE watermark > :'start' COLLATE "C";

INSERT INTO items VALUES (1, 'one', 1), (2, 'two', 2);
UPDATE items SET qty = qty + 10 WHERE id = 1;
UPDATE items SET id = 20 WHERE id = 2;
DELETE FROM items WHERE id = 1;
BEGIN;
INSERT INTO items VALUES (3, 'three', 3);
SAVEPOINT s1;
INSERT INTO items VALUES (4, 'rolled back', 4);
ROLLBACK TO s1;
UPDATE items SET label = 'tres' WHERE id = 3;
COMMIT;
BEGIN;
INSERT INTO items VALUES (5, 'aborted', 5);
ROLLBACK;
INSERT INTO private.hidden VALUES (1);
TRUNCATE items;
INSERT INTO items VALUES (9223372036854775807, 'max', -1);
SELECT zero_stream.wait_for_catchup();

SELECT tx, pos, change, precommit_is_watermark FROM log ORDER BY tx, pos;

-- stored exactly once, in commit order, with begin/commit watermarks equal
SELECT count(*) AS transactions,
       count(*) FILTER (WHERE n_begin = 1 AND n_commit = 1) AS well_formed
  FROM (SELECT watermark,
               count(*) FILTER (WHERE change->>'tag' = 'begin') AS n_begin,
               count(*) FILTER (WHERE change->>'tag' = 'commit') AS n_commit
          FROM "zero_0/cdc"."changeLog" WHERE watermark > :'start' COLLATE "C"
         GROUP BY watermark) t;
SELECT bool_and(change->>'commitLsn' IS NOT NULL) AS lsns,
       bool_and((change->>'commitTimeMs')::bigint = (change->>'commitTime')::bigint / 1000) AS ms
  FROM "zero_0/cdc"."changeLog"
 WHERE watermark > :'start' COLLATE "C" AND change->>'tag' = 'commit';

-- the head and the counters follow
SELECT s.last_watermark = (SELECT max(watermark COLLATE "C") FROM "zero_0/cdc"."changeLog") AS head_is_last,
       r."lastWatermark" = s.last_watermark AS state_row_is_head
  FROM zero_stream.status() s, "zero_0/cdc"."replicationState" r;

-- unchanged TOAST values are left out of "new"; changed ones are sent
SELECT last_watermark AS start FROM zero_stream.status() \gset
INSERT INTO toasty VALUES (1, repeat('x', 10000), 1);
UPDATE toasty SET n = 2;
UPDATE toasty SET big = repeat('y', 3000), n = 3;
SELECT zero_stream.wait_for_catchup();
SELECT change->>'tag' AS tag, (SELECT array_agg(k) FROM json_object_keys(change->'new') k) AS new_columns,
       length(change->'new'->>'big') AS big_length
  FROM "zero_0/cdc"."changeLog"
 WHERE watermark > :'start' COLLATE "C" AND change->>'tag' IN ('insert', 'update')
 ORDER BY watermark COLLATE "C", pos;

-- TRUNCATE of several tables, with its options
CREATE TABLE parent (id int PRIMARY KEY);
CREATE TABLE child (id serial PRIMARY KEY, parent_id int REFERENCES parent);
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS start FROM zero_stream.status() \gset
TRUNCATE parent, toasty RESTART IDENTITY CASCADE;
SELECT zero_stream.wait_for_catchup();
SELECT change->>'cascade' AS cascade, change->>'restartIdentity' AS restart_identity,
       (SELECT array_agg(r->>'name' ORDER BY r->>'name') FROM json_array_elements(change->'relations') r) AS relations
  FROM "zero_0/cdc"."changeLog"
 WHERE watermark > :'start' COLLATE "C" AND change->>'tag' = 'truncate';
