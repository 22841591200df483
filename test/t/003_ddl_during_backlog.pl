# Columns added and dropped while the decoder is behind: each row is decoded
# with the table's shape at its own commit (historic catalog snapshots, with
# the system caches invalidated between decoding and storing).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('ddl',
	before_extension => 'CREATE TABLE shapes (id int PRIMARY KEY, a text, b int)');

$node->safe_psql('postgres', 'INSERT INTO shapes VALUES (0, \'before\', 0)');
zs_wait_catchup($node);

# stop the decoder; it comes back after its 5 s restart interval, by which
# time all of this is waiting in the WAL
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'");
$node->safe_psql('postgres', q{
INSERT INTO shapes VALUES (1, 'three columns', 1);
ALTER TABLE shapes ADD COLUMN c text DEFAULT 'NEWCOL';
INSERT INTO shapes VALUES (2, 'four columns', 2, 'c2');
UPDATE shapes SET a = 'updated' WHERE id = 1;
ALTER TABLE shapes DROP COLUMN b;
INSERT INTO shapes VALUES (3, 'b dropped', 'c3');
BEGIN;
ALTER TABLE shapes ADD COLUMN d int;
INSERT INTO shapes VALUES (4, 'same transaction', 'c4', 4);
ALTER TABLE shapes ALTER COLUMN d TYPE bigint;
INSERT INTO shapes VALUES (5, 'after type change', 'c5', 9007199254740993);
COMMIT;
});
my $backlog = $node->safe_psql('postgres',
	'SELECT count(*) FROM pg_stat_activity WHERE backend_type = \'zero_stream decoder\'');
is($backlog, '0', 'the decoder was down while the DDL ran');

zs_wait_streaming($node);
zs_wait_catchup($node);

my $rows = $node->safe_psql('postgres', q{
SELECT change->>'tag', change->'new'::text
  FROM "zero_0/cdc"."changeLog"
 WHERE change->'relation'->>'name' = 'shapes'
 ORDER BY watermark COLLATE "C", pos});
is($rows, join("\n",
	'insert|{"id":0,"a":"before","b":0}',
	'insert|{"id":1,"a":"three columns","b":1}',
	'insert|{"id":2,"a":"four columns","b":2,"c":"c2"}',
	'update|{"id":1,"a":"updated","b":1,"c":"NEWCOL"}',
	'insert|{"id":3,"a":"b dropped","c":"c3"}',
	'insert|{"id":4,"a":"same transaction","c":"c4","d":4}',
	'insert|{"id":5,"a":"after type change","c":"c5","d":9007199254740993}'),
	'each row has the shape of its own time');

zs_check_log_integrity($node, 'ddl backlog');
$node->stop;
done_testing();
