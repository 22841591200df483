# Purging the change log: zero_stream.purge() and the periodic
# purge delete exactly what no subscriber, backup replica or reservation
# needs: the floor is the lowest of the backup replica's watermark, every
# connected subscriber's acked watermark (where it started, until it acks)
# and every subscriber that left less than subscriber_retention ago; the
# newest transaction always stays. A subscriber that returns below the
# floor gets WatermarkTooOld, and a replica restored afterwards equals
# PostgreSQL. A held purge lock (a row lock on the oldest row) blocks the
# purge. Under load, with purges every half second, a live replica follows
# and equals PostgreSQL.
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
my $node = zs_new_node('purge', extra_conf => "zero_stream.purge_interval = 0\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $CDC = '"zero_0/cdc"';

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub write_txns
{
	my ($n) = @_;
	sql("INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, $n) g");
	sql(join ';', map { "INSERT INTO t (v) VALUES ('tx $_')" } 1 .. $n);
	zs_wait_catchup($node);
	zs_wait_backup($node);
}

sub url
{
	my (%p) = @_;
	return zs_changes_url($node, id => 'tap', taskID => 'task', replicaVersion => $rv, watermark => $rv, %p);
}

sub purge { return zs_purge($node); }

sub oldest { return sql(qq{SELECT min(watermark COLLATE "C") FROM $CDC."changeLog"}); }
sub newest { return sql(qq{SELECT max(watermark COLLATE "C") FROM $CDC."changeLog"}); }

write_txns(50);
my $w0 = newest();

# 1. a stalled subscriber at w0 (it never acks) holds the floor there
my $dir = $node->basedir;
my $stalled = IPC::Run::start([ $TAIL, '--no-ack', url(id => 'stalled', watermark => $w0) ],
	'>', "$dir/stalled.out", '2>', "$dir/stalled.err");
$node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM zero_stream.subscribers() WHERE id = 'stalled'})
  or die 'no subscriber';
write_txns(50);
my $before_rows = sql(qq{SELECT count(*) FROM $CDC."changeLog"});
my ($rows, $floor, $held) = purge();
is($floor, $w0, 'the floor is the stalled subscriber\'s starting watermark');
like($held, qr/^subscriber stalled/, 'held by that subscriber');
cmp_ok($rows, '>', 0, "rows below it are deleted ($rows)");
# chunks go whole: the floor's chunk stays, with the rows before the floor it holds
is(sql(qq{SELECT "firstWatermark" <= '$w0' AND watermark >= '$w0' FROM $CDC."changeLogChunks"
           ORDER BY watermark, pos LIMIT 1}), 't', 'the oldest remaining chunk holds the floor\'s transaction');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $before_rows - $rows, 'exactly the reported rows are gone');
is(sql(qq{SELECT count(*) FROM $CDC."changeLogChunks" WHERE watermark < '$w0'}), '0',
	'no chunk below the floor remains');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark < '$w0' COLLATE "C"}),
	sql(qq{SELECT count(*) FROM (SELECT "chunk" FROM $CDC."changeLogChunks" ORDER BY watermark, pos LIMIT 1) c,
	         $CDC."changeLogRows"(c.chunk) r WHERE r.watermark < '$w0'}),
	'the rows below the floor left are the floor\'s chunk\'s');
like(sql('SELECT purge_floor || \'|\' || purged_rows FROM zero_stream.status()'), qr/^\Q$w0\E\|\d+$/,
	'status() shows the floor and the purged rows');

# 2. it leaves: kept for subscriber_retention, then not waited for
$stalled->kill_kill;
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE id = 'stalled' AND state NOT IN ('departed', 'restored')})
  or die 'still connected';
($rows, $floor, $held) = purge();
is($floor, $w0, 'a departed subscriber still holds the floor within subscriber_retention');
like($held, qr/disconnected/, 'and status() says so');
$node->append_conf('postgresql.conf', "zero_stream.subscriber_retention = '1s'\n");
$node->reload;
# until the departed subscriber is past the new retention, as a session
# started after the reload sees it (the decoder is signalled with the rest)
$node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE id = 'stalled'})
  or die 'the departed subscriber is still retained';
write_txns(20);
my $head = newest();
($rows, $floor, $held) = purge();
is($floor, $head, 'past the retention, the backup replica holds the floor: its watermark, the head');
is($held, 'backup replica', 'held by the backup replica');
is(sql(qq{SELECT count(*) FROM $CDC."changeLogChunks" WHERE watermark <> '$head'}), '0',
	'only the chunks of the newest transaction are left');
cmp_ok(oldest(), 'le', $head, 'and they hold it');

# 3. it returns below the floor: WatermarkTooOld
IPC::Run::run([ $TAIL, url(id => 'stalled', watermark => $w0) ], '>', \my $out, '2>', \my $err,
	IPC::Run::timeout(60));
like($out, qr/"error",\{"type":2,"message":"earliest supported watermark is /,
	'a subscriber returning below the floor gets WatermarkTooOld');

# 4. the purge lock: a row lock on the oldest row blocks the purge
write_txns(20);
my $lock_in = '';
my $lock_out = '';
my $locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$lock_in, '>', \$lock_out, '2>', \my $lock_err);
$lock_in .= qq{BEGIN; SELECT watermark FROM $CDC."changeLog" ORDER BY watermark, pos LIMIT 1 FOR SHARE;\n};
$locker->pump until $lock_out =~ /\S/;
($rows, $floor, $held) = purge();
is($rows, '0', 'a held purge lock: nothing purged');
like($held, qr/purge lock/, 'a held purge lock: status() says so');
$lock_in .= "COMMIT;\n\\q\n";
$locker->finish;
($rows) = purge();
cmp_ok($rows, '>', 0, 'released: the purge goes on');

