# Failover under chaos (PostgreSQL 17 and later): round after round, a load
# of one-row and 10,000-row transactions runs on the primary while a
# zero-stream-replica and a zero-stream-tail follow it; the primary is
# killed with kill -9 (the postmaster and all its processes) at a random
# moment (every other round after the walsender feeding its standby was
# stopped for a moment, so that the primary has committed what the standby will
# never get), its standby is promoted and gets a new standby of its own.
# Each promoted server must:
#  - go on with the same lineage (replicaVersion);
#  - hold every upstream transaction it has in its change log exactly once,
#    whole (one upstream transaction, one stored one) and in commit order;
#  - hold every transaction any subscriber received from the killed
#    primary, the same one (the same number of changes): the decoder sent
#    only what the standby had flushed, so the transactions the standby
#    lost with the crash reached nobody;
#  - be followed on by the replica from its file, never restored.
# ZS_CHAOS_ROUNDS sets the number of rounds (default 10), ZS_TEST_SEED the
# random moments.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use File::Path ();
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use StandbyPair;
use ZeroStreamTest;

if (!sp_failover_supported())
{
	plan skip_all => 'failover slots need PostgreSQL 17 or later (this is PostgreSQL ' . sp_pg_major() . ')';
}

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CDC = '"zero_0/cdc"';
my $ROUNDS = $ENV{ZS_CHAOS_ROUNDS} // 10;
my $seed = $ENV{ZS_TEST_SEED} // int(time);
srand($seed);
note("seed $seed");
my $started = time;

my $primary = sp_new_primary('chaos0',
	extra_conf => "checkpoint_timeout = 30s\nmax_wal_size = 1GB\nrestart_after_crash = off\n",
	before_extension => q{
CREATE TABLE ledger (id bigserial PRIMARY KEY, client int NOT NULL, tx xid8 NOT NULL DEFAULT pg_current_xact_id(), payload text);
CREATE TABLE nudge (id bigserial PRIMARY KEY);
});
my $slot = sp_slot_name($primary);
my $rv = $primary->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $dir = PostgreSQL::Test::Utils::tempdir();

my $single = "$dir/single.sql";
my $big = "$dir/big.sql";
PostgreSQL::Test::Utils::append_to_file($single,
	q{INSERT INTO ledger (client, payload) VALUES (:client_id, md5(random()::text));});
PostgreSQL::Test::Utils::append_to_file($big,
	q{INSERT INTO ledger (client, payload) SELECT :client_id, md5(g::text) FROM generate_series(1, 10000) g;});

sub psql { my ($node, $sql) = @_; return $node->safe_psql('postgres', $sql); }

# about 30 transactions a second, one in 60 of 10,000 rows, until killed
sub start_load
{
	my ($node) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '-n', '-c', '2', '-j', '2', '-T', '300', '-R', '30',
			'-f', "$single\@59", '-f', "$big\@1",
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

my $file = "$dir/chaos.db";
my $clilog = "$dir/cli.log";

sub start_cli
{
	my ($node) = @_;
	return IPC::Run::start([ $CLI, 'sync', '--task-id', 'chaos', "ws://127.0.0.1:$node->{zs_server_port}", $file ],
		'>>', "$dir/cli.out", '2>>', $clilog);
}

sub state_version
{
	return -f $file ? zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') : '';
}

my $tails = 0;

sub start_tail
{
	my ($node, $from) = @_;
	my $base = "$dir/tail" . $tails++;
	my $url = zs_changes_url($node, id => "chaos$tails", taskID => 'chaos-tails', replicaVersion => $rv, watermark => $from);
	return { h => IPC::Run::start([ $TAIL, $url ], '>', "$base.out", '2>', "$base.err"), base => $base };
}

# [watermark, number of data messages] of each whole transaction a tail
# received, in order (a transaction cut by the crash is not counted)
sub tail_transactions
{
	my ($t, $label) = @_;
	my $out = -f "$t->{base}.out" ? slurp_file("$t->{base}.out") : '';
	my ($open, $ndata, $last, $bad, @txns) = (undef, 0, '');
	for my $line (split /\n/, $out)
	{
		# data lines are only counted: JSON::PP is too slow for 10,000-row transactions
		next unless $line =~ /^\{"id":\d+,"msg":\["(\w+)"/;
		my $type = $1;
		if ($type eq 'data') { $ndata++; next; }
		next unless $line =~ /\}\s*$/;	# the last line may be cut
		my $m = eval { decode_json($line) } or next;
		my $env = $m->{msg}[2];
		if ($type eq 'begin') { $open = $env->{commitWatermark}; $ndata = 0; }
		elsif ($type eq 'commit')
		{
			$bad ||= 'commit without its begin' unless defined $open && $env->{watermark} eq $open;
			$bad ||= "$open not after $last" unless ($open cmp $last) > 0;
			push @txns, [ $open, $ndata ];
			$last = $open;
			undef $open;
		}
	}
	ok(!$bad, "$label: the subscriber got whole transactions in order") or diag $bad;
	return \@txns;
}

# the data count of each of @wms in a node's log ('' if it lacks one)
sub log_counts
{
	my ($node, @wms) = @_;
	return {} unless @wms;
	my $list = join ',', map { "('$_')" } @wms;
	my %c = map { split /\|/ } split /\n/, psql($node, qq{
SELECT w.wm || '|' || coalesce((SELECT count(*) FILTER (WHERE change->>'tag' NOT IN ('begin', 'commit')) || ''
                                  FROM $CDC."changeLog" c WHERE c.watermark = w.wm
                                 HAVING count(*) FILTER (WHERE change->>'tag' = 'commit') = 1), 'missing')
  FROM (VALUES $list) w(wm)});
	return \%c;
}

# kill -9 of the postmaster and every process of it, at once: a crash of
# the machine, not a postmaster death its children would notice and act on
sub crash
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	my @children;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		push @children, $1 if defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $pm;
	}
	$node->kill9;
	kill 'KILL', @children;
}

