# Subscriber positions across restarts: a subscriber and a
# zero-stream-replica that left hold the purge floor for
# subscriber_retention after they left, also when PostgreSQL restarts (fast,
# then immediate) meanwhile and zero_stream.purge() runs at once after the
# start: both come back and resume without a restore, and the replica equals
# PostgreSQL. subscribers() and status() show the positions read back and
# what holds the floor. A fast shutdown closes a connected subscriber with a
# WebSocket close frame (1001 going away). Past subscriber_retention a
# departed subscriber is not retained any more, as without a restart.
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
my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $node = zs_new_node('positions', extra_conf => "zero_stream.subscriber_retention = '120s'\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $app = "$dir/app.db";
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $CDC = '"zero_0/cdc"';
my $CONNECTED = "state NOT IN ('departed', 'restored')";
my @running;

END { $_->kill_kill for grep { $_->pumpable } @running; }

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub write_txns
{
	my ($n) = @_;
	sql(join ';', map { "INSERT INTO t (v) VALUES ('tx $_')" } 1 .. $n);
	zs_wait_catchup($node);
	zs_wait_backup($node);
}

sub url
{
	my (%p) = @_;
	return zs_changes_url($node, id => 'away', taskID => 'task', replicaVersion => $rv, watermark => $rv, %p);
}

sub purge { return zs_purge($node); }

sub start_cli
{
	my $h = IPC::Run::start([ $CLI, 'sync', '--task-id', 'cli', '--id', 'cli', "ws://127.0.0.1:$port", $app ],
		'>', "$dir/cli.out", '2>>', "$dir/cli.log");
	push @running, $h;
	return $h;
}

sub restores
{
	my $log = slurp_file("$dir/cli.log");
	my $n = () = $log =~ /restored replicaVersion/g;
	return $n;
}

# the subscriber 'away' follows until it has acked the head, then leaves;
# the CLI's replica equals PostgreSQL, then it stops: both positions saved
sub follow_then_leave
{
	my ($label) = @_;
	my $head = sql('SELECT last_watermark FROM zero_stream.status()');
	my $tail = IPC::Run::start([ $TAIL, url(watermark => $head) ], '>', "$dir/away.out", '2>', "$dir/away.err");
	push @running, $tail;
	write_txns(20);
	my $w = sql('SELECT last_watermark FROM zero_stream.status()');
	$node->poll_query_until('postgres',
		qq{SELECT watermark_acked = '$w' FROM zero_stream.subscribers() WHERE id = 'away' AND $CONNECTED})
	  or die "$label: the subscriber did not ack the head";
	my $cli = start_cli();
	zs_replica_equals($node, $app, "$label, before");
	# (the table may still hold both from an earlier departure, saved as not
	# connected: these departures are the ones saved after this instant)
	my $gone = sql('SELECT clock_timestamp()');
	$tail->kill_kill;
	$cli->kill_kill;
	ok($node->poll_query_until('postgres', qq{
SELECT count(*) = 2 AND bool_and(NOT connected) AND bool_and(last_seen >= '$gone')
  FROM zero_stream.subscriber_positions WHERE mode = 'serving' AND id <> 'live'}),
		"$label: both departures are saved (not connected)")
	  or diag sql('SELECT * FROM zero_stream.subscriber_positions');
	is(sql(q{SELECT watermark FROM zero_stream.subscriber_positions WHERE id = 'away'}), $w,
		"$label: the saved position is the subscriber's last ack");
	return ($w, sql(q{SELECT last_seen FROM zero_stream.subscriber_positions WHERE id = 'away'}));
}

# PostgreSQL restarted: purge at once; the positions hold the floor
sub check_restored
{
	my ($label, $w, $left) = @_;
	zs_wait_streaming($node);
	# the backup replica reached the head of the start: it vouches for its watermark
	zs_wait_backup($node);
	my ($rows, $floor, $held) = purge();
	cmp_ok($rows, '>', 0, "$label: the first purge after the start purges ($rows rows)");
	cmp_ok($floor, 'le', $w, "$label: not past the departed subscriber's position");
	is($floor, sql(q{SELECT min(watermark_acked COLLATE "C") FROM zero_stream.subscribers() WHERE state = 'restored'}),
		"$label: down to the lowest position read back");
	like(sql(q{SELECT purge_held_by FROM zero_stream.status()}),
		qr/^subscriber \S+, disconnected at .* \(before the restart\), retained until /,
		"$label: status() says a position from before the restart holds the floor");
	is(sql(q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE watermark = '} . $w . q{'}) > 0 ? 1 : 0, 1,
		"$label: the change log still has the subscriber's watermark");
	is(sql(qq{SELECT state || '|' || watermark_acked || '|' || (retained_until - disconnected_at = '120 s')::int
		FROM zero_stream.subscribers() WHERE id = 'away'}), "restored|$w|1",
		"$label: subscribers() shows the restored position, retained for subscriber_retention");
	is(sql(qq{SELECT disconnected_at = '$left'::timestamptz AND disconnected_at < pg_postmaster_start_time()
		FROM zero_stream.subscribers() WHERE id = 'away'}), 't',
		"$label: retained from when it left, before the restart, not from the start");
	cmp_ok(sql('SELECT retained_subscribers FROM zero_stream.status()'), '>=', 2,
		"$label: status() counts the retained positions");
	write_txns(10);

	# they come back: the subscriber resumes from its watermark
	IPC::Run::run([ $TAIL, '--idle', '2', url(watermark => $w) ], '>', \my $out, '2>', \my $err,
		IPC::Run::timeout(60));
	unlike($out, qr/"error"/, "$label: the subscriber resumes without an error");
	my $commits = () = $out =~ /\["commit",/g;
	cmp_ok($commits, '>=', 10, "$label: and receives what was written while it was away ($commits commits)");
	my $before = restores();
	my $cli = start_cli();
	zs_replica_equals($node, $app, "$label, after");
	is(restores(), $before, "$label: the CLI resumed without a restore");
	$cli->kill_kill;
}

write_txns(50);
my ($w, $left) = follow_then_leave('fast restart');
write_txns(30);

# a subscriber still connected at the fast shutdown is told 1001 going away
my $live = IPC::Run::start([ $TAIL, url(id => 'live', watermark => sql('SELECT last_watermark FROM zero_stream.status()')) ],
	'>', "$dir/live.out", '2>', "$dir/live.err", IPC::Run::timeout(120));
push @running, $live;
$node->poll_query_until('postgres', q{SELECT connected FROM zero_stream.subscriber_positions WHERE id = 'live'})
  or die 'the live subscriber was not saved as connected';
$node->restart;
$live->finish;
like(slurp_file("$dir/live.err"), qr/^closed: 1001 server shutting down/m,
	'fast shutdown: a connected subscriber gets a close frame, 1001 going away');
check_restored('fast restart', $w, $left);
is(sql(q{SELECT state || '|' || (disconnected_at >= pg_postmaster_start_time())::int
	FROM zero_stream.subscribers() WHERE id = 'live'}), 'restored|1',
	'fast restart: the subscriber connected at the shutdown is retained from the start on');

($w, $left) = follow_then_leave('immediate restart');
write_txns(30);

# ids are the clients' bytes: ones that are not valid text, or that differ
# only in such bytes, or hold a backslash, are kept apart and come back
my @odd;
for my $id ('odd%FF', 'odd%FE', 'odd%5Cxff')
{
	my $h = IPC::Run::start([ $TAIL, url(id => $id, watermark => $w) ], '>', \my $o, '2>', \my $e);
	push @running, $h;
	push @odd, $h;
}
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM zero_stream.subscriber_positions WHERE id LIKE 'odd%'}),
	'odd ids: all three are saved, apart');
