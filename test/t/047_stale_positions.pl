# Positions that can never come back do not hold the purge floor:
#  - a zero-stream-replica restarted five times on one file (stopped,
#    killed -9) is one subscriber: its default id is derived from the file,
#    so the server holds one position for it, the one it has now, and the
#    purge reaches the lowest live position;
#  - (PostgreSQL 17 and later) after two promotions in a row, no promoted
#    server keeps its own former hold as its old primary's standby (which
#    it reads back from the replicated subscriber_positions), while the
#    hold of its own standby, under the same slot name, is kept; the purge
#    of the second promoted server reaches its backup replica.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;
use StandbyPair;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $CONNECTED = "state NOT IN ('departed', 'restored')";
my $RETENTION = "zero_stream.subscriber_retention = '1h'\n";

sub sql
{
	my ($node, $q) = @_;
	return $node->safe_psql('postgres', $q);
}

sub write_txns
{
	my ($node, $n) = @_;
	sql($node, join ';', map { "INSERT INTO t (v) VALUES ('tx $_')" } 1 .. $n);
	zs_wait_catchup($node);
}

# ---------------------------------------------------------------------------
# 1. one replica file, five processes one after the other
my $node = zs_new_node('restarts', before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)',
	extra_conf => $RETENTION);
my $dir = $node->basedir;
my $file = "$dir/app.db";
my $sport = $node->{zs_server_port};
my %ids;
my $cli;
for my $round (1 .. 5)
{
	$cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'app', "ws://127.0.0.1:$sport", $file ],
		'>', "$dir/cli$round.out", '2>', "$dir/cli$round.log");
	write_txns($node, 10);
	ok(zs_replica_at_head($node, $file, "$dir/cli$round.log"), "round $round: the replica is at the head");
	my $head = sql($node, 'SELECT last_watermark FROM zero_stream.status()');
	ok($node->poll_query_until('postgres',
			qq{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id LIKE 'app-%' AND $CONNECTED AND watermark_acked = '$head'}),
		"round $round: the server has its ack of the head");
	$ids{ sql($node, qq{SELECT id FROM zero_stream.subscribers() WHERE id LIKE 'app-%' AND $CONNECTED}) }++;
	last if $round == 5;
	# stopped, or killed -9 with its connection left for the server to notice
	$round % 2 ? $cli->signal('TERM') : $cli->kill_kill;
	$cli->finish;
}
is(scalar(keys %ids), 1, 'five processes on one file subscribe with one id (' . join(', ', keys %ids) . ')');
like((keys %ids)[0], qr/^app-[0-9a-f]{16}$/, 'the id is the task id and a hash of the file');
write_txns($node, 10);
ok(zs_replica_at_head($node, $file, "$dir/cli5.log"), 'the fifth process follows');
my $head = sql($node, 'SELECT last_watermark FROM zero_stream.status()');
$node->poll_query_until('postgres',
	qq{SELECT watermark_acked = '$head' FROM zero_stream.subscribers() WHERE id LIKE 'app-%' AND $CONNECTED})
  or die 'the server did not get the ack of the head';
zs_wait_backup($node);
is(sql($node, q{SELECT count(*) FROM zero_stream.subscribers() WHERE id LIKE 'app-%'}), '1',
	'subscribers() holds one entry for the file: its connection, none for the processes before it');
my ($rows, $floor, $held) = zs_purge($node);
is($floor, $head, "the purge reaches the lowest live position, the head ($held)");
cmp_ok($rows, '>', 0, "and purges the rows below it ($rows)");
$cli->signal('TERM');
$cli->finish;
is(sql($node, q{SELECT state || ' ' || watermark_acked || ' ' || retained_because FROM zero_stream.subscribers() WHERE id LIKE 'app-%'}),
	"departed $head disconnected", 'once it stops, its one position is retained, and subscribers() says why');
my $other = "$dir/other.db";
IPC::Run::run([ $CLI, 'sync', '--task-id', 'app', '--idle', '2', "ws://127.0.0.1:$sport", $other ],
	'>', "$dir/other.out", '2>', "$dir/other.log");
is(sql($node, q{SELECT count(DISTINCT id) FROM zero_stream.subscribers() WHERE id LIKE 'app-%'}), '2',
	'a replica of another file is another subscriber');
$node->stop;

# ---------------------------------------------------------------------------
# 2. two promotions in a row
SKIP:
{
	skip 'promotions that keep the lineage need failover slots (PostgreSQL 17 and later)', 9
	  unless sp_failover_supported();

	my $a = sp_new_primary('a', before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)',
		extra_conf => $RETENTION);
	my $slot = sp_slot_name($a);
	my $prev = $a;
	my $hold = 'standby ' . $StandbyPair::STANDBY_SLOT;
	for my $name ('b', 'c')
	{
		my $standby = sp_new_standby($prev, $name);
		ok($prev->poll_query_until('postgres',
				qq{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = '$hold' AND retained_because = 'standby'}),
			"$name: its primary holds its backup replica as '$hold' (retained_because standby)");
		ok(sp_wait_synced($standby, slot => $slot, nudge => sub { write_txns($prev, 1) }),
			"$name: it holds a synchronized copy of the slot");
		write_txns($prev, 5);
		# until the standby has replayed the saved positions with its hold
		$prev->poll_query_until('postgres',
			qq{SELECT count(*) = 1 FROM zero_stream.subscriber_positions WHERE id = '$hold'})
		  or die "the primary of $name did not save its hold";
		my $lsn = sql($prev, 'SELECT pg_current_wal_flush_lsn()');
		$standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$lsn'")
		  or die "$name did not replay";
		is(sql($standby, qq{SELECT count(*) FROM zero_stream.subscriber_positions WHERE id = '$hold'}), '1',
			"$name: its replicated subscriber_positions has its own hold");
		$prev->kill9;
		sp_promote($standby);
		is(sql($standby, q{SELECT count(*) FROM zero_stream.subscribers()}), '0',
			"$name, promoted: subscribers() holds no entry for itself as its old primary's standby");
		$prev = $standby;
	}
	# its configuration, the first primary's, names a standby it does not have
	$prev->append_conf('postgresql.conf', "synchronized_standby_slots = ''\n");
	$prev->reload;
	write_txns($prev, 5);
	zs_wait_backup($prev);
	my $backup = sql($prev, 'SELECT backup_watermark FROM zero_stream.status()');
	my ($rows, $floor, $held) = zs_purge($prev);
	is("$floor $held", "$backup backup replica", 'c: the purge reaches its backup replica, the lowest live position');
	$prev->stop;
}

done_testing();
