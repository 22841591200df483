# TLS on the subscriber socket (zero_stream.ssl): a self-signed CA and a
# server certificate made with the openssl CLI, relative paths under the data
# directory. zero-stream-tail over wss:// (by IP address and by host name,
# a transaction larger than the socket buffers), zero-stream-replica sync over
# wss:// (the snapshot downloaded from the https:// backupURL) following live
# writes and equal to Postgres, restore from an https:// URL with
# ZS_SSL_CA_FILE; the health check over https; and what must fail cleanly
# while the server goes on: a plain ws:// client, a client that does not
# trust the CA, garbage instead of a ClientHello (closed, logged once), a
# silent connection (handshake timeout), a pending pool full of unfinished
# handshakes, and a reload with a missing certificate (the previous one stays).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use IO::Socket::INET;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CLI = "$FindBin::RealBin/../../zero-stream-replica";

# ---------------------------------------------------------------- certificates
my $certs = zs_test_certs('other-ca');
my $ca = "$certs/ca.crt";

# ---------------------------------------------------------------- the node
my $node = zs_new_node('tls',
	extra_conf => "zero_stream.handshake_timeout = '2s'\nzero_stream.max_pending_connections = 4\n",
	before_extension => q{
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 5000) g;
});
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $dir = $node->basedir;

# the files in the data directory, named by relative paths, then a restart
my $log_offset = -s $node->logfile;
zs_enable_tls($node, $certs);

sub log_since
{
	my ($offset) = @_;
	return substr(slurp_file($node->logfile), $offset);
}

sub wait_for_log
{
	my ($re, $offset, $secs) = @_;
	my $end = time + $secs;
	while (time < $end)
	{
		return 1 if log_since($offset) =~ $re;
		usleep(100_000);    # poll: until the log matches
	}
	return 0;
}

ok(wait_for_log(qr/the subscriber server uses TLS with the certificate "tls\/zs\.crt"/, $log_offset, 30),
	'the server started with TLS from files relative to the data directory');
is($node->safe_psql('postgres', q{SELECT "ownerAddress" FROM "zero_0/cdc"."replicationState"}),
	"wss://127.0.0.1:$port", 'ownerAddress says wss://');

sub tail
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $TAIL, @args ], '>', \$out, '2>', \$err, IPC::Run::timeout(120));
	return ($? >> 8, $out, $err);
}

sub changes_url
{
	my ($scheme, $host, $id) = @_;
	return "$scheme://$host:$port/replication/v6/changes?id=$id&taskID=tls&replicaVersion=$rv&watermark=$rv";
}

sub https_get
{
	my ($path, @opts) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-sS', '--max-time', '10', '--cacert', $ca, @opts, "https://127.0.0.1:$port$path" ],
		'>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# wait until a raw socket is closed by the server (EOF), up to $secs
sub closed_within
{
	my ($s, $secs) = @_;
	$s->blocking(0);
	my $end = time + $secs;
	while (time < $end)
	{
		my $n = sysread($s, my $buf, 65536);
		return 1 if defined $n && $n == 0;
		return 1 if !defined $n && !$!{EAGAIN} && !$!{EWOULDBLOCK};
		usleep(50_000);    # poll: until the server closes the socket
	}
	return 0;
}

sub raw_connect
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 5);
	die "connect: $!" unless $s;
	return $s;
}

my $server_restarts = $node->safe_psql('postgres',
	"SELECT restarts FROM zero_stream.workers() WHERE worker = 'server'");

# ---------------------------------------------------------------- garbage first: nothing rate-limits it yet
$log_offset = -s $node->logfile;
for (1 .. 2)
{
	my $s = raw_connect();
	syswrite($s, "\x00\x01\x02garbage that is no ClientHello\r\n\r\n" x 4);
	ok(closed_within($s, 5), "garbage instead of a ClientHello is closed ($_)");
	close $s;
}
# the count of the suppressed one is logged once the rate limit's interval
# ends: every failure that was logged is in the log by then
my $counted = wait_for_log(qr/1 more failed TLS handshake from 127\.0\.0\.1 was not logged/, $log_offset, 15);
my @garbage_lines = log_since($log_offset) =~ /(LOG:  TLS handshake with 127\.0\.0\.1:\d+ failed: .*)/g;
is(scalar(@garbage_lines), 1, 'two garbage connections: one log line (rate-limited)')
  or diag(log_since($log_offset));
