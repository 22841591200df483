# The chunked change log (docs/architecture.md, "The chunked change log"):
#  - chunks hold several transactions (those a local commit stores
#    together) and a large transaction is split over several; a subscriber
#    catching up from any transaction's watermark, inside a chunk or at
#    its end, gets exactly the transactions after it, every message byte
#    for byte the changeLog view's row as zero-cache's codec frames it;
#  - a change log of rows, as zero_stream before 0.4.0 (and zero-cache)
#    leave it, is converted into chunks when the decoder starts: the
#    lineage, the head and a live zero-stream-replica's position stay, and
#    the replica follows on without a reset;
#  - a chunk that does not decompress ends the read of a subscriber that
#    reaches it with an error naming the chunk (status().last_error says
#    so), while the server goes on serving a subscriber past it; nothing
#    after the chunk is sent; once the chunk is put right, the subscriber
#    gets everything.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $CDC = $ZeroStreamTest::CDC;
my $node = zs_new_node('chunks', extra_conf => "zero_stream.changelog_chunk_size = '8kB'\n",
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $port = $node->{zs_server_port};
my $dir = $node->basedir;
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub url
{
	my (%p) = @_;
	my %q = (id => 'tap', taskID => 'task', replicaVersion => $rv, watermark => $rv, %p);
	return "ws://127.0.0.1:$port/replication/v6/changes?" . join '&', map { "$_=$q{$_}" } sort keys %q;
}

# the messages a subscriber at $from gets until idle, without the status
sub stream_from
{
	my ($from) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ $TAIL, '--idle', '2', url(watermark => $from) ], '>', \$out, '2>', \$err,
		IPC::Run::timeout(120));
	my @msgs;
	for my $line (grep { length } split /\n/, $out)
	{
		$line =~ /^\{"id":\d+,"msg":(.*)\}$/ or die "unexpected frame $line";
		push @msgs, $1 unless $1 =~ /^\["status",/;
	}
	return (\@msgs, $err);
}

# the messages zero-cache's codec makes of the log's rows after $from
sub log_messages
{
	my ($from) = @_;
	my $rows = sql(qq{
SELECT CASE change->>'tag'
         WHEN 'begin' THEN '["begin",' || change::text || ',{"commitWatermark":"' || watermark || '"}]'
         WHEN 'commit' THEN '["commit",' || change::text || ',{"watermark":"' || watermark || '"}]'
         ELSE '["data",' || change::text || ']' END
  FROM $CDC."changeLog" WHERE watermark > '$from' ORDER BY watermark, pos});
	return [ grep { length } split /\n/, $rows ];
}

# --------------------------------------------------------------------------
# many transactions stored in one local commit: the decoder's store waits
# behind a lock while they commit
my $lock = zs_session($node);
zs_run_in($lock, qq{BEGIN; LOCK TABLE $CDC."changeLogChunks" IN EXCLUSIVE MODE;});
for my $i (1 .. 40)
{
	my $n = $i % 10 == 0 ? 300 : $i % 3;
	sql(qq{INSERT INTO t (v) SELECT 'tx $i row ' || g || repeat('-', g % 50) FROM generate_series(0, $n) g});
}
sql(q{UPDATE t SET v = v || ' updated' WHERE id % 7 = 0});
sql(q{DELETE FROM t WHERE id % 11 = 0});
zs_run_in($lock, 'COMMIT;');
zs_wait_catchup($node);

is(sql(qq{SELECT count(*) > 0 FROM $CDC."changeLogChunks" WHERE "firstWatermark" <> watermark}), 't',
	'some chunks hold several transactions');
is(sql(qq{SELECT count(*) > 1 FROM (SELECT watermark FROM $CDC."changeLogChunks"
                                      GROUP BY watermark HAVING count(*) > 1) s}), 't',
	'some transactions are split over several chunks');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), sql(qq{SELECT sum(rows) FROM $CDC."changeLogChunks"}),
	'the view shows every row of every chunk');
zs_check_log_integrity($node, 'chunked');

my @commits = split /\n/, sql(qq{SELECT watermark FROM $CDC."changeLog" WHERE change->>'tag' = 'commit'
                                   ORDER BY watermark});
