# Crash safety: under a pgbench-style load, kill -9 the decoder and stop the
# server in immediate mode at random moments; afterwards every committed
# upstream transaction is in the change log exactly once, in commit order.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $node = zs_new_node('crash', before_extension => q{
CREATE TABLE ledger (id bigserial PRIMARY KEY, client int NOT NULL, payload text);
CREATE TABLE counters (client int PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
INSERT INTO counters SELECT g, 0 FROM generate_series(0, 15) g;
});

my $single = $node->basedir . '/single.sql';
my $multi = $node->basedir . '/multi.sql';
PostgreSQL::Test::Utils::append_to_file($single,
	"INSERT INTO ledger (client, payload) VALUES (:client_id, repeat('s', 40));\n");
PostgreSQL::Test::Utils::append_to_file($multi, q{BEGIN;
INSERT INTO ledger (client, payload) VALUES (:client_id, 'm1'), (:client_id, 'm2');
UPDATE counters SET n = n + 1 WHERE client = :client_id;
INSERT INTO ledger (client, payload) VALUES (:client_id, 'm3');
COMMIT;
});

sub start_load
{
	my ($seconds) = @_;
	return zs_start_pgbench($node, $seconds, 4, "$single\@3", "$multi\@1");
}

srand($ENV{ZS_TEST_SEED} // time);

# Round 1 and 2: kill -9 the decoder while the load runs.
for my $round (1 .. 2)
{
	my $load = start_load(6);
	for my $kill (1 .. 2)
	{
		# a random moment into the load: the kill is meant to land anywhere
		# in decoding, so there is no state to wait for
		usleep(500_000 + int(rand(1_500_000)));
		my $pid;
		$node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'")
		  or die "decoder did not come back";
		$pid = zs_decoder_pid($node);
		ok($pid =~ /^\d+$/, "round $round: decoder is running ($pid)");
		# the postmaster reinitializes after a child's crash; wait for it
		# (a psql started during crash recovery can die of EPIPE, which
		# poll_query_until does not retry: zs_wait_ready's pg_isready first)
		zs_crash_kill($node, $pid);
		$node->poll_query_until('postgres', 'SELECT true') or die "server did not come back";
	}
	$load->finish;
	zs_wait_streaming($node);
}

# Round 3: immediate shutdown in the middle of the load, then restart.
{
	my $load = start_load(8);
	# as above: the shutdown is meant to land at a random point of the load
	usleep(1_000_000 + int(rand(2_000_000)));
	$node->stop('immediate');
	$load->finish;
	$node->start;
	zs_wait_streaming($node);
}

# Round 4: one more load after everything, to prove the stream goes on.
start_load(3)->finish;
zs_wait_catchup($node);

my $committed = $node->safe_psql('postgres', 'SELECT count(*) FROM ledger');
cmp_ok($committed, '>', 1000, "load committed $committed ledger rows");

$node->safe_psql('postgres', q{
CREATE TABLE logged AS
SELECT (change->'new'->>'id')::bigint AS id, (change->'new'->>'client')::int AS client,
       watermark, pos
  FROM "zero_0/cdc"."changeLog"
 WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'ledger'});

is($node->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT id FROM ledger EXCEPT SELECT id FROM logged) t'),
	'0', 'every committed row is in the change log');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT id FROM logged EXCEPT SELECT id FROM ledger) t'),
	'0', 'the change log has no row that was not committed');
is($node->safe_psql('postgres',
	'SELECT count(*) FROM (SELECT id FROM logged GROUP BY id HAVING count(*) > 1) t'),
	'0', 'no row is stored twice');

# each client commits in sequence, so its ids must rise in log order
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (
  SELECT id, lag(id) OVER (PARTITION BY client ORDER BY watermark COLLATE "C", pos) AS prev
    FROM logged) t WHERE prev >= id}),
	'0', 'each client\'s transactions are stored in commit order');

# the counters' updates: one per multi-row transaction, none lost or doubled
is($node->safe_psql('postgres', q{
SELECT (SELECT sum(n) FROM counters) =
       (SELECT count(*) FROM "zero_0/cdc"."changeLog"
         WHERE change->>'tag' = 'update' AND change->'relation'->>'name' = 'counters')}),
	't', 'every counter update is stored exactly once');

zs_check_log_integrity($node, 'after crashes');

my $restarts = () = slurp_file($node->logfile) =~ /zero_stream decoding slot/g;
cmp_ok($restarts, '>=', 5, "the decoder resumed $restarts times");

$node->stop;
done_testing();
