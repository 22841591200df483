# The subscriber server over real sockets: catch-up then live without gap or
# duplicate, mid-transaction and ahead-of-log subscribers, Zero's errors,
# malformed requests and protocol abuse, a stalled subscriber among many,
# and a restart of the server worker.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
# this node runs without a backup replica (snapshots are tested in 010)
my $node = zs_new_node('server', extra_conf => "zero_stream.replica_file = ''",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, client int, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');

sub url
{
	my (%p) = @_;
	my $path = delete $p{path} // '/replication/v6/changes';
	my %q = (id => 'tap', taskID => 'task', replicaVersion => $rv, watermark => $rv, %p);
	my $query = join '&', map { defined $q{$_} ? "$_=$q{$_}" : () } sort keys %q;
	return "ws://127.0.0.1:$port$path?$query";
}

sub tail
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $TAIL, @args ], '>', \$out, '2>', \$err, IPC::Run::timeout(120));
	return ($? >> 8, $out, $err);
}

# A tail in the background. Its output goes to files, not pipes: a pipe that
# Perl does not drain would block the tail, and the server would rightly drop
# it as a silent peer.
my $tails_started = 0;

sub start_tail
{
	my (@args) = @_;
	my $base = $node->basedir . '/tail' . $tails_started++;
	my $h = IPC::Run::start([ $TAIL, @args ], '>', "$base.out", '2>', "$base.err");
	return { h => $h, base => $base };
}

sub finish_tail
{
	my ($t) = @_;
	$t->{h}->finish;
	my $rc = $? >> 8;
	return ($rc, slurp_file("$t->{base}.out"), slurp_file("$t->{base}.err"));
}

# Check a stream: ids 1.., status first, whole transactions in order;
# returns [watermark, number of data messages] per transaction.
sub parse_stream
{
	my ($out, $label) = @_;
	my @lines = grep { length } split /\n/, $out;
	my ($expect_id, $open, $ndata, $last_wm, @txns, $bad) = (1, undef, 0, '');
	for my $line (@lines)
	{
		my $m = decode_json($line);
		$bad = "id $m->{id} where $expect_id expected" if $m->{id} != $expect_id++ && !$bad;
		my ($type, $change, $env) = @{ $m->{msg} };
		if ($m->{id} == 1) { $bad ||= 'first message is not status' unless $type eq 'status'; next; }
		if ($type eq 'begin')
		{
			$bad ||= 'begin inside a transaction' if defined $open;
			$open = $env->{commitWatermark};
			$ndata = 0;
		}
		elsif ($type eq 'data') { $bad ||= 'data outside a transaction' unless defined $open; $ndata++; }
		elsif ($type eq 'commit')
		{
			$bad ||= 'commit watermark differs from begin' unless defined $open && $env->{watermark} eq $open;
			$bad ||= "watermark $open not after $last_wm" unless ($open cmp $last_wm) > 0;
			push @txns, [ $open, $ndata ];
			$last_wm = $open;
			undef $open;
		}
		elsif ($type ne 'status') { $bad ||= "unexpected $type"; }
	}
	ok(!$bad, "$label: well-formed stream") or diag $bad;
	return \@txns;
}

sub log_txns
{
	my ($after) = @_;
	my $rows = $node->safe_psql('postgres', qq{
SELECT watermark, count(*) FILTER (WHERE change->>'tag' NOT IN ('begin', 'commit'))
  FROM "zero_0/cdc"."changeLog" WHERE watermark > '$after' GROUP BY watermark ORDER BY watermark});
	return [ map { [ split /\|/ ] } grep { length } split /\n/, $rows ];
}

sub load
{
	my ($n) = @_;
	$node->safe_psql('postgres', qq{
DO \$\$ BEGIN FOR i IN 1..$n LOOP INSERT INTO t (client, v) VALUES (i % 7, 'x' || i); COMMIT; END LOOP; END \$\$});
}

# --- health check
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
	print $s "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	local $/;
	like(<$s>, qr{^HTTP/1.1 200 OK\r\n.*\r\n\r\nOK$}s, 'GET / answers OK');
}