cmp_ok(scalar(@commits), '>=', 43, 'every transaction is stored');
my ($all_ok, $checked) = (1, 0);
for my $k (0 .. $#commits)
{
	next unless $k % 4 == 0 || $k == $#commits;
	my ($got) = stream_from($commits[$k]);
	my $want = log_messages($commits[$k]);
	$checked++;
	next if @$got == @$want && !grep { $got->[$_] ne $want->[$_] } 0 .. $#$want;
	$all_ok = 0;
	diag "from $commits[$k]: " . scalar(@$got) . ' messages, ' . scalar(@$want) . ' expected';
}
ok($all_ok, "catch-up from $checked watermarks, inside chunks and at their ends: the log's messages, byte for byte");

# --------------------------------------------------------------------------
# a change log of rows, as 0.3.0 leaves it: the decoder converts it
my $file = "$dir/follower.db";
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'chunks', "ws://127.0.0.1:$port", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");
zs_replica_equals($node, $file, 'before the conversion');
my $head = sql('SELECT last_watermark FROM zero_stream.status()');
my $log_before = sql(qq{SELECT md5(string_agg(watermark || '/' || pos || '/' || change::text || '/' || coalesce(precommit, '-'),
                                              E'\\n' ORDER BY watermark, pos)) FROM $CDC."changeLog"});
# with the workers kept out of the database, the log rewritten as the
# table of rows zero_stream 0.3.0 created (with $owner, if given, as the
# other writer that owns it); then transactions the decoder finds waiting in
# the WAL
sub make_row_log
{
	my ($owner) = @_;
	$node->stop;
	$node->append_conf('postgresql.conf', "zero_stream.database = 'no_such_database'\n");
	$node->start;
	sql(qq{
BEGIN;
CREATE TABLE $CDC."changeLogRows" ("watermark" TEXT COLLATE "C", "pos" INT8, "change" JSON NOT NULL,
  "precommit" TEXT, PRIMARY KEY ("watermark", "pos")) WITH (autovacuum_vacuum_cost_delay = 0);
INSERT INTO $CDC."changeLogRows" SELECT * FROM $CDC."changeLog";
DROP VIEW $CDC."changeLog";
DROP FUNCTION $CDC."changeLogRows"(bytea);
DROP TABLE $CDC."changeLogChunks";
ALTER TABLE $CDC."changeLogRows" RENAME TO "changeLog";
ALTER INDEX $CDC."changeLogRows_pkey" RENAME TO "changeLog_pkey";
COMMIT;});
	sql(qq{UPDATE $CDC."replicationState" SET "owner" = '$owner'}) if $owner;
	sql(q{INSERT INTO t (v) SELECT 'while converted ' || g FROM generate_series(1, 2000) g});
	sql(q{UPDATE t SET v = v || ' again' WHERE id % 5 = 0});
	$node->stop;
	$node->append_conf('postgresql.conf', "zero_stream.database = 'postgres'\n");
}

make_row_log();
my $offset = -s $node->logfile;
# the conversion under load: writes from the moment the server accepts them
my $load_script = "$dir/load.sql";
append_to_file($load_script, q{INSERT INTO t (v) VALUES ('under load ' || :client_id);
UPDATE t SET v = v || '+' WHERE id = (SELECT max(id) FROM t);
});
$node->start;
my $load = zs_start_pgbench($node, 5, 2, $load_script);
zs_wait_streaming($node);
ok($node->log_contains(qr/converted the change log's \d+ rows into \d+ chunks/, $offset),
	'the decoder converted the log of rows into chunks');
$load->finish;
cmp_ok(sql(q{SELECT count(*) FROM t WHERE v LIKE 'under load%'}), '>', 100, 'the load wrote across the conversion');
zs_wait_catchup($node);
is(sql(q{SELECT replica_version FROM zero_stream.status()}), $rv, 'the lineage stays');
is(sql(qq{SELECT md5(string_agg(watermark || '/' || pos || '/' || change::text || '/' || coalesce(precommit, '-'),
                              E'\\n' ORDER BY watermark, pos)) FROM $CDC."changeLog" WHERE watermark <= '$head'}),
	$log_before, 'every row stays, byte for byte');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head' AND change->>'tag' = 'insert'
           AND change->'new'->>'v' LIKE 'while converted %'}), '2000',
	'the transactions committed while the log was one of rows are stored after it');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head' AND change->>'tag' = 'insert'
           AND change->'new'->>'v' LIKE 'under load %'}), sql(q{SELECT count(*) FROM t WHERE v LIKE 'under load%'}),
	'and every insert of the load, once');
zs_check_log_integrity($node, 'converted');
sql(q{INSERT INTO t (v) SELECT 'after the conversion ' || g FROM generate_series(1, 500) g});
zs_replica_equals($node, $file, 'after the conversion');
{
	my $cli_log = slurp_file("$dir/cli.log");
	my $restores = () = $cli_log =~ /restored replicaVersion/g;
	is($restores, 1, 'the replica followed on without a reset or a second restore') or diag $cli_log;
}
$cli->kill_kill;
$cli->finish;

