# zero-stream-replica at its edges: sync started before the server is up
# (it retries with its back-off, says so once, and follows once the server
# starts); a snapshot download cut short by a file size limit (the write's
# own reason, no partial replica left); a change the replica cannot apply
# (the frame, watermark and table named); and refusals that still exit at once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IO::Socket::INET;
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";

# every CLI and helper process is killed when the test ends, even if it dies
my (@clis, @helpers);
END
{
	local $?;
	eval { $_->kill_kill } for @clis;
	for my $pid (@helpers)
	{
		kill 'KILL', $pid;
		waitpid($pid, 0);
	}
}

sub running
{
	my ($h) = @_;
	my $pid = $h->{KIDS}[0]{PID};
	open(my $fh, '<', "/proc/$pid/stat") or return 0;
	my $stat = <$fh>;
	close $fh;
	return $stat =~ /^\d+ \(.*\) [^ZX]/ ? 1 : 0;
}

sub wait_for_log
{
	my ($file, $re) = @_;
	for (1 .. 600)
	{
		return 1 if -f $file && slurp_file($file) =~ $re;
		usleep(100_000);    # poll: until the log matches
	}
	return 0;
}

# exit code, signal and stderr of a CLI run
sub cli_run
{
	my (@cmd) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err, IPC::Run::timeout(40));
	return ($? >> 8, $? & 127, $err);
}

# a table whose replica is far beyond the 64 kB file size limit used below
my $node = zs_new_node('edges', no_extension => 1, before_extension => q{
CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL);
INSERT INTO t SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 4000) g;
});
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;
$node->stop;

# ---------------------------------------------------------------------------
# sync started while nothing listens on the server's port
# ---------------------------------------------------------------------------
my $app = "$dir/app.db";
my $early = IPC::Run::start([ $CLI, 'sync', '--task-id', 'early', "ws://127.0.0.1:$sport", $app ],
	'>', "$dir/early.out", '2>', "$dir/early.log");
push @clis, $early;
# nothing observable ends this: the attempts are not shown, and the note
# must appear once over several of them (3 in 4 s)
usleep(4_000_000);
ok(running($early), 'sync keeps trying while the server is not up');
my $log = slurp_file("$dir/early.log");
like($log,
	qr/server at ws:\/\/127\.0\.0\.1:$sport not reachable \(Connection refused\); retrying with back-off up to \d+ s/,
	'and says why and how it retries');
my @notes = $log =~ /not reachable/g;
is(scalar(@notes), 1, 'once, not at every attempt (3 attempts in 4 s)') or diag($log);

$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
zs_wait_streaming($node);
$node->safe_psql('postgres',
	q{INSERT INTO t SELECT g, repeat('x', g % 50) FROM generate_series(4001, 4100) g; DELETE FROM t WHERE id <= 10});
ok(wait_for_log("$dir/early.log", qr/following \Q$app\E from/), 'once the server is up, sync restores and follows');
zs_replica_equals($node, $app, 'sync started before the server');
$log = slurp_file("$dir/early.log");
@notes = $log =~ /not reachable/g;
is(scalar(@notes), 1, 'the outage was noted once') or diag($log);
$early->signal('INT');
$early->finish;
is($early->result(0), 0, 'SIGINT stops it cleanly');

# ---------------------------------------------------------------------------
# a snapshot download beyond a file size limit
# ---------------------------------------------------------------------------
my $short = "$dir/short.db";
my ($code, $signal, $err);
{
	# as from a login shell: SIGXFSZ kills unless the CLI ignores it
	local $SIG{XFSZ} = 'DEFAULT';
	($code, $signal, $err) = cli_run('bash', '-c', 'ulimit -f 64; exec "$@"', 'bash',
		$CLI, 'sync', '--task-id', 'short', '--idle', '2', "ws://127.0.0.1:$sport", $short);
}
is($signal, 0, 'a write beyond the file size limit does not kill the CLI (SIGXFSZ)');
is($code, 3, 'it exits 3');
like($err, qr/could not write "\Q$short.tmp\E" after \d+ of \d+ bytes: File too large/,
	'and names the file and the write\'s own reason') or diag($err);
ok(!-e $short && !-e "$short.tmp" && !-e "$short-wal" && !-e "$short.tmp-wal",
	'no partial replica is left at the target path or beside it');
