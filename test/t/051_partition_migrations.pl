# Migrations a Zero client never sees: ATTACH PARTITION with rows, DETACH,
# DETACH CONCURRENTLY and DROP of partitions of a table published through
# its root, under concurrent writes to the rows that join and leave, while
# a zero-stream-replica follows and its file is sampled continuously.
# The DDL capture carries the partition's rows in the DDL's transaction
# (inserts of those that joined, deletes of those that left), so the
# replica's table changes in one step per transaction: it never lacks a row
# PostgreSQL had both before and after the DDL, never holds one PostgreSQL
# never had, leaves the other rows untouched (same _0_version), and ends
# equal to PostgreSQL; rows written into a detached table never reach it.
# Over zero_stream.partition_carry_rows a partition resets its root instead,
# with a WARNING that says so and how to carry it.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use Digest::MD5 qw(md5_hex);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $KEEP = 20000;    # rows of ev_keep, which no migration touches

my $node = zs_new_node('partmig', before_extension => qq{
CREATE TABLE ev (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE ev_keep PARTITION OF ev FOR VALUES FROM (0) TO (100);
CREATE TABLE ev_b PARTITION OF ev FOR VALUES FROM (100) TO (200);
CREATE TABLE ev_c PARTITION OF ev FOR VALUES FROM (200) TO (300);
CREATE TABLE ev_d PARTITION OF ev FOR VALUES FROM (300) TO (400);
INSERT INTO ev SELECT g, g % 100, 'keep ' || g FROM generate_series(1, $KEEP) g;
INSERT INTO ev SELECT g, 100 * (1 + (g - 100001) / 1000) + g % 100, 'moving ' || g
  FROM generate_series(100001, 103000) g;
CREATE SCHEMA staging;
CREATE TABLE staging.ev_new (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO staging.ev_new SELECT g, 400 + g % 100, 'attached ' || g FROM generate_series(200001, 201000) g;
});
my $dir = $node->basedir;
my $file = "$dir/app.db";

sub psql { return $node->safe_psql('postgres', $_[0]); }

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'mig', "ws://127.0.0.1:$node->{zs_server_port}", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the replica follows');

my $keep_versions = sub {
	my $rows = zs_sqlite($file, q{SELECT group_concat(id || ':' || "_0_version", ',')
		FROM (SELECT id, "_0_version" FROM ev WHERE k < 100 ORDER BY id)});
	return md5_hex($rows);
};
my $keep_before = $keep_versions->();
my $t0 = psql('SELECT count(*) FROM ev');
is($t0, $KEEP + 3000, "PostgreSQL holds $t0 rows of ev");

# the replica sampled every 20 ms: its head, ev_keep's rows, all of ev's
my $samples = "$dir/samples";
my $sampler = zs_start_replica_sampler($file, $samples, 'ev', 'k < 100');

# writes through the root to the rows that join and leave, all along
my $script = "$dir/writes.sql";
append_to_file($script, q{\set id random(100001, 201000)
UPDATE ev SET v = 'written ' || :client_id || ' ' || :id WHERE id = :id AND k >= 100;
});
my $writes = zs_start_pgbench($node, 600, 2, $script);

# Each step's count of ev, in order: the replica may show only these
my @totals = ($t0);
my $step = sub {
	my ($sql, $label) = @_;
	psql($sql);
	push @totals, psql('SELECT count(*) FROM ev');
	note "$label: ev holds $totals[-1] rows";
	# the replica at each step, so the sampler sees every one (and whatever
	# the replica held on its way there)
	zs_wait_backfills($node);
	zs_replica_reached($file, psql('SELECT last_watermark FROM zero_stream.status()'))
	  or die "$label: the replica did not follow";
};

# ATTACH with rows, then rows of the attached partition updated and deleted
# at once (the decoder has not stored the ATTACH yet)
$step->(q{ALTER TABLE ev ATTACH PARTITION staging.ev_new FOR VALUES FROM (400) TO (500)}, 'ATTACH');
$step->(q{UPDATE ev SET v = 'updated after the attach' WHERE k BETWEEN 400 AND 449;
DELETE FROM ev WHERE k BETWEEN 450 AND 459}, 'after the ATTACH');

# DETACH, then writes into the detached table
$step->(q{ALTER TABLE ev DETACH PARTITION ev_b}, 'DETACH');
psql(q{INSERT INTO ev_b VALUES (900001, 150, 'written into the detached table');
UPDATE ev_b SET v = 'changed in the detached table' WHERE id < 100100});

# DETACH CONCURRENTLY (two transactions), with writes to the partition
# between them (a transaction that read ev holds the second back): the rows
# leave the root for new transactions at the first commit, and what is
# written to the partition later is not the root's
my $holder = zs_session($node);
zs_run_in($holder, 'BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM ev;');
my $detach = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-c', 'ALTER TABLE ev DETACH PARTITION ev_c CONCURRENTLY' ],
	'>', \my $detach_out, '2>', \my $detach_err);
ok($node->poll_query_until('postgres', q{SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = 'ev_c'::regclass}),
	'DETACH CONCURRENTLY: its first transaction committed');
push @totals, psql('SELECT count(*) FROM ev');
note "DETACH CONCURRENTLY, first transaction: ev holds $totals[-1] rows";
psql(q{DELETE FROM ev_c WHERE id BETWEEN 102001 AND 102050;
INSERT INTO ev_c VALUES (900003, 250, 'written while detaching');
UPDATE ev_c SET v = 'changed while detaching' WHERE id BETWEEN 102051 AND 102100});
zs_run_in($holder, 'COMMIT;');
zs_close_session($holder);
ok($detach->finish, 'DETACH CONCURRENTLY: its second transaction committed') or diag($detach_err);
zs_wait_backfills($node);
zs_replica_reached($file, psql('SELECT last_watermark FROM zero_stream.status()'))
  or die 'DETACH CONCURRENTLY: the replica did not follow';
psql(q{INSERT INTO ev_c VALUES (900002, 250, 'written into the detached table');
DELETE FROM ev_c WHERE id < 102100});

# DROP
$step->(q{DROP TABLE ev_d}, 'DROP');

$writes->kill_kill;
zs_wait_backfills($node);    # the detached tables, published on their own now
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the replica reached the head');
my $head = psql('SELECT last_watermark FROM zero_stream.status()');
zs_check_replica_samples($sampler, $samples, $head, \@totals, $KEEP, 20, 'ev');
is($keep_versions->(), $keep_before, "ev_keep's rows are untouched: the same _0_version");

# ends equal to PostgreSQL, column by column
my $pg = psql(q{SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, k, v), ',' ORDER BY id, k)) FROM ev});
my $lite = zs_sqlite($file, q{SELECT count(*) || ':' || group_concat(r, ',') FROM
	(SELECT id || '|' || k || '|' || v AS r FROM ev ORDER BY id, k)});
