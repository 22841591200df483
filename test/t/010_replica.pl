# SQLite replicas: the initial copy at the slot's snapshot while writes run,
# the replicator keeping the backup replica current, a crash during the copy,
# snapshot reservations, and zero-stream-replica (fresh sync, kill -9 and
# restart, a second replica restored while writes continue, a replica of
# another replicaVersion, and its clear errors).
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

# Tables of every key kind; "accounts" and "events" take the load.
my $schema = q{
CREATE TABLE accounts (id int PRIMARY KEY, bal bigint NOT NULL, label text);
CREATE TABLE events (id bigserial PRIMARY KEY, account int, payload text);
CREATE TABLE pairs (a text, b int, v text, PRIMARY KEY (a, b));
CREATE TABLE idx_ident (code text NOT NULL, region int NOT NULL, val text);
CREATE UNIQUE INDEX idx_ident_key ON idx_ident (code, region);
ALTER TABLE idx_ident REPLICA IDENTITY USING INDEX idx_ident_key;
CREATE TABLE full_ident (id int PRIMARY KEY, label text);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
CREATE TABLE kinds (id int PRIMARY KEY, big int8, txt text, arr int4[], js jsonb, raw bytea, f float8);
INSERT INTO accounts SELECT g, 0, 'acct ' || g FROM generate_series(1, 20000) g;
INSERT INTO events (account, payload) SELECT g % 100, repeat('e', 30) FROM generate_series(1, 50000) g;
INSERT INTO pairs SELECT 'k' || (g % 50), g, 'v' || g FROM generate_series(1, 2000) g;
INSERT INTO idx_ident SELECT 'c' || g, g % 7, NULL FROM generate_series(1, 500) g;
INSERT INTO full_ident SELECT g, 'f' || g FROM generate_series(1, 500) g;
INSERT INTO kinds VALUES
  (1, 9223372036854775807, E'nul-free \u00e9\u20ac\U0001F600 "q" \\ \u2028', '{1,NULL,3}', '{"a": [1, 2.5]}', '\x00ff', 0.1),
  (2, 9007199254740993, '', '{}', 'null', '\x', -1e300),
  (3, -9223372036854775808, NULL, NULL, NULL, NULL, NULL);
};

my $node = zs_new_node('replica', no_extension => 1, before_extension => $schema);
my $replica_file = $node->data_dir . '/zero_stream/replica.db';

my $load_script = $node->basedir . '/load.sql';
PostgreSQL::Test::Utils::append_to_file($load_script, q{\set id random(1, 20000)
\set p random(1, 500)
BEGIN;
UPDATE accounts SET bal = bal + 1 WHERE id = :id;
INSERT INTO events (account, payload) VALUES (:id, 'load');
UPDATE pairs SET v = v || '+' WHERE a = 'k' || (:id % 50) AND b = :p;
UPDATE idx_ident SET val = coalesce(val, '') || 'x' WHERE code = 'c' || :p;
UPDATE full_ident SET label = label || '.' WHERE id = :p;
DELETE FROM events WHERE id = :id * 2;
COMMIT;
});

sub start_load
{
	my ($seconds) = @_;
	return zs_start_pgbench($node, $seconds, 2, $load_script);
}

# The same text digest of every table on both sides, ordered by key.
my %digest = (
	accounts => [ 'id', q{id || ':' || bal || ':' || coalesce(label, '-')} ],
	events => [ 'id', q{id || ':' || coalesce(account, -1) || ':' || coalesce(payload, '-')} ],
	pairs => [ 'a, b', q{a || ':' || b || ':' || coalesce(v, '-')} ],
	idx_ident => [ 'code, region', q{code || ':' || region || ':' || coalesce(val, '-')} ],
	full_ident => [ 'id', q{id || ':' || coalesce(label, '-')} ],
	kinds => [ 'id', q{id || ':' || coalesce(big, 0) || ':' || coalesce(txt, '-')} ],
);