is(sql(q{SELECT string_agg(id, ' ' ORDER BY id COLLATE "C") FROM zero_stream.subscriber_positions WHERE id LIKE 'odd%'}),
	'odd\\\\xff odd\\xfe odd\\xff', 'odd ids: escaped one-to-one');
is(sql(q{SELECT state = 'streaming' AND last_error IS NULL FROM zero_stream.status()}), 't',
	'odd ids: the decoder goes on');
$_->kill_kill for @odd;
$node->stop('immediate');
$node->start;
check_restored('immediate restart', $w, $left);
is(sql(q{SELECT count(*) FROM zero_stream.subscribers() WHERE state = 'restored'
	AND (id = E'odd\\\\xff' OR (octet_length(id) = 4 AND left(id, 3) = 'odd'))}), '3',
	'odd ids: read back as the bytes they were');

# past subscriber_retention: not retained any more, as without a restart
$node->append_conf('postgresql.conf', "zero_stream.subscriber_retention = '2s'\n");
$node->reload;
# until the retention has passed for every position (subscribers() shows
# only the retained ones)
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE NOT $CONNECTED}),
	'past subscriber_retention: subscribers() shows no retained position');
write_txns(5);
my ($rows, $floor, $held) = purge();
is($held, 'backup replica', 'past subscriber_retention: the backup replica holds the floor');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM zero_stream.subscriber_positions'),
	'past subscriber_retention: the saved positions are gone');
IPC::Run::run([ $TAIL, url(watermark => $w) ], '>', \my $out, '2>', \my $err, IPC::Run::timeout(60));
like($out, qr/"error",\{"type":2,/, 'past subscriber_retention: the subscriber is told WatermarkTooOld');
is(sql('SELECT retained_subscribers FROM zero_stream.status()'), '0', 'status(): nothing retained');

done_testing();
