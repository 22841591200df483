# zero-stream-replica restore: litestream's restore contract as a stock
# zero-cache view-syncer uses it (ZERO_LITESTREAM_EXECUTABLE). The
# view-syncer reserves a snapshot on /replication/v6/snapshot, then runs
#   <exe> restore -if-db-not-exists -if-replica-exists -parallelism N <db>
# with ZERO_LITESTREAM_BACKUP_URL=<the status's backupURL>, and expects:
# an existing <db> left alone (exit 0); no backup to serve (exit 0, no
# <db>: it retries); any other failure non-zero with no <db> left; a
# restored <db> of the status's replicaVersion, at or after minWatermark.
# Checked through a real cluster and a real reservation, plus a fake
# server for downloads that break (truncated, corrupt, mislabelled, stalled).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

# the built binary, else the installed one
my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
if (!-x $CLI)
{
	my $bindir = `pg_config --bindir`;
	chomp $bindir;
	$CLI = "$bindir/zero-stream-replica";
}
my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";

my $node = zs_new_node('restore', before_extension => q{
CREATE TABLE items (id int PRIMARY KEY, label text, qty bigint);
INSERT INTO items SELECT g, 'item ' || g, g * 10 FROM generate_series(1, 3000) g;
CREATE TABLE pairs (a text, b int, v text, PRIMARY KEY (a, b));
INSERT INTO pairs SELECT 'k' || (g % 7), g, 'v' || g FROM generate_series(1, 200) g;
});
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;
my $backup_file = $node->data_dir . '/zero_stream/replica.db';

sub backup_caught_up
{
	zs_wait_catchup($node);
	$node->poll_query_until('postgres',
		"SELECT backup_state = 'following' AND backup_watermark = last_watermark FROM zero_stream.status()")
	  or die 'the replicator did not catch up: '
	  . $node->safe_psql('postgres', 'SELECT backup_state, backup_watermark, last_watermark FROM zero_stream.status()');
}
backup_caught_up();

# A reservation made the way the view-syncer makes it: a WebSocket on
# /replication/v6/snapshot, held open; returns the connection and its status.
sub reserve
{
	my ($task, $credentials) = @_;
	my $userinfo = $credentials ? "$credentials\@" : '';
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ $TAIL, "ws://${userinfo}127.0.0.1:$sport/replication/v6/snapshot?taskID=$task" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(300));
	for (1 .. 300)
	{
		$h->pump_nb;
		last if $out =~ /\n/;
		usleep(100_000);    # poll: until the reservation's status line
	}
	$out =~ /"backupURL":"([^"]+)","replicaVersion":"([^"]+)","minWatermark":"([^"]+)"/
	  or die "no status from the reservation of $task: $out $err";
	return ($h, { backupURL => $1, replicaVersion => $2, minWatermark => $3 });
}

sub release
{
	my ($h) = @_;
	$h->kill_kill;
	$h->finish;
}

# The environment zero-cache gives its litestream executable, plus %$env;
# an undef value removes a variable. Returns (exit code, stderr).
sub restore_run
{
	my ($env, @args) = @_;
	local %ENV = %ENV;
	my %zero = (
		ZERO_LITESTREAM_MIN_CHECKPOINT_PAGE_COUNT => '10000',
		ZERO_LITESTREAM_MAX_CHECKPOINT_PAGE_COUNT => '100000',
		ZERO_LITESTREAM_INCREMENTAL_BACKUP_INTERVAL_MINUTES => '15',
		ZERO_LITESTREAM_LOG_LEVEL => 'debug',
		ZERO_LITESTREAM_SNAPSHOT_BACKUP_INTERVAL_HOURS => '12',
		ZERO_LITESTREAM_MULTIPART_CONCURRENCY => '48',
		ZERO_LITESTREAM_MULTIPART_SIZE => '16777216',
		ZERO_LOG_FORMAT => 'text',
		LITESTREAM_CONFIG => "$dir/no-such-litestream.yml",
		LITESTREAM_PORT => '4850',
		%$env);
	for my $k (keys %zero)
	{
		if (defined $zero{$k}) { $ENV{$k} = $zero{$k}; }
		else { delete $ENV{$k}; }
	}
	my ($out, $err) = ('', '');
	IPC::Run::run([ $CLI, 'restore', @args ], '>', \$out, '2>', \$err, IPC::Run::timeout(120));
	return ($? >> 8, $err);
}

