# zero_stream.resync() under sustained writes completes while they go on: the
# decoder takes the request between two bounded rounds of work, not only
# when it runs out of WAL (which under a steady load it never does).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZeroStreamTest;

my $node = zs_new_node('resync', before_extension => q{
CREATE TABLE ledger (id bigserial PRIMARY KEY, client int NOT NULL, payload text);
});
my $script = $node->basedir . '/load.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"INSERT INTO ledger (client, payload) VALUES (:client_id, repeat('r', 200));\n");

my $old_rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $load = zs_start_pgbench($node, 30, 4, $script);
ok($node->poll_query_until('postgres', 'SELECT transactions_stored > 100 FROM zero_stream.status()'),
	'the decoder is busy storing the load');

my $t0 = time;
$node->safe_psql('postgres', 'SELECT zero_stream.resync()');
ok($node->poll_query_until('postgres', qq{
SELECT replica_version IS NOT NULL AND replica_version <> '$old_rv' AND state = 'streaming'
  FROM zero_stream.status()}),
	'resync() started a new lineage');
# the outcome, not a time: a decoder that took the request only once it ran
# out of WAL would start the new lineage after the load's 30 s
is($node->safe_psql('postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'INSERT INTO ledger%' AND pid <> pg_backend_pid()}),
	't', 'the new lineage started while the load went on');
diag(sprintf('resync under load took %.1f s', time - $t0));

$load->finish;
zs_wait_catchup($node);
zs_check_log_integrity($node, 'after resync under load');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM ledger l
 WHERE l.id > (SELECT max(id) FROM ledger) - 100
   AND NOT EXISTS (SELECT 1 FROM "zero_0/cdc"."changeLog" c
                    WHERE c.change->>'tag' = 'insert'
                      AND (c.change->'new'->>'id')::bigint = l.id)}),
	'0', 'the last rows written after the resync are in the new log');

$node->stop;
done_testing();
