# Ownership of the change log (seed 000). Another change streamer
# takes the log over at its head, as zero-cache's storer does: it writes
# replicationState.owner in the transaction that stores its first
# transaction past the head. This decoder's next store then fails its
# ownership check, and it stops writing the log:
#  - it says why, in the log and in status(), and stays stopped: it does not
#    take the log back when its worker starts again, nor after a restart of
#    the server (the owner in the state row keeps the decision);
#  - it waits without holding its slot, and neither a missing slot nor a
#    restart of the server makes it start a new lineage in the other
#    writer's log; DROP EXTENSION ends the wait;
#  - zero_stream.resync() (once the other writer is stopped) starts a new
#    lineage, which this decoder owns, and a replica restored from it
#    equals PostgreSQL;
#  - a reload (which writes ownerAddress) notices a takeover as a store does.
# What is not a takeover: the same decoder under another zero_stream.task_id
# keeps its log, and under another slot_name starts a new lineage in it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $node = zs_new_node('takeover', extra_conf => "max_prepared_transactions = 2\n", before_extension => q{
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 200) g;
});
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $file = "$dir/app.db";
my $CDC = '"zero_0/cdc"';
sub sql { return $node->safe_psql('postgres', $_[0]); }
sub owner { return sql(qq{SELECT "owner" FROM $CDC."replicationState"}); }
sub state { return sql('SELECT state FROM zero_stream.status()'); }

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'takeover', "ws://127.0.0.1:$port", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
sub replica_equals { zs_replica_equals($node, $file, $_[0]); }
replica_equals('start');
my $rv = sql('SELECT replica_version FROM zero_stream.status()');
like(owner(), qr{^zero_stream\@\d+/1/zero_stream_zero_0$}, 'the decoder owns the log');

# another task id is still this decoder: same system, same slot
$node->append_conf('postgresql.conf', "zero_stream.task_id = 'renamed'\n");
$node->restart;
zs_wait_streaming($node);
like(owner(), qr{^renamed\@\d+/1/zero_stream_zero_0$}, 'under another task id, the decoder keeps its log');
is(sql('SELECT replica_version FROM zero_stream.status()'), $rv, 'and its lineage');
sql(q{INSERT INTO t (v) VALUES ('under the new task id')});
replica_equals('another task id');

# the takeover, as the other writer makes it
my $log_offset = -s $node->logfile;
sql(qq{UPDATE $CDC."replicationState" SET "owner" = 'zero-cache-task-b', "ownerAddress" = 'zc-b:4849'});
sql(q{INSERT INTO t (v) VALUES ('after the takeover')});
ok($node->poll_query_until('postgres',
		q{SELECT state = 'stopped: change log taken over' FROM zero_stream.status()}),
	'the decoder stops writing a log taken over');
ok($node->log_contains('ERROR:  changeLog ownership has been assumed by zero-cache-task-b', $log_offset),
	'its store failed the ownership check, which names the new owner');
like(sql('SELECT last_error FROM zero_stream.status()'),
	qr/change log zero_0\/cdc has been taken over by zero-cache-task-b; this decoder \(renamed\@\d+\/1\/zero_stream_zero_0\) does not write it/,
	'status() says why');

# it stays stopped: no restart takes the log back (worker restarts are 5 s apart)
my $pid = zs_decoder_pid($node);
# nothing observable ends this: proving that no restart happens takes a
# window longer than the 5 s between worker restarts
sleep 7;
is(zs_decoder_pid($node), $pid, 'the decoder waits: no restart loop');
is(state(), 'stopped: change log taken over', 'still stopped');
is(owner(), 'zero-cache-task-b', 'the new owner keeps the log');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'after the takeover'}), '0',
	'nothing written after the takeover');
my @warnings = (slurp_file($node->logfile, $log_offset) =~ /WARNING:  change log zero_0\/cdc has been taken over/g);
is(scalar(@warnings), 1, 'said once');
is(sql(q{SELECT slot_name || ' ' || replica_version FROM zero_stream.status()}), "zero_stream_zero_0 $rv",
	'status() names the slot and the log\'s replicaVersion');
is(sql(q{SELECT active FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}), 'f',
	'the waiting decoder does not hold its slot');

# without its slot, and after a restart of the server, the decoder still
# leaves the log alone (a missing slot would otherwise start a new lineage
# in it, emptying the other writer's log)
my $rows = sql(qq{SELECT count(*) FROM $CDC."changeLog"});
sql(q{SELECT pg_drop_replication_slot('zero_stream_zero_0')});
$node->restart;
ok($node->poll_query_until('postgres',
		q{SELECT state = 'stopped: change log taken over' FROM zero_stream.status()}),
	'after a restart of the server, without its slot, still stopped');
is(owner(), 'zero-cache-task-b', 'the log is not taken back');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $rows, 'nor emptied');
is(sql(q{SELECT replica_version FROM zero_stream.status()}), $rv, 'nor given a new lineage');

