# Metrics: GET /metrics on the subscriber server, scraped by a real
# Prometheus (Debian's prometheus) with the subscribers' Basic auth, then
# over TLS; promtool checks the exposition and docs/zero_stream_alerts.yml;
# the series say what status() and subscribers() say, one per subscriber id
# and mode whatever bytes the id holds; a scrape without the password, or
# with another, is refused and counted; other methods, a body, a huge head
# and other paths get the server's usual answers.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use HTTP::Tiny;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use MIME::Base64;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $ALERTS = "$FindBin::RealBin/../../docs/zero_stream_alerts.yml";
my ($PROMETHEUS, $PROMTOOL) = ('/usr/bin/prometheus', '/usr/bin/promtool');
# never a skip: scripts/install-deps.sh and scripts/pg-root.sh install them
-x $PROMETHEUS && -x $PROMTOOL
  or BAIL_OUT('prometheus and promtool are missing: scripts/install-deps.sh installs the prometheus package');

my $password = 'scrape-s3cret';
my $node = zs_new_node('metrics',
	extra_conf => "zero_stream.subscriber_password = '$password'\n",
	before_extension => q{
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 1000) g;
});
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $auth = 'Basic ' . encode_base64("prometheus:$password", '');

$node->safe_psql('postgres', "INSERT INTO t VALUES ($_, 'txn $_')") for 1001 .. 1100;
zs_wait_catchup($node);

sub get
{
	my ($url, %headers) = @_;
	return HTTP::Tiny->new(timeout => 20, verify_SSL => 0)->get($url, { headers => \%headers });
}

