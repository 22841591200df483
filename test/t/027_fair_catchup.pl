# Fair catch-up: 64 subscribers read a 200,000-row change log from its
# start while a live subscriber follows the head of a steady insert load.
# Every subscriber receives every transaction once, in order. Fairness, as
# far as a noisy 2-core machine lets a test hold it: the live subscriber is
# served before any catch-up page and catch-up rounds are short while it is
# live (src/server/flow_control.c), so a commit waits for one short round at
# most and the live subscriber's median commit -> received latency while
# the 64 catch up stays near its unloaded median, measured here first; a
# server that made it wait behind the catching-up subscribers' pages fails
# that. The tail (the p99 ratio, about 2-3x on a quiet machine) is set by
# CPU scheduling as much as by the server: it is reported here, and
# bench/catchup.sh measures it. The server worker's memory must come back.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $FANOUT = "$FindBin::RealBin/../../zero-stream-fanout";
my $NSUB = 64;
my $TXNS = 200;    # of 998 rows: 1,000 rows of the log each with begin and commit

my $node = zs_new_node('catchup',
	extra_conf => "zero_stream.replica_file = ''\n"
	  . 'zero_stream.max_subscribers = ' . ($NSUB + 4) . "\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $base = $node->basedir;

sub head
{
	return $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
}

# --- the old log
$node->safe_psql('postgres', qq{
SET synchronous_commit = off;
DO \$\$ BEGIN FOR i IN 1..$TXNS LOOP
  INSERT INTO t (v) SELECT 'catch-up row ' || g || ' of transaction ' || i FROM generate_series(1, 998) g;
  COMMIT;
END LOOP; END \$\$});
zs_wait_catchup($node, '300 s');
my $log_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM "zero_0/cdc"."changeLog"');
cmp_ok($log_rows, '>=', 200_000, "the change log holds $log_rows rows");

my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream server'");

# --- the live subscriber, and 100 single-row transactions/s
my $from = head();
my $live = IPC::Run::start(
	[ $TAIL, '--timestamps', '--idle', '10',
		"ws://127.0.0.1:$port/replication/v6/changes?id=live&taskID=t&replicaVersion=$rv&watermark=$from" ],
	'>', "$base/live.out", '2>', "$base/live.err");
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'live'})
  or die 'the live subscriber did not connect';
my $script = "$base/insert.sql";
PostgreSQL::Test::Utils::append_to_file($script, "INSERT INTO t (v) VALUES ('live');\n");
my ($load_out, $load_err) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '100', '-T', '900', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$load_out, '2>', \$load_err);

# --- unloaded
usleep(1_000_000);
my $t0 = time;
usleep(8_000_000);
my $t1 = time;
my (undef, undef, $rss_before) = zs_rss_kb($pid);

# --- 64 subscribers read the log from its start (v6: one frame per message,
# each acked), as the subscriptions of one zero-stream-fanout process (64
# client processes would starve the server on a small machine); it checks
# that each receives every transaction once, in order, and ends once idle
my ($fan_out, $fan_err) = ('', '');
my $catchup = IPC::Run::start(
	[ $FANOUT, '--subscriptions', $NSUB, '--idle', '5',
		"ws://127.0.0.1:$port/replication/v6/changes?id=c%d&taskID=t&replicaVersion=$rv&watermark=$rv" ],
	'>', \$fan_out, '2>', \$fan_err);
my $rss_max = $rss_before;
my $prev = head();
my $caught_up = 0;
my $deadline = time + 600;
while (time < $deadline)
{
	my (undef, undef, $r) = zs_rss_kb($pid);
	$rss_max = $r if defined $r && $r > $rss_max;
	# caught up: live, or acked the head as it was at the previous poll
	my $n = $node->safe_psql('postgres', qq{
SELECT count(*) FROM zero_stream.subscribers()
 WHERE id LIKE 'c%' AND state NOT IN ('departed', 'restored') AND (state = 'live' OR watermark_acked COLLATE "C" >= '$prev')});
	if ($n == $NSUB) { $caught_up = 1; last; }
	$prev = head();
	usleep(250_000);
}
my $t2 = time;
ok($caught_up, sprintf('%d subscribers caught up from the start in %.1f s', $NSUB, $t2 - $t1))
  or diag $node->safe_psql('postgres', 'SELECT state, count(*) FROM zero_stream.subscribers() GROUP BY 1'),
  "\nhead " . head() . "\n",
  $node->safe_psql('postgres', q{
SELECT id, state, watermark_sent, watermark_acked, messages_sent, messages_acked, backlog_bytes
  FROM zero_stream.subscribers() WHERE state <> 'live'});
usleep(2_000_000);
my (undef, undef, $rss_caught_up) = zs_rss_kb($pid);

# --- the end: the load stops, the subscribers go once idle
$load->kill_kill;
my $final = head();
$catchup->finish;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')}),
	'the catch-up subscribers are gone');
usleep(2_000_000);
my (undef, undef, $rss_after) = zs_rss_kb($pid);
$live->finish;

