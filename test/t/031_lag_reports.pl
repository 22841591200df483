# Replication lag reports (zero-cache's LagReporter): every
# zero_stream.lag_report_interval the decoder writes a logical message;
# when decoding reaches it, live subscribers get
# ["status",{"tag":"status","lagReport":{"lastTimings":{...},"nextSendTimeMs":n}}]
# between transactions, also while the published tables are quiet; a new
# subscription's first status carries the latest report; transactions and
# acks go on as before, and nothing is added to the change log.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CDC = '"zero_0/cdc"';
my $node = zs_new_node('lag', extra_conf => q{
zero_stream.lag_report_interval = 1s
}, before_extension => q{
CREATE TABLE t (id int PRIMARY KEY, v text);
});
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{INSERT INTO t VALUES (1, 'a')});
zs_wait_catchup($node);
my $rv = sql('SELECT replica_version FROM zero_stream.status()');
my $head = sql('SELECT last_watermark FROM zero_stream.status()');
my $rows = sql(qq{SELECT count(*) FROM $CDC."changeLog"});
my $started_ms = sql(q{SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint});

my $tail = IPC::Run::start(
	[ $TAIL, '--idle', '20', "ws://127.0.0.1:$port/replication/v6/changes?id=lag&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', "$dir/tail.out", '2>', "$dir/tail.err");

sub reports
{
	my $text = -f "$dir/tail.out" ? slurp_file("$dir/tail.out") : '';
	return $text =~ /\["status",\{"tag":"status","lagReport":\{"lastTimings":\{"sendTimeMs":(\d+),"commitTimeMs":(\d+),"receiveTimeMs":(\d+)\},"nextSendTimeMs":(\d+)\}\}\]/g;
}

# quiet published tables: reports keep coming
my @r;
for (1 .. 100)
{
	@r = reports();
	last if @r >= 4 * 4;
	usleep(100_000);    # polling the subscriber's output for reports
}
my $n = @r / 4;
cmp_ok($n, '>=', 4, "a quiet stream still brings lag reports ($n)");
my ($ok_order, $ok_next, $ok_ours) = (1, 1, 1);
for (my $i = 0; $i < @r; $i += 4)
{
	my ($send, $commit, $receive, $next) = @r[ $i .. $i + 3 ];
	$ok_order &&= $send <= $commit && $commit <= $receive;
	$ok_next &&= $next >= $receive;
	$ok_ours &&= $send >= $started_ms;
}
ok($ok_order, 'sendTimeMs <= commitTimeMs <= receiveTimeMs');
ok($ok_next, 'nextSendTimeMs is not before receiveTimeMs');
ok($ok_ours, 'every report was sent by this server, since it started');
my @sends = map { $r[ 4 * $_ ] } 0 .. $n - 1;
ok((grep { $sends[$_] > $sends[ $_ - 1 ] } 1 .. $#sends) == $#sends, 'each report is a new one');

# transactions go on, and the reports did not enter the log
sql(q{INSERT INTO t VALUES (2, 'b')});
my $got = 0;
for (1 .. 100)
{
	$got = () = slurp_file("$dir/tail.out") =~ /\["commit"/g;
	last if $got >= 1;
	usleep(100_000);    # polling the subscriber's output for the commit
}
is($got, 1, 'a transaction after the reports arrives (acks still in step)');
zs_wait_catchup($node);
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $rows + 3, 'the log holds only the transaction (begin, insert, commit)');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change::text LIKE '%lag-report%'}), '0', 'no report in the log');

# a new subscription's first status carries the latest report
IPC::Run::run([ $TAIL, '--count', '1', "ws://127.0.0.1:$port/replication/v6/changes?id=new&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', \my $first, '2>', \my $first_err, IPC::Run::timeout(30));
like($first, qr/^\{"id":1,"msg":\["status",\{"tag":"status","lagReport":\{"lastTimings":/,
	'a new subscription\'s first status carries the latest lag report');

# disabled: no more reports
$node->append_conf('postgresql.conf', 'zero_stream.lag_report_interval = 0');
$node->reload;
# The decoder takes the new setting between its rounds and nothing tells
# when (a worker logs a changed setting at DEBUG2 only): give it well over
# a round, and a report written just before it time to arrive.
usleep(1_500_000);
my $before = reports() / 4;
# an absence has no event to wait for: three intervals of the old setting
# without a report show that none comes
usleep(3_000_000);
is(reports() / 4, $before, 'lag_report_interval = 0: no more reports');
$tail->kill_kill;
$node->stop;
done_testing();