sub check_server
{
	my ($node, $label) = @_;
	is(psql($node, qq{
WITH ins AS MATERIALIZED (
  SELECT watermark, (change->'new'->>'id')::bigint AS id, change->'new'->>'tx' AS tx
    FROM $CDC."changeLog" WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'ledger')
SELECT (SELECT count(*) FROM ledger l LEFT JOIN ins USING (id) WHERE ins.id IS NULL) || ' '
    || (SELECT count(*) FROM (SELECT id FROM ins GROUP BY id HAVING count(*) > 1) d) || ' '
    || (SELECT count(*) FROM ins LEFT JOIN ledger l USING (id) WHERE l.id IS NULL) || ' '
    || (SELECT count(*) FROM (SELECT tx FROM ins GROUP BY tx HAVING count(DISTINCT watermark) > 1) s) || ' '
    || (SELECT count(*) FROM (SELECT watermark FROM ins GROUP BY watermark HAVING count(DISTINCT tx) > 1) m)}),
		'0 0 0 0 0', "$label: every ledger row in the change log once, none it lacks, each upstream transaction one stored one");
	zs_check_log_integrity($node, $label);
}

# ---------------------------------------------------------------------------
my $standby = sp_new_standby($primary, 'chaos1');
ok(sp_wait_synced($standby, slot => $slot, nudge => sub { psql($primary, 'INSERT INTO nudge DEFAULT VALUES') }),
	'the first standby holds a synchronized copy of the slot');
my $cli = start_cli($primary);
# poll: until the replica file has a stateVersion
for (1 .. 600) { last if state_version() ne ''; usleep(100_000); }
isnt(state_version(), '', 'zero-stream-replica restored a replica of the primary');
my @st = stat $file;
my $inode = "$st[0]:$st[1]";