# --- catch-up, then live under concurrent writes: every transaction once, in order
load(200);
zs_wait_catchup($node);
{
	my $t = start_tail('--idle', '4', url());
	my ($wout, $werr);
	my $writer = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '3', '-T', '3', '-f', '-', '-h', $node->host, '-p', $node->port, 'postgres' ],
		'<', \"INSERT INTO t (client, v) VALUES (:client_id, 'live');\n", '>', \$wout, '2>', \$werr);
	$writer->finish;
	zs_wait_catchup($node);
	my ($rc, $out) = finish_tail($t);
	is($rc, 4, 'catch-up/live: tail ran until idle');
	my $got = parse_stream($out, 'catch-up/live');
	my $want = log_txns($rv);
	cmp_ok(scalar @$want, '>', 300, 'catch-up/live: ' . scalar(@$want) . ' transactions in the log');
	is_deeply($got, $want, 'catch-up/live: every stored transaction received exactly once, in commit order');
}

# --- v7 batched framing: the same messages, up to 64 per {"id":n,"batch":[...]} frame
{
	my $from = $node->safe_psql('postgres', q{
SELECT watermark FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'commit'
 ORDER BY watermark DESC OFFSET 300 LIMIT 1});
	my $json = JSON::PP->new->canonical;
	my (undef, $plain) = tail('--idle', '2', url(watermark => $from));
	my ($rc, $batched) = tail('--idle', '2',
		url(path => '/replication/v7/changes', wsBatched => 'true', watermark => $from));
	my (@a, @b, $max, $frames);
	push @a, map { $json->encode(decode_json($_)->{msg}) } grep { length } split /\n/, $plain;
	for my $line (grep { length } split /\n/, $batched)
	{
		my $f = decode_json($line);
		my @items = exists $f->{batch} ? @{ $f->{batch} } : ($f->{msg});
		$max = @items if !$max || @items > $max;
		$frames++;
		push @b, map { $json->encode($_) } @items;
	}
	is_deeply(\@b, \@a, "batched: the same " . scalar(@a) . " messages in $frames frames");
	is($max, 64, 'batched: at most 64 messages per frame');

	# v7 /subscribe: the subscription starts with an upstream message, always batched
	my ($rc2, $merged) = tail('--start', '--idle', '2',
		url(path => '/replication/v7/subscribe', watermark => $from));
	my @c;
	for my $line (grep { length } split /\n/, $merged)
	{
		my $f = decode_json($line);
		push @c, map { $json->encode($_) } (exists $f->{batch} ? @{ $f->{batch} } : ($f->{msg}));
	}
	is_deeply(\@c, \@a, 'v7 /subscribe with start-subscription: the same messages');
}

# --- a subscriber that arrives while a transaction is in progress
{
	my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my $bg = $node->background_psql('postgres');
	$bg->query_safe("BEGIN; INSERT INTO t (client, v) VALUES (99, 'in flight'), (99, 'in flight 2')");
	my $t = start_tail('--count', '5', url(id => 'midtx', watermark => $head));
	# the subscriber is connected and at the head before the commit
	ok($node->poll_query_until('postgres', q{SELECT state = 'live' FROM zero_stream.subscribers() WHERE id = 'midtx'}),
		'mid-transaction: the subscriber is live before the commit');
	$bg->query_safe('COMMIT');
	$bg->quit;
	my ($rc, $out) = finish_tail($t);
	my $got = parse_stream($out, 'mid-transaction');
	is(scalar(@$got) == 1 && $got->[0][1] == 2 ? 'whole' : 'split', 'whole',
		'mid-transaction: the transaction arrives whole after its commit');
}

# --- ahead of the log: status, then nothing it already has
{
	my ($rc, $out) = tail('--idle', '2', url(watermark => 'c3w5e11264sgsf'));
	is($rc, 4, 'ahead of the log: waits');
	is($out, qq({"id":1,"msg":["status",{"tag":"status"}]}\n), 'ahead of the log: only the status');
}