# what the view-syncer passes
sub vs_args
{
	my ($db) = @_;
	return ('-if-db-not-exists', '-if-replica-exists', '-parallelism', '48', $db);
}

# files next to $db that start with its name, other than $db itself
sub leftovers
{
	my ($db) = @_;
	return join(' ', grep { $_ ne $db } glob("$db*"));
}

# the view-syncer's check of a restored replica (replicaIsValid)
sub subscription_state
{
	my ($db) = @_;
	return zs_sqlite($db, q{SELECT c.replicaVersion || ' ' || s.stateVersion
		FROM "_zero.replicationConfig" AS c JOIN "_zero.replicationState" AS s ON c.lock = s.lock});
}

my $items_sql = q{SELECT count(*) || ':' || sum(qty) || ':' || max(label) FROM items};
my $pairs_sql = q{SELECT count(*) || ':' || group_concat(a || b || v, ',') FROM (SELECT * FROM pairs ORDER BY a, b)};
my $pairs_pg = q{SELECT count(*) || ':' || string_agg(a || b || v, ',' ORDER BY a COLLATE "C", b) FROM pairs};

# ---------------------------------------------------------------------------
# A fresh restore through a real reservation
# ---------------------------------------------------------------------------
my ($res1, $st1) = reserve('vs1');
like($st1->{backupURL}, qr{^http://127\.0\.0\.1:$sport/replica/vs1$}, 'the reservation points at this server');
my $backup_wm = $node->safe_psql('postgres', 'SELECT backup_watermark FROM zero_stream.status()');
my $db = "$dir/vs1/replica.db";
mkdir "$dir/vs1";
my ($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL}, ZERO_REPLICA_FILE => $db },
	vs_args($db));
is($code, 0, 'fresh restore: exit 0') or diag $err;
ok(-f $db, 'fresh restore: the replica file exists');
like($err, qr/restored replicaVersion \Q$st1->{replicaVersion}\E at \Q$backup_wm\E into "\Q$db\E"/,
	'fresh restore: one line on stderr says what was restored');
is(subscription_state($db), "$st1->{replicaVersion} $backup_wm",
	"fresh restore: the status's replicaVersion and the backup's stateVersion");
ok($backup_wm ge $st1->{minWatermark}, 'fresh restore: stateVersion is at or after minWatermark');
is(zs_sqlite($db, $items_sql), $node->safe_psql('postgres', $items_sql), 'fresh restore: items rows as in Postgres');
is(zs_sqlite($db, $pairs_sql), $node->safe_psql('postgres', $pairs_pg), 'fresh restore: pairs rows as in Postgres');
is(zs_sqlite($db, $items_sql), zs_sqlite($backup_file, $items_sql), 'fresh restore: rows as in the backup replica');
is(zs_sqlite($db, 'PRAGMA integrity_check'), 'ok', 'fresh restore: a valid SQLite file');
is(zs_sqlite($db, 'PRAGMA journal_mode'), 'wal', 'fresh restore: a WAL-mode file, as litestream restores zero-cache\'s backup');
is(leftovers($db), '', 'fresh restore: no temporary or -wal/-shm files left beside it');
is(zs_sqlite($db, q{SELECT count(*) FROM "_zero.column_metadata" WHERE table_name = 'items'}), '3',
	'fresh restore: the replica carries its column metadata');

# the view-syncer's next step opens it and changes its journal mode (wal2 in zero's build)
{
	my $copy = "$dir/vs1/prepare.db";
	copy($db, $copy) or die "copy: $!";
	is(zs_sqlite($copy, 'PRAGMA journal_mode = delete'), 'delete', 'the restored file takes a journal-mode change');
	unlink $copy;
}

# ---------------------------------------------------------------------------
# An existing db is left alone
# ---------------------------------------------------------------------------
{
	my $before = slurp_file($db);
	my $mtime = (stat $db)[9];
	$node->safe_psql('postgres', q{INSERT INTO items VALUES (5000, 'later', 1)});
	backup_caught_up();
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, vs_args($db));
	is($code, 0, 'existing db with -if-db-not-exists: exit 0');
	like($err, qr/"\Q$db\E" already exists: nothing to restore/, 'existing db: says so');
	ok(slurp_file($db) eq $before && (stat $db)[9] == $mtime, 'existing db: the file is untouched');

	my $junk = "$dir/vs1/junk.db";
	append_to_file($junk, "not a database\n");
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, vs_args($junk));
	is($code, 0, 'existing non-replica file with -if-db-not-exists: exit 0 (litestream only checks existence)');
	is(slurp_file($junk), "not a database\n", 'existing non-replica file: untouched');

	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, '-if-replica-exists', $db);
	isnt($code, 0, 'existing db without -if-db-not-exists: an error, as litestream');
	like($err, qr/already exists: not restoring over it/, 'existing db without -if-db-not-exists: clear error');
	ok(slurp_file($db) eq $before, 'existing db without -if-db-not-exists: the file is untouched');
}

