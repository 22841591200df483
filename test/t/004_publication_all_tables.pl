# A publication FOR ALL TABLES covers the change log itself: our own writes
# must not come back through the stream (origin filter), or every stored
# transaction would produce another one forever.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('alltables',
	extra_conf => "zero_stream.publications = 'everything'\n",
	before_extension => q{
CREATE PUBLICATION everything FOR ALL TABLES;
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE SCHEMA other;
CREATE TABLE other.u (id int PRIMARY KEY);
});

$node->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO other.u VALUES (1);
UPDATE t SET v = 'w' WHERE id <= 10;
DELETE FROM t WHERE id > 90;
});
zs_wait_catchup($node);

my $before = $node->safe_psql('postgres',
	'SELECT transactions_stored || \'|\' || local_commits FROM zero_stream.status()');
is($before =~ /^4\|/ ? 'yes' : $before, 'yes', 'exactly the four user transactions were stored');

is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE change->'relation'->>'schema' = 'zero_0/cdc'
    OR change::text LIKE '%"schema":"zero_0/cdc"%'}),
	'0', 'no change of our own tables is in the log');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'relation'->>'name' = 'u'}),
	'1', 'tables of every schema are streamed');

# idle for a while: nothing new may appear
sleep 2;
$node->safe_psql('postgres', 'CHECKPOINT');
zs_wait_catchup($node);
sleep 1;
my $after = $node->safe_psql('postgres',
	'SELECT transactions_stored || \'|\' || local_commits FROM zero_stream.status()');
is($after, $before, 'no feedback loop: the log does not grow while idle');

my $decoded = $node->safe_psql('postgres',
	"SELECT total_txns FROM pg_stat_replication_slots WHERE slot_name = 'zero_stream_zero_0'");
cmp_ok($decoded, '<=', 10, "our own commits are filtered before decoding ($decoded txns decoded)");

# our UPDATEs of replicationState work although the publication publishes updates
is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM zero_stream.status()'),
	't', 'no error');
zs_check_log_integrity($node, 'all tables');
$node->stop;
done_testing();