# every catch-up subscriber got every transaction after the replicaVersion,
# once, in order: the client checked frame ids, begin/commit pairs, strictly
# increasing watermarks and the same commits for all; here the counts and
# the ends are compared with the log
my @want = split /,/, $node->safe_psql('postgres', qq{
SELECT string_agg(n || ' ' || watermark, ',' ORDER BY watermark COLLATE "C")
  FROM (SELECT watermark, change->>'tag' AS tag,
               row_number() OVER (ORDER BY watermark COLLATE "C", pos) AS n
          FROM "zero_0/cdc"."changeLog" WHERE watermark COLLATE "C" > '$rv') s
 WHERE tag = 'commit'});
my $want_rows = $node->safe_psql('postgres', qq{
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE watermark COLLATE "C" > '$rv' AND change->>'tag' NOT IN ('begin', 'commit')});
cmp_ok(scalar(@want), '>', $TXNS + 500, scalar(@want) . ' transactions to receive, the load\'s included');
my ($want_messages, $last) = split ' ', $want[-1];
is($last, $final, 'the last one is the head');
my $first = (split ' ', $want[0])[1];
# (one frame per message; the first is the stream's status message)
my $expect = 'frames=' . ($want_messages + 1) . ' messages=' . ($want_messages + 1)
  . " rows=$want_rows txns=" . scalar(@want);
my @lines = grep { /^sub=/ } split /\n/, $fan_out;
is(scalar(@lines), $NSUB, "zero-stream-fanout reported $NSUB subscriptions") or diag "$fan_out\n$fan_err";
my @wrong = grep {
	!(/ \Q$expect\E / && / first_watermark=\Q$first\E last_watermark=\Q$last\E status=ok$/)
} @lines;
is(scalar(@wrong), 0, "all $NSUB catch-up subscribers received every transaction once, in order ($expect)")
  or diag join "\n", @wrong[ 0 .. ($#wrong < 4 ? $#wrong : 4) ], $fan_err;

# the live subscriber: every transaction after where it started, and its latency
my (@commits, @unloaded, @loaded);
for my $line (grep { length } split /\n/, slurp_file("$base/live.out"))
{
	my ($recv_us, $json) = split / /, $line, 2;
	my ($type, $body, $env) = @{ decode_json($json)->{msg} };
	push @commits, $env->{watermark} if $type eq 'commit';
	next unless $type eq 'begin';
	my $commit_s = $body->{commitTime} / 1e6;
	my $ms = ($recv_us - $body->{commitTime}) / 1000;
	push @unloaded, $ms if $commit_s >= $t0 && $commit_s < $t1;
	push @loaded, $ms if $commit_s >= $t1 && $commit_s < $t2;
}
my @live_want = map { (split ' ')[1] } grep { (split ' ')[1] gt $from } @want;
is_deeply(\@commits, \@live_want, 'the live subscriber received every transaction once, in order');

sub pct
{
	my ($p, @xs) = @_;
	@xs = sort { $a <=> $b } @xs;
	return $xs[ int($#xs * $p + 0.5) ] // 0;
}
my ($u50, $u90, $u99) = map { pct($_, @unloaded) } 0.5, 0.9, 0.99;
my ($l50, $l90, $l99) = map { pct($_, @loaded) } 0.5, 0.9, 0.99;
note sprintf('live subscriber, commit -> received: unloaded p50 %.1f ms, p90 %.1f ms, p99 %.1f ms (%d transactions); '
	  . 'while %d catch up: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (%d transactions); p50 ratio %.2f, p99 ratio %.2f',
	$u50, $u90, $u99, scalar @unloaded, $NSUB, $l50, $l90, $l99,
	pct(1, @loaded), scalar @loaded, $u50 > 0 ? $l50 / $u50 : 0, $u99 > 0 ? $l99 / $u99 : 0);
my $slow = grep { $_ > $u99 } @loaded;
note sprintf('%.1f%% of the transactions during the catch-up were slower than the unloaded p99',
	@loaded ? 100 * $slow / @loaded : 0);
note "server worker RssAnon (kB): before $rss_before, max during the catch-up $rss_max, "
  . "caught up $rss_caught_up, after $rss_after";
cmp_ok(scalar(@unloaded), '>', 400, 'transactions were committed before the catch-up');
cmp_ok(scalar(@loaded), '>', 100, 'transactions were committed during the catch-up');
# 2 cores, other tests running: 0.3-1.1 ms loaded against 0.3-0.4 ms
# unloaded; with every catching-up subscriber's page in one round (no round
# budget, full pages) 3.8-4.1 ms
cmp_ok($l50, '<=', 3 * $u50 + 1,
	sprintf('the live subscriber\'s median latency stayed near its unloaded one during the catch-up (%.1f ms, unloaded %.1f ms)', $l50, $u50));
cmp_ok($rss_after, '<', $rss_before + 16 * 1024,
	"the server worker's memory came back near where it was ($rss_before kB -> $rss_after kB)");

$node->stop;
done_testing();
