# Interop with the real thing: a stock zero-cache 1.9.0 view-syncer (npm's
# @rocicorp/zero on npm's Node 22, installed by test/interop/prepare.sh into a
# cache reused between runs) runs against zero_stream as its change-streamer:
# ZERO_CHANGE_STREAMER_URI (then discover mode), no replication-manager, and
# zero-stream-replica as its ZERO_LITESTREAM_EXECUTABLE. Everything is checked
# through the view-syncer's own replica file, read with zero's SQLite build
# (test/interop/replica.mjs; the file is in wal2 mode): the restore, live DML
# on plain and composite keys, a truncate, an ADD COLUMN, a CREATE TABLE, a
# restart of the view-syncer (catch-up, no second restore), a restart of
# PostgreSQL, and zero_stream.resync() (the view-syncer exits on
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
use File::Path qw(make_path);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use ZeroStreamTest;

my $t_start = time;

# 1. zero-cache and Node 22 from the npm registry (cached)
my $prepare = "$FindBin::RealBin/../interop/prepare.sh";
my ($prep_out, $prep_err) = ('', '');
my $t0 = time;
IPC::Run::run([$prepare], '>', \$prep_out, '2>', \$prep_err);
my $prep_rc = $? >> 8;
my $prep_secs = sprintf('%.1f', time - $t0);
diag("interop install ($prep_secs s): $prep_err");
if ($prep_rc == 2)
{
	diag('#' x 72);
	diag('# 023: THE NPM REGISTRY CANNOT BE REACHED: the zero-cache interop test is SKIPPED');
	diag('#' x 72);
	plan skip_all => 'the npm registry cannot be reached (zero-cache interop not run)';
}
if ($prep_rc != 0)
{
	fail("zero-cache and Node 22 install from the npm registry (test/interop/prepare.sh exit $prep_rc)");
	done_testing();
	exit;
}
my ($dir) = $prep_out =~ /(\S+)\s*$/;
pass("zero-cache 1.9.0 and Node 22 are installed in $dir ($prep_secs s)");
my $NODE = "$dir/node_modules/.bin/node";
my $ZERO_CACHE = "$dir/node_modules/\@rocicorp/zero/out/zero/src/cli.js";
my $READER = "$FindBin::RealBin/../interop/replica.mjs";

my $LITESTREAM = $ENV{ZS_INTEROP_LITESTREAM};
unless ($LITESTREAM)
{
	$LITESTREAM = "$FindBin::RealBin/../../zero-stream-replica";
	if (!-x $LITESTREAM)
	{
		my $bindir = `pg_config --bindir`;
		chomp $bindir;
		$LITESTREAM = "$bindir/zero-stream-replica";
	}
}

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
my $vs_dir = "$tmp/view-syncer";
make_path("$vs_dir/tmp");
my $replica = "$vs_dir/replica.db";
my $vs_log = "$PostgreSQL::Test::Utils::log_path/023_view_syncer.log";
my $vs_port = PostgreSQL::Test::Cluster::get_free_port();
my $vs;    # IPC::Run harness
my $vs_starts = 0;

sub log_text
{
	open my $fh, '<', $vs_log or return '';
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t;
}

sub log_tail
{
	my @lines = split /\n/, log_text();
	my $n = @lines > 60 ? 60 : scalar @lines;
	return join("\n", @lines[ -$n .. -1 ]);
}

sub start_vs
{
	my (%env) = @_;
	$vs_starts++;
	open my $fh, '>>', $vs_log or die;
	print $fh "\n===== 023: view-syncer start $vs_starts "
	  . join(' ', map { "$_=$env{$_}" } sort keys %env) . " =====\n";
	close $fh;
	local %ENV = %ENV;
	delete $ENV{$_} for grep { /^(ZERO_|PG|NODE_)/ } keys %ENV;
	%ENV = (%ENV,
		PATH => "$dir/node_modules/.bin:$ENV{PATH}",
		ZERO_UPSTREAM_DB => 'postgresql://' . getpwuid($<) . '@127.0.0.1:' . $node->port . '/postgres',
		ZERO_REPLICA_FILE => $replica,
		ZERO_LITESTREAM_EXECUTABLE => $LITESTREAM,
		ZERO_NUM_SYNC_WORKERS => '1',
		ZERO_UPSTREAM_MAX_CONNS => '2',
		ZERO_CVR_MAX_CONNS => '2',
		ZERO_CHANGE_MAX_CONNS => '1',
		ZERO_PORT => $vs_port,
		ZERO_TASK_ID => 'interop-vs',
		ZERO_ADMIN_PASSWORD => 'interop',
		ZERO_ENABLE_TELEMETRY => 'false',
		ZERO_LOG_FORMAT => 'text',
		ZERO_LOG_LEVEL => 'info',
		ZERO_STORAGE_DB_TMP_DIR => "$vs_dir/tmp",
		%env);
	$vs = IPC::Run::start([ $NODE, $ZERO_CACHE ],
		'<', '/dev/null', '>>', $vs_log, '2>>', $vs_log,
		init => sub { chdir $vs_dir or die "chdir $vs_dir: $!" });
}

