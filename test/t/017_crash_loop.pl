# A crash loop must not pin WAL: the decoder is killed -9 every 2-5 s under a
# write load for over a minute, and the slot's restart_lsn keeps advancing,
# so retained WAL stays bounded (before each restart re-read everything since
# the first crash, and restart_lsn only moved at the end). Afterwards every
# committed row is in the change log exactly once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use ZeroStreamTest;

my $node = zs_new_node('crashloop',
	extra_conf => "checkpoint_timeout = 30s\nmax_wal_size = 1GB\nrestart_after_crash = on",
	before_extension => q{
CREATE TABLE ledger (id bigserial PRIMARY KEY, client int NOT NULL, payload text);
});

my $script = $node->basedir . '/load.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
INSERT INTO ledger (client, payload)
  SELECT :client_id, repeat(md5(g::text), 2) FROM generate_series(1, 5) g;
});

sub wal_position
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

srand($ENV{ZS_TEST_SEED} // time);
my $start_lsn = wal_position('SELECT pg_current_wal_lsn()');
my @restart_lsns;
my $deadline = time + 75;
my $kills = 0;
my $max_retained = 0;
while (time < $deadline)
{
	my $load = zs_start_pgbench($node, 6, 2, $script);
	# a random moment into the load: the kill is meant to land anywhere in
	# decoding, so there is no state to wait for
	usleep(2_000_000 + int(rand(3_000_000)));
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'")
	  or die 'the decoder did not come back';
	push @restart_lsns, wal_position(
		q{SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'});
	my $now_retained = wal_position(
		q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'});
	$max_retained = $now_retained if $now_retained > $max_retained;
	zs_crash_kill($node, zs_decoder_pid($node));
	$kills++;
	$load->finish;
}
zs_wait_streaming($node);
zs_wait_catchup($node, '300 s');

# once caught up, the next restart point (logged at the latest at the next
# slot save) brings restart_lsn close to the end: no manual CHECKPOINT
my $written = wal_position(qq{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$start_lsn')});
ok($node->poll_query_until('postgres', q{
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) < 64 * 1048576
  FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
	'once caught up, restart_lsn follows without a manual checkpoint');
my $retained = wal_position(
	q{SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'});
my $advances = 0;
for my $i (1 .. $#restart_lsns)
{
	$advances++ if wal_position("SELECT '$restart_lsns[$i]'::pg_lsn > '$restart_lsns[$i - 1]'::pg_lsn") eq 't';
}
diag(sprintf('%d kills, %.0f MB of WAL written, at most %.0f MB retained during the loop, %.1f MB at the end, restart_lsn advanced %d times',
		$kills, $written / 1048576, $max_retained / 1048576, $retained / 1048576, $advances));
cmp_ok($kills, '>=', 12, 'the decoder was killed every few seconds');
cmp_ok($written, '>', 64 * 1048576, 'the load wrote enough WAL to matter');
cmp_ok($advances, '>=', 3,
	'restart_lsn advanced during the crash loop (it never did before)');
cmp_ok($retained, '<', $written / 3, 'retained WAL is bounded, not everything written since the first crash');
cmp_ok($max_retained, '<', $written * 0.8, 'even during the loop, retained WAL stays below what was written');
is(wal_position(q{SELECT retained_wal_bytes < pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') FROM zero_stream.status()}),
	't', 'status() shows the retained WAL');

is($node->safe_psql('postgres', q{
SELECT count(*) FROM ledger l
 WHERE NOT EXISTS (SELECT 1 FROM "zero_0/cdc"."changeLog" c
                    WHERE c.change->>'tag' = 'insert' AND c.change->'relation'->>'name' = 'ledger'
                      AND (c.change->'new'->>'id')::bigint = l.id)}),
	'0', 'every committed row is in the change log');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT change->'new'->>'id' FROM "zero_0/cdc"."changeLog"
                       WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'ledger'
                       GROUP BY 1 HAVING count(*) > 1) t}),
	'0', 'no row is stored twice');
zs_check_log_integrity($node, 'after the crash loop');

$node->stop;
done_testing();