sub tables_equal
{
	my ($file, $label) = @_;
	for my $table (sort keys %digest)
	{
		my ($order, $expr) = @{ $digest{$table} };
		# row by row, each side ordered by the key at the top level
		my $sql = "SELECT $expr FROM $table ORDER BY $order";
		my @pg = split /\n/, $node->safe_psql('postgres', $sql);
		my @lite = split /\n/, zs_sqlite($file, $sql);
		my $i = 0;
		$i++ while $i < @lite && $i < @pg && $lite[$i] eq $pg[$i];
		ok($i == @pg && $i == @lite, "$label: $table equals Postgres (" . scalar(@pg) . " rows)")
		  or diag("first difference at row $i of " . scalar(@pg) . " (SQLite has " . scalar(@lite) . "): SQLite "
			  . join(' ', grep { defined } @lite[ $i .. $i + 3 ]) . "; Postgres "
			  . join(' ', grep { defined } @pg[ $i .. $i + 3 ]));
	}
}

sub backup_caught_up
{
	my ($label) = @_;
	zs_wait_catchup($node);
	$node->poll_query_until('postgres',
		"SELECT backup_watermark = last_watermark FROM zero_stream.status()")
	  or die "$label: the replicator did not catch up: "
	  . $node->safe_psql('postgres', 'SELECT backup_state, backup_watermark, last_watermark FROM zero_stream.status()');
}

# ---------------------------------------------------------------------------
# Initial copy while writes run
# ---------------------------------------------------------------------------
my $load = start_load(6);
# the writes have begun before the copy starts
$node->poll_query_until('postgres', q{SELECT count(*) > 0 FROM events WHERE payload = 'load'})
  or die 'the load did not start';
$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
zs_wait_streaming($node);
ok(-f $replica_file, 'the initial copy wrote the backup replica');
$load->finish;
backup_caught_up('initial copy');
tables_equal($replica_file, 'backup replica after the copy under load');

my ($rv, $head) = split /\|/,
  $node->safe_psql('postgres', 'SELECT replica_version, last_watermark FROM zero_stream.status()');
is(zs_sqlite($replica_file, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $rv,
	"the replica's replicaVersion is the change log's");
is(zs_sqlite($replica_file, 'SELECT stateVersion FROM "_zero.replicationState"'), $head,
	"the replica's stateVersion is the backup watermark");
isnt(zs_sqlite($replica_file, q{SELECT count(*) FROM accounts WHERE _0_version <> (SELECT replicaVersion FROM "_zero.replicationConfig")}),
	'0', 'rows written after the copy carry their commit watermark in _0_version');
is(zs_sqlite($replica_file, q{SELECT sql FROM sqlite_master WHERE name = 'idx_ident_key'}),
	'CREATE UNIQUE INDEX "idx_ident_key" ON "idx_ident" ("code" ASC,"region" ASC)',
	'the replica identity index is the unique index of a table without a primary key');
is(zs_sqlite($replica_file, q{SELECT group_concat(declared, ',') FROM (SELECT "type" AS declared FROM pragma_table_info('kinds') ORDER BY cid)}),
	'int4|NOT_NULL,int8,TEXT,int4[]|TEXT_ARRAY,jsonb,bytea,float8,TEXT',
	'columns are declared with zero-cache\'s type names');
{
	my $row = zs_sqlite($replica_file,
		q{SELECT big || '|' || hex(CAST(txt AS BLOB)) || '|' || arr || '|' || js || '|' || raw || '|' || f FROM kinds WHERE id = 1});
	my $pg_hex = uc $node->safe_psql('postgres', q{SELECT encode(convert_to(txt, 'UTF8'), 'hex') FROM kinds WHERE id = 1});
	is($row, qq{9223372036854775807|$pg_hex|[1,null,3]|{"a": [1, 2.5]}|{"type":"Buffer","data":[0,255]}|0.1},
		'copied values are stored exactly (int8 max, unicode, arrays, jsonb, bytea, float)');
	is(zs_sqlite($replica_file, q{SELECT big FROM kinds WHERE id = 2}), '9007199254740993',
		'2^53 + 1 is stored exactly');
}

# the replicator follows live changes of every kind
$node->safe_psql('postgres', q{
UPDATE idx_ident SET code = 'moved' WHERE code = 'c1';
DELETE FROM full_ident WHERE id = 2;
UPDATE full_ident SET id = 9999 WHERE id = 3;
INSERT INTO kinds VALUES (4, 42, 'four', '{4}', '[]', '\xbeef', 4.5);
TRUNCATE pairs;
INSERT INTO pairs VALUES ('after', 1, 'truncate');
});
backup_caught_up('live changes');
tables_equal($replica_file, 'backup replica after key changes, deletes and a truncate');

# ---------------------------------------------------------------------------
# Snapshot reservations
# ---------------------------------------------------------------------------
my $sport = $node->{zs_server_port};
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $TAIL, '--count', '1', "ws://127.0.0.1:$sport/replication/v6/snapshot?taskID=t1" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(30));
	like($out, qr/^\{"id":1,"msg":\["status",\{"tag":"status","backupURL":"http:\/\/127\.0\.0\.1:$sport\/replica\/t1","replicaVersion":"$rv","minWatermark":"[0-9a-z.]+","replicaSize":\d+\}\]\}$/,
		'legacy /snapshot answers a status with backupURL, replicaVersion, minWatermark and replicaSize');
	my ($code, $body) = http_get("/replica/t1");
	like($code, qr/404/, 'no snapshot without an open reservation');
}