# DROP EXTENSION ends the wait; after CREATE EXTENSION the decoder waits again
$log_offset = -s $node->logfile;
$pid = zs_decoder_pid($node);
sql('DROP EXTENSION zero_stream');
$node->wait_for_log(qr/extension "zero_stream" was dropped in database "postgres"; the decoder stops waiting/, $log_offset);
sql('CREATE EXTENSION zero_stream');
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'stopped: change log taken over' AND pid <> $pid FROM zero_stream.status()}),
	'dropped and created again, the extension waits again (a new decoder)');

# the other writer stopped, resync() starts a new lineage here
sql('SELECT zero_stream.resync()');
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'streaming' AND replica_version <> '$rv' FROM zero_stream.status()}),
	'resync() starts a new lineage');
like(owner(), qr{^renamed\@\d+/1/zero_stream_zero_0$}, 'which the decoder owns');
sql(q{INSERT INTO t (v) VALUES ('after the resync')});
replica_equals('after the resync');
zs_check_log_integrity($node, 'after the resync');

# a takeover noticed without a store: at a reload, which writes ownerAddress
$rv = sql('SELECT replica_version FROM zero_stream.status()');
sql(qq{UPDATE $CDC."replicationState" SET "owner" = 'zero-cache-task-c'});
sql(q{ALTER SYSTEM SET zero_stream.advertise_address = 'cs.example.internal:4849'});
sql('SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres',
		q{SELECT state = 'stopped: change log taken over' AND last_error LIKE '%taken over by zero-cache-task-c%'
		    FROM zero_stream.status()}),
	'a reload notices a takeover');
is(owner(), 'zero-cache-task-c', 'and does not take the log back');
sql('SELECT zero_stream.resync()');
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'streaming' AND replica_version <> '$rv' FROM zero_stream.status()}),
	'resync() again');
is(sql(qq{SELECT "ownerAddress" FROM $CDC."replicationState"}), 'cs.example.internal:4849',
	'the new lineage advertises the reloaded address');
sql(q{INSERT INTO t (v) VALUES ('after the second resync')});
replica_equals('after the second resync');

# another slot: the log's owner is still this cluster's decoder, and the
# new slot starts a new lineage. Taken over while that lineage is being
# made, the log is not emptied either: the decoder gives up the new lineage
# and waits. (A prepared transaction holds the new slot back at its
# creation, which waits for every running transaction to end.)
sql(q{CREATE SCHEMA unpublished; CREATE TABLE unpublished.x (i int)});
zs_wait_catchup($node);
$rv = sql('SELECT replica_version FROM zero_stream.status()');
$rows = sql(qq{SELECT count(*) FROM $CDC."changeLog"});
$log_offset = -s $node->logfile;
sql(q{BEGIN; INSERT INTO unpublished.x VALUES (1); PREPARE TRANSACTION 'hold'});
$node->append_conf('postgresql.conf', "zero_stream.slot_name = 'another_slot'\n");
$node->restart;
ok($node->poll_query_until('postgres', q{SELECT state = 'creating replication slot' FROM zero_stream.status()}),
	'under another slot_name, a new lineage: its slot waits for the prepared transaction');
sql(qq{UPDATE $CDC."replicationState" SET "owner" = 'zero-cache-task-d'});
sql(q{ROLLBACK PREPARED 'hold'});
ok($node->poll_query_until('postgres',
		q{SELECT state = 'stopped: change log taken over' AND last_error LIKE '%taken over by zero-cache-task-d%'
		    FROM zero_stream.status()}),
	'taken over meanwhile: the decoder waits');
ok($node->log_contains('ERROR:  changeLog ownership has been assumed by zero-cache-task-d', $log_offset),
	'the new lineage was given up before it emptied the log');
is(sql(qq{SELECT count(*) || ' ' || min("owner") FROM $CDC."changeLog", $CDC."replicationState"}),
	"$rows zero-cache-task-d", 'the log and its owner are as the other writer left them');
$log_offset = -s $node->logfile;
sql('SELECT zero_stream.resync()');
ok($node->poll_query_until('postgres',
		qq{SELECT state = 'streaming' AND replica_version <> '$rv' FROM zero_stream.status()}),
	'resync(): a new lineage on the new slot');
like(owner(), qr{^renamed\@\d+/1/another_slot$}, 'owned by the decoder');
my $log = slurp_file($node->logfile, $log_offset);
my @created = ($log =~ /zero_stream created replication slot/g);
is(scalar(@created), 1, 'one new slot and lineage, not two');
unlike($log, qr/is missing/, 'and no missing slot reported for it');
sql(q{INSERT INTO t (v) VALUES ('on another slot')});
replica_equals('on another slot');

$cli->kill_kill;
$node->stop;
done_testing();