# 5. the coverage gate: after a decoder restart, the backup replica's
# watermark counts only once it reached the head of that moment. The
# replicator is paused (SIGSTOP) while transactions are written and the
# decoder restarts; purge waits for the backup, then goes on.
my $replicator = sql(q{SELECT pid FROM zero_stream.workers() WHERE worker = 'replicator'});
my $decoder = sql(q{SELECT pid FROM zero_stream.workers() WHERE worker = 'decoder'});
kill 'STOP', $replicator;
sql(join ';', map { "INSERT INTO t (v) VALUES ('gate $_')" } 1 .. 20);
# stored before the restart, so the head at the new decoder's start is past the backup
zs_wait_catchup($node);
kill 'TERM', $decoder;
$node->poll_query_until('postgres', qq{SELECT pid <> $decoder AND state = 'streaming' FROM zero_stream.status()})
  or die 'the decoder did not restart';
zs_wait_catchup($node);
sql(join ';', map { "INSERT INTO t (v) VALUES ('gate more $_')" } 1 .. 20);
zs_wait_catchup($node);
($rows, $floor, $held) = purge();
is($rows, '0', 'coverage gate: a backup replica behind the head of the decoder\'s start does not enable purging');
like($held, qr/^waiting for the backup replica to reach /, 'coverage gate: status() says what purging waits for');
kill 'CONT', $replicator;
$node->poll_query_until('postgres', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()') or die;
($rows, $floor, $held) = purge();
cmp_ok($rows, '>', 0, 'coverage gate: once the backup replica reached it, purging goes on');
is($held, 'backup replica', 'coverage gate: the backup replica holds the floor again');

# 6. under load, purging every half second, a live replica and a restored one
$node->append_conf('postgresql.conf', "zero_stream.purge_interval = '500ms'\n");
$node->reload;
my $file = "$dir/live.db";
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'live', "ws://127.0.0.1:$port", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
for my $round (1 .. 20)
{
	sql(join ';', map { "INSERT INTO t (v) VALUES ('load $round $_')" } 1 .. 25);
	sql("UPDATE t SET v = v || '+' WHERE id % 7 = $round % 7");
	sql("DELETE FROM t WHERE id % 97 = $round");
	# pacing, not a wait: nothing to observe, the rounds are spread over
	# several purge intervals so that purges run between them
	usleep(100_000);
}
zs_wait_catchup($node);
$node->poll_query_until('postgres', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()') or die;
cmp_ok(sql('SELECT purged_rows FROM zero_stream.status()'), '>', $rows, 'the periodic purge ran under load');
my $target = newest();
for (1 .. 600)
{
	last if -f $file && zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') eq $target;
	usleep(100_000);    # poll: until the live replica is at the log's head
}
my $pg = sql(q{SELECT count(*) || ':' || md5(string_agg(id || '|' || v, ',' ORDER BY id)) FROM t});
sub lite
{
	my ($path) = @_;
	my $rows = zs_sqlite($path, q{SELECT group_concat(x, ',') FROM (SELECT id || '|' || v AS x FROM t ORDER BY id)});
	require Digest::MD5;
	return zs_sqlite($path, 'SELECT count(*) FROM t') . ':' . Digest::MD5::md5_hex($rows);
}
is(lite($file), $pg, 'the live replica equals PostgreSQL after purges under load');
$cli->kill_kill;
my $fresh = "$dir/fresh.db";
IPC::Run::run([ $CLI, 'sync', '--task-id', 'fresh', '--idle', '2', "ws://127.0.0.1:$port", $fresh ],
	'>', "$dir/fresh.out", '2>', "$dir/fresh.log", IPC::Run::timeout(120));
is(lite($fresh), $pg, 'a replica restored after the purges equals PostgreSQL');
cmp_ok(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), '<', 200, 'the change log stays small');

zs_check_log_integrity($node, 'after purges');
$node->stop;

# 7. as in scripts/demo.sh, with the default purge_interval: the decoder's
# first purge runs at its start, before the backup replica written by the
# initial copy follows; once it follows, it holds the floor within seconds,
# not at the next purge a purge_interval later.
my $demo = zs_new_node('purge_demo', extra_conf => "zero_stream.purge_interval = '60s'\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
$demo->safe_psql('postgres', q{INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 100) g});
zs_wait_catchup($demo);
zs_wait_backup($demo);
my $demo_held;
for (1 .. 100)
{
	$demo_held = $demo->safe_psql('postgres', 'SELECT purge_held_by FROM zero_stream.status()');
	last if $demo_held eq 'backup replica';
	usleep(100_000);    # poll: until status() names the backup replica
}
is($demo_held, 'backup replica',
	'default purge_interval: status() names the backup replica as the holder once it follows');
is($demo->safe_psql('postgres', 'SELECT purge_floor IS NOT NULL FROM zero_stream.status()'), 't',
	'default purge_interval: and shows its floor');
$demo->stop;
done_testing();
