# Backfills (zero-cache's backfill messages): a column added with a
# volatile default and a table added to the publication carry values the
# stream never had; a backfill worker reads them at a snapshot of its own
# and the decoder stores them as synthetic transactions. Checked on a
# 200,000-row table with a live zero-stream-replica and the backup replica:
#  - every row's backfilled value equals PostgreSQL's, including rows
#    updated after the backfill's snapshot and before its rows were stored
#    (their newer values must not be overwritten);
#  - a backfill whose worker is killed with kill -9 in the middle of its
#    rows (the decoder held by a lock meanwhile) is started again after the
#    crash restart and completes; no snapshot slot is left behind;
#  - ALTER PUBLICATION ... ADD TABLE backfills the table's rows (only those
#    its row filter publishes), DROP TABLE removes it;
#  - a partitioned table, published through its root as zero-cache's
#    default publication does: its partitions' rows are copied at start
#    and backfilled.
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
my $ROWS = 200_000;

my $node = zs_new_node('backfill', before_extension => qq{
CREATE TABLE big (id int PRIMARY KEY, label text);
INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, $ROWS) g;
CREATE TABLE parted (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
CREATE TABLE parted_us PARTITION OF parted FOR VALUES IN ('us');
INSERT INTO parted SELECT g, CASE WHEN g % 2 = 0 THEN 'eu' ELSE 'us' END, 'p' || g FROM generate_series(1, 3000) g;
CREATE SCHEMA extra;
CREATE TABLE extra.things (id int PRIMARY KEY, name text, made date);
INSERT INTO extra.things SELECT g, 'thing ' || g, date '2020-01-01' + g FROM generate_series(1, 1000) g;
});
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;
my $file = "$dir/app.db";
my $backup = $node->data_dir . '/zero_stream/replica.db';
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'bf', "ws://127.0.0.1:$sport", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");

sub psql { return $node->safe_psql('postgres', $_[0]); }

sub wait_for
{
	my ($sql, $label) = @_;
	$node->poll_query_until('postgres', $sql) or die "timed out waiting for $label";
}

# PostgreSQL and a replica agree on every row: an md5 of the rows in key order.
sub same_rows
{
	my ($path, $table, $pg_cols, $lite_cols, $label, $lite_table) = @_;
	$lite_table //= $table;
	my $pg = psql("SELECT count(*) || ':' || md5(string_agg(concat_ws('|', $pg_cols), ',' ORDER BY id)) FROM $table");
	my $lite = join(" || '|' || ", split /\s*,\s*/, $lite_cols);
	my $rows = zs_sqlite($path, "SELECT group_concat(v, ',') FROM (SELECT $lite AS v FROM \"$lite_table\" ORDER BY id)");
	my $count = zs_sqlite($path, "SELECT count(*) FROM \"$lite_table\"");
	require Digest::MD5;
	is("$count:" . Digest::MD5::md5_hex($rows // ''), $pg, "$label: $lite_table in $path equals PostgreSQL");
}

sub worker_waits_on_queue
{
	wait_for(q{SELECT EXISTS (SELECT FROM pg_stat_activity
		WHERE backend_type = 'zero_stream backfill' AND wait_event = 'MessageQueueSend')},
		'the backfill worker to fill its queue');
}

ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the replica follows');
same_rows($backup, 'parted', 'id, region, v', 'id, region, v', 'initial copy of a partitioned table');

# 1. ADD COLUMN with a volatile default, rows updated after the snapshot.
# A transaction holding an xid delays the backfill's snapshot (its slot
# waits for running transactions); a lock on the change log then holds the
# decoder while the worker reads, so the updates below commit after the
# snapshot and before most backfill rows are stored.
my $xact = zs_session($node);
zs_run_in($xact, 'BEGIN; SELECT txid_current();');
psql(q{ALTER TABLE big ADD COLUMN r int8 DEFAULT (random() * 1e15)::int8});
wait_for(q{SELECT EXISTS (SELECT FROM "zero_0/cdc"."backfilling" WHERE "column" = 'r')},
	'the add-column to be stored');
my $lock = zs_session($node);
zs_run_in($lock, q{BEGIN; LOCK TABLE "zero_0/cdc"."changeLog" IN EXCLUSIVE MODE;});
zs_run_in($xact, 'COMMIT;');
worker_waits_on_queue();
psql(q{UPDATE big SET r = -id WHERE id % 1000 = 0});
zs_run_in($lock, 'COMMIT;');
zs_wait_backfills($node);
is(psql(q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'backfill-completed'}), '1',
	'one backfill-completed');
is(psql(q{SELECT count(*) = count(DISTINCT watermark) AND bool_and(watermark LIKE '%.%')
	FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'backfill'}), 't',
	'each backfill message is a synthetic transaction at a minor version');
is(psql(q{SELECT bool_and(change::text = '{"tag":"begin","json":"s","skipAck":true}')
	FROM "zero_0/cdc"."changeLog" WHERE pos = 0 AND watermark LIKE '%.%'}), 't',
	'their begins carry skipAck');
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the zero-stream-replica applied the backfill');
same_rows($file, 'big', 'id, label, r', 'id, label, r', 'volatile default');
is(zs_sqlite($file, 'SELECT count(*) FROM big WHERE r < 0'), $ROWS / 1000,
	'rows updated after the snapshot keep their newer values');
like(zs_sqlite($file, q{SELECT type FROM pragma_table_info('big') WHERE name = 'r'}), qr/^int8/i,
	'the backfilled column is typed');
ok(zs_replica_at_head($node, $backup, "$dir/cli.log"), 'the backup replica applied the backfill');
same_rows($backup, 'big', 'id, label, r', 'id, label, r', 'volatile default');

# 2. kill -9 of the backfill worker in the middle of its rows (the decoder
# held by the lock, so part of the rows were sent and none stored), then the
# crash restart: the backfill starts again from the "backfilling" table.
zs_run_in($xact, 'BEGIN; SELECT txid_current();');
psql(q{ALTER TABLE big ADD COLUMN stamp timestamptz DEFAULT clock_timestamp()});
wait_for(q{SELECT EXISTS (SELECT FROM "zero_0/cdc"."backfilling" WHERE "column" = 'stamp')},
	'the second add-column to be stored');
zs_run_in($lock, q{BEGIN; LOCK TABLE "zero_0/cdc"."changeLog" IN EXCLUSIVE MODE;});
zs_run_in($xact, 'COMMIT;');
worker_waits_on_queue();
my $worker = psql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream backfill'});
like(psql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE '%\_bf\_%'}), qr/^1$/,
	'the backfill holds one snapshot slot');
