# Metrics: GET /metrics on the subscriber server, scraped by a real
# Prometheus (Debian's prometheus) with the subscribers' Basic auth, then
# over TLS; promtool checks the exposition and docs/zero_stream_alerts.yml;
# the series say what status() and subscribers() say; a scrape without the
# password, or with another, is refused and counted; other methods and
# paths get the server's usual answers.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use HTTP::Tiny;
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

# a subscriber, whose series appear
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $tail = IPC::Run::start(
	[ $TAIL, '--idle', '600',
		"ws://prometheus:$password\@127.0.0.1:$port/replication/v6/changes?id=scraped&taskID=metrics&replicaVersion=$rv&watermark=$rv" ],
	'>', "$dir/tail.out", '2>', "$dir/tail.err");
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
		usleep(100_000);
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
$node->safe_psql('postgres', "INSERT INTO t VALUES ($_, 'more')") for 1101 .. 1150;
zs_wait_catchup($node);
$stored = $node->safe_psql('postgres', 'SELECT transactions_stored FROM zero_stream.status()');
is(wait_query('zero_stream_transactions_stored_total', $stored), $stored, 'new transactions reach Prometheus');
like(query('zero_stream_lag_bytes') // 'none', qr/^\d+$/, 'the lag is a number of bytes');
ok(defined query('zero_stream_retained_wal_bytes'), 'retained WAL is scraped');
stop_prometheus();
$tail->kill_kill;

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

$node->stop;
done_testing();