# --------------------------------------------------------------------------
# a damaged chunk
my ($bad_wm, $bad_pos) = split /\|/, sql(qq{
SELECT watermark, pos FROM $CDC."changeLogChunks" WHERE rows > 20 ORDER BY watermark, pos OFFSET 1 LIMIT 1});
my $saved = sql(qq{SELECT encode(chunk, 'hex') FROM $CDC."changeLogChunks" WHERE watermark = '$bad_wm' AND pos = $bad_pos});
my $before_bad = sql(qq{SELECT max(watermark) FROM $CDC."changeLog" WHERE change->>'tag' = 'commit'
                           AND watermark < (SELECT "firstWatermark" FROM $CDC."changeLogChunks"
                                             WHERE watermark = '$bad_wm' AND pos = $bad_pos)});
sql(qq{UPDATE $CDC."changeLogChunks" SET chunk = overlay(chunk placing '\\xdeadbeefdeadbeef'::bytea from 30)
        WHERE watermark = '$bad_wm' AND pos = $bad_pos});
my ($got, $err) = stream_from($before_bad);
like($got->[-1] // '', qr/^\["error",\{"type":0,"message":"change-log chunk \Q$bad_wm\E\/$bad_pos of zero_0\/cdc cannot be read: a chunk whose rows do not match its checksum"/,
	'a subscriber that reaches the damaged chunk gets an error naming it');
{
	# what it got before: the rows of the chunks before, in the log's order
	my $before_rows = sql(qq{SELECT count(*) FROM $CDC."changeLogChunks" c, $CDC."changeLogRows"(c.chunk) r
	                          WHERE c.watermark > '$before_bad' AND (c.watermark, c.pos) < ('$bad_wm', $bad_pos)
	                            AND r.watermark > '$before_bad'});
	my @sent = grep { /^\["(begin|data|commit)"/ } @$got;
	is(scalar(@sent), $before_rows, 'every row before the damaged chunk, and nothing of it or after it');
}
like(sql('SELECT last_error FROM zero_stream.status()'), qr/change-log chunk \Q$bad_wm\E\/$bad_pos .* cannot be read/,
	'status().last_error names the chunk');
my $past = sql('SELECT last_watermark FROM zero_stream.status()');
sql(q{INSERT INTO t (v) VALUES ('past the damage')});
zs_wait_catchup($node);
($got) = stream_from($past);
is(scalar(grep { /^\["commit"/ } @$got), 1, 'a subscriber past the damaged chunk is served on');
sql(qq{UPDATE $CDC."changeLogChunks" SET chunk = decode('$saved', 'hex') WHERE watermark = '$bad_wm' AND pos = $bad_pos});
($got) = stream_from($before_bad);
my $want = log_messages($before_bad);
ok(@$got == @$want && !grep({ $got->[$_] ne $want->[$_] } 0 .. $#$want),
	'once the chunk is put right, the subscriber gets every message');
is(sql('SELECT state FROM zero_stream.status()'), 'streaming', 'the decoder streamed on throughout');

# --------------------------------------------------------------------------
# a log of rows another change streamer owns (a zero-cache
# replication-manager's): left as it is for its writer, until resync()
# takes it over
make_row_log('zero-cache-task-z');
$offset = -s $node->logfile;
$node->start;
$node->poll_query_until('postgres', q{SELECT state = 'stopped: change log taken over' FROM zero_stream.status()})
  or die 'the decoder did not stop: ' . sql('SELECT state FROM zero_stream.status()');
ok($node->log_contains(qr/the change log "zero_0\/cdc" is one of rows that zero-cache-task-z writes: it stays as it is/, $offset),
	'another writer\'s log of rows is not converted, and the log says why');
is(sql(qq{SELECT relkind FROM pg_class WHERE oid = '$CDC."changeLog"'::regclass}), 'r', 'it is still a table of rows');
sql('SELECT zero_stream.resync()');
$node->poll_query_until('postgres', qq{SELECT state = 'streaming' AND replica_version <> '$rv' FROM zero_stream.status()})
  or die 'no new lineage: ' . sql('SELECT state || coalesce(last_error, \'\') FROM zero_stream.status()');
is(sql(qq{SELECT relkind FROM pg_class WHERE oid = '$CDC."changeLog"'::regclass}), 'v',
	'resync() takes it over: changeLog is the view over chunks again');
$rv = sql('SELECT replica_version FROM zero_stream.status()');
sql(q{INSERT INTO t (v) VALUES ('in the new lineage')});
zs_wait_catchup($node);
($got) = stream_from($rv);
$want = log_messages($rv);
ok(@$want > 0 && @$got == @$want && !grep({ $got->[$_] ne $want->[$_] } 0 .. $#$want),
	'and the new lineage streams');

$node->stop;
done_testing();