my ($n, $text) = split /:/, $lite, 2;
is("$n:" . md5_hex($text), $pg, 'the replica equals PostgreSQL');
is(zs_sqlite($file, q{SELECT count(*) FROM ev WHERE v LIKE '%detached table%' OR v LIKE '%while detaching%' OR id >= 900000}), '0',
	'no row written into a detached table reached it');
is(zs_sqlite($file, q{SELECT count(*) FROM ev WHERE k BETWEEN 400 AND 449 AND v = 'updated after the attach'}),
	psql(q{SELECT count(*) FROM ev WHERE k BETWEEN 400 AND 449 AND v = 'updated after the attach'}),
	'the attached rows updated at once hold their latest values');

my $CDC = $ZeroStreamTest::CDC;
is(psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' IN ('drop-table', 'backfill')
	AND (change->'id'->>'name' = 'ev' OR change->'relation'->>'name' = 'ev')}),
	'0', 'no reset and no backfill of ev');

# ---------------------------------------------------------------------------
# Over zero_stream.partition_carry_rows: a reset, said and hinted
# ---------------------------------------------------------------------------
psql(q{CREATE TABLE staging.ev_big (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO staging.ev_big SELECT g, 500 + g % 100, 'big ' || g FROM generate_series(300001, 300050) g});
my ($ret, $out, $err) = $node->psql('postgres', q{SET zero_stream.partition_carry_rows = 10;
ALTER TABLE ev ATTACH PARTITION staging.ev_big FOR VALUES FROM (500) TO (600)});
is($ret, 0, 'the ATTACH over the limit succeeds');
like($err, qr/WARNING:  partition staging\.ev_big has more than 10 rows \(zero_stream\.partition_carry_rows\): every replica gets table public\.ev again in full/,
	'with a WARNING that the table is sent again');
like($err, qr/HINT:  .*SET zero_stream\.partition_carry_rows above its row count/, 'and a hint');
zs_wait_backfills($node);
is(psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'drop-table' AND change->'id'->>'name' = 'ev'}),
	'1', 'the root is reset');
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the replica reached the head again');
$pg = psql(q{SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, k, v), ',' ORDER BY id, k)) FROM ev});
$lite = zs_sqlite($file, q{SELECT count(*) || ':' || group_concat(r, ',') FROM
	(SELECT id || '|' || k || '|' || v AS r FROM ev ORDER BY id, k)});
($n, $text) = split /:/, $lite, 2;
is("$n:" . md5_hex($text), $pg, 'and equals PostgreSQL after the reset');

is(psql('SELECT state, last_error IS NULL FROM zero_stream.status()'), 'streaming|t', 'streaming, no error');
$cli->signal('INT');
$cli->finish;
$node->stop;
done_testing();