# ---------------------------------------------------------------------------
# litestream's other flags, -o, and a URL argument
# ---------------------------------------------------------------------------
{
	my $out = "$dir/vs1/other.db";
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} },
		'--if-db-not-exists=true', '-if-replica-exists', '-config', "$dir/litestream.yml",
		'-parallelism=4', '-v', '-no-expand-env', '-generation', 'abc', '-timestamp', '2026-01-01T00:00:00Z',
		'-o', $out, "$dir/vs1/unused.db");
	is($code, 0, 'litestream flags (-config, -generation, -timestamp, -v, --flag=value) are accepted') or diag $err;
	like($err, qr/ignoring -timestamp 2026-01-01T00:00:00Z/, '-timestamp is reported as ignored');
	is(subscription_state($out), subscription_state($backup_file), '-o: restored into the output path, at the backup\'s state');
	ok(!-e "$dir/vs1/unused.db", '-o: nothing written at the database path');
	is(zs_sqlite($out, q{SELECT label FROM items WHERE id = 5000}), 'later', '-o: a fresh restore has the later row');

	my $out2 = "$dir/vs1/url.db";
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => undef }, '-o', $out2, $st1->{backupURL});
	is($code, 0, 'restore -o PATH URL: exit 0') or diag $err;
	is(subscription_state($out2), subscription_state($backup_file), 'restore -o PATH URL: restored');
	($code, $err) = restore_run({}, $st1->{backupURL});
	is($code, 1, 'restore URL without -o: usage, exit 1');
	like($err, qr/needs -o PATH/, 'restore URL without -o: says so');
}

# ---------------------------------------------------------------------------
# A restored replica is accepted as is: sync follows it without restoring
# ---------------------------------------------------------------------------
{
	my $synced = "$dir/vs1/synced.db";
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, vs_args($synced));
	is($code, 0, 'restore for sync: exit 0');
	release($res1);
	$node->safe_psql('postgres', q{UPDATE items SET qty = qty + 1 WHERE id <= 10; DELETE FROM pairs WHERE b = 1});
	zs_wait_catchup($node);
	my ($out, $serr) = ('', '');
	IPC::Run::run([ $CLI, 'sync', '--idle', '2', '--task-id', 'vs1', "ws://127.0.0.1:$sport", $synced ],
		'>', \$out, '2>', \$serr, IPC::Run::timeout(120));
	is($? >> 8, 0, 'sync on a restored replica: exit 0');
	unlike($serr, qr/restored replicaVersion|replacing/, 'sync on a restored replica: no second restore');
	like($serr, qr/following \Q$synced\E from /, 'sync on a restored replica: it follows from its stateVersion');
	is(zs_sqlite($synced, $items_sql), $node->safe_psql('postgres', $items_sql), 'sync on a restored replica: caught up (items)');
	is(zs_sqlite($synced, $pairs_sql), $node->safe_psql('postgres', $pairs_pg), 'sync on a restored replica: caught up (pairs)');
}

# sync's own restore shares the download: a fresh file through /subscribe
{
	my $fresh = "$dir/vs1/sync-fresh.db";
	my ($out, $serr) = ('', '');
	IPC::Run::run([ $CLI, 'sync', '--idle', '2', '--task-id', 'vs5', "ws://127.0.0.1:$sport", $fresh ],
		'>', \$out, '2>', \$serr, IPC::Run::timeout(120));
	is($? >> 8, 0, 'sync into a new file: exit 0') or diag $serr;
	like($serr, qr/restored replicaVersion \Q$st1->{replicaVersion}\E at \S+ into "\Q$fresh\E"/,
		'sync into a new file: restored through the shared download');
	is(zs_sqlite($fresh, $items_sql), $node->safe_psql('postgres', $items_sql), 'sync into a new file: caught up (items)');
	is(leftovers($fresh), '', 'sync into a new file: no temporary file left');
}

