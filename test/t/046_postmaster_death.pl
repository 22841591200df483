# Every worker dies with its postmaster, busy or idle. A kill -9 of the
# postmaster alone (its children live on, as after an OOM kill of it)
# while the decoder stores a large transaction, then while the replicator
# applies one to the backup replica: within 2 s no process of the cluster
# is left, the replica file does not change after that, and the data
# directory starts again at once (an old process still attached would make
# PostgreSQL refuse it). The restarted server stores and applies both
# transactions once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use ZeroStreamTest;

my $ROWS = $ENV{ZS_PM_DEATH_ROWS} // 400_000;
my $BOUND = 2.0;				# seconds: what the issue asks of every worker

my $node = zs_new_node('pmdeath',
	before_extension => 'CREATE TABLE big (id bigint PRIMARY KEY, round int, payload text)');
my $file = $node->data_dir . '/zero_stream/replica.db';
zs_wait_backup($node);

sub status
{
	my ($col) = @_;
	return $node->safe_psql('postgres', "SELECT $col FROM zero_stream.status()");
}

# The postmaster's children, from /proc: (pid => command line)
sub children
{
	my ($pm) = @_;
	my %kids;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $pm;
		my $pid = $1;
		my $cmd = '';
		if (open my $c, '<', "/proc/$pid/cmdline")
		{
			local $/;
			$cmd = <$c> // '';
			$cmd =~ s/\0/ /g;
			$cmd =~ s/\s+$//;
			close $c;
		}
		$kids{$pid} = $cmd;
	}
	return %kids;
}

# The replica file and its WAL as they are on disk: size and mtime of each
sub file_state
{
	return join ' ', map {
		my @st = stat $_;
		@st ? "$st[7]\@$st[9]" : '-'
	} ($file, "$file-wal", "$file-journal");
}

# Is a process alive: a zombie has exited (its new parent reaps it when it
# gets to it)
sub alive
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $line = <$fh> // '';
	close $fh;
	return $line !~ /^\d+ \(.*\) Z /;
}

# kill -9 of the postmaster alone; how long until its last child is gone
# (undef past 10 s), and the children that were still there at $BOUND
sub kill_postmaster
{
	my ($label) = @_;
	my $pm = $node->{_pid};
	my %kids = children($pm);
	ok(scalar(grep { /zero_stream/ } values %kids) >= 3,
		"$label: the zero_stream workers run (" . join(', ', sort grep { /zero_stream/ } values %kids) . ')');
	my $t0 = time;
	$node->kill9;
	my (@late, $gone, %exit);
	while (time - $t0 < 10)
	{
		my @alive = grep { alive($_) } keys %kids;
		$exit{$_} //= time - $t0 for grep { !alive($_) } keys %kids;
		@late = map { $kids{$_} } @alive if time - $t0 <= $BOUND;
		if (!@alive)
		{
			$gone = time - $t0;
			last;
		}
		usleep(20_000);    # poll: until every child has exited (timed: the bound is the test)
	}
	@late = () if defined $gone && $gone <= $BOUND;
	note(sprintf("%s: %.2f s %s", $label, $exit{$_} // -1, $kids{$_})) for sort { ($exit{$a} // 99) <=> ($exit{$b} // 99) } keys %kids;
	ok(defined $gone && $gone <= $BOUND,
		sprintf("%s: every process of the cluster is gone %s after the postmaster's kill -9", $label,
			defined $gone ? sprintf('%.2f s', $gone) : 'not even 10 s'))
	  or diag("still alive at $BOUND s: @late");
	# kill what is left, so that the next start is not refused for it
	kill 'KILL', grep { alive($_) } keys %kids;
	# PostgreSQL refuses a data directory whose postmaster.pid names a
	# process that exists, a zombie too: until its new parent reaps it
	for (1 .. 500)
	{
		last unless kill 0, $pm;
		usleep(20_000);    # poll: until the postmaster is reaped
	}
	note(sprintf("%s: the postmaster was reaped %.2f s after its kill", $label, time - $t0));
	return $gone;
}

sub restart
{
	my ($label) = @_;
	ok($node->start(fail_ok => 1), "$label: the data directory starts again at once");
	zs_wait_ready($node);
	zs_wait_streaming($node);
}

# 1. the decoder busy: the transaction is committed, not yet all stored
$node->safe_psql('postgres',
	"INSERT INTO big SELECT g, 1, md5(g::text) FROM generate_series(1, $ROWS) g");
my $target = $node->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
my $busy = status("confirmed_lsn < '$target'");
note("decoder still decoding or storing at the kill: $busy");
kill_postmaster('decoder busy');
restart('decoder busy');
zs_wait_catchup($node);
is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'insert' AND change->'new'->>'round' = '1'}),
	$ROWS, 'decoder busy: the transaction is stored once after the restart');

# 2. the replicator busy: the decoder has stored the transaction, the
# backup replica applies it
zs_wait_backup($node);
$node->safe_psql('postgres',
	"INSERT INTO big SELECT g, 2, md5(g::text) FROM generate_series($ROWS + 1, 2 * $ROWS) g");
$target = $node->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
my $applying = 0;
for (1 .. 6000)
{
	my $s = status(qq{(confirmed_lsn >= '$target')::int || ' ' || (backup_watermark = last_watermark)::int});
	if ($s eq '1 0')
	{
		$applying = 1;
		last;
	}
	last if $s eq '1 1';
	usleep(10_000);    # poll: until the transaction is stored and the backup replica not yet at it
}
ok($applying, 'replicator busy: the transaction is stored, the backup replica not yet at it');
my $stored = status('last_watermark');
my $gone = kill_postmaster('replicator busy');
my $after_bound = file_state();
# nothing observable ends this: a window for a change to the file that must
# not happen
usleep(2_000_000);
is(file_state(), $after_bound, 'replicator busy: the replica file does not change after the bound');
# (read only now: sqlite3 checkpoints the file's WAL when it closes it)
my $version = zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"');
note("replica at $version when its replicator was gone; the transaction is $stored");
isnt($version, $stored, 'replicator busy: the dead server\'s replicator stopped before committing the transaction');
restart('replicator busy');
zs_wait_backup($node);
is(zs_sqlite($file, 'SELECT count(*) || \':\' || sum(round) FROM big'),
	$node->safe_psql('postgres', 'SELECT count(*) || \':\' || sum(round) FROM big'),
	'replicator busy: the restarted replicator applies the transaction once');

zs_check_log_integrity($node, 'after two postmaster deaths');
$node->stop;
done_testing();