ok($counted, 'the suppressed one is counted later');

# ---------------------------------------------------------------- health check over https
my ($code, $out, $err) = https_get('/keepalive');
is("$code $out", '0 OK', 'GET /keepalive over https') or diag($err);

# ---------------------------------------------------------------- zero-stream-tail over wss://
$node->safe_psql('postgres', q{
INSERT INTO t VALUES (100001, 'after');
INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(200001, 210000) g;
});
zs_wait_catchup($node);
($code, $out, $err) = tail('--ca-file', $ca, '--idle', '3', changes_url('wss', '127.0.0.1', 'ip'));
is($code, 4, 'wss:// tail by IP address ran until idle') or diag($err);
my $inserts = () = $out =~ /"tag":"insert"/g;
is($inserts, 10001, 'wss:// tail received every insert, a 10 MB transaction included');
like($out, qr/"new":\{"id":100001,"v":"after"\}/, 'wss:// tail: the values are intact');

($code, $out, $err) = tail('--ca-file', $ca, '--count', '3', changes_url('wss', 'localhost', 'dns'));
is($code, 0, 'wss:// tail by host name (certificate checked against "localhost")') or diag($err);

{
	local $ENV{ZS_SSL_CA_FILE} = $ca;
	($code, $out, $err) = tail('--count', '3', changes_url('wss', '127.0.0.1', 'env'));
	is($code, 0, 'ZS_SSL_CA_FILE gives the CA') or diag($err);
}

# ---------------------------------------------------------------- failures, cleanly
($code, $out, $err) = tail('--idle', '3', changes_url('ws', '127.0.0.1', 'plain'));
is($code, 2, 'a plain ws:// client to the TLS port fails');
like($err, qr/server refused the upgrade: HTTP\/1\.1 400 Bad Request/, 'it is told 400 in plain HTTP');

($code, $out, $err) = tail('--ca-file', "$certs/other-ca.crt", '--idle', '3', changes_url('wss', '127.0.0.1', 'untrusted'));
is($code, 2, 'a client that does not trust the CA fails');
like($err, qr/could not verify the server certificate of 127\.0\.0\.1:$port against the CA certificates in ".*other-ca\.crt": .*certificate/,
	'with a clear message');
($code, $out, $err) = tail('--idle', '3', changes_url('wss', '127.0.0.1', 'system'));
is($code, 2, 'without --ca-file the system CAs do not trust a private CA');
like($err, qr/could not verify the server certificate .*--ca-file or ZS_SSL_CA_FILE/, 'and the message says what to give');
($code, $out, $err) = tail('--no-verify', '--count', '3', changes_url('wss', '127.0.0.1', 'noverify'));
is($code, 0, '--no-verify connects without checking (only when asked)') or diag($err);

($code, $out, $err) = https_get('/keepalive');
is("$code $out", '0 OK', 'the server goes on after the failures');

# ---------------------------------------------------------------- handshake timeout and the pending pool
$log_offset = -s $node->logfile;
my $silent = raw_connect();
ok(closed_within($silent, 5), 'a connection that never sends its ClientHello is closed');
ok(wait_for_log(qr/closing connection from 127\.0\.0\.1:\d+: TLS handshake not completed within \d+ ms/, $log_offset, 5),
	'after zero_stream.handshake_timeout, logged');
close $silent;

my @half = map { raw_connect() } 1 .. 4;
syswrite($_, "\x16\x03\x01") for @half;    # the start of a record, no more
# nothing observable ends this: the pending pool's size is not shown, and the
# server evicts only a pending connection older than 100 ms (EVICT_MIN_AGE_MS)
usleep(300_000);
($code, $out, $err) = https_get('/keepalive');
is("$code $out", '0 OK', 'pending pool full of unfinished handshakes: the health check is still answered');
ok(closed_within($half[0], 2), 'the oldest unfinished handshake made room');
close $_ for @half;