# ---------------------------------------------------------------------------
# No backup to serve: exit 0 without a file (the view-syncer retries)
# ---------------------------------------------------------------------------
{
	# the reservation of vs1 is gone
	my $gone = "$dir/vs1/gone.db";
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, vs_args($gone));
	is($code, 0, 'reservation gone, -if-replica-exists: exit 0');
	ok(!-e $gone, 'reservation gone: no file created');
	is(leftovers($gone), '', 'reservation gone: no temporary file');
	like($err, qr/no backup available at \Q$st1->{backupURL}\E \(HTTP\/1\.1 404[^)]*no snapshot reservation is open for task "vs1"\): nothing restored/,
		'reservation gone: says so, with the server\'s reason');

	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => "http://127.0.0.1:$sport/replica/never" }, vs_args($gone));
	is($code, 0, 'a task never reserved: exit 0');
	ok(!-e $gone, 'a task never reserved: no file');

	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st1->{backupURL} }, '-if-db-not-exists', $gone);
	isnt($code, 0, 'no backup without -if-replica-exists: an error, as litestream');
	ok(!-e $gone, 'no backup without -if-replica-exists: no file');
	like($err, qr/could not download the backup from .*404/, 'no backup without -if-replica-exists: clear error');
}

# ---------------------------------------------------------------------------
# Restore while writes run: the status's replicaVersion, at or after minWatermark
# ---------------------------------------------------------------------------
{
	my $load_script = "$dir/load.sql";
	append_to_file($load_script, q{\set id random(1, 3000)
UPDATE items SET qty = qty + 1 WHERE id = :id;
});
	my $before = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my $load = zs_start_pgbench($node, 4, 2, $load_script);
	# the reservation is made while the load's transactions are being stored
	$node->poll_query_until('postgres', qq{SELECT last_watermark > '$before' COLLATE "C" FROM zero_stream.status()})
	  or die 'the load was not stored';
	my ($res2, $st2) = reserve('vs2');
	my $db2 = "$dir/vs2.db";
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $st2->{backupURL} }, vs_args($db2));
	is($code, 0, 'restore during writes: exit 0') or diag $err;
	my ($rv2, $sv2) = split / /, subscription_state($db2);
	is($rv2, $st2->{replicaVersion}, 'restore during writes: the status\'s replicaVersion');
	ok($sv2 ge $st2->{minWatermark}, "restore during writes: stateVersion $sv2 at or after minWatermark $st2->{minWatermark}");
	like($err, qr/restored replicaVersion \Q$rv2\E at \Q$sv2\E/, 'restore during writes: stderr names the restored state');
	is(zs_sqlite($db2, 'PRAGMA integrity_check'), 'ok', 'restore during writes: a valid SQLite file');
	$load->finish;
	release($res2);
}

# ---------------------------------------------------------------------------
# Bad input and failures: non-zero, no <db>, no temporary file
# ---------------------------------------------------------------------------
my ($res3, $st3) = reserve('vs3');
my $bad = "$dir/bad.db";

sub fails
{
	my ($label, $want_code, $err_re, $env, @args) = @_;
	my ($c, $e) = restore_run($env, @args);
	if (defined $want_code) { is($c, $want_code, "$label: exit $want_code") or diag $e; }
	else { isnt($c, 0, "$label: non-zero exit") or diag $e; }
	like($e, $err_re, "$label: clear error");
	ok(!-e $bad, "$label: no database file");
	is(leftovers($bad), '', "$label: no temporary file");
}

my $good_env = { ZERO_LITESTREAM_BACKUP_URL => $st3->{backupURL} };
fails('unknown flag', 1, qr/flag provided but not defined: -frobnicate\nusage: .*restore/s,
	$good_env, '-frobnicate', vs_args($bad));
fails('flag without its value', 1, qr/flag needs an argument: -parallelism/, $good_env, '-if-db-not-exists', '-parallelism');
fails('non-integer -parallelism', 1, qr/invalid value "lots" for -parallelism/, $good_env, '-parallelism', 'lots', $bad);
fails('no database path', 1, qr/restore needs the database path/, $good_env, '-if-db-not-exists');
fails('two database paths', 1, qr/too many arguments/, $good_env, $bad, "$bad.2");
fails('no ZERO_LITESTREAM_BACKUP_URL', 1, qr/ZERO_LITESTREAM_BACKUP_URL is not set/,
	{ ZERO_LITESTREAM_BACKUP_URL => undef }, vs_args($bad));
fails('an s3:// URL', 2, qr/unsupported backup URL "s3:\/\/bucket\/zero"/,
	{ ZERO_LITESTREAM_BACKUP_URL => 's3://bucket/zero' }, vs_args($bad));
