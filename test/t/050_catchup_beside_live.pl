# Catch-up is paused, never starved: while a subscriber is live, each
# server round that reads catch-up pages adds a pause in catch-up
# (zero_stream.catchup_share), and the rounds during that pause, which serve
# the live subscribers, must not lengthen it. Here 80 live subscribers
# under a steady load keep the server's rounds busy; a subscriber reading
# the log from its start must still reach the head and go live, and the
# live ones must still receive every transaction. (Before the fix the
# catch-up subscriber stopped after its first page and never resumed:
# every live round pushed the end of the pause further.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $FANOUT = "$FindBin::RealBin/../../zero-stream-fanout";
my $NLIVE = 80;

my $node = zs_new_node('beside',
	extra_conf => "zero_stream.replica_file = ''\n"
	  . 'zero_stream.max_subscribers = ' . ($NLIVE + 4) . "\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $base = $node->basedir;

# a log to catch up on: 50 transactions of 998 rows
$node->safe_psql('postgres', q{
DO $$ BEGIN FOR i IN 1..50 LOOP
  INSERT INTO t (v) SELECT 'row ' || g || ' of transaction ' || i FROM generate_series(1, 998) g;
  COMMIT;
END LOOP; END $$});
zs_wait_catchup($node, '300 s');

# the live subscribers, from the head, and 300 single-row transactions/s
my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
my ($live_out, $live_err) = ('', '');
my $live = IPC::Run::start(
	[ $FANOUT, '--subscriptions', $NLIVE, '--idle', '5',
		"ws://127.0.0.1:$port/replication/v6/changes?id=l%d&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', \$live_out, '2>', \$live_err);
ok($node->poll_query_until('postgres',
		qq{SELECT count(*) = $NLIVE FROM zero_stream.subscribers() WHERE id LIKE 'l%' AND state = 'live'}),
	"$NLIVE subscribers are live");
my $script = "$base/insert.sql";
PostgreSQL::Test::Utils::append_to_file($script, "INSERT INTO t (v) VALUES ('live');\n");
my ($load_out, $load_err) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-j', '2', '-R', '300', '-T', '600', '-f', $script,
		'-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$load_out, '2>', \$load_err);
# the load reaches the live subscribers before the catch-up starts
$node->poll_query_until('postgres', qq{
SELECT count(*) = $NLIVE FROM zero_stream.subscribers()
 WHERE id LIKE 'l%' AND messages_acked > 300})
  or die 'the load did not reach the live subscribers';

# one subscriber reads the log from its start
my ($cu_out, $cu_err) = ('', '');
my $catchup = IPC::Run::start(
	[ $FANOUT, '--subscriptions', '1', '--idle', '5',
		"ws://127.0.0.1:$port/replication/v6/changes?id=c%d&taskID=t&replicaVersion=$rv&watermark=$rv" ],
	'>', \$cu_out, '2>', \$cu_err);
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'c1' AND state = 'live'}),
	'the catching-up subscriber reached the head beside the live ones')
  or diag $node->safe_psql('postgres', q{
SELECT id, state, messages_sent, messages_acked, backlog_bytes FROM zero_stream.subscribers() WHERE id = 'c1'});

# the end: every subscriber got every transaction once, in order
$load->kill_kill;
my $final = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
$catchup->finish;
$live->finish;
my @c = grep { /^sub=/ } split /\n/, $cu_out;
is(scalar(@c), 1, 'the catching-up subscriber reported') or diag "$cu_out\n$cu_err";
like($c[0] // '', qr/ last_watermark=\Q$final\E status=ok$/,
	'the catching-up subscriber received every transaction to the head, once, in order');
my @l = grep { /^sub=/ } split /\n/, $live_out;
is(scalar(grep { / last_watermark=\Q$final\E status=ok$/ } @l), $NLIVE,
	"all $NLIVE live subscribers received every transaction to the head, once, in order")
  or diag join "\n", @l[ 0 .. 3 ], $live_err;

$node->stop;
done_testing();
