# Partitions that join or leave a partitioned table with their rows. When
# a table is published through its root (publish_via_partition_root), the
# rows of a partition attached with rows, detached (also CONCURRENTLY) or
# dropped change the root's rows without a change in the stream; zero-cache
# 1.9.0 leaves its replicas wrong there. zero_stream's DDL capture carries
# the rows of an attached or detached partition in the DDL's transaction,
# stored as the root's inserts and deletes there; a dropped partition, or
# one over zero_stream.partition_carry_rows, resets the root table in the
# stream (drop-table, create-table with a backfill of every column, as
# zero-cache does for a table added to a publication). Either way every
# replica (a live zero-stream-replica and the backup replica here; a stock
# view-syncer in 023) equals PostgreSQL column by column; a partition
# created empty, or attached empty, changes nothing. TAP 051 samples a
# replica through these under concurrent writes. Published leaf by leaf
# (without publish_via_partition_root) the partitions are tables of their
# own: an attached one is a new table, backfilled; a detached one is dropped.
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

my $node = zs_new_node('parts',
	extra_conf => "zero_stream.publications = 'via_root, by_leaf'\n",
	before_extension => q{
CREATE TABLE parted (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200);
CREATE TABLE parted_3 PARTITION OF parted FOR VALUES FROM (200) TO (300);
INSERT INTO parted SELECT g, g % 300, 'p' || g FROM generate_series(1, 3000) g;
CREATE TABLE bystander (id int PRIMARY KEY, v text);
INSERT INTO bystander SELECT g, 'b' || g FROM generate_series(1, 100) g;
CREATE SCHEMA staging;
CREATE SCHEMA leafy;
CREATE TABLE leafy.lp (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE leafy.lp_1 PARTITION OF leafy.lp FOR VALUES FROM (0) TO (100);
INSERT INTO leafy.lp SELECT g, g % 100, 'l' || g FROM generate_series(1, 500) g;
CREATE PUBLICATION via_root FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true);
CREATE PUBLICATION by_leaf FOR TABLES IN SCHEMA leafy WITH (publish_via_partition_root = false);
});
my $dir = $node->basedir;
my $file = "$dir/app.db";
my $backup = $node->data_dir . '/zero_stream/replica.db';
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'parts', "ws://127.0.0.1:$node->{zs_server_port}", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");

sub psql { return $node->safe_psql('postgres', $_[0]); }

# Both replicas hold exactly PostgreSQL's rows of $table (replica table
# $lite), column by column, in key order.
sub same_rows
{
	my ($table, $lite, $label) = @_;
	my $pg = psql("SELECT count(*) || ':' || coalesce(md5(string_agg(concat_ws('|', id, k, v), ',' ORDER BY id, k)), '')
		FROM $table");
	for my $path ($file, $backup)
	{
		ok(zs_replica_at_head($node, $path, "$dir/cli.log"), "$label: $path at the head");
		my $rows = zs_sqlite($path,
			qq{SELECT count(*) || ':' || coalesce(group_concat(r, ','), '') FROM
			     (SELECT id || '|' || k || '|' || v AS r FROM "$lite" ORDER BY id, k)});
		my ($n, $text) = split /:/, $rows, 2;
		require Digest::MD5;
		is("$n:" . ($n ? Digest::MD5::md5_hex($text) : ''), $pg, "$label: $lite in $path equals PostgreSQL");
	}
}

sub count_log
{
	my ($sql) = @_;
	return psql(qq{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE $sql});
}

sub resets_of
{
	my ($name) = @_;
	return count_log(qq{change->>'tag' = 'drop-table' AND change->'id'->>'name' = '$name'});
}

same_rows('parted', 'parted', 'initial copy');
same_rows('leafy.lp_1', 'leafy.lp_1', 'initial copy, published by leaf');

# ---------------------------------------------------------------------------
# Through the root
# ---------------------------------------------------------------------------

# a table with rows in an unpublished schema, attached
psql(q{
CREATE TABLE staging.p4 (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO staging.p4 SELECT g, 300 + g % 100, 'attached ' || g FROM generate_series(10001, 10400) g;
ALTER TABLE parted ATTACH PARTITION staging.p4 FOR VALUES FROM (300) TO (400);
});
# writes under the root right after it
psql(q{INSERT INTO parted VALUES (20001, 350, 'live in p4'), (20002, 5, 'live in parted_1')});
psql(q{UPDATE parted SET v = 'updated in p4' WHERE id = 10001});
zs_wait_backfills($node);
is(resets_of('parted'), '0', 'ATTACH with rows: the root is not reset');
is(count_log(q{change->>'tag' = 'insert' AND change->'relation'->>'name' = 'parted' AND change->'new'->>'v' LIKE 'attached %'}),
	'400', 'its 400 rows are inserts of the root');
same_rows('parted', 'parted', 'ATTACH of a table with rows');

# a table of the published schema (a table of its own until it is
# attached), with rows
psql(q{
CREATE TABLE p5 (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO p5 SELECT g, 400 + g % 100, 'own table ' || g FROM generate_series(30001, 30200) g;
});
zs_wait_catchup($node);
ok(zs_replica_at_head($node, $file, "$dir/cli.log") && zs_sqlite($file, 'SELECT count(*) FROM p5') eq '200', 'p5 is a table of its own first');
psql(q{ALTER TABLE parted ATTACH PARTITION p5 FOR VALUES FROM (400) TO (500)});
zs_wait_backfills($node);
is(resets_of('parted'), '0', 'ATTACH of a published table: the root is not reset');
is(count_log(q{change->>'tag' = 'drop-table' AND change->'id'->>'name' = 'p5'}), '1', 'and p5 dropped as a table');
same_rows('parted', 'parted', 'ATTACH of a published table with rows');
ok(zs_replica_at_head($node, $file, "$dir/cli.log") && zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE name = 'p5'}) eq '0',
	'p5 is no table of the replica any more');

# partitions created or attached empty reset nothing
my $backfills = count_log(q{change->>'tag' = 'backfill'});
psql(q{CREATE TABLE parted_6 PARTITION OF parted FOR VALUES FROM (500) TO (600)});
psql(q{CREATE TABLE staging.p7 (id int, k int, v text, PRIMARY KEY (id, k));
ALTER TABLE parted ATTACH PARTITION staging.p7 FOR VALUES FROM (600) TO (700)});
psql(q{INSERT INTO parted VALUES (40001, 550, 'in parted_6'), (40002, 650, 'in p7')});
zs_wait_catchup($node);
is(resets_of('parted'), '0', 'a partition created or attached empty: no reset');
is(count_log(q{change->>'tag' = 'backfill'}), $backfills, 'and no backfill');
same_rows('parted', 'parted', 'partitions created and attached empty');

# DETACH, DETACH CONCURRENTLY, DROP of a partition
psql(q{ALTER TABLE parted DETACH PARTITION parted_1});
zs_wait_backfills($node);
is(resets_of('parted'), '0', 'DETACH: the root is not reset');
is(count_log(q{change->>'tag' = 'delete' AND change->'relation'->>'name' = 'parted'}), '1001',
	'the 1,001 detached rows are deletes of the root');
same_rows('parted', 'parted', 'DETACH');
psql(q{INSERT INTO parted_1 VALUES (50001, 1, 'written after the detach')});
zs_wait_catchup($node);
same_rows('parted', 'parted', 'a write to the detached table');

psql(q{ALTER TABLE parted DETACH PARTITION parted_2 CONCURRENTLY});
zs_wait_backfills($node);
is(resets_of('parted'), '0', 'DETACH CONCURRENTLY: the root is not reset');
same_rows('parted', 'parted', 'DETACH CONCURRENTLY');

psql(q{DROP TABLE parted_3});
zs_wait_backfills($node);
is(resets_of('parted'), '0', 'DROP of a partition: the root is not reset');
same_rows('parted', 'parted', 'DROP of a partition');

is(count_log(q{change->>'tag' = 'drop-table' AND change->'id'->>'name' = 'bystander'}), '0',
	'the other tables are left alone');

# concurrent DDL transactions run one at a time: a partition created in a
# transaction still open, another table's column added meanwhile; neither
# change undoes the other (no drop-column) nor resets the root
my $ddl = zs_session($node);
zs_run_in($ddl, q{BEGIN; CREATE TABLE parted_8 PARTITION OF parted FOR VALUES FROM (800) TO (900);});
my $other = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-c', 'ALTER TABLE bystander ADD COLUMN w int DEFAULT 7' ],
	'>', \my $other_out, '2>', \my $other_err);
