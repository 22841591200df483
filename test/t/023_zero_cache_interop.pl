# Interop with the real thing: a stock zero-cache 1.9.0 view-syncer (npm's
# @rocicorp/zero on npm's Node 22, installed by test/interop/prepare.sh into a
# cache reused between runs, run by ZeroCacheInterop.pm) runs against
# zero_stream as its change-streamer: ZERO_CHANGE_STREAMER_URI (then discover
# mode), no replication-manager, and zero-stream-replica as its
# ZERO_LITESTREAM_EXECUTABLE. Everything is checked through the view-syncer's
# own replica file, read with zero's SQLite build
# (test/interop/replica.mjs; the file is in wal2 mode): the restore, live DML
# on plain and composite keys, a truncate, an ADD COLUMN, a CREATE TABLE,
# partitions attached with rows, detached (also CONCURRENTLY) and dropped
# while a Zero client watches the table (it sees only committed states, and
# never loses the rows no partition change touched), an identity column added to
# a table with rows, a restart of the view-syncer
# (catch-up, no second restore), a restart of PostgreSQL, and
# zero_stream.resync() (the view-syncer exits on
# WrongReplicaVersion as stock zero-cache does, and restores the new lineage
# when started again). Its replica's stateVersion must reach zero_stream's
# last_watermark and its rows must equal PostgreSQL's.
#
# Skipped, loudly, only when the npm registry cannot be reached. The view-syncer's
# log is test/tmp_check/log/023_view_syncer.log.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use ZeroCacheInterop;
use ZeroStreamTest;

my $t_start = time;

# 1. zero-cache and Node 22 from the npm registry (cached)
my $zc = zc_install('023', 'interop');

# 2. zero_stream with a backup replica (the view-syncer's snapshots)
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $node = zs_new_node('interop',
	extra_conf => qq{
listen_addresses = '127.0.0.1'
max_connections = 60
zero_stream.replica_file = '$tmp/backup.db'
# the view-syncer also gets lag reports, as from zero-cache's own streamer
zero_stream.lag_report_interval = 1s
},
	before_extension => q{
CREATE TABLE issue (id text PRIMARY KEY, title text NOT NULL, n int);
CREATE TABLE kv (a int, b text, v text, PRIMARY KEY (a, b));
INSERT INTO issue SELECT 'i' || g, 'issue ' || g, g FROM generate_series(1, 300) g;
INSERT INTO kv SELECT g % 7, 'k' || g, 'v' || g FROM generate_series(1, 100) g;
});
my $sport = $node->{zs_server_port};
$node->poll_query_until('postgres',
	q{SELECT backup_state = 'following' FROM zero_stream.status()})
  or diag('the backup replica is not following: '
	  . $node->safe_psql('postgres', 'SELECT backup_state FROM zero_stream.status()'));

# 3. the view-syncer
my $vs = zc_view_syncer($zc, dir => "$tmp/view-syncer");
my $replica = $vs->{replica};

sub last_watermark
{
	return $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
}

# once zero_stream has stored everything, until the replica's stateVersion
# is zero_stream's head (up to $secs, 90)
sub check_caught_up
{
	my ($label, $secs) = @_;
	zs_wait_catchup($node);
	my $want = last_watermark();
	return zc_check_at($vs, $want, "$label: the view-syncer's replica reaches last_watermark $want", $secs // 90);
}

# a table's rows in PostgreSQL and in the replica
sub check_rows
{
	my ($label, $table, $cols) = @_;
	zc_check_rows($vs, $node, $table, $cols, "$label: $table matches PostgreSQL");
}

# ---- restore and catch-up ----
zc_start($vs, $node, ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$sport");
my $deadline = time + 90;
# poll: until the restored replica file is there (or zero-cache exited)
usleep(200_000) while zc_running($vs) && !-f $replica && time < $deadline;
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $restored_ok = ok(
	zc_log_text($vs) =~ /Local replica at version \Q$rv\E and watermark \S+ is compatible/,
	"restore: zero-stream-replica restores a replica the view-syncer accepts (replicaVersion $rv)");
unless ($restored_ok)
{
	my $probe = `'$zc->{litestream}' restore 2>&1`;
	diag("the view-syncer did not restore its replica with ZERO_LITESTREAM_EXECUTABLE=$zc->{litestream};\n"
		  . ($probe =~ /usage/i && $probe !~ /restore/
			? "zero-stream-replica answers no litestream 'restore' subcommand\n"
			: '')
		  . "view-syncer log tail:\n" . zc_log_tail($vs));
	zc_stop($vs);
	$node->stop;
	done_testing();
	exit;
}
check_caught_up('restore');
check_rows('restore', 'issue', [qw(id title n)]);
check_rows('restore', 'kv', [qw(a b v)]);

# ---- live DML, plain and composite keys ----
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('new1', 'live insert', 1001), ('new2', 'second', NULL);
UPDATE issue SET title = 'updated' WHERE id IN ('i1', 'i2');
UPDATE issue SET id = 'i3-renamed' WHERE id = 'i3';
DELETE FROM issue WHERE id = 'i4';
INSERT INTO kv VALUES (100, 'x', 'composite');
UPDATE kv SET v = 'changed' WHERE a = 1;
UPDATE kv SET b = 'rekeyed' WHERE a = 2 AND b = 'k2';
DELETE FROM kv WHERE a = 3;
});
$node->safe_psql('postgres', q{BEGIN; UPDATE issue SET n = n + 1 WHERE n < 50; DELETE FROM kv WHERE a = 4; COMMIT;});
check_caught_up('live DML');
check_rows('live DML', 'issue', [qw(id title n)]);
check_rows('live DML', 'kv', [qw(a b v)]);

