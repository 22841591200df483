-- Row keys for each replica identity (docs/zero-protocol.md §3.2-3.3).
CREATE TABLE ident_default (id int PRIMARY KEY, v text);
CREATE TABLE ident_full (id int PRIMARY KEY, v text, tags text[]);
ALTER TABLE ident_full REPLICA IDENTITY FULL;
CREATE TABLE ident_index (code text NOT NULL, region int NOT NULL, v text);
CREATE UNIQUE INDEX ident_index_key ON ident_index (code, region);
ALTER TABLE ident_index REPLICA IDENTITY USING INDEX ident_index_key;
CREATE TABLE ident_nothing (id int, v text);
ALTER TABLE ident_nothing REPLICA IDENTITY NOTHING;

SELECT last_watermark AS start FROM zero_stream.status() \gset

INSERT INTO ident_default VALUES (1, 'a');
UPDATE ident_default SET v = 'b';
UPDATE ident_default SET id = 2;
DELETE FROM ident_default;
INSERT INTO ident_full VALUES (1, 'a', '{x,y}');
UPDATE ident_full SET v = 'b';
DELETE FROM ident_full;
INSERT INTO ident_index VALUES ('a', 1, 'x');
UPDATE ident_index SET v = 'y';
UPDATE ident_index SET region = 2;
DELETE FROM ident_index;
INSERT INTO ident_nothing VALUES (1, 'only inserts can be published');
SELECT zero_stream.wait_for_catchup();

SELECT change->>'tag' AS tag,
       change->'relation'->>'name' AS rel,
       change->'relation'->'rowKey' AS row_key,
       change->'relation'->'keyColumns' AS key_columns,
       change->'relation'->>'replicaIdentity' AS identity,
       change->'key' AS key, change->'old' AS old, change->'new' AS new
  FROM "zero_0/cdc"."changeLog"
 WHERE watermark > :'start' COLLATE "C" AND change->>'tag' IN ('insert', 'update', 'delete')
 ORDER BY watermark COLLATE "C", pos;