sub http_get
{
	my ($path) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'python3', '-c', q{
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=30)
    sys.stdout.write(str(r.status) + "\n" + r.read(200).decode("latin-1"))
except urllib.error.HTTPError as e:
    sys.stdout.write(str(e.code) + "\n" + e.read().decode())
}, "http://127.0.0.1:$sport$path" ], '>', \$out, '2>', \$err, IPC::Run::timeout(60));
	my ($code, $body) = split /\n/, $out, 2;
	return ($code // "error: $err", $body // '');
}

# ---------------------------------------------------------------------------
# zero-stream-replica: fresh sync, kill -9, restart, a second replica
# ---------------------------------------------------------------------------
my $dir = $node->basedir;
my $file1 = "$dir/app1.db";
my $file2 = "$dir/app2.db";

sub start_cli
{
	my ($file, $task, $log, @opts) = @_;
	return IPC::Run::start([ $CLI, 'sync', @opts, '--task-id', $task, "ws://127.0.0.1:$sport", $file ],
		'>', "$log.out", '2>>', $log);
}

sub state_version
{
	my ($file) = @_;
	return '' unless -f $file;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'sqlite3', $file, 'SELECT stateVersion FROM "_zero.replicationState"' ],
		'>', \$out, '2>', \$err);
	chomp $out;
	return $out;
}

sub wait_replica
{
	my ($file, $label) = @_;
	my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 600)
	{
		return 1 if state_version($file) eq $target;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$label: replica at " . state_version($file) . ", log at $target");
	return 0;
}

