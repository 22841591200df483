# Replicas across failures of the other processes: the replicator worker
# killed -9 under load (a crash restart of the cluster), the server worker
# stopped while zero-stream-replica follows, and a new lineage (the slot dropped behind the decoder's back),
# which replaces the backup replica and makes the CLI restore afresh; a
# backup download cut off half-way, which the CLI tries again.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IO::Select;
use IO::Socket::INET;
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";

my $node = zs_new_node('recovery', before_extension => q{
CREATE TABLE items (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO items SELECT g, 0 FROM generate_series(1, 5000) g;
});
my $sport = $node->{zs_server_port};
my $backup = $node->data_dir . '/zero_stream/replica.db';
my $dir = $node->basedir;
my $app = "$dir/app.db";

my $script = "$dir/load.sql";
PostgreSQL::Test::Utils::append_to_file($script, q{\set id random(1, 5000)
UPDATE items SET n = n + 1 WHERE id = :id;
});

sub start_load
{
	my ($seconds) = @_;
	return zs_start_pgbench($node, $seconds, 2, $script);
}

sub worker_pid
{
	my ($type) = @_;
	my $pid = '';
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = '$type'")
	  or die "$type is not running";
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = '$type'");
}

# count and sum of n, as the check of every replica
sub pg_digest
{
	return $node->safe_psql('postgres', "SELECT count(*) || ':' || sum(n) FROM items");
}

sub wait_file_at_head
{
	my ($file, $label) = @_;
	zs_wait_catchup($node);
	my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 600)
	{
		# (sqlite3 would create a missing file)
		return 1 if -s $file && zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') eq $head;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$label: " . zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') . " vs $head");
	return 0;
}

my $cli = IPC::Run::start([ $CLI, 'sync', "ws://127.0.0.1:$sport", $app ],
	'>', "$dir/cli.out", '2>', "$dir/cli.log");

# kill -9 of the replicator under load: PostgreSQL restarts every process
# (the CLI loses its server too); the replicator resumes from its committed
# stateVersion, the CLI reconnects and resumes from its own
my $before_load = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
my $load = start_load(8);
# under load: the replicator and the CLI have each applied some of it
$node->poll_query_until('postgres', qq{
SELECT backup_watermark > '$before_load' COLLATE "C"
   AND EXISTS (SELECT FROM zero_stream.subscribers() WHERE watermark_acked > '$before_load' COLLATE "C")
  FROM zero_stream.status()})
  or die 'the replicator and the CLI did not follow the load';
my $log_offset = -s $node->logfile;
kill 'KILL', worker_pid('zero_stream replicator');
# the crash restart has begun (until then the old server still accepts connections)
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
zs_wait_ready($node);
zs_wait_streaming($node);
# then only the server worker, stopped once the CLI is connected again: it
# is started again 5 s later
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE state IN ('catching up', 'live')})
  or die 'the CLI did not reconnect after the crash restart';
kill 'TERM', worker_pid('zero_stream server');
$load->finish;
ok(wait_file_at_head($backup, 'backup'), 'the backup replica caught up after the crash restart');
is(zs_sqlite($backup, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(),
	'the backup replica equals Postgres after the kill -9');
ok(wait_file_at_head($app, 'app'), 'the CLI reconnected after the server restart and caught up');
is(zs_sqlite($app, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(),
	'the CLI replica equals Postgres: nothing lost or applied twice (sum of increments)');
like(slurp_file("$dir/cli.log"), qr/retrying|closed the connection|connection/i,
	'the CLI noticed the lost connection');

# A new lineage: stop the decoder and drop its slot; the decoder starts a
# new replicaVersion and copies again, the replicator releases the old file,
# and the CLI is told WrongReplicaVersion and restores afresh.
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE state = 'live'})
  or die 'the CLI did not reconnect';
my ($old_rv) = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $decoder = worker_pid('zero_stream decoder');
kill 'TERM', $decoder;
$node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'})
  or die 'decoder did not stop';
$node->safe_psql('postgres', q{SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots});
$node->poll_query_until('postgres',
	"SELECT state = 'streaming' AND replica_version <> '$old_rv' FROM zero_stream.status()")
  or die 'no new lineage';
my $new_rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
$node->safe_psql('postgres', 'UPDATE items SET n = n + 100 WHERE id <= 10');
$node->poll_query_until('postgres', "SELECT backup_state = 'following' FROM zero_stream.status()")
  or die 'the replicator did not follow the new replica';