sub vs_running { return $vs && $vs->pumpable; }

sub stop_vs
{
	return unless $vs;
	if ($vs->pumpable)
	{
		$vs->signal('TERM');
		my $deadline = time + 30;
		usleep(100_000) while $vs->pumpable && time < $deadline;
	}
	$vs->kill_kill if $vs->pumpable;
	eval { $vs->finish };
	my $rc = $vs->full_result;
	undef $vs;
	return $rc;
}

# output of one SQL statement on the view-syncer's replica, or "error: ..."
sub rq
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	local $ENV{ZS_INTEROP_DIR} = $dir;
	IPC::Run::run([ $NODE, $READER, $replica, $sql ], '>', \$out, '2>', \$err)
	  or return "error: $err";
	chomp $out;
	return $out;
}

sub last_watermark
{
	return $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
}

# waits (up to $secs) until the replica's stateVersion is zero_stream's head;
# returns (ok, what the replica had)
sub wait_caught_up
{
	my ($secs) = @_;
	$secs //= 90;
	zs_wait_catchup($node);
	my $want = last_watermark();
	my $have = '';
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		$have = rq('SELECT stateVersion FROM "_zero.replicationState"');
		return (1, $have, $want) if $have eq $want;
		last unless vs_running();
		usleep(200_000);
	}
	return (0, $have, $want);
}

sub check_caught_up
{
	my ($label, $secs) = @_;
	my ($ok, $have, $want) = wait_caught_up($secs);
	ok($ok, "$label: the view-syncer's replica reaches last_watermark $want")
	  or diag("replica stateVersion: '$have'; view-syncer "
		  . (vs_running() ? 'running' : 'NOT running') . "; log tail:\n" . log_tail());
	return $ok;
}

# a table's rows in PostgreSQL and in the replica, as "v1|v2|..." lines
sub check_rows
{
	my ($label, $table, $cols, $order) = @_;
	my $pg = $node->safe_psql('postgres',
		"SELECT concat_ws('|', "
		  . join(', ', map { "coalesce(${_}::text, '')" } @$cols)
		  . ") FROM $table ORDER BY $order");
	my $lite = rq('SELECT ' . join(', ', map { qq{"$_"} } @$cols) . " FROM \"$table\" ORDER BY $order");
	my $n = () = $pg =~ /^/mg;
	$n = 0 if $pg eq '';
	is($lite, $pg, "$label: $table matches PostgreSQL ($n rows)");
}

# ---- restore and catch-up ----
start_vs(ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$sport");
my $deadline = time + 90;
usleep(200_000) while vs_running() && !-f $replica && time < $deadline;
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $restored_ok = ok(
	log_text() =~ /Local replica at version \Q$rv\E and watermark \S+ is compatible/,
	"restore: zero-stream-replica restores a replica the view-syncer accepts (replicaVersion $rv)");
unless ($restored_ok)
{
	my $probe = `'$LITESTREAM' restore 2>&1`;
	diag("the view-syncer did not restore its replica with ZERO_LITESTREAM_EXECUTABLE=$LITESTREAM;\n"
		  . ($probe =~ /usage/i && $probe !~ /restore/
			? "zero-stream-replica answers no litestream 'restore' subcommand\n"
			: '')
		  . "view-syncer log tail:\n" . log_tail());
	stop_vs();
	$node->stop;
	done_testing();
	exit;
}
check_caught_up('restore');
check_rows('restore', 'issue', [qw(id title n)], 'id');
check_rows('restore', 'kv', [qw(a b v)], 'a, b');

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
check_rows('live DML', 'issue', [qw(id title n)], 'id');
check_rows('live DML', 'kv', [qw(a b v)], 'a, b');

# ---- TRUNCATE ----
$node->safe_psql('postgres', q{TRUNCATE kv; INSERT INTO kv VALUES (7, 'after', 'truncate');});
check_caught_up('truncate');
check_rows('truncate', 'kv', [qw(a b v)], 'a, b');

# ---- ADD COLUMN and CREATE TABLE ----
$node->safe_psql('postgres', q{ALTER TABLE issue ADD COLUMN prio int DEFAULT 5});
$node->safe_psql('postgres', q{UPDATE issue SET prio = 1 WHERE id = 'i1'; INSERT INTO issue VALUES ('new3', 'with prio', 3, 9);});
$node->safe_psql('postgres', q{
CREATE TABLE label (id int PRIMARY KEY, name text, issue_id text);
INSERT INTO label SELECT g, 'label ' || g, 'i' || g FROM generate_series(1, 20) g;
});
$node->safe_psql('postgres', q{UPDATE label SET name = 'bug' WHERE id = 1; DELETE FROM label WHERE id = 2;});
check_caught_up('schema changes');
like(rq(q{SELECT group_concat(name, ',') FROM pragma_table_info('issue')}),
	qr/\bprio\b/, 'ADD COLUMN: the replica has the new column');
check_rows('ADD COLUMN', 'issue', [qw(id title n prio)], 'id');
check_rows('CREATE TABLE', 'label', [qw(id name issue_id)], 'id');

# ---- restart the view-syncer (discover mode), writes while it is down ----
stop_vs();
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('down1', 'while the view-syncer is down', 1, 2);
UPDATE kv SET v = 'down' WHERE a = 7;
INSERT INTO label VALUES (100, 'down', 'down1');
});
start_vs(ZERO_CHANGE_STREAMER_MODE => 'discover');
check_caught_up('view-syncer restart (discover mode)');
check_rows('view-syncer restart', 'issue', [qw(id title n prio)], 'id');
check_rows('view-syncer restart', 'kv', [qw(a b v)], 'a, b');
check_rows('view-syncer restart', 'label', [qw(id name issue_id)], 'id');
my $restores = () = log_text() =~ /Local replica at version \Q$rv\E and watermark \S+ is compatible/g;
my $downloads = () = log_text() =~ /zero-stream-replica: restored /g;
is($downloads, 1, 'view-syncer restart: its existing replica is kept, not restored again');

