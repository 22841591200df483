# Live subscribers get a round before it is stored
# (changelog/changelog_live.c): with the decoder's store held back by a lock
# on changeLog, a live subscriber (zero-stream-tail) and zero-stream-replica
# still receive and apply the round the decoder is storing (here one
# transaction), which the log does not have yet. Then the cluster crashes (immediate stop) before the store: the
# decoder stores the same transactions again after the restart, the replica
# that got ahead of the log resumes from its own watermark, and it equals
# PostgreSQL with every increment applied exactly once. With
# zero_stream.live_buffer = 0, a subscriber waits for the store. With a
# live buffer smaller than a transaction: a round in the spool's memory is
# sent in part, the rest once stored (each row once); a round that spilled
# to the decoder's spool file is sent whole from there while the store
# waits, the file is gone once the round is stored, and after a crash
# before the store no file is left and nothing is lost or sent twice.
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

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CDC = '"zero_0/cdc"';

my $node = zs_new_node('live', before_extension => q{
CREATE TABLE items (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO items SELECT g, 0 FROM generate_series(1, 100) g;
});
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $app = "$dir/app.db";
sub sql { return $node->safe_psql('postgres', $_[0]); }
sub digest { return sql(q{SELECT count(*) || ':' || sum(n) FROM items}); }

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'live', "ws://127.0.0.1:$port", $app ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");

# the replica reaches the head and equals PostgreSQL
sub replica_equals
{
	my ($reached, $equal) = @_;
	ok(replica_at(sql('SELECT last_watermark FROM zero_stream.status()')), $reached);
	is(zs_sqlite($app, q{SELECT count(*) || ':' || sum(n) FROM items}), digest(), $equal);
}

sub replica_at
{
	my ($watermark) = @_;
	for (1 .. 600)
	{
		return 1 if -f $app && zs_sqlite($app, 'SELECT stateVersion FROM "_zero.replicationState"') eq $watermark;
		usleep(100_000);    # poll: until the replica is at $watermark
	}
	return 0;
}

sql(q{UPDATE items SET n = n + 1 WHERE id <= 10});
zs_wait_catchup($node);
replica_equals('the replica follows', 'and equals PostgreSQL');

# a live subscriber from the head
my $rv = sql('SELECT replica_version FROM zero_stream.status()');
my $head = sql('SELECT last_watermark FROM zero_stream.status()');
my $tail = IPC::Run::start(
	[ $TAIL, '--idle', '120', "ws://127.0.0.1:$port/replication/v6/changes?id=live&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', "$dir/tail.out", '2>', "$dir/tail.err");
$node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM zero_stream.subscribers() WHERE state = 'live'})
  or die 'the subscribers are not live';

# hold the store back: the decoder's insert waits for this lock
my ($in, $out) = ('', '');
my $locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \my $err);
$in .= qq{BEGIN; LOCK TABLE $CDC."changeLog" IN EXCLUSIVE MODE; SELECT 'locked';\n};
$locker->pump until $out =~ /locked/;

sql(q{BEGIN; UPDATE items SET n = n + 1 WHERE id = 1; UPDATE items SET n = n + 10 WHERE id = 2; COMMIT});
my $got = 0;
for (1 .. 300)
{
	my $text = -f "$dir/tail.out" ? slurp_file("$dir/tail.out") : '';
	$got = () = $text =~ /\["commit"/g;
	last if $got >= 1;
	usleep(100_000);    # poll: until the tail has a commit
}
is($got, 1, 'the live subscriber received the transaction while the store waits');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head'}), '0',
	'the change log does not hold it yet');