# ---------------------------------------------------------------- zero-stream-replica over wss://
my $file = "$dir/app.db";
my $load_script = "$dir/load.sql";
PostgreSQL::Test::Utils::append_to_file($load_script, q{\set id random(1, 5000)
UPDATE t SET v = v || '+' WHERE id = :id;
});
my $load = zs_start_pgbench($node, 6, 2, $load_script);
my $cli = IPC::Run::start([ $CLI, 'sync', '--ca-file', $ca, '--task-id', 'app', "wss://127.0.0.1:$port", $file ],
	'>', "$dir/app.out", '2>>', "$dir/app.log");

sub state_version
{
	return '' unless -f $file;
	return zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"');
}

$load->finish;
zs_wait_catchup($node);
my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
my $caught_up = 0;
for (1 .. 600)
{
	if (state_version() eq $target)
	{
		$caught_up = 1;
		last;
	}
	usleep(100_000);    # poll: until the replica is at the log's head
}
ok($caught_up, 'zero-stream-replica over wss:// restored a snapshot and followed to the head')
  or diag(slurp_file("$dir/app.log"));
like(slurp_file("$dir/app.log"), qr/restored replicaVersion \Q$rv\E/, 'the snapshot came from the https:// backupURL');
my $pg = $node->safe_psql('postgres', q{SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM t});
my $lite = zs_sqlite($file, q{SELECT group_concat(id || ':' || v, ',') FROM (SELECT id, v FROM t ORDER BY id)});
ok($pg eq $lite, 'the replica equals Postgres') or diag('lengths: ' . length($pg) . ' vs ' . length($lite));
$node->safe_psql('postgres', q{INSERT INTO t VALUES (300001, 'live')});
zs_wait_catchup($node);
$target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
$caught_up = 0;
for (1 .. 300)
{
	if (state_version() eq $target)
	{
		$caught_up = 1;
		last;
	}
	usleep(100_000);    # poll: until the replica is at the log's head
}
ok($caught_up && zs_sqlite($file, 'SELECT v FROM t WHERE id = 300001') eq 'live', 'and follows live writes');
$cli->signal('INT');
$cli->finish;

# a view-syncer's reservation over wss://, and litestream's restore of its
# backupURL with the CA from the environment
{
	my ($rout, $rerr) = ('', '');
	my $h = IPC::Run::start(
		[ $TAIL, '--ca-file', $ca, "wss://127.0.0.1:$port/replication/v6/snapshot?taskID=vs1" ],
		'>', \$rout, '2>', \$rerr, IPC::Run::timeout(300));
	for (1 .. 300)
	{
		$h->pump_nb;
		last if $rout =~ /\n/;
		usleep(100_000);    # poll: until the reservation's status line
	}
	my ($backup_url) = $rout =~ /"backupURL":"([^"]+)"/;
	is($backup_url, "https://127.0.0.1:$port/replica/vs1", 'the advertised backupURL says https://')
	  or diag("$rout $rerr");
	local $ENV{ZS_SSL_CA_FILE} = $ca;
	local $ENV{ZERO_LITESTREAM_BACKUP_URL} = $backup_url;
	IPC::Run::run([ $CLI, 'restore', '-if-db-not-exists', '-if-replica-exists', "$dir/restored.db" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(120));
	is($? >> 8, 0, 'restore of the https:// backupURL with ZS_SSL_CA_FILE') or diag($err);
	is(zs_sqlite("$dir/restored.db", 'SELECT count(*) FROM t'), $node->safe_psql('postgres', 'SELECT count(*) FROM t'),
		'the restored file has every row');
	$h->kill_kill;
	$h->finish;
}

# ---------------------------------------------------------------- reload with a missing certificate
$log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "zero_stream.ssl_cert_file = 'tls/missing.crt'\n");
$node->reload;
ok(wait_for_log(qr/WARNING:  could not load the server certificate file "tls\/missing\.crt".*\n(.*\n)*.*WARNING:  the subscriber server keeps its previous TLS certificate and key/, $log_offset, 10),
	'a reload with a missing certificate warns and keeps the previous one');
($code, $out, $err) = tail('--ca-file', $ca, '--count', '3', changes_url('wss', '127.0.0.1', 'afterreload'));
is($code, 0, 'and subscribers still connect') or diag($err);

is($node->safe_psql('postgres', "SELECT restarts FROM zero_stream.workers() WHERE worker = 'server'"),
	$server_restarts, 'the server worker never restarted');

$node->stop;
done_testing();