# the status line of a raw request, and whether the server closed after it
sub raw_request
{
	my ($request) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 10)
	  or die "connect: $!";
	$s->autoflush(1);
	syswrite($s, $request);
	my ($reply, $buf) = ('', '');
	my $n;
	while ((($n = sysread($s, $buf, 65536)) // 0) > 0)
	{
		$reply .= $buf;
	}
	# a close with input left unread is a reset, after the reply
	my $closed = defined $n ? $n == 0 : $!{ECONNRESET};
	close $s;
	my ($status) = $reply =~ m{^HTTP/1\.1 (\d{3})};
	return ($status // 'none', $closed, $reply);
}

# connect a zero-stream-tail as subscriber id (a query parameter, encoded)
my @tails;

sub start_tail
{
	my ($id_param, $n) = @_;
	my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
	push @tails, IPC::Run::start(
		[ $TAIL, '--idle', '600',
			"ws://prometheus:$password\@127.0.0.1:$port/replication/v6/changes?id=$id_param&taskID=metrics&replicaVersion=$rv&watermark=$rv" ],
		'>', "$dir/tail-$n.out", '2>', "$dir/tail-$n.err");
}
END { $_->kill_kill for @tails; }

# every series of an exposition at most once
sub duplicate_series
{
	my ($text) = @_;
	my %seen;
	return grep { !/^#/ && /\S/ && $seen{ s/ [^ ]+$//r }++ } split /\n/, $text;
}

# --------------------------------------------------------------------------
# the endpoint itself
my $r = get("http://127.0.0.1:$port/metrics");
is($r->{status}, 401, 'a scrape without the password is refused');
like($r->{headers}{'www-authenticate'} // '', qr/Basic realm="zero_stream"/, 'and asked for it');
$r = get("http://127.0.0.1:$port/metrics", Authorization => $auth);
is($r->{status}, 200, 'a scrape with the password is answered');
is($r->{headers}{'content-type'}, 'text/plain; version=0.0.4; charset=utf-8',
	"in Prometheus's text format 0.0.4");
my $body = $r->{content};
like($body, qr/^zero_stream_decoder_state\{state="streaming"\} 1$/m, 'the decoder streams');
my $stored = $node->safe_psql('postgres', 'SELECT transactions_stored FROM zero_stream.status()');
like($body, qr/^zero_stream_transactions_stored_total $stored$/m, "stored transactions as status() counts them");
is(HTTP::Tiny->new(timeout => 20)->request('POST', "http://127.0.0.1:$port/metrics",
		{ headers => { Authorization => $auth }, content => 'x' })->{status},
	405, 'POST /metrics: 405');
is(get("http://127.0.0.1:$port/metrics/x", Authorization => $auth)->{status}, 404, 'another path: 404');
my ($status, $closed, $reply) = raw_request(
	"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: $auth\r\nContent-Length: 5\r\n\r\nhello");
is($status, '400', 'GET /metrics with a body: 400');
like($reply, qr/a GET request has no body/, 'saying why');
ok($closed, 'and closed');
($status, $closed) = raw_request(
	"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: $auth\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
is($status, '400', 'GET /metrics with a chunked body: 400');
($status, $closed) = raw_request(
	"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: $auth\r\nX-Big: " . ('a' x 10000) . "\r\n\r\n");
is($status, '431', 'GET /metrics with a huge head: 431');
ok($closed, 'and closed');
($status) = raw_request("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic "
	  . encode_base64('prometheus:not-it', '') . "\r\n\r\n");
is($status, '401', 'a scrape with another password: 401, as a subscriber with it gets');
($status) = raw_request("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: $auth\r\nContent-Length: 0\r\n\r\n");
is($status, '200', 'Content-Length: 0 is no body');
is($node->safe_psql('postgres', 'SELECT zero_stream.metrics() IS NOT NULL'), 't',
	'zero_stream.metrics() answers in SQL');

sub promtool
{
	my (@args) = @_;
	my $in = pop @args;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $PROMTOOL, @args ], '<', \$in, '>', \$out, '2>', \$err);
	return ($? >> 8, $out . $err);
}
my ($rc, $lint) = promtool('check', 'metrics', $body);
is($rc, 0, 'promtool check metrics: the exposition is valid');
is($lint, '', 'with no lint problem') or diag($lint);
($rc, $lint) = promtool('check', 'metrics', $node->safe_psql('postgres', 'SELECT zero_stream.metrics()') . "\n");
is($rc, 0, "promtool check metrics: zero_stream.metrics()'s text too") or diag($lint);
($rc, $lint) = promtool('check', 'rules', $ALERTS, '');
is($rc, 0, 'promtool check rules: docs/zero_stream_alerts.yml') or diag($lint);
# the doc's last block is the rules file
my $doc = PostgreSQL::Test::Utils::slurp_file("$FindBin::RealBin/../../docs/metrics.md");
my ($doc_rules) = $doc =~ /```yaml\n((?:(?!```).)*)```\n\z/s;
is($doc_rules, PostgreSQL::Test::Utils::slurp_file($ALERTS), 'docs/metrics.md shows that rules file');

# a subscriber, whose series appear
start_tail('scraped', 1);
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'scraped'})
  or die 'the subscriber did not connect';

# --------------------------------------------------------------------------
# a real Prometheus: one job with the password, one with another
my $pport = PostgreSQL::Test::Cluster::get_free_port();
my $prometheus;

sub start_prometheus
{
	my ($scheme, $tls) = @_;
	my $config = "$dir/prometheus-$scheme.yml";
	my $tls_config = $tls ? "    tls_config:\n      ca_file: $tls\n" : '';
	PostgreSQL::Test::Utils::append_to_file($config, <<"EOF");
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: zero_stream
    scheme: $scheme
    basic_auth:
      username: prometheus
      password: $password
$tls_config    static_configs:
      - targets: ['127.0.0.1:$port']
  - job_name: wrong_password
    scheme: $scheme
    basic_auth:
      username: prometheus
      password: not-it
$tls_config    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
	my ($out, $err) = ('', '');
	$prometheus = IPC::Run::start(
		[ $PROMETHEUS, "--config.file=$config", "--storage.tsdb.path=$dir/tsdb-$scheme",
			"--web.listen-address=127.0.0.1:$pport" ],
		'>', "$dir/prometheus-$scheme.log", '2>&1');
}

sub stop_prometheus
{
	return unless $prometheus;
	$prometheus->signal('TERM');
	$prometheus->finish;
	undef $prometheus;
}
END { stop_prometheus() if $prometheus; }

# the value of an instant query with one series, undef while none
sub query
{
	my ($q) = @_;
	my $r = HTTP::Tiny->new(timeout => 10)
	  ->get("http://127.0.0.1:$pport/api/v1/query?query=" . HTTP::Tiny->new->www_form_urlencode({ q => $q }) =~ s/^q=//r);
	return undef unless $r->{success};
	my $res = decode_json($r->{content})->{data}{result};
	return @$res == 1 ? $res->[0]{value}[1] : undef;
}

sub wait_query
{
	my ($q, $want) = @_;
	my $got;
	for (1 .. 600)
	{
		$got = query($q);
		return $got if defined $got && $got eq $want;
		usleep(100_000);    # poll: until the query gives $want
	}
	diag("$q: '" . ($got // 'none') . "', expected '$want'");
	return $got;
}

start_prometheus('http');
is(wait_query('up{job="zero_stream"}', '1'), '1', 'Prometheus scrapes the server with the password');
is(wait_query('up{job="wrong_password"}', '0'), '0', 'and not with another');
is(wait_query('zero_stream_decoder_state{state="streaming"}', '1'), '1', 'Prometheus sees the decoder streaming');
is(wait_query('zero_stream_transactions_stored_total', $stored), $stored,
	'and the stored transactions status() counts');
is(wait_query('zero_stream_subscribers_connected', '1'), '1', 'and the subscriber');
is(wait_query('count(zero_stream_subscriber_lag_bytes{id="scraped",mode="serving"})', '1'), '1',
	"and the subscriber's lag, by its id");
is(wait_query('zero_stream_subscriber_lag_bytes{id="scraped"}', '0'), '0', 'which is caught up');
is(wait_query('zero_stream_server_connections_refused_total{reason="authentication"} >= bool 2', '1'), '1',
	'the refused scrapes are counted by reason');

# what is written is what Prometheus counts: 50 transactions of one row
# (nothing is purged in these tests)
my $schema = $node->safe_psql('postgres', 'SELECT change_log_schema FROM zero_stream.status()');
my $log_rows = qq{SELECT count(*) FROM "$schema"."changeLog"};
my $rows_before = $node->safe_psql('postgres', $log_rows);
my $changes_before = query('zero_stream_changes_stored_total');
my $txns_before = query('zero_stream_transactions_stored_total');
$node->safe_psql('postgres', "INSERT INTO t VALUES ($_, 'more')") for 1101 .. 1150;
zs_wait_catchup($node);
# each with its begin and commit
is($node->safe_psql('postgres', $log_rows) - $rows_before, 150, 'the 50 transactions are in the change log');
is(wait_query('zero_stream_transactions_stored_total', $txns_before + 50), $txns_before + 50,
	'Prometheus counts the 50 transactions written');
is(wait_query('zero_stream_changes_stored_total', $changes_before + 50), $changes_before + 50,
	'and their 50 rows');
is(query('zero_stream_transactions_stored_total'),
	$node->safe_psql('postgres', 'SELECT transactions_stored FROM zero_stream.status()'),
	'as status() counts them');
like(query('zero_stream_lag_bytes') // 'none', qr/^\d+$/, 'the lag is a number of bytes');
ok(defined query('zero_stream_retained_wal_bytes'), 'retained WAL is scraped');

# a second connection of the same id, and an id with a quote, a backslash,
# a newline and a byte that is no UTF-8: one series for each id, escaped,
# and Prometheus (which drops a scrape over a label that is not UTF-8)
# still takes every scrape
start_tail('scraped', 2);
start_tail('we%22ird%5Cid%0A%FF', 3);
$node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM zero_stream.subscribers() WHERE mode = 'serving'})
  or die 'the subscribers did not connect';
is(wait_query('zero_stream_subscribers_connected', '3'), '3', 'Prometheus sees three subscriptions');
is(query('up{job="zero_stream"}'), '1', 'whose scrapes succeed');
is(wait_query('count(zero_stream_subscriber_connected_seconds)', '2'), '2', 'in one series per id');
is(wait_query(q{count(zero_stream_subscriber_lag_bytes{id="we\"ird\\\\id\n\ufffd",mode="serving"})}, '1'), '1',
	'the odd id as it was sent, its stray byte as U+FFFD');
$body = get("http://127.0.0.1:$port/metrics", Authorization => $auth)->{content};
like($body, qr/^zero_stream_subscriber_backlog_bytes\{id="we\\"ird\\\\id\\n\xef\xbf\xbd",mode="serving"\} \d+$/m,
	'the label value escaped as the format asks');
is(join("\n", duplicate_series($body)), '', 'no series twice');
($rc, $lint) = promtool('check', 'metrics', $body);
is($rc, 0, 'promtool check metrics with those subscribers') or diag($lint);
is($lint, '', 'with no lint problem') or diag($lint);
stop_prometheus();
$_->kill_kill for @tails;
@tails = ();

# --------------------------------------------------------------------------
# over TLS
my $certs = zs_test_certs();
zs_enable_tls($node, $certs);

start_prometheus('https', "$certs/ca.crt");
is(wait_query('up{job="zero_stream"}', '1'), '1', 'Prometheus scrapes over TLS, verifying the certificate');
is(wait_query('up{job="wrong_password"}', '0'), '0', 'and the password is still asked for');
is(wait_query('zero_stream_decoder_state{state="streaming"}', '1'), '1', 'with the same series');
stop_prometheus();
is(get("http://127.0.0.1:$port/metrics", Authorization => $auth)->{status} == 200 ? 'answered' : 'refused',
	'refused', 'plain HTTP is not answered once TLS is on');

# curl over TLS: the status code and the body
sub https_metrics
{
	my (@opts) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-sS', '--max-time', '10', '--cacert', "$certs/ca.crt", '-w', '\n%{http_code}',
			@opts, "https://127.0.0.1:$port/metrics" ], '>', \$out, '2>', \$err);
	my ($text, $code) = $out =~ /^(.*)\n(\d+)$/s;
	return ($code // "curl: $err", $text // '');
}
my ($code, $text) = https_metrics('-u', "prometheus:$password");
is($code, '200', 'a scrape over TLS by curl');
like($text, qr/^zero_stream_server_connections_refused_total\{reason="tls"\} [1-9]\d*$/m,
	'counts the plain HTTP request as a TLS refusal');
($code) = https_metrics();
is($code, '401', 'and one without the password over TLS is refused');
$node->stop;
done_testing();
