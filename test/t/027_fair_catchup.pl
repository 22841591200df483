# Fair catch-up: 64 subscribers read a 200,000-row change log from its
# start while a live subscriber follows the head of a steady insert load.
# Every subscriber receives every transaction once, in order. Fairness, as
# outcomes: the catching-up subscribers take turns (none waits for another
# to finish: when the first has caught up, every one has been sent part of
# the log), and the live subscriber keeps receiving while they catch up (it
# acknowledges commits made during the catch-up before the catch-up ends).
# The scheduling decisions behind it (live first, catch-up rounds within a
# budget, the turn, the pause) are unit-tested (test/unit/test_flow_control.c);
# the live subscriber's latency meanwhile is measured by bench/catchup.sh.
# The server worker's memory must come back.
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
# a synchronous commit flushes the WAL of the asynchronous ones before it:
# wait_for_catchup waits for what is flushed
$node->safe_psql('postgres', 'SELECT pg_current_xact_id()');
zs_wait_catchup($node, '300 s');
my $log_rows = $node->safe_psql('postgres', 'SELECT count(*) FROM "zero_0/cdc"."changeLog"');
cmp_ok($log_rows, '>=', 200_000, "the change log holds $log_rows rows");

my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream server'");

# --- the live subscriber, and 100 single-row transactions/s
my $from = head();
my $live = IPC::Run::start(
	[ $TAIL, '--idle', '10',
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

# --- before the catch-up: the live subscriber follows the load
sub live_acked
{
	return $node->safe_psql('postgres',
		q{SELECT watermark_acked FROM zero_stream.subscribers() WHERE id = 'live' AND state NOT IN ('departed', 'restored')});
}
my $loaded_from = head();
ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM zero_stream.subscribers()
 WHERE id = 'live' AND state = 'live' AND watermark_acked COLLATE "C" > '$loaded_from'}),
	'before the catch-up, the live subscriber receives the load');
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
my $live_at_start = live_acked();
my $caught_up = 0;
my $first_caught_up;    # the subscribers' counts when the first had caught up
my $deadline = time + 600;
while (time < $deadline)
{
	my (undef, undef, $r) = zs_rss_kb($pid);
	$rss_max = $r if defined $r && $r > $rss_max;
	# caught up: live, or acked the head as it was at the previous poll
	my ($n, $connected, $sent_to) = split /\|/, $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE state = 'live' OR watermark_acked COLLATE "C" >= '$prev'),
       count(*), count(*) FILTER (WHERE messages_sent > 1)
  FROM zero_stream.subscribers()
 WHERE id LIKE 'c%' AND state NOT IN ('departed', 'restored')});
	$first_caught_up //= [ $connected, $sent_to ] if $n > 0;
	if ($n == $NSUB) { $caught_up = 1; last; }
	$prev = head();
	# polling the subscribers' progress (the loop's condition), and the
	# worker's memory while they catch up
	usleep(250_000);
}
my $live_at_end = live_acked();
ok($caught_up, "$NSUB subscribers caught up from the start")
  or diag $node->safe_psql('postgres', 'SELECT state, count(*) FROM zero_stream.subscribers() GROUP BY 1'),
  "\nhead " . head() . "\n",
  $node->safe_psql('postgres', q{
SELECT id, state, watermark_sent, watermark_acked, messages_sent, messages_acked, backlog_bytes
  FROM zero_stream.subscribers() WHERE state <> 'live'});
# taking turns: none waited for another to finish (the status message is the first one sent)
is_deeply($first_caught_up, [ $NSUB, $NSUB ],
	'when the first had caught up, every catching-up subscriber had been sent part of the log')
  or diag 'connected, sent part of the log: ' . join(', ', @{ $first_caught_up // [] });
# the live one was served meanwhile, not after them
cmp_ok($live_at_end, 'gt', $live_at_start,
	'the live subscriber received commits made during the catch-up before it ended');
my (undef, undef, $rss_caught_up) = zs_rss_kb($pid);

# --- the end: the load stops, the subscribers go once idle
$load->kill_kill;
my $final = head();
$catchup->finish;
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE state NOT IN ('departed', 'restored')}),
	'the catch-up subscribers are gone');
# the worker gives freed memory back within a second or so of the burst's
# end: poll its size, for 30 s at most
my $rss_after;
for (1 .. 120)
{
	(undef, undef, $rss_after) = zs_rss_kb($pid);
	last if $rss_after < $rss_before + 16 * 1024;
	usleep(250_000);    # polling the worker's RssAnon
}
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

# the live subscriber: every transaction after where it started
my @commits;
for my $line (grep { length } split /\n/, slurp_file("$base/live.out"))
{
	my ($type, undef, $env) = @{ decode_json($line)->{msg} };
	push @commits, $env->{watermark} if $type eq 'commit';
}
my @live_want = map { (split ' ')[1] } grep { (split ' ')[1] gt $from } @want;
is_deeply(\@commits, \@live_want, 'the live subscriber received every transaction once, in order');
note "server worker RssAnon (kB): before $rss_before, max during the catch-up $rss_max, "
  . "caught up $rss_caught_up, after $rss_after";
cmp_ok($rss_after, '<', $rss_before + 16 * 1024,
	"the server worker's memory came back near where it was ($rss_before kB -> $rss_after kB)");

$node->stop;
done_testing();