# ---- TRUNCATE ----
$node->safe_psql('postgres', q{TRUNCATE kv; INSERT INTO kv VALUES (7, 'after', 'truncate');});
check_caught_up('truncate');
check_rows('truncate', 'kv', [qw(a b v)]);

# ---- ADD COLUMN and CREATE TABLE ----
$node->safe_psql('postgres', q{ALTER TABLE issue ADD COLUMN prio int DEFAULT 5});
$node->safe_psql('postgres', q{UPDATE issue SET prio = 1 WHERE id = 'i1'; INSERT INTO issue VALUES ('new3', 'with prio', 3, 9);});
$node->safe_psql('postgres', q{
CREATE TABLE label (id int PRIMARY KEY, name text, issue_id text);
INSERT INTO label SELECT g, 'label ' || g, 'i' || g FROM generate_series(1, 20) g;
});
$node->safe_psql('postgres', q{UPDATE label SET name = 'bug' WHERE id = 1; DELETE FROM label WHERE id = 2;});
check_caught_up('schema changes');
like(zc_query($vs, q{SELECT group_concat(name, ',') FROM pragma_table_info('issue')}),
	qr/\bprio\b/, 'ADD COLUMN: the replica has the new column');
check_rows('ADD COLUMN', 'issue', [qw(id title n prio)]);
check_rows('CREATE TABLE', 'label', [qw(id name issue_id)]);