# --- Zero's subscription errors
{
	my ($rc, $out, $err) = tail(url(replicaVersion => 'zzz'));
	is($rc, 3, 'wrong replica version: error exit');
	like($err, qr/^closed: 1005 $/m,
		'after the error message, a close without a status code, as zero-cache closes (peer sees 1005)');
	is($out, qq({"id":1,"msg":["error",{"type":1,"message":"current replica version is $rv (requested zzz)"}]}\n),
		'wrong replica version: WrongReplicaVersion message');
	my $first = $node->safe_psql('postgres',
		qq{SELECT min(watermark) FROM "zero_0/cdc"."changeLog" WHERE watermark > '$rv'});
	# the seed transaction's chunk (it holds nothing else)
	$node->safe_psql('postgres', qq{DELETE FROM "zero_0/cdc"."changeLogChunks" WHERE watermark = '$rv'});
	($rc, $out) = tail(url(watermark => '01'));
	like($out, qr/^\{"id":1,"msg":\["error",\{"type":2,"message":"earliest supported watermark is $first \(requested 01\)"\}\]\}$/,
		'too-old watermark: WatermarkTooOld message');
	($rc, $out) = tail(url(watermark => '01', mode => 'backup'));
	like($out, qr/^\{"id":1,"msg":\["error",\{"type":0,"message":"AutoResetSignal: backup replica at watermark 01 is behind change db: earliest supported watermark is $first"\}\]\}$/,
		'too-old watermark in backup mode: AutoResetSignal (error type 0)');
}

# --- malformed requests: each gets its error and a close, the server goes on
my @refusals = (
	[ url(path => '/replication/v3/changes'), 'Error: Cannot service client at protocol v3. Supported protocols: [v4 ... v7]' ],
	[ url(path => '/replication/v8/changes'), 'Error: Cannot service client at protocol v8. Supported protocols: [v4 ... v7]' ],
	[ url(path => '/replication/v6/subscribe'), 'Error: the /subscribe endpoint requires protocol v7 (client is at v6)' ],
	[ url(id => undef), 'Error: invalid querystring - missing id' ],
	[ url(replicaVersion => undef), 'Error: invalid querystring - missing replicaVersion' ],
	[ url(watermark => undef), 'Error: invalid querystring - missing watermark' ],
	[ url(path => '/replication/v6/snapshot', taskID => undef), 'Error: Missing taskID in snapshot request' ],
);
for my $case (@refusals)
{
	my ($rc, $out, $err) = tail($case->[0]);
	is($err, "closed: 1002 $case->[1]\n", "refused with 1002: $case->[1]");
}

