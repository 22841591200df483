# The subscriber server under abuse: a ping flood from clients
# that never read, slowloris connections up to the pending-connection
# limit, and a few hundred upgraded subscribers that never read, all while
# a well-behaved subscriber receives every transaction of a steady insert
# load (it acknowledges what was committed before the end of each phase
# while the abuse goes on) and GET /keepalive is answered throughout. At
# the end the server worker is the same process and its memory is back
# near where it started. How long a commit takes to reach the subscriber
# meanwhile is a figure for bench/, not an assertion here.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IO::Select;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use POSIX ();
use Socket qw(SOL_SOCKET SO_RCVBUF);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZeroStreamTest;

$SIG{PIPE} = 'IGNORE';

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";

# A few hundred sockets need more than the usual 1024 descriptors in the
# postmaster (PostgreSQL lets external sockets take a third of them); raise
# our soft limit, which the cluster inherits, or use fewer deaf subscribers.
my $more_fds = system('prlimit', "--pid=$$", '--nofile=4096:') == 0;
my $NDEAF = $more_fds ? 300 : 250;
my $MAX_PENDING = 32;
my $MAX_SUBSCRIBERS = $NDEAF + 1;    # the deaf ones and the well-behaved one

my $node = zs_new_node('abuse',
	extra_conf => "zero_stream.replica_file = ''\n"
	  . "zero_stream.max_subscribers = $MAX_SUBSCRIBERS\n"
	  . "zero_stream.max_pending_connections = $MAX_PENDING\n"
	  . "zero_stream.handshake_timeout = 2s\n"
	  . "zero_stream.subscriber_backlog_limit = 64kB\n"
	  . ($more_fds ? "max_files_per_process = 2000\n" : ''),
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $AHEAD = 'c3w5e11264sgsf';    # a watermark ahead of the log: a status message, then nothing

sub server_pid
{
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream server'");
}

sub head
{
	return $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
}

sub upgrade_request
{
	my ($id, $wm) = @_;
	return "GET /replication/v6/changes?id=$id&taskID=t&replicaVersion=$rv&watermark=$wm HTTP/1.1\r\n"
	  . "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	  . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
}

sub connect_server
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 5);
	return $s;
}

# a masked client frame (zero mask: the payload is sent as is)
sub masked
{
	my ($opcode, $payload) = @_;
	return pack('CC', 0x80 | $opcode, 0x80 | length $payload) . "\0\0\0\0" . $payload;
}

# Read an upgrade's 101 head; then frames until a close frame or $secs pass.
sub read_head
{
	my ($s) = @_;
	my $head = '';
	local $SIG{ALRM} = sub { die "no response head\n" };
	alarm 10;
	while ($head !~ /\r\n\r\n$/) { my $c = getc($s); last unless defined $c; $head .= $c; }
	alarm 0;
	return $head;
}

sub read_frames
{
	my ($s, $secs) = @_;
	my @frames;
	local $SIG{ALRM} = sub { die "alarm\n" };
	eval {
		alarm $secs;
		while (1)
		{
			my $h;
			last unless read($s, $h, 2) == 2;
			my ($b0, $b1) = unpack('CC', $h);
			my $len = $b1 & 0x7f;
			if ($len == 126) { read($s, $h, 2); $len = unpack('n', $h); }
			elsif ($len == 127) { read($s, $h, 8); $len = unpack('Q>', $h); }
			my $payload = '';
			read($s, $payload, $len) if $len;
			push @frames, [ $b0 & 0x0f, $payload ];
			last if ($b0 & 0x0f) == 8;
		}
		alarm 0;
	};
	alarm 0;
	return @frames;
}

# --- health checks, and the worker's memory, sampled throughout
my ($checks, $checks_ok, $check_max) = (0, 0, 0);
my @check_failures;