# ---- partitions attached with rows and detached (through the root) ----
sub backfills_done
{
	$node->poll_query_until('postgres', q{SELECT NOT EXISTS (SELECT FROM "zero_0/cdc"."backfilling")})
	  or diag('the backfills did not complete');
}
$node->safe_psql('postgres', q{
CREATE TABLE event (id int, day int, what text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
CREATE TABLE event_1 PARTITION OF event FOR VALUES FROM (0) TO (10);
CREATE TABLE event_keep PARTITION OF event FOR VALUES FROM (20) TO (30);
INSERT INTO event SELECT g, g % 10, 'e' || g FROM generate_series(1, 50) g;
INSERT INTO event SELECT g, 20 + g % 10, 'kept ' || g FROM generate_series(1001, 1500) g;
CREATE SCHEMA staging;
CREATE TABLE staging.event_2 (id int, day int, what text, PRIMARY KEY (id, day));
INSERT INTO staging.event_2 SELECT g, 10 + g % 10, 'attached ' || g FROM generate_series(101, 160) g;
CREATE TABLE staging.event_3 (id int, day int, what text, PRIMARY KEY (id, day));
INSERT INTO staging.event_3 SELECT g, 30 + g % 10, 'dropped ' || g FROM generate_series(201, 240) g;
ALTER TABLE event ATTACH PARTITION staging.event_3 FOR VALUES FROM (30) TO (40);
});
# the Zero client below may read event (zero-deploy-permissions' ANYONE_CAN,
# compiled)
$node->safe_psql('postgres',
	q{UPDATE zero.permissions SET permissions = '{"tables":{"event":{"row":{"select":[["allow",{"type":"and","conditions":[]}]]}}}}'});
check_caught_up('partitioned table');
check_rows('partitioned table', 'event', [qw(id day what)]);
# a Zero client's app watches the table, and its rows of day >= 20
# (event_keep's, which no partition change touches, and event_3's until its
# DROP), while partitions join and leave
my @event_cols = ('id:number:key', 'day:number:key', 'what:string');
my $watch = zc_zero_watch($vs, 'event', 'day', 20, @event_cols);
my $count = sub { $node->safe_psql('postgres', 'SELECT count(*) FROM event') };
my $kept = sub { $node->safe_psql('postgres', 'SELECT count(*) FROM event WHERE day >= 20') };
my @states = ([ $count->(), $kept->() ]);
my $wait_watch = sub {
	my ($all, $where) = @_;
	my $deadline = time + 120;
	while (time < $deadline)
	{
		my @l = @{ zc_zero_watch_lines($watch) };
		my ($a) = grep { $_->[0] eq 'all' && $_->[1] eq 'complete' } reverse @l;
		my ($w) = grep { $_->[0] eq 'where' && $_->[1] eq 'complete' } reverse @l;
		return 1 if $a && $w && $a->[2] == $all && $w->[2] == $where;
		usleep(200_000);    # poll: until the Zero client's queries have the counts
	}
	return 0;
};
ok($wait_watch->(@{ $states[0] }), 'the Zero client has the table') or diag($watch->{err});
$node->safe_psql('postgres', q{ALTER TABLE event ATTACH PARTITION staging.event_2 FOR VALUES FROM (10) TO (20)});
push @states, [ $count->(), $kept->() ];
$node->safe_psql('postgres', q{INSERT INTO event VALUES (200, 15, 'after the attach');
UPDATE event SET what = 'updated after the attach' WHERE id BETWEEN 101 AND 110});
push @states, [ $count->(), $kept->() ];
backfills_done();
check_caught_up('ATTACH');
check_rows('ATTACH of a table with rows', 'event', [qw(id day what)]);
$node->safe_psql('postgres', q{ALTER TABLE event DETACH PARTITION event_1});
push @states, [ $count->(), $kept->() ];
backfills_done();
check_caught_up('DETACH');
check_rows('DETACH', 'event', [qw(id day what)]);
$node->safe_psql('postgres', q{ALTER TABLE event DETACH PARTITION staging.event_2 CONCURRENTLY});
push @states, [ $count->(), $kept->() ];
$node->safe_psql('postgres', q{DROP TABLE staging.event_3});
push @states, [ $count->(), $kept->() ];
backfills_done();
check_caught_up('DETACH CONCURRENTLY, DROP');
check_rows('DETACH CONCURRENTLY and DROP', 'event', [qw(id day what)]);
ok($wait_watch->(@{ $states[-1] }), 'the Zero client has the end state');
my $lines = zc_zero_watch_stop($watch);
note('the Zero client saw: ' . join(', ', map { "$_->[0] $_->[1] $_->[2]" } @$lines));
# from each view's first complete result on, every view the client saw is a
# state PostgreSQL committed; event_keep's 500 rows never left it
my %all_ok = map { $_->[0] => 1 } @states;
my %kept_ok = map { $_->[1] => 1 } @states;
my (%complete, @wrong_all, @wrong_kept);
for my $l (@$lines)
{
	$complete{ $l->[0] } ||= ($l->[1] eq 'complete');
	next unless $complete{ $l->[0] };
	push @wrong_all, $l->[2] if $l->[0] eq 'all' && !$all_ok{ $l->[2] };
	push @wrong_kept, $l->[2] if $l->[0] eq 'where' && !$kept_ok{ $l->[2] };
}
is(scalar(@wrong_all), 0, 'the Zero client saw only committed states of event ('
	  . join(', ', map { $_->[0] } @states) . ')') or diag("saw: @wrong_all");
is(scalar(@wrong_kept), 0, "the rows no partition change touched never left the Zero client's view (it saw "
	  . join(', ', sort { $a <=> $b } keys %kept_ok) . ' of them)') or diag("saw: @wrong_kept");
is(zc_zero_query($vs, 'event', 'id', @event_cols), zc_pg_rows($node, 'event', [qw(id day what)]),
	'a Zero client query of event returns PostgreSQL\'s rows');
is($node->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'drop-table' AND change->'id'->>'name' = 'event'}),
	'0', 'event was never reset');

