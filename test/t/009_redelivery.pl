# The second line of exactly-once: if decoding ever hands back transactions
# that are already in the change log (here: the replication origin's progress
# is moved backwards while the decoder is down), they are dropped at BEGIN
# because their watermark is not above the stored head.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('redelivery',
	extra_conf => "zero_stream.slot_save_interval = 1h\n",
	before_extension => 'CREATE TABLE t (id int PRIMARY KEY, v text)');

$node->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..50 LOOP INSERT INTO t VALUES (i, 'first'); COMMIT; END LOOP; END $$});
zs_wait_catchup($node);
my $restart_lsn = $node->safe_psql('postgres',
	"SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'");
my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM "zero_0/cdc"."changeLog"');

# an immediate stop keeps the slot's older saved position, as a crash would;
# restart with the decoder held off (its database does not exist) and
# rewind its progress
$node->stop('immediate');
$node->append_conf('postgresql.conf', "zero_stream.database = 'nowhere'\n");
$node->start;
$node->safe_psql('postgres',
	"SELECT pg_replication_origin_advance('zero_stream_zero_0', '$restart_lsn')");
is($node->safe_psql('postgres',
	"SELECT remote_lsn = '$restart_lsn' FROM pg_replication_origin_status s JOIN pg_replication_origin o ON o.roident = s.local_id WHERE o.roname = 'zero_stream_zero_0'"),
	't', 'origin progress rewound to the slot\'s restart point');
my $decoded_before = $node->safe_psql('postgres',
	"SELECT total_txns FROM pg_stat_replication_slots WHERE slot_name = 'zero_stream_zero_0'");

$node->append_conf('postgresql.conf', "zero_stream.database = 'postgres'\n");
$node->restart;
zs_wait_streaming($node);
$node->safe_psql('postgres', q{INSERT INTO t VALUES (51, 'after')});
zs_wait_catchup($node);

my $decoded_after = $node->safe_psql('postgres',
	"SELECT total_txns FROM pg_stat_replication_slots WHERE slot_name = 'zero_stream_zero_0'");
cmp_ok($decoded_after - $decoded_before, '>', 1,
	'stored transactions were decoded again (' . ($decoded_after - $decoded_before) . ')');
is($node->safe_psql('postgres', 'SELECT count(*) FROM "zero_0/cdc"."changeLog"'), $before + 3,
	'only the new transaction was stored');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT change->'new'->>'id' FROM "zero_0/cdc"."changeLog"
  WHERE change->>'tag' = 'insert' GROUP BY 1 HAVING count(*) > 1) d}),
	'0', 'no row is stored twice');
zs_check_log_integrity($node, 'redelivery');

$node->stop;
done_testing();