sub keepalive
{
	my ($label) = @_;
	my $t0 = time;
	my $resp = '';
	my $s = connect_server();
	if ($s)
	{
		print $s "GET /keepalive HTTP/1.1\r\nHost: x\r\n\r\n";
		local $SIG{ALRM} = sub { die "timeout\n" };
		eval { alarm 5; local $/; $resp = <$s> // ''; alarm 0; };
		alarm 0;
		close $s;
	}
	my $elapsed = time - $t0;
	$checks++;
	$check_max = $elapsed if $elapsed > $check_max;
	if ($resp =~ m{^HTTP/1.1 200 OK\r\n.*\r\n\r\nOK$}s) { $checks_ok++; }
	else { push @check_failures, "$label: " . ($s ? substr($resp, 0, 40) : "connect: $!"); }
	return $resp;
}

my $pid = server_pid();
my %rss_max;

sub sample_rss
{
	my ($phase) = @_;
	my (undef, undef, $anon) = zs_rss_kb($pid);
	$rss_max{$phase} = $anon if defined $anon && (!defined $rss_max{$phase} || $anon > $rss_max{$phase});
}

# health checks every 200 ms for $secs seconds, sampling memory
sub check_for
{
	my ($phase, $secs) = @_;
	my $end = time + $secs;
	while (time < $end)
	{
		keepalive($phase);
		sample_rss($phase);
		# a sampling interval, not a wait: the checks and samples are taken
		# while an abuse goes on, and nothing ends it but the clock
		usleep(200_000);
	}
}

# What was committed by now reaches the well-behaved subscriber, which
# acknowledges it, while the abuse goes on.
sub good_keeps_up
{
	my ($phase) = @_;
	my $at = head();
	ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM zero_stream.subscribers()
 WHERE id = 'good' AND state NOT IN ('departed', 'restored') AND watermark_acked COLLATE "C" >= '$at'}),
		"$phase: the well-behaved subscriber received what was committed")
	  or diag $node->safe_psql('postgres', q{SELECT id, state, watermark_sent, watermark_acked FROM zero_stream.subscribers() WHERE id = 'good'});
}

# how many of these sockets the server has not closed (each is closed here)
sub still_open
{
	my $open = 0;
	for my $s (@_)
	{
		$s->blocking(0);
		my $buf;
		my $n = sysread($s, $buf, 4096);
		$n = sysread($s, $buf, 4096) while defined $n && $n > 0;
		# EOF or a reset: closed; EAGAIN: still open
		$open++ if !defined $n && $!{EAGAIN};
		close $s;
	}
	return $open;
}

sub log_since
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile);
	return substr($log, $offset);
}

sub wait_for_log
{
	my ($re, $offset, $secs) = @_;
	my $end = time + $secs;
	while (time < $end)
	{
		return 1 if log_since($offset) =~ $re;
		usleep(250_000);    # polling the log for the line
	}
	return 0;
}

# --- warm-up, then the baseline. The history is about 20 MB, and two pages
# of it (what a subscriber that never acks is sent) 16 MB, more than the
# kernel buffers of a socket take (4 MB by default), for the deaf pinger below.
$node->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..50 LOOP
  INSERT INTO t (v) SELECT repeat('h', 4000) FROM generate_series(1, 100); COMMIT;
END LOOP; END $$});
zs_wait_catchup($node);
IPC::Run::run([ $TAIL, '--idle', '1', "ws://127.0.0.1:$port/replication/v6/changes?id=warm&taskID=t&replicaVersion=$rv&watermark=$rv" ],
	'>', \my $warm_out, '2>', \my $warm_err);
keepalive('warm-up');
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')})
  or die 'the warm-up connections did not close';
my (undef, undef, $rss_start) = zs_rss_kb($pid);
my $restarts_start = $node->safe_psql('postgres',
	"SELECT restarts FROM zero_stream.workers() WHERE worker = 'server'");

# --- the well-behaved subscriber, and a steady load of single-row transactions
my $from = head();
my $good_base = $node->basedir . '/good';
my $good = IPC::Run::start(
	[ $TAIL, '--idle', '10',
		"ws://127.0.0.1:$port/replication/v6/changes?id=good&taskID=t&replicaVersion=$rv&watermark=$from" ],
	'>', "$good_base.out", '2>', "$good_base.err");
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'good'})
  or die 'the well-behaved subscriber did not connect';
my $script = $node->basedir . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script, "INSERT INTO t (v) VALUES ('load');\n");
# 100 transactions/s until we stop it (90 s at most)
my ($load_out, $load_err) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '100', '-T', '90', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$load_out, '2>', \$load_err);
check_for('load only', 2);