# ---- an identity column added to a table with rows (its values backfilled) ----
$node->safe_psql('postgres', q{ALTER TABLE label ADD COLUMN seq int GENERATED BY DEFAULT AS IDENTITY});
backfills_done();
check_caught_up('identity column');
check_rows('identity column', 'label', [qw(id name issue_id seq)]);

# ---- restart the view-syncer (discover mode), writes while it is down ----
zc_stop($vs);
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('down1', 'while the view-syncer is down', 1, 2);
UPDATE kv SET v = 'down' WHERE a = 7;
INSERT INTO label VALUES (100, 'down', 'down1');
});
zc_start($vs, $node, ZERO_CHANGE_STREAMER_MODE => 'discover');
check_caught_up('view-syncer restart (discover mode)');
check_rows('view-syncer restart', 'issue', [qw(id title n prio)]);
check_rows('view-syncer restart', 'kv', [qw(a b v)]);
check_rows('view-syncer restart', 'label', [qw(id name issue_id)]);
my $restores = () = zc_log_text($vs) =~ /Local replica at version \Q$rv\E and watermark \S+ is compatible/g;
my $downloads = zc_restores(zc_log_text($vs));
is($downloads, 1, 'view-syncer restart: its existing replica is kept, not restored again');

# ---- restart PostgreSQL (and zero_stream with it) ----
# once the view-syncer has started all its workers: one still connecting to
# its CVR database when PostgreSQL shuts down exits, and zero-cache with it
zc_wait_log($vs, qr/zero-cache ready/)
  or diag('the view-syncer did not say it is ready: ' . zc_log_tail($vs));
$node->restart;
zs_wait_streaming($node);
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('pg1', 'after the server restart', 1, 3);
INSERT INTO kv VALUES (8, 'pg', 'restart');
});
check_caught_up('PostgreSQL restart', 120);
ok(zc_running($vs), 'PostgreSQL restart: the view-syncer keeps running and reconnects')
  or diag(zc_log_tail($vs));
check_rows('PostgreSQL restart', 'issue', [qw(id title n prio)]);
check_rows('PostgreSQL restart', 'kv', [qw(a b v)]);

# ---- zero_stream.resync(): a new lineage ----
$node->safe_psql('postgres', 'SELECT zero_stream.resync()');
$node->poll_query_until('postgres',
	"SELECT replica_version <> '$rv' AND state = 'streaming' FROM zero_stream.status()")
  or die 'resync did not start a new lineage';
my $rv2 = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
$deadline = time + 60;
# poll: until the view-syncer exits on the new lineage
usleep(200_000) while zc_running($vs) && time < $deadline;
ok(!zc_running($vs), 'resync: the view-syncer stops on the new lineage, as on a stock change-streamer');
like(zc_log_text($vs), qr/WrongReplicaVersion: current replica version is \Q$rv2\E/,
	'resync: it was told WrongReplicaVersion with the new replicaVersion');
zc_stop($vs);
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('rs1', 'after resync', 1, 4);
UPDATE label SET name = 'resynced' WHERE id = 1;
});
zc_start($vs, $node, ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$sport");
check_caught_up('resync', 120);
is(zc_query($vs, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $rv2,
	'resync: started again, the view-syncer restores the new lineage');
check_rows('resync', 'issue', [qw(id title n prio)]);
check_rows('resync', 'kv', [qw(a b v)]);
check_rows('resync', 'label', [qw(id name issue_id)]);
$node->safe_psql('postgres', q{UPDATE issue SET title = 'live after resync' WHERE id = 'rs1'; DELETE FROM kv WHERE a = 8;});
check_caught_up('after resync');
check_rows('after resync', 'issue', [qw(id title n prio)]);
check_rows('after resync', 'kv', [qw(a b v)]);

# the view-syncer stayed healthy: no worker exited on an error
ok(zc_running($vs), 'the view-syncer is still running') or diag(zc_log_tail($vs));
zc_stop($vs);
my @bad = grep { !/WrongReplicaVersion|replicator\.js \(serving\) \(\d+\) exited with code \(14\)|zero-cache \(\d+\) exited with code \(14\)|exiting with code 14/ }
  (zc_log_text($vs) =~ /^(.*(?:exited with code \((?!0\))|Error while validating|no such table).*)$/mg);
is(join("\n", @bad), '', 'the view-syncer logged no worker failure besides the resync');

$node->stop;
diag(sprintf('023 took %.0f s (the install %s s of it)', time - $t_start, $zc->{secs}));
done_testing();