fails('a malformed URL', 2, qr/unsupported backup URL "http:\/\/:\/replica"/,
	{ ZERO_LITESTREAM_BACKUP_URL => 'http://:/replica' }, vs_args($bad));
fails('a URL of no host', 2, qr/could not resolve "no-such-host\.invalid"/,
	{ ZERO_LITESTREAM_BACKUP_URL => 'http://no-such-host.invalid:4849/replica/vs3' }, vs_args($bad));
my $closed_port = PostgreSQL::Test::Cluster::get_free_port();
fails('connection refused', 2, qr/could not connect to 127\.0\.0\.1:$closed_port: Connection refused/,
	{ ZERO_LITESTREAM_BACKUP_URL => "http://127.0.0.1:$closed_port/replica/vs3" }, vs_args($bad));
fails('a path the server does not serve', 2, qr/could not download the backup from .*: HTTP\/1\.1 [45]\d\d/,
	{ ZERO_LITESTREAM_BACKUP_URL => "http://127.0.0.1:$sport/replication/v6/snapshot" }, '-if-db-not-exists', $bad);

SKIP:
{
	skip 'root writes into any directory', 5 if $> == 0;
	my $ro = "$dir/readonly";
	mkdir $ro;
	chmod 0555, $ro;
	my ($c, $e) = restore_run($good_env, vs_args("$ro/replica.db"));
	is($c, 3, 'unwritable directory: exit 3');
	like($e, qr/could not create "\Q$ro\E\/replica\.db\.tmp": Permission denied/, 'unwritable directory: clear error');
	ok(!-e "$ro/replica.db", 'unwritable directory: no file');
	($c, $e) = restore_run($good_env, vs_args("$dir/no-such-dir/replica.db"));
	is($c, 3, 'missing directory: exit 3');
	like($e, qr/could not create .*No such file or directory/, 'missing directory: clear error');
}