# as stock zero-cache: a path that is no endpoint is not upgraded (404); the
# taskID is optional; a malformed watermark is a watermark too old (type 2)
{
	my ($rc, $out, $err) = tail(url(path => '/nowhere'));
	like($err, qr/404/, 'an unknown path is answered 404, not upgraded');
	($rc, $out, $err) = tail('--count', '1', '--idle', '10', url(taskID => undef));
	like($out, qr/^\{"id":1,"msg":\["status",/, 'a subscription without taskID is served') or diag $err;
	($rc, $out, $err) = tail('--count', '1', '--idle', '10', url(watermark => 'not-a-watermark'));
	like($out, qr/^\{"id":1,"msg":\["error",\{"type":2,"message":"earliest supported watermark is \w+ \(requested not-a-watermark\)"\}\]\}$/,
		'a malformed watermark: WatermarkTooOld (error type 2)') or diag $err;
}

sub raw_upgrade
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
	print $s "GET /replication/v6/changes?id=raw&taskID=t&replicaVersion=$rv&watermark=c3w5e11264sgsf HTTP/1.1\r\n"
	  . "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	  . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
	my $head = '';
	$head .= getc($s) while $head !~ /\r\n\r\n$/;
	return $s;
}

# read server frames until a close frame; returns its code and reason
sub read_close
{
	my ($s) = @_;
	local $SIG{ALRM} = sub { die "no close frame\n" };
	alarm 10;
	while (1)
	{
		my $h;
		last unless read($s, $h, 2) == 2;
		my ($b0, $b1) = unpack('CC', $h);
		my $len = $b1 & 0x7f;
		if ($len == 126) { read($s, $h, 2); $len = unpack('n', $h); }
		my $payload = '';
		read($s, $payload, $len) if $len;
		if (($b0 & 0x0f) == 8) { alarm 0; return (unpack('n', $payload), substr($payload, 2)); }
	}
	alarm 0;
	return (0, 'connection closed');
}

sub masked
{
	my ($opcode, $payload, $declared) = @_;
	my $len = $declared // length $payload;
	my $h = pack('C', 0x80 | $opcode);
	$h .= $len < 126 ? pack('C', 0x80 | $len) : $len < 65536 ? pack('Cn', 0xfe, $len) : pack('CNN', 0xff, 0, $len);
	return $h . "\0\0\0\0" . $payload;    # zero mask: payload unchanged
}

{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
	print $s "\x16\x03\x01garbage that is not HTTP\r\n\r\n";
	local $/;
	like(<$s>, qr{^HTTP/1.1 (400|505)}, 'garbage bytes: 400 and close');

	$s = raw_upgrade();
	print $s "\x81\x05hello";
	my ($code, $reason) = read_close($s);
	is("$code $reason", '1002 Error: client frame is not masked', 'unmasked client frame: 1002');

	$s = raw_upgrade();
	print $s masked(1, '', 2 * 1024 * 1024);
	($code, $reason) = read_close($s);
	is("$code $reason", '1009 Error: message is larger than the limit', 'oversized frame: 1009');

	$s = raw_upgrade();
	print $s masked(1, '{"ack":5}');
	($code, $reason) = read_close($s);
	is("$code $reason", '1002 Error: Unexpected ack for 1: 5', 'wrong ack: 1002');

	$s = raw_upgrade();
	print $s masked(1, 'not json');
	($code, $reason) = read_close($s);
	is($code, 1002, 'non-ack message: 1002');

	# v7 /subscribe abuse
	my $v7 = sub {
		my ($payload) = @_;
		my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
		print $sock "GET /replication/v7/subscribe?taskID=t HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		  . "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
		my $head = '';
		$head .= getc($sock) while $head !~ /\r\n\r\n$/;
		print $sock masked(1, $payload);
		return join ' ', read_close($sock);
	};
	is($v7->('{"id":1,"msg":["reserve-snapshot",{"taskID":"t"}]}'),
		'1002 Error: backups are not configured', 'v7 reserve-snapshot without backups: refused');
	is($v7->('{"id":2,"msg":["start-subscription",{}]}'),
		'1002 Error: unexpected upstream frame id 2 (expected 1)', 'v7 wrong upstream id: 1002');
	is($v7->('{"ack":1}'), '1002 Error: ack before start-subscription', 'v7 ack before start: 1002');
	is($v7->('{"id":1,"msg":["start-subscription",{"taskID":"t","id":"x","watermark":"00"}]}'),
		'1002 Error: invalid querystring - missing replicaVersion', 'v7 start without replicaVersion: 1002');
	is($v7->('{"id":1,"msg":{"not":"an array"}}'), '1002 Error: malformed upstream message',
		'v7 malformed message: 1002');

	my ($rc, $out) = tail('--count', '3', url());
	is($rc, 0, 'the server still serves after the abuse');
}

# --- 20 subscribers, one of them stalled (never acks)
{
	my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my @tails = map { start_tail('--idle', '5', url(id => "sub$_", watermark => $head)) } 1 .. 19;
	my $stalled = start_tail('--no-ack', '--idle', '6', url(id => 'stalled', watermark => $head));
	load(1500);
	zs_wait_catchup($node);
	ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 20 AND bool_and(protocol = 6 AND mode = 'serving')
   AND count(*) FILTER (WHERE id = 'stalled' AND messages_acked = 0 AND messages_sent > 0
                          AND watermark_acked = '$head') = 1
   AND count(*) FILTER (WHERE id LIKE 'sub%' AND state = 'live' AND messages_acked = messages_sent
                          AND watermark_acked = watermark_sent) = 19
  FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')}), 'subscribers(): 19 live and acked, one stalled (acked: where it started)')
	  or diag $node->safe_psql('postgres', 'SELECT * FROM zero_stream.subscribers()');
	my $want = log_txns($head);
	my $all_ok = 1;
	for my $t (@tails)
	{
		my ($rc, $out) = finish_tail($t);
		my $got = parse_stream($out, 'fan-out');
		$all_ok &&= is_deeply($got, $want, 'fan-out subscriber got all ' . scalar(@$want) . ' transactions');
	}
	my ($rc, $out) = finish_tail($stalled);
	my $n = () = $out =~ /\n/g;
	ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')}),
		'subscribers(): empty once everyone left')
	  or diag $node->safe_psql('postgres', 'SELECT * FROM zero_stream.subscribers()');
	cmp_ok($n, '<=', 2 * 2000 + 1, "the stalled subscriber was held at two pages ($n messages)");
}

