# TRUNCATE of partitions of a table published through its root. pgoutput
# sends no truncate for them (a partition's changes go out as its root's),
# so replicas used to keep a truncated partition's rows for good. The
# capture's TRUNCATE hook carries their keys as the root's deletes in the
# TRUNCATE's transaction, under the command's own locks: while writes go
# on, a replica sampled continuously loses exactly those rows, in one step,
# keeps the others untouched (same _0_version) and ends equal to
# PostgreSQL. A role that may truncate but owns nothing is carried too, and
# so is a partition that a TRUNCATE ... CASCADE reaches by a foreign key; a
# role that may not truncate gets the command's own error. Over
# zero_stream.partition_carry_rows (with a WARNING) or above READ COMMITTED
# the root is reset instead; a TRUNCATE of the root itself is pgoutput's.
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
my $KEEP = 20000;    # rows of ev_keep, which no TRUNCATE touches
my $CDC = $ZeroStreamTest::CDC;

my $node = zs_new_node('parttrunc', before_extension => qq{
CREATE TABLE ev (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE ev_keep PARTITION OF ev FOR VALUES FROM (0) TO (100);
CREATE TABLE ev_b PARTITION OF ev FOR VALUES FROM (100) TO (200);
CREATE TABLE ev_c PARTITION OF ev FOR VALUES FROM (200) TO (300);
CREATE TABLE ev_d PARTITION OF ev FOR VALUES FROM (300) TO (400);
CREATE TABLE ev_e PARTITION OF ev FOR VALUES FROM (400) TO (500);
CREATE TABLE ev_f PARTITION OF ev FOR VALUES FROM (500) TO (600);
CREATE TABLE kinds (k int PRIMARY KEY);
INSERT INTO kinds SELECT generate_series(500, 599);
ALTER TABLE ev_f ADD FOREIGN KEY (k) REFERENCES kinds (k);
INSERT INTO ev SELECT g, g % 100, 'keep ' || g FROM generate_series(1, $KEEP) g;
INSERT INTO ev SELECT g, 100 * (1 + (g - 100001) / 1000) + g % 100, 'truncated ' || g
  FROM generate_series(100001, 105000) g;
CREATE ROLE janitor LOGIN;
GRANT TRUNCATE ON ev_c TO janitor;
CREATE ROLE mallory LOGIN;
});
my $dir = $node->basedir;
my $file = "$dir/app.db";

sub psql { return $node->safe_psql('postgres', $_[0]); }

# the replica equals PostgreSQL's ev, column by column
sub replica_equals
{
	my ($label) = @_;
	ok(zs_replica_at_head($node, $file, "$dir/cli.log"), "$label: the replica reached the head");
	my $pg = psql(q{SELECT count(*) || ':' || md5(coalesce(string_agg(concat_ws('|', id, k, v), ',' ORDER BY id, k), '')) FROM ev});
	my $lite = zs_sqlite($file, q{SELECT count(*) || ':' || coalesce(group_concat(r, ','), '') FROM
		(SELECT id || '|' || k || '|' || v AS r FROM ev ORDER BY id, k)});
	my ($n, $text) = split /:/, $lite, 2;
	is("$n:" . md5_hex($text // ''), $pg, "$label: the replica equals PostgreSQL");
}

sub resets { return psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'drop-table' AND change->'id'->>'name' = 'ev'}); }

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'trunc', "ws://127.0.0.1:$node->{zs_server_port}", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
ok(zs_replica_at_head($node, $file, "$dir/cli.log"), 'the replica follows');

my $keep_versions = sub {
	return md5_hex(zs_sqlite($file, q{SELECT group_concat(id || ':' || "_0_version", ',')
		FROM (SELECT id, "_0_version" FROM ev WHERE k < 100 ORDER BY id)}));
};
my $keep_before = $keep_versions->();

# the replica sampled every 20 ms: its head, ev_keep's rows, all of ev's
my $samples = "$dir/samples";
my $sampler = zs_start_replica_sampler($file, $samples, 'ev', 'k < 100');

# writes to the rows the TRUNCATEs empty, all along: they wait for the
# command's lock, then find no row
my $script = "$dir/writes.sql";
append_to_file($script, q{\set id random(100001, 105000)
UPDATE ev SET v = 'written ' || :client_id || ' ' || :id WHERE id = :id AND k >= 100;
});
my $writes = zs_start_pgbench($node, 600, 2, $script);

my @totals = (psql('SELECT count(*) FROM ev'));
is($totals[0], $KEEP + 5000, "PostgreSQL holds $totals[0] rows of ev");
my $step = sub {
	my ($sql, $label, $role) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $role ? "SET ROLE $role; $sql" : $sql);
	is($rc, 0, "$label succeeds") or diag $err;
	push @totals, psql('SELECT count(*) FROM ev');
	note "$label: ev holds $totals[-1] rows";
	zs_replica_reached($file, psql('SELECT last_watermark FROM zero_stream.status()'))
	  or die "$label: the replica did not follow";
};

