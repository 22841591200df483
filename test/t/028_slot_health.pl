# Slot health: with max_slot_wal_keep_size small, a decoder held
# back while WAL is written loses its slot at a checkpoint (wal_status
# 'lost'). The change log cannot continue: the decoder says so in the log
# and in status() (last_reset), starts a new lineage (new slot, initial copy,
# replicaVersion), a subscriber of the old lineage is told
# WrongReplicaVersion, and zero-stream-replica restores by itself and then
# equals PostgreSQL. Then: a quiet published table while an unpublished one
# is written hard still lets the slot's restart_lsn advance (retained WAL
# stays bounded). Last, the streamed publication dropped: the same
# recovery, by a new lineage.
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
my $node = zs_new_node('slot', extra_conf => qq{
max_slot_wal_keep_size = 64MB
wal_keep_size = 0
min_wal_size = 32MB
max_wal_size = 64MB
zero_stream.slot_save_interval = 1s
}, before_extension => q{
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
CREATE SCHEMA quiet;
CREATE TABLE quiet.noise (id bigserial PRIMARY KEY, pad text);
INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 1000) g;
});
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $file = "$dir/app.db";
sub sql { return $node->safe_psql('postgres', $_[0]); }

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'slot', "ws://127.0.0.1:$port", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
sub replica_equals { zs_replica_equals($node, $file, $_[0]); }
replica_equals('start');
my $old_rv = sql('SELECT replica_version FROM zero_stream.status()');

# hold the decoder back (its store waits for this lock) and write WAL past
# max_slot_wal_keep_size; a checkpoint invalidates the slot
my ($in, $out) = ('', '');
my $locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$in, '>', \$out, '2>', \my $err);
$in .= qq{BEGIN; LOCK TABLE "zero_0/cdc"."changeLog" IN EXCLUSIVE MODE; SELECT 'locked';\n};
$locker->pump until $out =~ /locked/;
sql(q{INSERT INTO t (v) VALUES ('held back')});
# before it is lost: WAL written in small steps until the slot is at risk
my $warning = '';
for (1 .. 40)
{
	sql(q{INSERT INTO quiet.noise (pad) SELECT repeat('x', 1000) FROM generate_series(1, 2000)});
	$warning = sql('SELECT slot_warning FROM zero_stream.status()') and last;
}
like($warning, qr/^The replication slot may be lost soon: wal_status \w+, \d+ kB of WAL may still be written before it is \(safe_wal_size\), the decoder is \d+ kB behind$/,
	'before it is lost: status().slot_warning says the slot is at risk');
isnt(sql(q{SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}), 'lost',
	'and it is not lost yet');
my $warned = 0;
for (1 .. 150)
{
	$warned = $node->log_contains('WARNING:  zero_stream: replication slot "zero_stream_zero_0" is at risk of being lost') and last;
	usleep(100_000);    # poll: until the server worker's WARNING
}
ok($warned, 'the server worker logs a WARNING while the decoder is held back');
ok($node->log_contains('DETAIL:  The replication slot may be lost soon: wal_status '), 'with the figures');
# 15 logs 'invalidating slot', 16 and later 'invalidating obsolete replication slot'
my $invalidating = 'invalidating (obsolete replication )?slot "zero_stream_zero_0"';
# a checkpoint the WAL above started may have invalidated it already: then
# more WAL would invalidate the next lineage's slot too, while it is held back
unless ($node->log_contains($invalidating))
{
	for (1 .. 6)
	{
		sql(q{INSERT INTO quiet.noise (pad) SELECT repeat('x', 1000) FROM generate_series(1, 20000)});
		sql('SELECT pg_switch_wal()');
	}
	sql('CHECKPOINT');
}
my $invalidated = 0;
for (1 .. 600)
{
	$invalidated = $node->log_contains($invalidating) and last;
	usleep(100_000);    # poll: until the checkpoint's invalidation is logged
}
ok($invalidated, 'the checkpoint invalidates the slot (max_slot_wal_keep_size)');
# nothing observable ends this: the server worker checks the slot every 5 s
# (SLOT_CHECK_MS) and logs nothing for a lost one, so let a check pass
sleep 6;
ok(!$node->log_contains('is no longer at risk of being lost'), 'a lost slot is not said to be out of danger');
$in .= "ROLLBACK;\n\\q\n";
$locker->finish;

# the decoder starts a new lineage on its own, and says why
ok($node->poll_query_until('postgres', qq{SELECT state = 'streaming' AND replica_version <> '$old_rv' FROM zero_stream.status()}),
	'a new lineage (replicaVersion) is started');
like(sql('SELECT last_reset FROM zero_stream.status()'), qr/was invalidated: the WAL it needed (from \S+ )?was removed/,
	'status() says why (last_reset)');