($code, $signal, $err) = cli_run($CLI, 'sync', '--task-id', 'short', '--idle', '2', "ws://127.0.0.1:$sport", $short);
is($code, 0, 'without the limit the same sync restores and follows') or diag($err);
zs_replica_equals($node, $short, 'sync after the failed download');

# a change the local replica refuses: the error says where, as the
# replicator worker's context does: the frame, its transaction's watermark
# and the statement, which names the table (a run of inserts into one table
# is written as one statement when the run ends, so the insert's refusal
# may surface at a later message of its transaction, such as its commit)
is(zs_sqlite($short, q{CREATE TRIGGER refuse BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END}),
	'', 'a trigger in the replica refuses inserts');
$node->safe_psql('postgres', q{INSERT INTO t VALUES (5000, 'refused')});
($code, $signal, $err) = cli_run($CLI, 'sync', '--task-id', 'short', '--idle', '2', "ws://127.0.0.1:$sport", $short);
is($code, 3, 'a change the replica cannot apply: exit 3');
like($err,
	qr/zero-stream-replica: applying frame \d+ \(watermark [0-9a-z]+(?:, table public\.t)?\): refused by a trigger \(in: INSERT OR REPLACE INTO "t" /,
	'naming the frame, its watermark and its table') or diag($err);

# status to an output that is full
($code, $signal, $err) = cli_run('bash', '-c', 'exec "$@" > /dev/full', 'bash', $CLI, 'status', $short);
is($code, 3, 'status exits 3 when its output cannot be written');
like($err, qr/could not write the status to standard output: No space left on device/, 'and says why')
  or diag($err);

# ---------------------------------------------------------------------------
# refusals at the first attempt still exit at once; a busy server is retried
# ---------------------------------------------------------------------------
($code, $signal, $err) = cli_run($CLI, 'sync', 'http://127.0.0.1:1', "$dir/none.db");
is($code, 1, 'not a WebSocket URL: exit 1');
($code, $signal, $err) = cli_run($CLI, 'sync', 'ws://no-such-host.invalid:4849', "$dir/none.db");
is($code, 2, 'a host name that does not resolve: exit 2');
like($err, qr/could not resolve "no-such-host\.invalid"/, 'with the reason');

# a web server that is not zero_stream's: 404 to every request, or 503
# while $busy exists
my $busy = "$dir/busy";
my $fake = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 16, ReuseAddr => 1)
  or die "fake server: $!";
my $fake_port = $fake->sockport;
my $test_pid = $$;
my $fake_pid = fork();
defined $fake_pid or die "fork: $!";
if ($fake_pid == 0)
{
	open(STDOUT, '>', '/dev/null');
	open(STDERR, '>', '/dev/null');
	while (getppid() == $test_pid)
	{
		my $c = $fake->accept or next;
		sysread($c, my $request, 65536);
		my $status = -e $busy ? '503 Service Unavailable' : '404 Not Found';
		syswrite($c, "HTTP/1.1 $status\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
		close $c;
	}
	POSIX::_exit(0);
}
push @helpers, $fake_pid;
close $fake;
($code, $signal, $err) = cli_run($CLI, 'sync', "ws://127.0.0.1:$fake_port", "$dir/none.db");
is($code, 2, 'a server that answers 404 to the upgrade: exit 2');
like($err, qr/server refused the upgrade: HTTP\/1\.1 404 Not Found/, 'with its answer') or diag($err);
ok(!-e "$dir/none.db", 'and no file is created');

PostgreSQL::Test::Utils::append_to_file($busy, '');
my $busy_cli = IPC::Run::start([ $CLI, 'sync', "ws://127.0.0.1:$fake_port", "$dir/busy.db" ],
	'>', "$dir/busy.out", '2>', "$dir/busy.log");
push @clis, $busy_cli;
# as above: a window of several attempts, noted once
usleep(2_000_000);
ok(running($busy_cli), 'a server answering 503 is retried on the first attempt too');
$log = slurp_file("$dir/busy.log");
@notes = $log =~ /not reachable/g;
is(scalar(@notes), 1, 'and noted once') or diag($log);
like($log, qr/not reachable \(server refused the upgrade: HTTP\/1\.1 503 Service Unavailable\)/, 'with its answer');
$busy_cli->signal('TERM');
$busy_cli->finish;
is($busy_cli->result(0), 0, 'SIGTERM during the back-off stops it');

$node->stop;
done_testing();