$step->(q{TRUNCATE ev_b}, 'TRUNCATE of a partition');
$step->(q{TRUNCATE ev_c}, 'TRUNCATE by a role that may truncate it and owns nothing', 'janitor');
$step->(q{TRUNCATE kinds CASCADE}, 'TRUNCATE ... CASCADE that reaches a partition by its foreign key');
my ($rc, $out, $err) = $node->psql('postgres', q{SET ROLE mallory; TRUNCATE ev_d});
like($err, qr/permission denied for table ev_d/, 'a role that may not truncate gets the command\'s own error');
$step->(q{INSERT INTO ev SELECT g, 150, 'after the truncate' FROM generate_series(900001, 900010) g},
	'rows written into the truncated partition');

$writes->kill_kill;
my $head = psql('SELECT last_watermark FROM zero_stream.status()');
ok(zs_replica_reached($file, $head), 'the replica reached the head');
zs_check_replica_samples($sampler, $samples, $head, \@totals, $KEEP, 10, 'ev');
is($keep_versions->(), $keep_before, "ev_keep's rows are untouched: the same _0_version");
is(zs_sqlite($file, q{SELECT count(*) FROM ev WHERE (k BETWEEN 100 AND 299 OR k BETWEEN 500 AND 599) AND v NOT LIKE 'after the truncate'}), '0',
	'the truncated partitions\' rows left the replica');
replica_equals('carried');
is(resets(), '0', 'no reset of ev');
is(psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'delete' AND change->'relation'->>'name' = 'ev'}),
	'3000', 'one delete per truncated row, as the root\'s');

# ---------------------------------------------------------------------------
# Over zero_stream.partition_carry_rows, or above READ COMMITTED: a reset
# ---------------------------------------------------------------------------
($rc, $out, $err) = $node->psql('postgres', q{SET zero_stream.partition_carry_rows = 10; TRUNCATE ev_d});
is($rc, 0, 'the TRUNCATE over the limit succeeds');
like($err, qr/WARNING:  partition public\.ev_d has more than 10 rows \(zero_stream\.partition_carry_rows\): every replica gets table public\.ev again in full/,
	'with a WARNING that the table is sent again');
like($err, qr/HINT:  .*SET zero_stream\.partition_carry_rows above its row count/, 'and a hint');
zs_wait_backfills($node);
is(resets(), '1', 'the root is reset');
replica_equals('over the limit');

psql(q{BEGIN ISOLATION LEVEL REPEATABLE READ; TRUNCATE ev_e; COMMIT});
zs_wait_backfills($node);
is(resets(), '2', 'REPEATABLE READ: the root is reset (its snapshot could miss rows)');
replica_equals('REPEATABLE READ');

# ---------------------------------------------------------------------------
# The root itself: pgoutput's truncate, nothing carried
# ---------------------------------------------------------------------------
my $deletes = psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'delete'});
psql(q{TRUNCATE ev, ev_keep});
zs_wait_catchup($node);
is(psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'delete'}), $deletes,
	'TRUNCATE of the root (and a partition with it): no delete carried');
is(psql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'truncate' AND change::text LIKE '%"name":"ev"%'}),
	'1', 'the root\'s truncate');
replica_equals('root truncated');
is(zs_sqlite($file, 'SELECT count(*) FROM ev'), '0', 'the replica\'s ev is empty');

# ---------------------------------------------------------------------------
# No deadlock the hook adds: a TRUNCATE of a partition waits for its root
# (which the carry reads) before it locks the partition, so a command that
# holds the root and then needs the partition (TRUNCATE of the root) goes
# first, as without the hook
# ---------------------------------------------------------------------------
psql(q{INSERT INTO ev SELECT g, 150, 'before the race' FROM generate_series(910001, 910010) g});
my $holder = zs_session($node);
zs_run_in($holder, 'BEGIN; LOCK TABLE ev IN ACCESS EXCLUSIVE MODE;');
my $trunc = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
		'-d', 'postgres', '-c', "SET application_name = 'partition_truncate'; TRUNCATE ev_b" ],
	'>', \my $trunc_out, '2>', \my $trunc_err);
ok($node->poll_query_until('postgres', q{SELECT EXISTS (SELECT FROM pg_stat_activity
	WHERE application_name = 'partition_truncate' AND wait_event_type = 'Lock')}),
	'the TRUNCATE of a partition waits for its root');
zs_run_in($holder, 'TRUNCATE ev; COMMIT;');
zs_close_session($holder);
ok($trunc->finish, 'then truncates the partition') or diag($trunc_err);
unlike(slurp_file($node->logfile), qr/deadlock detected/, 'no deadlock against the root\'s TRUNCATE');
replica_equals('after the race');

zs_check_log_integrity($node, 'partition truncates');
is(psql('SELECT state, last_error IS NULL FROM zero_stream.status()'), 'streaming|t', 'streaming, no error');
$cli->signal('INT');
$cli->finish;
$node->stop;
done_testing();