$load = start_load(8);
my $cli = start_cli($file1, 'app1', "$dir/app1.log");
my @versions;
for (1 .. 10)
{
	# the CLI follows the load for 2 s: its stateVersion sampled meanwhile
	# is what is checked (it only moves forward), nothing to wait for
	usleep(200_000);
	push @versions, state_version($file1);
}
ok(-f $file1, 'the CLI restored a snapshot and follows the stream');
$cli->signal('KILL');
$cli->finish;
push @versions, state_version($file1);
my $second = start_cli($file2, 'app2', "$dir/app2.log", '--change-log');
$cli = start_cli($file1, 'app1', "$dir/app1.log");
for (1 .. 10)
{
	# as above: samples while the restarted CLI follows the load
	usleep(200_000);
	push @versions, state_version($file1);
}
$load->finish;
zs_wait_catchup($node);
ok(wait_replica($file1, 'app1'), 'the restarted CLI caught up with the change log');
ok(wait_replica($file2, 'app2'), 'a second replica restored from a snapshot during writes caught up');
push @versions, state_version($file1);
my @seen = grep { $_ ne '' } @versions;
my $monotone = 1;
for my $i (1 .. $#seen)
{
	$monotone = 0 if ($seen[$i] cmp $seen[ $i - 1 ]) < 0;
}
ok($monotone && @seen > 5, 'stateVersion only moved forward across kill -9 and restart (' . scalar(@seen) . ' samples)');
tables_equal($file1, 'CLI replica after kill -9 and restart');
tables_equal($file2, 'second CLI replica');
my $log1 = slurp_file("$dir/app1.log");
is(() = $log1 =~ /restored replicaVersion/g, 1, 'the restart resumed from the file instead of restoring again');
like($log1, qr/following \Q$file1\E from [0-9a-z.]+ \(replicaVersion $rv\)/, 'the restart resumed from its stateVersion');
is(zs_sqlite($file2, q{SELECT count(*) > 0 FROM "_zero.changeLog2"}), '1', 'with --change-log the replica keeps changeLog2');
is(zs_sqlite($file1, q{SELECT count(*) FROM "_zero.changeLog2"}), '0', 'by default it does not');
is(zs_sqlite($file2, q{SELECT count(*) FROM events e WHERE (SELECT op FROM "_zero.changeLog2" c WHERE c."table" = 'events' AND c.rowKey = '{"id":' || e.id || '}') <> 's'}),
	'0', 'changeLog2 holds a set for every live row it logged');

$cli->signal('INT');
$cli->finish;
$second->signal('INT');
$second->finish;
like(slurp_file("$dir/app1.log"), qr/stopped at stateVersion/, 'SIGINT stops the CLI cleanly');

my ($status_out, $status_err) = ('', '');
IPC::Run::run([ $CLI, 'status', $file1 ], '>', \$status_out, '2>', \$status_err);
like($status_out, qr/^replicaVersion: $rv\nstateVersion: [0-9a-z.]+\nlast write: [^\n]+ UTC\ntables:\n(?:  .*\n)*  accounts: 20000 rows\n/m,
	'status prints versions and row counts');

# ---------------------------------------------------------------------------
# A replica of another replicaVersion is replaced by a fresh restore
# ---------------------------------------------------------------------------
zs_sqlite($file2, q{UPDATE "_zero.replicationConfig" SET replicaVersion = '00bogus'; DELETE FROM accounts});
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $CLI, 'sync', '--idle', '2', '--task-id', 'app2', "ws://127.0.0.1:$sport", $file2 ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(120));
	like($err, qr/replacing "\Q$file2\E" \(replicaVersion 00bogus at [0-9a-z.]+\): the server has replicaVersion $rv/,
		'a replica of another replicaVersion is restored afresh');
	tables_equal($file2, 'replica after the fresh restore');
}

# ---------------------------------------------------------------------------
# Clear errors
# ---------------------------------------------------------------------------
sub cli_error
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $CLI, @args ], '>', \$out, '2>', \$err, IPC::Run::timeout(60));
	return ($? >> 8, $err);
}

my $closed_port = PostgreSQL::Test::Cluster::get_free_port();
# an unreachable server is waited for (TAP 035 has it start later)
my ($code, $err);
{
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start([ $CLI, 'sync', "ws://127.0.0.1:$closed_port", "$dir/none.db" ], '>', \$o, '2>', \$e);
	for (1 .. 300)
	{
		$h->pump_nb;
		last if $e =~ /not reachable/ || !$h->pumpable;
		usleep(100_000);    # poll: until the CLI notes the unreachable server
	}
	ok($h->pumpable, 'unreachable server: still running after its note');
	$h->signal('TERM');
	$h->finish;
	is($h->result(0), 0, 'unreachable server: retried until stopped');
	like($e, qr/server at ws:\/\/127\.0\.0\.1:$closed_port not reachable \(Connection refused\); retrying with back-off up to 10 s/,
		'unreachable server: a clear note');
}

