# Laggard disconnection (docs/zero-protocol.md §5.3): a subscriber that had caught
# up and then lags behind the live stream, held back by its own acks, for
# longer than the grace period gets StreamTooFarBehind; one that is still
# catching up from the change log is never disconnected.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IO::Socket::INET;
use IPC::Run;
use Socket qw(SOL_SOCKET SO_RCVBUF);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $node = zs_new_node('laggards',
	extra_conf => "zero_stream.slow_subscriber_grace_period = 2s\nzero_stream.catchup_page_rows = 500\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $n = 0;

sub url
{
	my ($id, $wm) = @_;
	return "ws://127.0.0.1:$port/replication/v6/changes?id=$id&taskID=t&replicaVersion=$rv&watermark=$wm";
}

sub start_tail
{
	my (@args) = @_;
	my $base = $node->basedir . '/tail' . $n++;
	return { h => IPC::Run::start([ $TAIL, @args ], '>', "$base.out", '2>', "$base.err"), base => $base };
}

sub finish_tail
{
	my ($t) = @_;
	$t->{h}->finish;
	return ($? >> 8, slurp_file("$t->{base}.out"));
}

sub load
{
	my ($rows) = @_;
	$node->safe_psql('postgres', qq{
DO \$\$ BEGIN FOR i IN 1..$rows LOOP INSERT INTO t (v) VALUES ('x' || i); COMMIT; END LOOP; END \$\$});
}

# a backlog for the catching-up subscriber
load(1000);
zs_wait_catchup($node);
my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');

my $live = start_tail('--idle', '6', url('live', $head));
my $laggard = start_tail('--no-ack', '--idle', '20', url('laggard', $head));
my $catching_up = start_tail('--no-ack', '--idle', '20', url('catching-up', $rv));
$node->poll_query_until('postgres', q{
SELECT count(*) = 2 FROM zero_stream.subscribers() WHERE id IN ('live', 'laggard') AND state = 'live'})
  or die 'subscribers did not become live';

load(1000);
zs_wait_catchup($node);

my ($rc, $out) = finish_tail($laggard);
is($rc, 3, 'the laggard was ended with an error');
like((split /\n/, $out)[-1], qr/^\{"id":\d+,"msg":\["error",\{"type":3,"message":"lagging for over 2000ms \(\d+ms\)"\}\]\}$/,
	'the laggard got StreamTooFarBehind');
ok($node->log_contains('disconnecting subscriber laggard'), 'the disconnection is logged');

($rc, $out) = finish_tail($live);
my $commits = () = $out =~ /\["commit",/g;
is($commits, 1000, 'the live subscriber received every transaction');

is($node->safe_psql('postgres',
	q{SELECT count(*) FROM zero_stream.subscribers() WHERE id = 'catching-up'}),
	'1', 'a subscriber still catching up is not disconnected');
$catching_up->{h}->kill_kill;

# a subscriber that never reads its socket: its queued output stops at the
# backlog limit (1 MB here) plus at most one message
{
	my $log_offset = -s $node->logfile;
	$node->safe_psql('postgres', "ALTER SYSTEM SET zero_stream.subscriber_backlog_limit = '1MB'");
	$node->reload;
	# the postmaster logs the new value, then signals the server worker,
	# which re-reads it at its next round, long before the backlog below
	$node->wait_for_log(qr/parameter "zero_stream\.subscriber_backlog_limit" changed to "1MB"/, $log_offset);
	my $from = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
	setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096);
	print $s "GET /replication/v6/changes?id=deaf&taskID=t&replicaVersion=$rv&watermark=$from HTTP/1.1\r\n"
	  . "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	  . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
	$node->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..60 LOOP INSERT INTO t (v) VALUES (repeat(md5(i::text), 8000)); COMMIT; END LOOP; END $$});
	zs_wait_catchup($node);
	ok($node->poll_query_until('postgres', q{
SELECT backlog_bytes > 512 * 1024 FROM zero_stream.subscribers() WHERE id = 'deaf'}),
		'the deaf subscriber has a backlog');
	# nothing observable ends this: a moment for the backlog to grow past the
	# limit if the server went on queueing (it must not)
	sleep 1;
	my $backlog = $node->safe_psql('postgres',
		q{SELECT backlog_bytes FROM zero_stream.subscribers() WHERE id = 'deaf'});
	cmp_ok($backlog, '<=', 1024 * 1024 + 300 * 1024,
		"its backlog stops at the limit plus one message ($backlog bytes)");
	close $s;
}

$node->stop;
done_testing();