ok(wait_file_at_head($backup, 'new backup'), 'the replicator follows the new lineage');
is(zs_sqlite($backup, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $new_rv,
	'the backup replica was replaced by the new copy');
is(zs_sqlite($backup, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(),
	'the new backup replica equals Postgres');
ok(wait_file_at_head($app, 'app after new lineage'), 'the CLI restored the new lineage and follows it');
is(zs_sqlite($app, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $new_rv,
	'the CLI replica has the new replicaVersion');
is(zs_sqlite($app, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(), 'and equals Postgres');
like(slurp_file("$dir/cli.log"), qr/error type 1: current replica version is $new_rv \(requested $old_rv\)/,
	'the live CLI was told WrongReplicaVersion, not sent the new lineage\'s transactions');
like(slurp_file("$dir/cli.log"), qr/replacing "\Q$app\E" \(replicaVersion $old_rv at \S+\): the server has replicaVersion $new_rv/,
	'the CLI replaced its replica of the old lineage');
like(slurp_file($node->logfile), qr/backup replica .* follows the change log from $new_rv/,
	'the replicator reopened the replaced file');

# zero_stream.resync(): a deliberate new lineage, with the CLI live again
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE state = 'live'})
  or die 'the CLI did not come back';
$node->safe_psql('postgres', 'SELECT zero_stream.resync()');
$node->poll_query_until('postgres',
	"SELECT state = 'streaming' AND replica_version NOT IN ('$old_rv', '$new_rv') FROM zero_stream.status()")
  or die 'resync did not start a new lineage';
my $resync_rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
$node->safe_psql('postgres', 'UPDATE items SET n = n + 1000 WHERE id <= 5');
$node->poll_query_until('postgres', "SELECT backup_state = 'following' FROM zero_stream.status()")
  or die 'the replicator did not follow after resync';
ok(wait_file_at_head($backup, 'backup after resync'), 'after resync the backup replica follows the new lineage');
is(zs_sqlite($backup, "SELECT (SELECT replicaVersion FROM \"_zero.replicationConfig\") || ' ' || count(*) || ':' || sum(n) FROM items"),
	"$resync_rv " . pg_digest(), 'the resync copied the tables again at the new replicaVersion');
ok(wait_file_at_head($app, 'app after resync'), 'the CLI restored after the resync and follows');
is(zs_sqlite($app, "SELECT (SELECT replicaVersion FROM \"_zero.replicationConfig\") || ' ' || count(*) || ':' || sum(n) FROM items"),
	"$resync_rv " . pg_digest(), 'the CLI replica equals Postgres at the new replicaVersion');
like(slurp_file($node->logfile), qr/resync requested: dropping replication slot "zero_stream_zero_0" and starting a new lineage/,
	'the resync is logged');

$cli->signal('INT');
$cli->finish;

# A TCP proxy in front of the server that cuts the first backup download
# (GET /replica/...) after 8 kB of its answer, as a server restart or a
# broken network would. It listens before the CLI starts; its processes
# leave with POSIX::_exit (the test's END blocks run in this process only),
# write nothing to the TAP stream, and stop when this process is gone.
sub cutting_proxy
{
	my ($listener, $target_port, $marker, $parent) = @_;
	open(STDOUT, '>', '/dev/null');
	open(STDERR, '>', '/dev/null');
	$SIG{CHLD} = 'IGNORE';
	eval {
		while (getppid() == $parent)
		{
			my $client = $listener->accept or next;
			if (fork()) { close $client; next; }
			my $server = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $target_port)
			  or POSIX::_exit(0);
			my ($cut, $sent, $first) = (0, 0, 1);
			my $select = IO::Select->new($client, $server);
		  COPY: while (my @ready = $select->can_read(5))
			{
				last COPY if getppid() == 1;
				for my $fh (@ready)
				{
					my $n = sysread($fh, my $buf, 65536);
					last COPY unless $n;
					if ($fh == $client)
					{
						if ($first && $buf =~ m{^GET /replica/} && !-e $marker)
						{
							open(my $m, '>', $marker) or POSIX::_exit(1);
							close $m;
							$cut = 1;
						}
						$first = 0;
						syswrite($server, $buf);
						next;
					}
					if ($cut && $sent + $n > 8192)
					{
						syswrite($client, substr($buf, 0, 8192 - $sent));
						last COPY;
					}
					$sent += $n;
					syswrite($client, $buf);
				}
			}
			POSIX::_exit(0);
		}
	};
	POSIX::_exit(0);
}

my $proxy_port = PostgreSQL::Test::Cluster::get_free_port();
my $listener = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $proxy_port,
	Listen => 16,
	ReuseAddr => 1,
	Timeout => 1) or die "proxy listener: $!";
my $marker = "$dir/download_cut";
my $test_pid = $$;
my $proxy = fork();
defined $proxy or die "fork: $!";
cutting_proxy($listener, $sport, $marker, $test_pid) if $proxy == 0;
close $listener;
my $cut_app = "$dir/cut.db";
my $cli2 = IPC::Run::start([ $CLI, 'sync', "ws://127.0.0.1:$proxy_port", $cut_app ],
	'>', "$dir/cli2.out", '2>', "$dir/cli2.log");
ok(wait_file_at_head($cut_app, 'after a cut download'), 'a sync whose backup download was cut off restores on the next try');
ok(-e $marker, 'the proxy cut a download');
is(zs_sqlite($cut_app, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(), 'and its replica equals Postgres');
like(slurp_file("$dir/cli2.log"),
	qr/the backup download from \S+ ended after \d+ of \d+ bytes; retrying in \d+ s/,
	'the CLI said why it tries again');
ok(!-e "$cut_app.tmp", 'no partial download is left behind');
$cli2->signal('INT');
$cli2->finish;
kill 'KILL', $proxy;
waitpid($proxy, 0);

# A backup replica lost while its slot lives is reported, and resync rebuilds it
$node->stop;
unlink $backup, "$backup-wal", "$backup-shm";
$node->start;
$node->poll_query_until('postgres', q{SELECT backup_state = 'missing' FROM zero_stream.status()})
  or die 'a missing backup replica is not reported: '
  . $node->safe_psql('postgres', 'SELECT backup_state, backup_detail, backup_hint FROM zero_stream.status()');
is($node->safe_psql('postgres', q{SELECT backup_detail || '|' || backup_hint FROM zero_stream.status()}),
	'the replica file does not exist|SELECT zero_stream.resync() copies it again',
	'a missing backup replica is reported with the way to rebuild it');
$node->safe_psql('postgres', 'SELECT zero_stream.resync()');
$node->poll_query_until('postgres', "SELECT backup_state = 'following' FROM zero_stream.status()")
  or die 'resync did not rebuild the backup replica';
is(zs_sqlite($backup, "SELECT count(*) || ':' || sum(n) FROM items"), pg_digest(), 'resync rebuilt the backup replica');
$node->stop;
done_testing();