# --- restart of the server worker: subscribers reconnect from their watermark
{
	my $start = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my $t = start_tail('--idle', '20', url(watermark => $start));
	load(300);
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'zero_stream server'");
	my ($rc, $out1) = finish_tail($t);
	is($rc, 3, 'server restart: the subscriber is told it goes away (a close frame, not a drop)');
	my @commits = $out1 =~ /"commit",.*?\{"watermark":"([0-9a-z.]+)"\}\]\}/g;
	my $resume = @commits ? $commits[-1] : $start;
	load(300);
	my $out2;
	for (1 .. 100)
	{
		($rc, $out2) = tail('--idle', '3', url(watermark => $resume));
		last if $rc == 4;
		usleep(200_000);    # poll: until the restarted server worker serves the reconnect
	}
	is($rc, 4, 'server restart: reconnected');
	# keep only whole transactions of the first connection
	$out1 =~ s/(.*\{"watermark":"\Q$resume\E"\}\]\}\n).*/$1/s if @commits;
	$out1 = '' unless @commits;
	my $got1 = @commits ? parse_stream($out1, 'before restart') : [];
	my $got2 = parse_stream($out2, 'after restart');
	is_deeply([ @$got1, @$got2 ], log_txns($start),
		'server restart: no transaction lost or repeated across the reconnect');
}

# --- optional authentication: HTTP Basic, checked before the upgrade
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET zero_stream.subscriber_password = 's3cret'");
	$node->reload;
	ok($node->poll_query_until('postgres', "SELECT current_setting('zero_stream.subscriber_password') = 's3cret'"),
		'subscriber_password: the new setting is loaded');
	# the server worker reloads on its next wakeup: wait until it refuses
	my ($rc, $out, $err);
	for (1 .. 50)
	{
		($rc, $out, $err) = tail('--count', '1', url());
		last if $rc == 2;
		usleep(200_000);    # poll: until the server worker has reloaded and refuses
	}
	like($err, qr/server refused the upgrade: HTTP\/1.1 401 Unauthorized/, 'no credentials: 401');
	(my $bad = url()) =~ s{ws://}{ws://zero:wrong\@};
	($rc, $out, $err) = tail('--count', '1', $bad);
	like($err, qr/401 Unauthorized/, 'wrong password: 401');
	(my $good = url()) =~ s{ws://}{ws://zero:s3cret\@};
	($rc, $out, $err) = tail('--count', '1', $good);
	is("$rc $out", qq(0 {"id":1,"msg":["status",{"tag":"status"}]}\n), 'right password: subscribed');
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) or die $!;
	print $s "GET /keepalive HTTP/1.1\r\nHost: x\r\n\r\n";
	local $/;
	like(<$s>, qr{^HTTP/1.1 200 OK}, 'health checks need no credentials');
}

$node->stop;
done_testing();