ok($node->log_contains('WARNING:  replication slot "zero_stream_zero_0" was invalidated'), 'and the log');
ok($node->log_contains('HINT:  Subscribers of replicaVersion'), 'with a hint');

# subscribers of the old lineage are told; the CLI restores by itself
my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
IPC::Run::run([ $TAIL, "ws://127.0.0.1:$port/replication/v6/changes?id=old&taskID=x&replicaVersion=$old_rv&watermark=$old_rv" ],
	'>', \my $tail_out, '2>', \my $tail_err, IPC::Run::timeout(60));
like($tail_out, qr/"error",\{"type":1,"message":"current replica version is/, 'an old-lineage subscriber gets WrongReplicaVersion');
sql(q{INSERT INTO t (v) VALUES ('after the reset')});
replica_equals('after the new lineage');
like(slurp_file("$dir/cli.log"), qr/restor/i, 'zero-stream-replica restored the new lineage');

# quiet published table, busy unpublished one: restart_lsn advances
my $start = sql(q{SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'});
for (1 .. 8)
{
	my $before = sql('SELECT pg_current_wal_lsn()');
	sql(q{INSERT INTO quiet.noise (pad) SELECT repeat('y', 1000) FROM generate_series(1, 10000)});
	# until the slot's restart_lsn has moved past where this write began
	$node->poll_query_until('postgres',
		qq{SELECT restart_lsn >= '$before'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'})
	  or last;
}
ok($node->poll_query_until('postgres',
		qq{SELECT restart_lsn > '$start'::pg_lsn AND pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) < 64 * 1024 * 1024
		     FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
	'writes to unpublished tables only: restart_lsn advances, retained WAL stays bounded');
is(sql('SELECT slot_warning IS NULL FROM zero_stream.status()'), 't', 'a healthy slot: no slot_warning');
cmp_ok(sql('SELECT retained_wal_bytes FROM zero_stream.status()'), '<', 64 * 1024 * 1024,
	'status() shows the retained WAL');

# a streamed publication dropped: decoding cannot get past the next change
# (pgoutput looks the publication up at each change's historic snapshot;
# 18's skips it instead, and the decoder notices at its next slot save);
# the decoder asks for a new lineage, recreates the default publication at
# its next start, says why, and the replica restores and follows
my $rv2 = sql('SELECT replica_version FROM zero_stream.status()');
sql('DROP PUBLICATION _zero_public_0');
sql(q{INSERT INTO t (v) VALUES ('after the drop')});
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'streaming' AND replica_version <> '$rv2' FROM zero_stream.status()}),
	'a dropped publication: a new lineage is started');
like(sql('SELECT last_reset FROM zero_stream.status()'),
	qr/publication "_zero_public_0" does not exist at [0-9A-F]+\/[0-9A-F]+, where decoding stopped/,
	'status() says why (last_reset)');
ok($node->log_contains('WARNING:  publication "_zero_public_0" does not exist at'), 'and the log');
is(sql(q{SELECT count(*) FROM pg_publication WHERE pubname = '_zero_public_0'}), '1',
	'the default publication is there again');
sql(q{INSERT INTO t (v) VALUES ('after the new lineage')});
replica_equals('after the dropped publication');

# the same publication dropped and created again before the decoder reaches
# the change after the drop (its store held back): the present catalog has
# the publication, the change's historic one does not, so only the error
# tells (18 skips the publication: its OID changed, the decoder notices)
my $rv3 = sql('SELECT replica_version FROM zero_stream.status()');
my ($lock_in, $lock_out) = ('', '');
my $pub_locker = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
	'<', \$lock_in, '>', \$lock_out, '2>', \my $lock_err, IPC::Run::timeout(120));
$lock_in .= qq{BEGIN; LOCK TABLE "zero_0/cdc"."changeLog" IN EXCLUSIVE MODE; SELECT 'locked';\n};
$pub_locker->pump until $lock_out =~ /locked/;
sql(q{INSERT INTO t (v) VALUES ('held back')});
sql('DROP PUBLICATION _zero_public_0');
sql(q{INSERT INTO t (v) VALUES ('after the second drop')});
sql('CREATE PUBLICATION _zero_public_0 FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true)');
$lock_in .= "COMMIT;\n\\q\n";
$pub_locker->finish;
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'streaming' AND replica_version <> '$rv3' FROM zero_stream.status()}),
	'a publication dropped and created again before decoding reached the drop: a new lineage is started')
  or diag(sql('SELECT state, last_error, last_reset FROM zero_stream.status()'));
like(sql('SELECT last_reset FROM zero_stream.status()'),
	qr/publication "_zero_public_0" (does not exist at|was dropped and created again before) [0-9A-F]+\/[0-9A-F]+, where decoding stopped/,
	'status() names the publication');
sql(q{INSERT INTO t (v) VALUES ('after the third lineage')});
replica_equals('after the publication created again');

$cli->kill_kill;
$node->stop;
done_testing();
