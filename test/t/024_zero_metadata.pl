# Zero's metadata, as zero-cache's shard setup creates it: with a custom
# app_id and shard_num, in a database owned by an ordinary role, the decoder
# creates <app>.permissions (one row, hash trigger), <app>_<shard>.clients and
# .mutations owned by the database owner, and the publication
# _<app>_metadata_<shard>, which it streams with the application's: their
# rows reach the change log and the backup replica. A restart changes
# nothing (idempotent: no second row, no schema change, rows kept).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('meta', no_extension => 1, extra_conf => qq{
zero_stream.app_id = 'myapp'
zero_stream.shard_num = 3
zero_stream.database = 'app'
});
$node->safe_psql('postgres', q{
CREATE ROLE app_owner LOGIN;
CREATE DATABASE app OWNER app_owner;
});
$node->safe_psql('app', q{
CREATE TABLE issue (id int PRIMARY KEY, title text);
INSERT INTO issue VALUES (1, 'first');
CREATE EXTENSION zero_stream;
});
$node->poll_query_until('app', q{SELECT state = 'streaming' FROM zero_stream.status()})
  or die 'not streaming';
my $cdc = '"myapp_3/cdc"';
sub sq { return $node->safe_psql('app', $_[0]); }

is(sq(q{SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename) FROM pg_publication_tables
	WHERE pubname = '_myapp_metadata_3'}), 'myapp.permissions,myapp_3.clients,myapp_3.mutations',
	'the metadata publication holds the three tables');
is(sq(q{SELECT zero_stream.stream_publications()::text}), '{_myapp_public_3,_myapp_metadata_3}',
	'the decoder streams it with the application\'s');
is(sq(q{SELECT string_agg(c.relname || ':' || pg_get_userbyid(c.relowner), ',' ORDER BY c.relname)
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname IN ('myapp', 'myapp_3') AND c.relkind = 'r'}),
	'clients:app_owner,mutations:app_owner,permissions:app_owner', 'owned by the database owner');
is(sq(q{SELECT count(*) || ':' || bool_and(permissions IS NULL) FROM myapp.permissions}), '1:true',
	'one permissions row');
is(sq(qq{SELECT "publications"::text FROM $cdc."replicationConfig"}), '{_myapp_metadata_3,_myapp_public_3}',
	'the change log records both publications');

# the app writes them as the database owner (zero's push processor does)
$node->safe_psql('app', q{
SET ROLE app_owner;
UPDATE myapp.permissions SET permissions = '{"tables":{"issue":{}}}';
INSERT INTO myapp_3.clients VALUES ('g1', 'c1', 7, 'u1');
INSERT INTO myapp_3.mutations VALUES ('g1', 'c1', 7, '{"ok":true}');
});
$node->poll_query_until('app', 'SELECT zero_stream.wait_for_catchup()') or die;
is(sq(qq{SELECT string_agg(change->'relation'->>'schema' || '.' || (change->'relation'->>'name'), ',' ORDER BY watermark, pos)
	FROM $cdc."changeLog" WHERE change->>'tag' IN ('insert', 'update')}),
	'myapp.permissions,myapp_3.clients,myapp_3.mutations', 'their changes are streamed');
is(sq(q{SELECT hash = md5(permissions::text) FROM myapp.permissions}), 't', 'the trigger keeps the hash');
$node->poll_query_until('app', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()') or die;
my $replica = $node->data_dir . '/zero_stream/replica.db';
is(zs_sqlite($replica, q{SELECT "lastMutationID" FROM "myapp_3.clients" WHERE "clientID" = 'c1'}), '7',
	'the backup replica has the client row');
like(zs_sqlite($replica, q{SELECT permissions FROM "myapp.permissions"}), qr/"issue"/,
	'the backup replica has the permissions');

# idempotent across restarts
my $rows = sq(qq{SELECT count(*) FROM $cdc."changeLog"});
$node->restart;
$node->poll_query_until('app', q{SELECT state = 'streaming' FROM zero_stream.status()}) or die;
$node->poll_query_until('app', 'SELECT zero_stream.wait_for_catchup()') or die;
is(sq(qq{SELECT count(*) FROM $cdc."changeLog"}), $rows, 'a restart writes nothing to the change log');
is(sq(q{SELECT count(*) || ':' || bool_and(permissions IS NOT NULL) FROM myapp.permissions}), '1:true',
	'still one permissions row, kept');
is(sq(q{SELECT count(*) FROM myapp_3.clients}), '1', 'client rows kept');

$node->safe_psql('app', q{DROP TABLE myapp_3.mutations});
$node->poll_query_until('app', 'SELECT zero_stream.wait_for_catchup()') or die;
is(sq(qq{SELECT count(*) FROM $cdc."changeLog" WHERE change->>'tag' = 'drop-table'
	AND change->'id'->>'name' = 'mutations'}), '1', 'a dropped metadata table is dropped downstream');

# at the next start, the missing table is created again, joins the
# publication, and reaches the stream (its DDL is not ours to filter out)
$node->restart;
$node->poll_query_until('app', q{SELECT state = 'streaming' FROM zero_stream.status()}) or die;
is(sq(q{SELECT count(*) FROM pg_publication_tables WHERE pubname = '_myapp_metadata_3'}), '3',
	'the recreated table is back in the metadata publication');
ok($node->poll_query_until('app', qq{SELECT count(*) = 1 FROM $cdc."changeLog" WHERE change->>'tag' = 'create-table'
	AND change->'spec'->>'name' = 'mutations'}), 'and its create-table is in the stream');
$node->safe_psql('app', q{INSERT INTO myapp_3.mutations VALUES ('g1', 'c1', 8, '{"ok":2}')});
$node->poll_query_until('app', 'SELECT backup_watermark = last_watermark AND zero_stream.wait_for_catchup() FROM zero_stream.status()') or die;
is(zs_sqlite($replica, q{SELECT "mutationID" FROM "myapp_3.mutations"}), '8',
	'the backup replica has the recreated table and its new row');
$node->stop;
done_testing();