# ---- restart PostgreSQL (and zero_stream with it) ----
$node->restart;
zs_wait_streaming($node);
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('pg1', 'after the server restart', 1, 3);
INSERT INTO kv VALUES (8, 'pg', 'restart');
});
check_caught_up('PostgreSQL restart', 120);
ok(vs_running(), 'PostgreSQL restart: the view-syncer keeps running and reconnects')
  or diag(log_tail());
check_rows('PostgreSQL restart', 'issue', [qw(id title n prio)], 'id');
check_rows('PostgreSQL restart', 'kv', [qw(a b v)], 'a, b');

# ---- zero_stream.resync(): a new lineage ----
$node->safe_psql('postgres', 'SELECT zero_stream.resync()');
$node->poll_query_until('postgres',
	"SELECT replica_version <> '$rv' AND state = 'streaming' FROM zero_stream.status()")
  or die 'resync did not start a new lineage';
my $rv2 = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
$deadline = time + 60;
usleep(200_000) while vs_running() && time < $deadline;
ok(!vs_running(), 'resync: the view-syncer stops on the new lineage, as on a stock change-streamer');
like(log_text(), qr/WrongReplicaVersion: current replica version is \Q$rv2\E/,
	'resync: it was told WrongReplicaVersion with the new replicaVersion');
stop_vs();
$node->safe_psql('postgres', q{
INSERT INTO issue VALUES ('rs1', 'after resync', 1, 4);
UPDATE label SET name = 'resynced' WHERE id = 1;
});
start_vs(ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$sport");
check_caught_up('resync', 120);
is(rq('SELECT replicaVersion FROM "_zero.replicationConfig"'), $rv2,
	'resync: started again, the view-syncer restores the new lineage');
check_rows('resync', 'issue', [qw(id title n prio)], 'id');
check_rows('resync', 'kv', [qw(a b v)], 'a, b');
check_rows('resync', 'label', [qw(id name issue_id)], 'id');
$node->safe_psql('postgres', q{UPDATE issue SET title = 'live after resync' WHERE id = 'rs1'; DELETE FROM kv WHERE a = 8;});
check_caught_up('after resync');
check_rows('after resync', 'issue', [qw(id title n prio)], 'id');
check_rows('after resync', 'kv', [qw(a b v)], 'a, b');

# the view-syncer stayed healthy: no worker exited on an error
ok(vs_running(), 'the view-syncer is still running') or diag(log_tail());
stop_vs();
my @bad = grep { !/WrongReplicaVersion|replicator\.js \(serving\) \(\d+\) exited with code \(14\)|zero-cache \(\d+\) exited with code \(14\)|exiting with code 14/ }
  (log_text() =~ /^(.*(?:exited with code \((?!0\))|Error while validating|no such table).*)$/mg);
is(join("\n", @bad), '', 'the view-syncer logged no worker failure besides the resync');

$node->stop;
diag(sprintf('023 took %.0f s (the install %s s of it)', time - $t_start, $prep_secs));
done_testing();