my $from = $rv;					# where the next tail starts
my ($received, $kills, $lost_rounds, $lost_rows) = (0, 0, 0, 0);
for my $round (1 .. $ROUNDS)
{
	my $tail = start_tail($primary, $from);
	$cli = start_cli($primary) if $round > 1;
	my $load = start_load($primary);
	# under load the slot moves, and its copy is synchronized quickly
	sp_wait_synced($standby, slot => $slot) or BAIL_OUT("round $round: no synchronized copy of the slot");
	# and the standby has its own backup replica, for the snapshot
	# reservations zero-stream-replica makes on the promoted server
	$standby->poll_query_until('postgres', q{SELECT backup_state = 'following' FROM zero_stream.status()})
	  or BAIL_OUT("round $round: the standby's backup replica does not follow: "
		  . psql($standby, q{SELECT backup_state || ' ' || coalesce(backup_detail, '') FROM zero_stream.status()}));
	# a random moment into the load: the crash is meant to land anywhere,
	# so there is no state to wait for
	usleep(1_000_000 + int(rand(3_000_000)));
	# every other round the standby falls behind first: the walsender that
	# feeds it is stopped for a moment, so the primary commits what the
	# standby will never have (asynchronous replication), and the decoder
	# must hold that back from every subscriber
	if ($round % 2 == 0)
	{
		my $sender = psql($primary, q{SELECT pid FROM pg_stat_replication WHERE application_name = '} . $standby->name . q{'});
		kill 'STOP', $sender if $sender;
		# the primary commits on meanwhile, for a random moment: how much
		# the standby lacks is left to chance, nothing to wait for
		usleep(500_000 + int(rand(1_000_000)));
	}
	my $had = psql($primary, 'SELECT count(*) FROM ledger');
	my $t0 = time;
	crash($primary);
	$kills++;
	$load->kill_kill;
	my $t1 = time;
	# the tail exits once its connection is gone, having written what it got
	for (1 .. 300)
	{
		last unless $tail->{h}->pumpable;
		usleep(100_000);    # poll: until the tail has exited
	}
	ok(!$tail->{h}->pumpable, "round $round: the subscriber saw the crashed primary's connection end");
	$tail->{h}->kill_kill;
	my $t2 = time;
	$cli->signal('INT');
	$cli->finish;
	note(sprintf('round %d: pgbench %.1f s, tail %.1f s, cli %.1f s', $round, $t1 - $t0, $t2 - $t1, time - $t2));
	my $txns = tail_transactions($tail, "round $round");
	my $sv = state_version();

	sp_promote($standby);
	my $new = $standby;
	is(psql($new, 'SELECT replica_version FROM zero_stream.status()'), $rv, "round $round: promoted, the same lineage");
	my $lost = $had - psql($new, 'SELECT count(*) FROM ledger');
	$lost_rounds++ if $lost > 0;
	$lost_rows += $lost if $lost > 0;
	note("round $round: the promoted server lacks at least $lost of the killed primary's ledger rows") if $lost > 0;
	$standby = sp_new_standby($new, 'chaos' . ($round + 1));
	zs_wait_catchup($new, '300 s');
	check_server($new, "round $round");

	my $counts = log_counts($new, map { $_->[0] } @$txns);
	my @bad = grep { ($counts->{ $_->[0] } // 'missing') ne $_->[1] } @$txns;
	ok(!@bad, "round $round: the " . scalar(@$txns) . " transactions the subscriber got are in the promoted server's log, the same")
	  or diag('not in it or different: ' . join(', ', map { "$_->[0] ($_->[1] changes; log: " . ($counts->{ $_->[0] } // 'missing') . ')' } @bad[ 0 .. ($#bad < 4 ? $#bad : 4) ]));
	$received += @$txns;
	$from = $txns->[-1][0] if @$txns && !@bad;
	my $sv_known = $sv eq $rv ? 'known' : (log_counts($new, $sv)->{$sv} // 'missing');
	isnt($sv_known, 'missing', "round $round: the replica's stateVersion $sv is in the promoted server's log");

	File::Path::rmtree($primary->data_dir);	# the crashed primary is gone for good
	$primary = $new;
}

# ---------------------------------------------------------------------------
# the replica followed every primary from its file
# ---------------------------------------------------------------------------
$cli = start_cli($primary);
zs_wait_catchup($primary);
my $head = psql($primary, 'SELECT last_watermark FROM zero_stream.status()');
# poll: until the replica is at the last primary's head
for (1 .. 1200) { last if state_version() eq $head; usleep(100_000); }
is(state_version(), $head, 'the replica reached the last primary\'s head');
is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(id) FROM ledger}),
	psql($primary, q{SELECT count(*) || ':' || sum(id) FROM ledger}), 'the replica equals the last primary');
@st = stat $file;
is("$st[0]:$st[1]", $inode, 'the replica file was never replaced');
is(zs_sqlite($file, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $rv, 'its replicaVersion never changed');
my $log = slurp_file($clilog);
is(() = $log =~ /restored replicaVersion/g, 1, 'it restored once, at the start');
unlike($log, qr/replacing/, 'it never replaced its file');
is(() = $log =~ /following \Q$file\E from [0-9a-z.]+ \(replicaVersion $rv\)/g, $ROUNDS + 1,
	'it followed each primary on from its stateVersion');
$cli->signal('INT');
$cli->finish;

cmp_ok($kills, '==', $ROUNDS, "$kills primaries killed");
cmp_ok($received, '>', 10 * $ROUNDS, "the subscribers got $received transactions in all");
cmp_ok($lost_rounds, '>', 0, "in $lost_rounds rounds the standby lacked committed transactions ($lost_rows ledger rows at least), none of which reached a subscriber");
diag(sprintf('%d rounds in %.0f s; %d ledger rows; %d transactions received',
		$ROUNDS, time - $started, psql($primary, 'SELECT count(*) FROM ledger'), $received));

$standby->stop;
$primary->stop;
done_testing();