# ---------------------------------------------------------------------------
# Downloads that break: a fake server serving the real backup, damaged
# ---------------------------------------------------------------------------
my $served = "$dir/vs1/replica.db";    # restored above from the real server
my ($served_rv, $served_sv) = split / /, subscription_state($served);
my $fake_script = "$dir/fake_server.py";
append_to_file($fake_script, q{
import os, socket, sys, threading, time
port_file, path, rv, sv = sys.argv[1:5]
data = open(path, 'rb').read()

def serve(c):
    req = b''
    while b'\r\n\r\n' not in req:
        d = c.recv(4096)
        if not d:
            c.close()
            return
        req += d
    mode = req.split(b' ')[1].decode().split('/')[1]
    body, hv, hs = data, rv, sv
    if mode.startswith('status'):
        code = mode[6:]
        msg = b'backup not ready\n'
        c.sendall(b'HTTP/1.1 ' + code.encode() + b' Whatever\r\nContent-Length: ' + str(len(msg)).encode()
                  + b'\r\nConnection: close\r\n\r\n' + msg)
        c.close()
        return
    if mode == 'garbage':
        body = (b'this is not a SQLite database, only text\n' * (len(data) // 41 + 1))[:len(data)]
    if mode == 'mislabelled':
        hs = 'zzzzzzzz'
    head = ('HTTP/1.1 200 OK\r\nContent-Type: application/vnd.sqlite3\r\nContent-Length: %d\r\n'
            'X-Replica-Version: %s\r\nX-Replica-Watermark: %s\r\nConnection: close\r\n\r\n'
            % (len(data), hv, hs)).encode()
    if mode in ('truncated', 'stall'):
        c.sendall(head + body[:len(body) // 2])
        if mode == 'stall':
            # the stall is the test: the client is stopped during it
            time.sleep(60)
        c.close()
        return
    c.sendall(head + body)
    c.close()

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 0))
s.listen(16)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + '.tmp', port_file)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
});
my $port_file = "$dir/fake.port";
my $fake = IPC::Run::start([ 'python3', $fake_script, $port_file, $served, $served_rv, $served_sv ],
	'>', "$dir/fake.log", '2>&1');
for (1 .. 100)
{
	last if -f $port_file;
	usleep(100_000);    # poll: until the fake server has written its port
}
my $fport = slurp_file($port_file);
my $fake_url = "http://127.0.0.1:$fport";

($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/full/vs3" }, vs_args($bad));
is($code, 0, 'fake server, an intact download: exit 0 (the fake server works)') or diag $err;
is(subscription_state($bad), "$served_rv $served_sv", 'fake server, an intact download: restored');
unlink $bad;

fails('the server closes mid-download', 2, qr/the backup download from \Q$fake_url\E\/truncated\/vs3 ended after \d+ of \d+ bytes/,
	{ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/truncated/vs3" }, vs_args($bad));
fails('a corrupt download', 2, qr/the downloaded backup is not usable: .*file is not a database/,
	{ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/garbage/vs3" }, vs_args($bad));
fails('a download that is not the announced replica', 2,
	qr/the downloaded backup \(replicaVersion \Q$served_rv\E at \Q$served_sv\E\) is not the one the server announced \(\Q$served_rv\E at zzzzzzzz\)/,
	{ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/mislabelled/vs3" }, vs_args($bad));
fails('HTTP 500', 2, qr/could not download the backup from .*: HTTP\/1\.1 500 Whatever/,
	{ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/status500/vs3" }, vs_args($bad));
{
	($code, $err) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => "$fake_url/status503/vs3" }, vs_args($bad));
	is($code, 0, 'HTTP 503 (no backup ready) with -if-replica-exists: exit 0');
	ok(!-e $bad, 'HTTP 503: no file');
	like($err, qr/no backup available at .*\(HTTP\/1\.1 503 Whatever: backup not ready\)/, 'HTTP 503: says so');
}

# SIGTERM while the download stalls: exits, removing its temporary file
{
	local $ENV{ZERO_LITESTREAM_BACKUP_URL} = "$fake_url/stall/vs3";
	my ($out, $e) = ('', '');
	my $h = IPC::Run::start([ $CLI, 'restore', vs_args($bad) ], '>', \$out, '2>', \$e, IPC::Run::timeout(60));
	for (1 .. 100)
	{
		last if -s "$bad.tmp";
		usleep(100_000);    # poll: until the partial download is on disk
	}
	ok(-s "$bad.tmp", 'stalled download: the partial download is in <db>.tmp, never <db>');
	ok(!-e $bad, 'stalled download: no database file meanwhile');
	$h->signal('TERM');
	$h->finish;
	isnt($? >> 8, 0, 'stalled download, SIGTERM: non-zero exit');
	like($e, qr/interrupted while restoring/, 'stalled download, SIGTERM: says so');
	is(leftovers($bad), '', 'stalled download, SIGTERM: temporary file removed');
	ok(!-e $bad, 'stalled download, SIGTERM: no database file');
}
$fake->kill_kill;
$fake->finish;

# ---------------------------------------------------------------------------
# A password: credentials from the backup URL or from ZERO_CHANGE_STREAMER_URI
# ---------------------------------------------------------------------------
release($res3);
$node->append_conf('postgresql.conf', "zero_stream.subscriber_password = 'sekrit'");
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('zero_stream.subscriber_password') = 'sekrit'");
{
	my ($h, $st) = reserve('vs4', 'zero:sekrit');
	my $url = $st->{backupURL};
	fails('no credentials', 2, qr/refused the credentials for .* \(HTTP 401\)/,
		{ ZERO_LITESTREAM_BACKUP_URL => $url, ZERO_CHANGE_STREAMER_URI => undef }, vs_args($bad));
	fails('credentials of ZERO_CHANGE_STREAMER_URI for another server', 2, qr/\(HTTP 401\)/,
		{ ZERO_LITESTREAM_BACKUP_URL => $url, ZERO_CHANGE_STREAMER_URI => "ws://zero:sekrit\@127.0.0.1:$closed_port/" },
		vs_args($bad));
	my ($c, $er) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $url,
			ZERO_CHANGE_STREAMER_URI => "ws://zero:sekrit\@127.0.0.1:$sport/" }, vs_args($bad));
	is($c, 0, 'credentials of ZERO_CHANGE_STREAMER_URI (same server): restored') or diag $er;
	unlike($er, qr/sekrit/, 'the password is never printed');
	unlink $bad;
	(my $with_pw = $url) =~ s{^http://}{http://zero:sekrit\@};
	($c, $er) = restore_run({ ZERO_LITESTREAM_BACKUP_URL => $with_pw, ZERO_CHANGE_STREAMER_URI => undef }, vs_args($bad));
	is($c, 0, 'credentials in the backup URL: restored') or diag $er;
	is(subscription_state($bad), subscription_state($backup_file), 'with the password: the backup\'s state');
	unlink $bad;
	release($h);
}

$node->stop;
done_testing();
