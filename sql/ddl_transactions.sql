-- DDL-only transactions, stored as zero-cache 1.9.0 stores them. Beside each
-- case, zero-cache's own rows for the same statements, captured with
-- test/golden/capture_zero_cache.sh (test/golden/ddl_changelog.jsonl, DDL.md):
-- a transaction of one of the commands its trigger watches is stored even
-- when nothing published changed (an empty begin/commit), COMMENT ON
-- PUBLICATION too, other DDL not at all; under REPLICA IDENTITY FULL the
-- row key is the shortest unique key of NOT NULL columns (ties by name), so
-- update-table-metadata comes where the key changes. LSNs, times, xids and
-- oids are masked on both sides.
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three');
CREATE TABLE u (id int PRIMARY KEY, a int UNIQUE NOT NULL, v text);
INSERT INTO u VALUES (1, 10, 'u1'), (2, 20, 'u2');
CREATE TABLE parted (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
INSERT INTO parted VALUES (1, 1, 'p1'), (2, 50, 'p2'), (3, 99, 'p3');
CREATE SCHEMA other;
CREATE TABLE other.x (id int PRIMARY KEY);
CREATE INDEX other_x_idx ON other.x (id);
INSERT INTO other.x VALUES (1), (2);

CREATE SCHEMA zc;
CREATE TABLE zc.rows (label text, tx int, pos int, change text);
INSERT INTO zc.rows VALUES
  ('L01', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A05C80","commitTime":1796196012130080,"xid":764,"json":"s"}$zc$),
  ('L01', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A05C80","commitEndLsn":"00000000/01A05E18","commitTime":1796196012130080,"commitTimeMs":1796196012130}$zc$),
  ('L02', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A086A8","commitTime":1796196014777233,"xid":768,"json":"s"}$zc$),
  ('L02', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A086A8","commitEndLsn":"00000000/01A08740","commitTime":1796196014777233,"commitTimeMs":1796196014777}$zc$),
  ('L03', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A0C408","commitTime":1796196016999927,"xid":772,"json":"s"}$zc$),
  ('L03', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A0C408","commitEndLsn":"00000000/01A0C5E0","commitTime":1796196016999927,"commitTimeMs":1796196016999}$zc$),
  ('L04', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A15A10","commitTime":1796196019360453,"xid":777,"json":"s"}$zc$),
  ('L04', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A15A10","commitEndLsn":"00000000/01A15FD8","commitTime":1796196019360453,"commitTimeMs":1796196019360}$zc$),
  ('L05', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A18CF0","commitTime":1796196021720157,"xid":781,"json":"s"}$zc$),
  ('L05', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A18CF0","commitEndLsn":"00000000/01A18DB8","commitTime":1796196021720157,"commitTimeMs":1796196021720}$zc$),
  ('L05', 2, 0, $zc${"tag":"begin","commitLsn":"00000000/01A1D5F0","commitTime":1796196021820665,"xid":783,"json":"s"}$zc$),
  ('L05', 2, 1, $zc${"tag":"create-index","spec":{"schema":"public","tableName":"t","name":"t_v_idx","unique":false,"isPrimaryKey":false,"isReplicaIdentity":false,"isImmediate":true,"columns":{"v":"ASC"}}}$zc$),
  ('L05', 2, 2, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A1D5F0","commitEndLsn":"00000000/01A1D658","commitTime":1796196021820665,"commitTimeMs":1796196021820}$zc$),
  ('L06', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A20830","commitTime":1796196024448671,"xid":788,"json":"s"}$zc$),
  ('L06', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A20830","commitEndLsn":"00000000/01A20948","commitTime":1796196024448671,"commitTimeMs":1796196024448}$zc$),
  ('L07', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A233A0","commitTime":1796196027034369,"xid":792,"json":"s"}$zc$),
  ('L07', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A233A0","commitEndLsn":"00000000/01A23478","commitTime":1796196027034369,"commitTimeMs":1796196027034}$zc$),
  ('L08', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A26368","commitTime":1796196029568865,"xid":796,"json":"s"}$zc$),
  ('L08', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A26368","commitEndLsn":"00000000/01A26540","commitTime":1796196029568865,"commitTimeMs":1796196029568}$zc$),
  ('L09', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A28D58","commitTime":1796196032175974,"xid":800,"json":"s"}$zc$),
  ('L09', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A28D58","commitEndLsn":"00000000/01A28DC0","commitTime":1796196032175974,"commitTimeMs":1796196032175}$zc$),
  ('L09b', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A2B5D8","commitTime":1796196034682075,"xid":804,"json":"s"}$zc$),
  ('L09b', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A2B5D8","commitEndLsn":"00000000/01A2B640","commitTime":1796196034682075,"commitTimeMs":1796196034682}$zc$),
  ('L13', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A32A88","commitTime":1796196044076964,"xid":817,"json":"s"}$zc$),
  ('L13', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A32A88","commitEndLsn":"00000000/01A32AD0","commitTime":1796196044076964,"commitTimeMs":1796196044076}$zc$),
  ('L14', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A39278","commitTime":1796196046357184,"xid":821,"json":"s"}$zc$),
  ('L14', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A39278","commitEndLsn":"00000000/01A392E0","commitTime":1796196046357184,"commitTimeMs":1796196046357}$zc$),
  ('L15', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A39C88","commitTime":1796196048669200,"xid":825,"json":"s"}$zc$),
  ('L15', 1, 1, $zc${"tag":"update","relation":{"tag":"relation","relationOid":16385,"schema":"public","name":"t","rowKey":{"columns":["id","v"],"type":"full"},"keyColumns":["id","v"],"replicaIdentity":"full"},"key":{"id":1,"v":"one"},"old":{"id":1,"v":"one"},"new":{"id":1,"v":"after full"}}$zc$),
  ('L15', 1, 2, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A39C88","commitEndLsn":"00000000/01A39CB8","commitTime":1796196048669200,"commitTimeMs":1796196048669}$zc$),
  ('L16', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A40668","commitTime":1796196050953322,"xid":829,"json":"s"}$zc$),
  ('L16', 1, 1, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A40668","commitEndLsn":"00000000/01A406D0","commitTime":1796196050953322,"commitTimeMs":1796196050953}$zc$),
  ('L17', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A470D0","commitTime":1796196053455503,"xid":833,"json":"s"}$zc$),
  ('L17', 1, 1, $zc${"tag":"drop-index","id":{"schema":"public","name":"u_a_key"}}$zc$),
  ('L17', 1, 2, $zc${"tag":"update-table-metadata","table":{"schema":"public","name":"u"},"old":{"schemaOID":2200,"relationOID":16392,"rowKey":{"id":{"attNum":1}}},"new":{"schemaOID":2200,"relationOID":16392,"rowKey":{"a":{"attNum":2}}}}$zc$),
  ('L17', 1, 3, $zc${"tag":"create-index","spec":{"schema":"public","tableName":"u","name":"u_a_key","unique":true,"isPrimaryKey":false,"isReplicaIdentity":true,"isImmediate":true,"columns":{"a":"ASC"}}}$zc$),
  ('L17', 1, 4, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A470D0","commitEndLsn":"00000000/01A47158","commitTime":1796196053455503,"commitTimeMs":1796196053455}$zc$),
  ('L18', 1, 0, $zc${"tag":"begin","commitLsn":"00000000/01A4DF10","commitTime":1796196055870425,"xid":837,"json":"s"}$zc$),
  ('L18', 1, 1, $zc${"tag":"drop-index","id":{"schema":"public","name":"u_a_key"}}$zc$),
  ('L18', 1, 2, $zc${"tag":"create-index","spec":{"schema":"public","tableName":"u","name":"u_a_key","unique":true,"isPrimaryKey":false,"isReplicaIdentity":false,"isImmediate":true,"columns":{"a":"ASC"}}}$zc$),
  ('L18', 1, 3, $zc${"tag":"commit","flags":0,"commitLsn":"00000000/01A4DF10","commitEndLsn":"00000000/01A4DF98","commitTime":1796196055870425,"commitTimeMs":1796196055870}$zc$);

CREATE FUNCTION zc.mask(c text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(c,
    '"(commitLsn|commitEndLsn)":"[0-9A-F/]+"', '"\1":<lsn>', 'g'),
    '"(commitTime|commitTimeMs)":[0-9]+', '"\1":<time>', 'g'),
    '"xid":[0-9]+', '"xid":<xid>', 'g'),
    '"(oid|relationOID|relationOid|typeOID|schemaOID)":[0-9]{4,}', '"\1":<oid>', 'g')
$$;

-- our rows after watermark "after", beside zero-cache's rows for the label
CREATE FUNCTION zc.compare(label text, after text)
RETURNS TABLE (tx bigint, pos int, change text, zero_cache text)
LANGUAGE sql AS $$
  WITH ours AS (
    SELECT dense_rank() OVER (ORDER BY watermark COLLATE "C") AS tx, l.pos, zc.mask(l.change::text) AS change
      FROM "zero_0/cdc"."changeLog" l WHERE watermark > after COLLATE "C"),
  theirs AS (SELECT r.tx, r.pos, zc.mask(r.change) AS change FROM zc.rows r WHERE r.label = compare.label)
  SELECT coalesce(o.tx, t.tx), coalesce(o.pos, t.pos), o.change,
         CASE WHEN o.change = t.change THEN 'same' ELSE coalesce(t.change, '(none)') END
    FROM ours o FULL JOIN theirs t ON t.tx = o.tx AND t.pos = o.pos
   ORDER BY 1, 2
$$;

SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L01 CREATE TABLE in an unpublished schema
BEGIN;
CREATE TABLE other.y (id int);
COMMIT;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L01', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L02 ALTER TABLE SET (fillfactor) on a published table
ALTER TABLE t SET (fillfactor = 70);
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L02', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L03 CREATE TEMP TABLE alone in a transaction
BEGIN;
CREATE TEMP TABLE tmp1 (id int);
COMMIT;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L03', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L04 CREATE TABLE ... PARTITION OF a table published through its root
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200);
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L04', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L05 CREATE INDEX CONCURRENTLY: its first transaction too
CREATE INDEX CONCURRENTLY t_v_idx ON t (v);
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L05', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L06 CREATE INDEX, L07 DROP INDEX, L08 DROP TABLE in the unpublished schema
CREATE INDEX other_x_idx2 ON other.x (id);
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L06', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
DROP INDEX other.other_x_idx2;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L07', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
DROP TABLE other.y;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L08', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L09 ALTER SCHEMA ... RENAME of the unpublished schema, and back
ALTER SCHEMA other RENAME TO other2;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L09', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
ALTER SCHEMA other2 RENAME TO other;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L09b', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L10 CREATE VIEW, L11 CREATE FUNCTION, L12 COMMENT ON TABLE: nothing stored
CREATE VIEW tv AS SELECT * FROM t;
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1';
COMMENT ON TABLE t IS 'x';
SELECT zero_stream.wait_for_catchup();
SELECT count(*) AS stored FROM "zero_0/cdc"."changeLog" WHERE watermark > :'m' COLLATE "C";

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L13 COMMENT ON PUBLICATION (a streamed one)
COMMENT ON PUBLICATION _zero_public_0 IS 'y';
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L13', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L14 REPLICA IDENTITY FULL on a table whose only unique key is its primary key
ALTER TABLE t REPLICA IDENTITY FULL;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L14', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L15 an update under it
UPDATE t SET v = 'after full' WHERE id = 1;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L15', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L16 back to DEFAULT
ALTER TABLE t REPLICA IDENTITY DEFAULT;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L16', :'m');

SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L17 REPLICA IDENTITY USING INDEX (a unique index other than the primary key)
ALTER TABLE u REPLICA IDENTITY USING INDEX u_a_key;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L17', :'m');
SELECT last_watermark AS m FROM zero_stream.status() \gset
-- L18 then FULL: the shortest unique key, by name, is still a (not id)
ALTER TABLE u REPLICA IDENTITY FULL;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('L18', :'m');

-- Where zero-cache is wrong, zero_stream keeps the correct behaviour (its
-- rows below have no zero-cache counterpart in the same transaction):
SELECT last_watermark AS m FROM zero_stream.status() \gset
-- an index rename is stored in its own transaction (zero-cache's trigger
-- does not watch ALTER INDEX: its rows come with the next DDL)
ALTER INDEX t_v_idx RENAME TO t_v_idx2;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('ALTER INDEX', :'m');
-- a published schema renamed: its tables are renamed (zero-cache keeps the
-- old schema name, and its view-syncer fails on it)
CREATE SCHEMA pubs;
CREATE TABLE pubs.s (id int PRIMARY KEY);
ALTER PUBLICATION _zero_public_0 ADD TABLES IN SCHEMA pubs;
-- (its table's backfill, of no rows, stored first)
SELECT zero_stream.wait_for_catchup();
DO $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM "zero_0/cdc"."backfilling");
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
SELECT zero_stream.wait_for_catchup();
SELECT last_watermark AS m FROM zero_stream.status() \gset
ALTER SCHEMA pubs RENAME TO pubs2;
SELECT zero_stream.wait_for_catchup();
SELECT * FROM zc.compare('ALTER SCHEMA', :'m');
ALTER PUBLICATION _zero_public_0 DROP TABLES IN SCHEMA pubs2;
DROP SCHEMA pubs2 CASCADE;

SELECT state, last_error IS NULL AS no_error FROM zero_stream.status();
DROP VIEW tv;
DROP FUNCTION f();
DROP TABLE t, u, parted;
DROP SCHEMA other CASCADE;
DROP SCHEMA zc CASCADE;