PostgreSQL::Test::Utils::append_to_file("$dir/foreign.db", "this is not a SQLite database at all, just text\n" x 20);
($code, $err) = cli_error('sync', "ws://127.0.0.1:$sport", "$dir/foreign.db");
is($code, 3, 'a corrupt file: exit 3');
like($err, qr/file is not a database/, 'a corrupt file: clear error');
zs_sqlite("$dir/other.db", 'CREATE TABLE notes (x int)');
($code, $err) = cli_error('status', "$dir/other.db");
like($err, qr/"\Q$dir\E\/other\.db": not a Zero replica \(no such table: _zero.replicationConfig\)/,
	'a SQLite file that is not a replica: clear error');

$node->append_conf('postgresql.conf', "zero_stream.subscriber_password = 'sekrit'");
$node->reload;
# the server worker reloads on its next wakeup: wait until it refuses
# (before, the sync would follow with any password: --idle ends it)
for (1 .. 50)
{
	($code, $err) = cli_error('sync', '--idle', '1', "ws://zero:wrong\@127.0.0.1:$sport", "$dir/pw.db");
	last if $code == 2;
	unlink glob("$dir/pw.db*");
	usleep(200_000);    # poll: until the server worker has reloaded and refuses
}
is($code, 2, 'wrong password: exit 2');
like($err, qr/refused the credentials \(HTTP 401\)/, 'wrong password: clear error');
($code, $err) = cli_error('sync', '--idle', '1', "ws://zero:sekrit\@127.0.0.1:$sport", "$dir/pw.db");
is($code, 0, 'the right password restores and follows');

# ---------------------------------------------------------------------------
# Crash during the initial copy: clean redo, never a half replica
# ---------------------------------------------------------------------------
my $big = zs_new_node('copycrash', no_extension => 1, before_extension => q{
CREATE TABLE big (id int PRIMARY KEY, payload text);
INSERT INTO big SELECT g, repeat('p', 100) FROM generate_series(1, 400000) g;
ANALYZE big;
});
my $big_file = $big->data_dir . '/zero_stream/replica.db';
$big->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
$big->poll_query_until('postgres',
	q{SELECT initial_copy ~ 'public\.big: [1-9][0-9]* of ~400000 rows' FROM zero_stream.status()}, 't')
  or die 'the copy did not start';
my $progress = $big->safe_psql('postgres', 'SELECT initial_copy FROM zero_stream.status()');
my $pid = $big->safe_psql('postgres', 'SELECT pid FROM zero_stream.status()');
ok(!-f $big_file, "mid-copy ($progress) no replica file is marked complete yet");
zs_crash_kill($big, $pid);
zs_wait_streaming($big);
$big->poll_query_until('postgres', "SELECT backup_state = 'following' FROM zero_stream.status()")
  or die 'replicator did not start after the redo';
is(zs_sqlite($big_file, 'SELECT count(*) FROM big'), '400000', 'after a crash mid-copy the copy was redone completely');
is(zs_sqlite($big_file, 'PRAGMA journal_mode'), 'wal', 'the finished copy is a WAL-mode replica');
is(zs_sqlite($big_file, 'SELECT replicaVersion FROM "_zero.replicationConfig"'),
	$big->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()'),
	'the redone replica belongs to the new slot\'s lineage');
my $big_log = slurp_file($big->logfile);
like($big_log, qr/terminated by signal 9/, 'the decoder was killed during the copy');
is($big->safe_psql('postgres', q{SELECT count(*) FROM pg_replication_slots}), '1',
	'one slot after the redo (the ephemeral one was dropped)');
is($big->safe_psql('postgres', q{SELECT xmin IS NULL FROM pg_replication_slots}), 't',
	'the slot does not hold back the data xmin after the copy');

$big->stop;
$node->stop;
done_testing();
