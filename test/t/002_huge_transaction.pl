# A 2,000,000-row transaction, decoded with logical_decoding_work_mem=64kB,
# is stored whole while the decoder's memory stays bounded: the decoded
# changes go through the spool's temporary file, not RAM.
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

my $rows = $ENV{ZS_HUGE_ROWS} // 2_000_000;
my $node = zs_new_node('huge',
	extra_conf => "logical_decoding_work_mem = 64kB\nshared_buffers = 32MB\n",
	before_extension => 'CREATE TABLE big (id bigint PRIMARY KEY, payload text)');

my $pid = zs_decoder_pid($node);
ok($pid =~ /^\d+$/, "decoder pid $pid");

# sample the decoder's memory while the transaction is inserted and stored
my ($max_rss, $max_anon) = (0, 0);
my ($out, $err);
my $insert = IPC::Run::start(
	[
		'psql', '-X', '-q', '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-c',
		"INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, $rows) g"
	],
	'>', \$out, '2>', \$err);
my $target;
while (1)
{
	my ($rss, $hwm, $anon) = zs_rss_kb($pid);
	last unless defined $rss;
	$max_rss = $rss if $rss > $max_rss;
	$max_anon = $anon if defined $anon && $anon > $max_anon;
	$insert->pump_nb if !defined $target && $insert->pumpable;
	if (!defined $target && !$insert->pumpable)
	{
		$insert->finish;
		is($?, 0, "inserted $rows rows in one transaction") or diag $err;
		$target = $node->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
	}
	last if defined $target && $node->safe_psql('postgres',
		"SELECT confirmed_lsn >= '$target' FROM zero_stream.status()") eq 't';
	usleep(100_000);    # poll: sample the decoder's memory until it has confirmed the insert
}
my ($rss, $hwm, $anon) = zs_rss_kb($pid);
is(zs_decoder_pid($node), $pid, 'the decoder did not restart');

my $stored = $node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE change->>'tag' = 'insert'), count(DISTINCT watermark)
  FROM "zero_0/cdc"."changeLog" WHERE watermark > (SELECT "replicaVersion" FROM "zero_0/cdc"."replicationConfig") COLLATE "C"});
is($stored, "$rows|1", 'all rows stored, in one transaction');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog" c JOIN big b ON b.id = (c.change->'new'->>'id')::bigint
 WHERE c.change->>'tag' = 'insert' AND c.change->'new'->>'payload' = b.payload}),
	$rows, 'stored rows carry the right values');

my $spilled = $node->safe_psql('postgres',
	"SELECT spill_txns > 0 FROM pg_stat_replication_slots WHERE slot_name = 'zero_stream_zero_0'");
is($spilled, 't', 'the reorder buffer spilled (logical_decoding_work_mem = 64kB)');

note "decoder memory: max VmRSS $max_rss kB, VmHWM $hwm kB, max RssAnon $max_anon kB";
# VmHWM also counts the shared memory the decoder writes: the shared buffers
# of 2 M stored rows and the live round (zero_stream.live_buffer, 24 MB);
# the private memory below is what would grow with the transaction
cmp_ok($hwm, '<', 128 * 1024, "decoder peak RSS (VmHWM) $hwm kB stays under 128 MB");
cmp_ok($max_anon, '<', 64 * 1024, "decoder private memory $max_anon kB stays under 64 MB");

zs_check_log_integrity($node, 'huge transaction');
$node->stop;
done_testing();