kill 'KILL', $worker;
$xact->{h}->kill_kill;
$lock->{h}->kill_kill;
zs_wait_ready($node);
zs_wait_streaming($node);
zs_wait_backfills($node);
is(psql(q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'backfill-completed'}), '2',
	'the interrupted backfill completed after the restart');
is(psql(q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE '%\_bf\_%'}), '0',
	'no snapshot slot is left behind');
my $pg_stamp = q{floor(extract(epoch FROM stamp) * 1000)::int8};
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the zero-stream-replica reconnected and applied the backfill');
same_rows($file, 'big', "id, r, $pg_stamp", 'id, r, CAST(stamp AS INTEGER)', 'after kill -9');
ok(zs_replica_at_head($node, $backup, "$dir/cli.log"), 'the backup replica applied the backfill');
same_rows($backup, 'big', "id, r, $pg_stamp", 'id, r, CAST(stamp AS INTEGER)', 'after kill -9');
is(zs_sqlite($file, 'SELECT count(*) FROM big WHERE stamp IS NULL'), '0', 'every row has its stamp');

# 3. A table added to the publication is backfilled (what its row filter
# publishes); removed, it is dropped.
psql(q{ALTER PUBLICATION _zero_public_0 ADD TABLE extra.things WHERE (id % 3 <> 0)});
zs_wait_backfills($node);
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'ALTER PUBLICATION ADD TABLE reached the replica');
same_rows($file, '(SELECT * FROM extra.things WHERE id % 3 <> 0) x', q{id, name, (extract(epoch FROM made) * 1000)::int8},
	'id, name, CAST(made AS INTEGER)', 'added to the publication with a row filter', 'extra.things');

# 4. A partitioned table's backfill reads its partitions
psql(q{ALTER TABLE parted ADD COLUMN r int8 DEFAULT (random() * 1e12)::int8});
zs_wait_backfills($node);
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the partitioned table\'s backfill reached the replica');
same_rows($file, 'parted', 'id, region, v, r', 'id, region, v, r', 'partitioned table backfilled');
psql(q{ALTER PUBLICATION _zero_public_0 DROP TABLE extra.things});
zs_wait_catchup($node, '60 s');
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'ALTER PUBLICATION DROP TABLE reached the replica');
is(zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'extra.things'}), '0',
	'the table removed from the publication is dropped');

zs_check_log_integrity($node, 'backfills');
$cli->kill_kill;
$node->stop;
done_testing();