# ---------------------------------------------------------------- ping floods
my $log_offset = -s $node->logfile;
{
	# a client that never reads but pings: once its output is at the backlog
	# limit (it catches up from the start of the log, more than the socket
	# buffers take), its next ping is a policy violation
	my $pinger = connect_server() or die $!;
	setsockopt($pinger, SOL_SOCKET, SO_RCVBUF, 4096);
	print $pinger upgrade_request('deaf-pinger', $rv);
	my $closed = 0;
	for my $i (1 .. 100)
	{
		syswrite($pinger, masked(9, 'still here'));
		keepalive('deaf pinger');
		sample_rss('deaf pinger');
		if ($i % 5 == 0)
		{
			$closed = $node->safe_psql('postgres',
				q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE id = 'deaf-pinger' AND state NOT IN ('departed', 'restored')}) eq 't';
			last if $closed;
		}
		# pings five a second, under the flood limit: the close is for
		# pinging while the pong waits, which the loop polls for above
		usleep(200_000);
	}
	ok($closed, 'a client pinging but not reading its pongs is closed');
	like(log_since($log_offset),
		qr/closing connection from 127\.0\.0\.1:\d+ \(deaf-pinger\) with code 1008: pings sent while the answer to an earlier one waits behind unread output/,
		'it is logged with its address and why');
	close $pinger;
}
{
	# pings below the rate limit are answered by one pong, for the latest
	my $s = connect_server() or die $!;
	print $s upgrade_request('pings', $AHEAD);
	like(read_head($s), qr{^HTTP/1.1 101 }, 'ping client: upgraded');
	syswrite($s, join('', map { masked(9, "ping$_") } 1 .. 10));
	my @frames = read_frames($s, 1.5);
	my @pongs = grep { $_->[0] == 10 } @frames;
	ok(@pongs >= 1 && @pongs < 10, '10 pings at once: ' . scalar(@pongs) . ' pong(s)');
	is($pongs[-1][1], 'ping10', 'the pong answers the latest ping');
	close $s;

	# a flood, read: closed with 1008 and its reason
	$s = connect_server() or die $!;
	print $s upgrade_request('flood-reader', $AHEAD);
	read_head($s);
	syswrite($s, masked(9, 'p' x 125) x 200);
	@frames = read_frames($s, 5);
	my ($close) = grep { $_->[0] == 8 } @frames;
	is($close ? unpack('n', $close->[1]) . ' ' . substr($close->[1], 2) : 'no close frame',
		'1008 Error: more than 50 pings and pongs in one second', 'ping flood: closed with 1008');
	close $s;
}

# A client that floods 125-byte pings and never reads, reconnecting when
# closed, for 6 s (in a child process, while we check the server).
my $flood_file = $node->basedir . '/flood.count';
my $flooder = fork();
die "fork: $!" unless defined $flooder;
if ($flooder == 0)
{
	local $SIG{ALRM} = sub { POSIX::_exit(3) };
	alarm 20;
	my $burst = masked(9, 'p' x 125) x 500;
	my ($conns, $bytes) = (0, 0);
	my $end = time + 6;
	while (time < $end && $conns < 300)
	{
		my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 2);
		# a refused connect is retried after a pause, as a client would; the
		# flood lasts a fixed time by design
		if (!$s) { usleep(20_000); next; }
		setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096);
		$conns++;
		syswrite($s, upgrade_request("flood$conns", $from));
		while (time < $end)
		{
			my $w = syswrite($s, $burst);
			last unless defined $w;
			$bytes += $w;
		}
		close $s;
		usleep(20_000);    # a reconnecting client's pause, as above
	}
	open my $fh, '>', $flood_file or POSIX::_exit(2);
	print $fh "$conns $bytes\n";
	close $fh;
	POSIX::_exit(0);
}

check_for('ping flood', 7);
good_keeps_up('ping flood');
waitpid($flooder, 0);
is($? >> 8, 0, 'the flooding client ended by itself');
my ($flood_conns, $flood_bytes) = split ' ', slurp_file($flood_file);
note "ping flood: $flood_conns connections, $flood_bytes bytes of pings sent";
cmp_ok($flood_conns, '>', 1, "the flooder was closed and reconnected ($flood_conns connections)");
{
	# one line per address and 10 s: the floods were counted, not logged one by one
	my $log = log_since($log_offset);
	my @lines = $log =~ /^.*closing connection from 127\.0\.0\.1:\d+ \([-\w]+\) with code 1008: .*$/mg;
	cmp_ok(scalar(@lines), '<=', 2, 'policy violations from one address: ' . scalar(@lines) . ' line(s) for '
		  . ($flood_conns + 2) . ' connections');
	ok(wait_for_log(qr/^.*LOG:  (\d+) more policy violations from 127\.0\.0\.1 were not logged$/m, $log_offset, 12),
		'the others are counted in a line of their own');
}