$node->poll_query_until('postgres', q{SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)})
  or diag('the second DDL did not wait for the first');
zs_run_in($ddl, 'COMMIT;');
zs_close_session($ddl);
ok($other->finish, 'the second DDL ran once the first committed') or diag($other_err);
psql(q{INSERT INTO parted VALUES (80001, 850, 'in parted_8')});
zs_wait_catchup($node);
is(resets_of('parted'), '0', 'a partition created beside another DDL: no reset');
is(count_log(q{change->>'tag' = 'drop-column'}), '0', 'no DDL undone by another');
ok(zs_replica_at_head($node, $file, "$dir/cli.log")
	  && zs_sqlite($file, 'SELECT count(*) || \':\' || sum(w) FROM bystander') eq '100:700',
	'the column added beside it, with its default');
same_rows('parted', 'parted', 'a partition created beside another DDL');
ok(zs_replica_at_head($node, $file, "$dir/cli.log") && zs_sqlite($file, 'SELECT count(*) FROM bystander') eq '100', 'and their rows too');

# ---------------------------------------------------------------------------
# Leaf by leaf
# ---------------------------------------------------------------------------
psql(q{
CREATE TABLE staging.lp_2 (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO staging.lp_2 SELECT g, 100 + g % 100, 'leaf ' || g FROM generate_series(60001, 60300) g;
ALTER TABLE leafy.lp ATTACH PARTITION staging.lp_2 FOR VALUES FROM (100) TO (200);
});
zs_wait_backfills($node);
is(count_log(q{change->>'tag' = 'create-table' AND change->'spec'->>'name' = 'lp_2' AND change->'backfill' IS NOT NULL}), '1',
	'published leaf by leaf: an attached table is a new table, backfilled');
same_rows('staging.lp_2', 'staging.lp_2', 'ATTACH, published leaf by leaf');
psql(q{ALTER TABLE leafy.lp DETACH PARTITION staging.lp_2});
zs_wait_catchup($node);
ok(zs_replica_at_head($node, $file, "$dir/cli.log") && zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE name = 'staging.lp_2'}) eq '0',
	'published leaf by leaf: a detached table outside the published schema is dropped');
psql(q{ALTER TABLE leafy.lp DETACH PARTITION leafy.lp_1});
psql(q{INSERT INTO leafy.lp_1 VALUES (70001, 1, 'a table of its own now')});
zs_wait_catchup($node);
same_rows('leafy.lp_1', 'leafy.lp_1', 'published leaf by leaf: a detached table of the published schema stays');

is(psql('SELECT state, last_error IS NULL FROM zero_stream.status()'), "streaming|t", 'streaming, no error');
ok(!$node->log_contains(qr/ERROR/), 'no ERROR in the server log');

$cli->signal('INT');
$cli->finish;
$node->stop;
done_testing();