is(sql(q{SELECT wait_event_type FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'}), 'Lock',
	'the decoder is waiting to store it');
my $ahead = sql(q{SELECT watermark_sent FROM zero_stream.subscribers() WHERE id = 'live'});
cmp_ok($ahead, 'gt', $head, 'the subscriber is ahead of the stored head');
my $replica_ahead = 0;
for (1 .. 300)
{
	$replica_ahead = zs_sqlite($app, 'SELECT sum(n) FROM items') eq sql('SELECT sum(n) FROM items') and last;
	usleep(100_000);    # poll: until the replica has the live round
}
ok($replica_ahead, 'zero-stream-replica applied them too')
  or diag(zs_sqlite($app, 'SELECT sum(n) FROM items') . ' ' . sql('SELECT sum(n) FROM items') . "\n"
	  . sql('SELECT * FROM zero_stream.subscribers()'));

# crash before the store: the transactions are decoded and stored again
$node->stop('immediate');
$locker->finish;
$tail->finish;
$node->start;
zs_wait_ready($node);
zs_wait_streaming($node);
sql(q{UPDATE items SET n = n + 100 WHERE id = 3});
zs_wait_catchup($node);
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head' AND change->>'tag' = 'commit'}), '2',
	'after the crash the log holds the transaction (stored again) and the new one');
zs_check_log_integrity($node, 'after the crash');
replica_equals('the replica resumed from its own watermark', 'and equals PostgreSQL: every increment applied exactly once');

# a subscriber from the old head gets each transaction once, in order
my $after = sql('SELECT last_watermark FROM zero_stream.status()');
IPC::Run::run([ $TAIL, '--idle', '2', "ws://127.0.0.1:$port/replication/v6/changes?id=again&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', \my $again, '2>', \my $again_err, IPC::Run::timeout(60));
my @commits = $again =~ /"commit",\{[^}]*\},\{"watermark":"([^"]+)"/g;
is(scalar(@commits), 2, 'a subscriber from the old head gets two commits');
is_deeply(\@commits, [ sort @commits ], 'in order');
is($commits[-1], $after, 'up to the head');

# without the live buffer, a live subscriber waits for the store
$node->append_conf('postgresql.conf', 'zero_stream.live_buffer = 0');
$node->restart;
zs_wait_streaming($node);
$head = sql('SELECT last_watermark FROM zero_stream.status()');
unlink "$dir/tail.out";
$tail = IPC::Run::start(
	[ $TAIL, '--idle', '30', "ws://127.0.0.1:$port/replication/v6/changes?id=stored&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', "$dir/tail.out", '2>', "$dir/tail.err");
$node->poll_query_until('postgres', q{SELECT count(*) >= 1 FROM zero_stream.subscribers() WHERE id = 'stored' AND state = 'live'})
  or die 'the subscriber is not live';
($in, $out) = ('', '');
$locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \$err);
$in .= qq{BEGIN; LOCK TABLE $CDC."changeLog" IN EXCLUSIVE MODE; SELECT 'locked';\n};
$locker->pump until $out =~ /locked/;
sql(q{UPDATE items SET n = n + 1 WHERE id = 4});
# until the decoder has the round and waits to store it, when a live buffer
# would have sent it
$node->poll_query_until('postgres',
	q{SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'})
  or die 'the decoder is not waiting to store the round';
# nothing observable ends this: a moment for a send that must not happen
usleep(1_000_000);
my $early = () = (-f "$dir/tail.out" ? slurp_file("$dir/tail.out") : '') =~ /\["commit"/g;
is($early, 0, 'live_buffer = 0: nothing is sent before the store');
$in .= "ROLLBACK;\n\\q\n";
$locker->finish;
my $late = 0;
for (1 .. 300)
{
	$late = () = slurp_file("$dir/tail.out") =~ /\["commit"/g;
	last if $late >= 1;
	usleep(100_000);    # poll: until the tail has the stored round's commit
}
is($late, 1, 'and the transaction once it is stored');
$tail->kill_kill;

# a round larger than the live buffer: the rest goes through a file
my $datadir = $node->data_dir;
sub rest_files { my $pid = shift // '*'; return scalar(() = glob("$datadir/base/pgsql_tmp/pgsql_tmp$pid.*")); }
sub inserts_in { my ($f) = @_; return -f $f ? scalar(() = slurp_file($f) =~ /"tag":"insert"/g) : 0; }
sub commits_in { my ($f) = @_; return -f $f ? scalar(() = slurp_file($f) =~ /\["commit"/g) : 0; }
sub lock_log
{
	($in, $out) = ('', '');
	$locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
		'<', \$in, '>', \$out, '2>', \$err);
	$in .= qq{BEGIN; LOCK TABLE $CDC."changeLog" IN EXCLUSIVE MODE; SELECT 'locked';\n};
	$locker->pump until $out =~ /locked/;
}
sub unlock_log { $in .= "ROLLBACK;\n\\q\n"; $locker->finish; }
sub start_tails
{
	my ($from, @ids) = @_;
	my @tails;
	for my $id (@ids)
	{
		unlink "$dir/$id.out";
		push @tails, IPC::Run::start(
			[ $TAIL, '--idle', '120', "ws://127.0.0.1:$port/replication/v6/changes?id=$id&taskID=t&replicaVersion=$rv&watermark=$from" ],
			'>', "$dir/$id.out", '2>', "$dir/$id.err");
	}
	$node->poll_query_until('postgres', 'SELECT count(*) = ' . scalar(@ids)
		  . " FROM zero_stream.subscribers() WHERE id IN ('" . join("','", @ids) . "') AND state = 'live'")
	  or die 'the subscribers are not live';
	return @tails;
}
sub wait_commits
{
	my ($want, @files) = @_;
	for (1 .. 600)
	{
		return 1 if !grep { commits_in($_) < $want } @files;
		usleep(100_000);    # poll: until every tail has $want commits
	}
	return 0;
}

$node->append_conf('postgresql.conf', 'zero_stream.live_buffer = 64kB');
$node->restart;
zs_wait_streaming($node);

# a round larger than the live buffer, in the spool's memory: part first
# (the decoder's first round since the restart: it read where the log ends)
$head = sql('SELECT last_watermark FROM zero_stream.status()');
my @tails = start_tails($head, 'part');
lock_log();
sql(q{INSERT INTO items SELECT g, 1 FROM generate_series(1001, 6000) g});
my $part = 0;
for (1 .. 100)
{
	$part = inserts_in("$dir/part.out");
	last if $part > 0;
	usleep(100_000);    # poll: until the tail has the round's first inserts
}
# until the decoder has the whole round and waits to store it
$node->poll_query_until('postgres',
	q{SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'})
  or die 'the decoder is not waiting to store the round';
# nothing observable ends this: a moment for the rest to be sent, which must
# not happen before the store
usleep(1_000_000);
$part = inserts_in("$dir/part.out");
cmp_ok($part, '>', 0, "a round in memory: the live buffer's part is sent while the store waits ($part rows)");
cmp_ok($part, '<', 5000, 'but not the rest');
is(commits_in("$dir/part.out") . ' ' . rest_files(zs_decoder_pid($node)), '0 0', 'nor its commit; no file');
unlock_log();
ok(wait_commits(1, "$dir/part.out"), 'the rest comes once stored');
is(inserts_in("$dir/part.out") . ' ' . commits_in("$dir/part.out"), '5000 1', 'each row once');
IPC::Run::run([ $TAIL, '--idle', '2', "ws://127.0.0.1:$port/replication/v6/changes?id=fromlog&taskID=t&replicaVersion=$rv&watermark=$head" ],
	'>', "$dir/fromlog.out", '2>', \my $fromlog_err, IPC::Run::timeout(60));
is(inserts_in("$dir/fromlog.out") . ' ' . commits_in("$dir/fromlog.out"), '5000 1',
	'a subscriber from the old head reads the same from the log');
$_->kill_kill for @tails;

# a round larger than the spool's memory (16 MB) spilled to its file while
# it was decoded: live subscribers get all of it from there
$head = sql('SELECT last_watermark FROM zero_stream.status()');
@tails = start_tails($head, 'rest1', 'rest2');
lock_log();
sql(q{INSERT INTO items SELECT g, 2 FROM generate_series(100001, 220000) g});
ok(wait_commits(1, "$dir/rest1.out", "$dir/rest2.out"),
	'live subscribers received a 120,000-row transaction while the store waits');
is(inserts_in("$dir/rest1.out") . ' ' . inserts_in("$dir/rest2.out"), '120000 120000',
	"every row of it, through the live buffer and the decoder's spool file");
is(rest_files(zs_decoder_pid($node)), 1, 'which is there while the store waits');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head'}), '0',
	'the change log does not hold it yet');
# one that got it all reconnects at its watermark while it is being stored
my ($big) = slurp_file("$dir/rest1.out") =~ /"commit",\{[^}]*\},\{"watermark":"([^"]+)"/;
unlink "$dir/again.out";
my $reconnected = IPC::Run::start(
	[ $TAIL, '--idle', '120', "ws://127.0.0.1:$port/replication/v6/changes?id=again&taskID=t&replicaVersion=$rv&watermark=$big" ],
	'>', "$dir/again.out", '2>', "$dir/again.err");
# until it is live and has been written all that was queued for it
$node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'again' AND state = 'live' AND backlog_bytes = 0})
  or die 'the reconnected subscriber is not live';
is(inserts_in("$dir/again.out"), 0, 'a subscriber that reconnects at its watermark is not sent it again');
unlock_log();
zs_wait_catchup($node);
ok($node->poll_query_until('postgres', qq{SELECT count(*) = 120002 FROM $CDC."changeLog" WHERE watermark > '$head'}),
	'then it is stored');
# the decoder removes the file after the store's commit
for (1 .. 300)
{
	last if rest_files() == 0;
	usleep(100_000);    # poll: until the decoder has removed the file
}
is(rest_files(), 0, 'and the file is gone');
sql(q{UPDATE items SET n = n + 1 WHERE id = 5});
zs_wait_catchup($node);
ok(wait_commits(2, "$dir/rest1.out"), 'the subscriber goes on with the next transaction');
is(inserts_in("$dir/rest1.out") . ' ' . commits_in("$dir/rest1.out"), '120000 2', 'having got each row once');
ok(wait_commits(1, "$dir/again.out"), 'the one that reconnected gets the next transaction');
is(inserts_in("$dir/again.out") . ' ' . commits_in("$dir/again.out"), '0 1', 'and nothing else');
$reconnected->kill_kill;
$_->kill_kill for @tails;
replica_equals('the replica follows', 'and equals PostgreSQL');

# a crash before the store: no file is left, nothing lost or sent twice
$head = sql('SELECT last_watermark FROM zero_stream.status()');
@tails = start_tails($head, 'rest3');
lock_log();
sql(q{UPDATE items SET n = n + 1 WHERE id > 100000});
ok(wait_commits(1, "$dir/rest3.out"), 'a subscriber received the next large transaction');
my $old_decoder = zs_decoder_pid($node);
is(rest_files($old_decoder), 1, 'from the file');
$node->stop('immediate');
$locker->finish;
$_->kill_kill for @tails;
$node->start;
is(rest_files($old_decoder), 0, 'the crash left no file behind');
zs_wait_ready($node);
zs_wait_streaming($node);
zs_wait_catchup($node);
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head' AND change->>'tag' = 'update'}), '120000',
	'the transaction is stored after the restart');
zs_check_log_integrity($node, 'after a crash with a round in a file');
replica_equals('the replica follows', 'and equals PostgreSQL: every row applied once');
$cli->kill_kill;
$node->stop;
done_testing();