# ---------------------------------------------------------------- slowloris
$log_offset = -s $node->logfile;
{
	# half-sent request heads up to the pending-connection limit, trickling bytes
	my @slow;
	for (1 .. $MAX_PENDING)
	{
		my $s = connect_server() or die $!;
		syswrite($s, "GET /keepalive HTTP/1.1\r\nHost: x\r\n");
		push @slow, $s;
	}
	# all of them pending, and older than the 100 ms below which none is evicted
	$node->poll_query_until('postgres', qq{
SELECT count(*) >= $MAX_PENDING FROM zero_stream.subscribers()
 WHERE state = 'connecting' AND connected_since < now() - interval '100 ms'})
	  or die 'the slowloris connections are not all pending';
	like(keepalive('slowloris'), qr{^HTTP/1.1 200 OK}, 'health check with the pending pool full of slowloris: 200');

	# keep trickling header bytes: every one is closed anyway, by the
	# handshake timeout if not replaced by a newer connection before
	my $end = time + 3;
	while (time < $end)
	{
		syswrite($_, "X-a: b\r\n") for @slow;
		keepalive('slowloris');
		sample_rss('slowloris');
		# trickling is the abuse: a line every 250 ms, for longer than
		# zero_stream.handshake_timeout; the closes are checked after it
		usleep(250_000);
	}
	is(still_open(@slow), 0, 'every slowloris connection was closed');

	# a burst of silent connections beyond the limit: those that find every
	# pending connection younger than 100 ms are refused at once
	my @burst = grep { defined } map { connect_server() } 1 .. $MAX_PENDING + 10;
	my $refused = 0;
	my $sel = IO::Select->new(@burst);
	my $until = time + 1;    # before the handshake timeout answers the others
	while ($sel->count && time < $until)
	{
		for my $s ($sel->can_read($until - time))
		{
			my $buf = '';
			sysread($s, $buf, 200);
			$refused++ if $buf =~ m{^HTTP/1.1 503 };
			$sel->remove($s);
		}
	}
	cmp_ok($refused, '>', 0, "a burst beyond the limit: $refused answered 503 at once");

	# a subscriber still gets in, once no pending connection is younger than 100 ms
	$node->poll_query_until('postgres', q{
SELECT count(*) = 0 FROM zero_stream.subscribers()
 WHERE state = 'connecting' AND connected_since > now() - interval '100 ms'})
	  or die 'the burst stays younger than 100 ms';
	my ($out, $err) = ('', '');
	IPC::Run::run([ $TAIL, '--count', '1',
			"ws://127.0.0.1:$port/replication/v6/changes?id=among-slowloris&taskID=t&replicaVersion=$rv&watermark=$AHEAD" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(20));
	is($out, qq({"id":1,"msg":["status",{"tag":"status"}]}\n), 'a subscriber gets in among them');
	check_for('slowloris', 2.5);
	good_keeps_up('slowloris');
	is(still_open(@burst), 0, 'the silent connections were closed by the handshake timeout');

	my $log = log_since($log_offset);
	my ($first) = $log =~ /^.*closing connection from 127\.0\.0\.1:\d+: (.*)$/m;
	like($first // '', qr/^request head incomplete after \d+ ms \((\d+) bytes received\)/,
		'the first slowloris line says how much was received');
	my ($bytes) = ($first // '') =~ /\((\d+) bytes received\)/;
	cmp_ok($bytes // 0, '>', 0, 'and it was not nothing');
	like($log, qr/refused a connection from 127\.0\.0\.1:\d+: zero_stream\.max_pending_connections \($MAX_PENDING\) reached/,
		'the refusal is logged with the address');
	my @timeouts = $log =~ /closing connection from 127\.0\.0\.1:\d+: /g;
	cmp_ok(scalar(@timeouts), '<=', 1, 'timeouts from one address: one line per 10 s');
}

# ---------------------------------------------------------------- deaf subscribers
$log_offset = -s $node->logfile;
my @deaf;
{
	my $at = head();
	for my $i (1 .. $NDEAF)
	{
		my $s = connect_server() or die "deaf subscriber $i: $!";
		setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096);
		print $s upgrade_request("deaf$i", $at);
		push @deaf, $s;
		keepalive('deaf connecting') if $i % 50 == 0;
	}
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = $NDEAF + 1 FROM zero_stream.subscribers() WHERE state IN ('live', 'catching up')"),
		"$NDEAF deaf subscribers and the well-behaved one are connected")
	  or diag $node->safe_psql('postgres', 'SELECT state, count(*) FROM zero_stream.subscribers() GROUP BY 1');

	# every subscriber slot is taken: a new subscriber is refused, a health check answered
	my $s = connect_server() or die $!;
	print $s upgrade_request('one-too-many', $AHEAD);
	like(do { local $/; <$s> } // '', qr{^HTTP/1.1 503 }, 'all subscriber slots taken: a new subscriber gets 503');
	like(keepalive('slots full'), qr{^HTTP/1.1 200 OK}, 'all subscriber slots taken: the health check is answered');

	check_for('deaf subscribers', 5);
	good_keeps_up('deaf subscribers');
	is($node->safe_psql('postgres', 'SELECT max(backlog_bytes) <= 64 * 1024 + 8192 FROM zero_stream.subscribers()'),
		't', 'the deaf subscribers hold at most the backlog limit each');

	# failed authentication, many times: one line, then the count
	$node->safe_psql('postgres', "ALTER SYSTEM SET zero_stream.subscriber_password = 's3cret'");
	$node->reload;
	my $denied = 0;
	for (1 .. 50)
	{
		my $a = connect_server() or die $!;
		print $a upgrade_request('nopass', $AHEAD);
		my $r = do { local $/; <$a> } // '';
		close $a;
		last if $r =~ m{^HTTP/1.1 401 } && ++$denied;
		usleep(100_000);    # polling for the reload to reach the server
	}
	ok($denied, 'the password is required');
	my $auth_offset = -s $node->logfile;
	for (1 .. 20)
	{
		my $a = connect_server() or die $!;
		my $req = upgrade_request('wrong', $AHEAD);
		$req =~ s/Host: x\r\n/Host: x\r\nAuthorization: Basic emVybzp3cm9uZw==\r\n/;    # zero:wrong
		print $a $req;
		$denied++ if (do { local $/; <$a> } // '') =~ m{^HTTP/1.1 401 };
		close $a;
	}
	cmp_ok($denied, '>=', 21, 'wrong passwords: 401');
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET zero_stream.subscriber_password');
	$node->reload;
	check_for('deaf subscribers', 1);
	close $_ for @deaf;
	my $auth_log = log_since($auth_offset);
	my @auth_lines = $auth_log =~ /(password authentication failed for user|no password from)/g;
	is(scalar(@auth_lines), 0, 'failed logins within 10 s of the first: not logged one by one');
	like(log_since($log_offset), qr/no password from 127\.0\.0\.1:\d+, which zero_stream\.subscriber_password requires/,
		'the first failed login is logged with the address');
}

# ---------------------------------------------------------------- the end
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 AND bool_and(id = 'good') FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')}),
	'the deaf subscribers are gone, the well-behaved one is still there')
  or diag $node->safe_psql('postgres', 'SELECT id, state FROM zero_stream.subscribers()');
$load->kill_kill;
check_for('after', 2);
ok(wait_for_log(qr/\d+ more authentication failures from 127\.0\.0\.1 were not logged/, $log_offset, 15),
	'the failed logins not logged are counted in a line of their own');

$good->finish;
my @lines = grep { length } split /\n/, slurp_file("$good_base.out");
my @commits;
for my $line (@lines)
{
	my ($type, undef, $env) = @{ decode_json($line)->{msg} };
	push @commits, $env->{watermark} if $type eq 'commit';
}
my $want = $node->safe_psql('postgres', qq{
SELECT string_agg(watermark, ',' ORDER BY watermark COLLATE "C") FROM "zero_0/cdc"."changeLog"
 WHERE watermark COLLATE "C" > '$from' AND change->>'tag' = 'commit'});
my @want = split /,/, $want;
cmp_ok(scalar(@want), '>', 1000, scalar(@want) . ' transactions were written during the abuse');
is_deeply(\@commits, \@want, 'the well-behaved subscriber received every transaction, once, in order');

is($checks_ok, $checks, "GET /keepalive answered every time ($checks checks, slowest " . sprintf('%.0f ms', $check_max * 1000) . ')')
  or diag join "\n", @check_failures;

is(server_pid(), $pid, 'the server worker is the same process');
is($node->safe_psql('postgres', "SELECT restarts FROM zero_stream.workers() WHERE worker = 'server'"),
	$restarts_start, 'and it was not restarted');
my (undef, undef, $rss_end) = zs_rss_kb($pid);
note 'server worker RssAnon (kB): start ' . $rss_start . ', '
  . join(', ', map { "max during $_ $rss_max{$_}" } sort keys %rss_max) . ", end $rss_end";
cmp_ok($rss_max{'ping flood'}, '<', $rss_start + 32 * 1024, 'the ping flood costs bounded memory');
cmp_ok($rss_end, '<', $rss_start + 16 * 1024, "memory is back near the start ($rss_start kB -> $rss_end kB)");

$node->stop;
done_testing();
