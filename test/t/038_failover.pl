# Failover (PostgreSQL 17 and later): the decoder's slot is a failover slot,
# a standby with sync_replication_slots keeps a copy of it, and a promoted
# standby goes on with the same lineage.
#  - status() on the primary says failover on, which standbys it waits for
#    and whether they are synchronized, and warns when no standby is named;
#    on the standby the decoder is in state standby;
#  - writes of every kind (insert, update, delete, truncate, ADD COLUMN,
#    CREATE TABLE, a backfill) reach a zero-stream-replica following the
#    primary, and a subscriber of the standby's server gets them as replay
#    brings them, the same transactions as the primary's log;
#  - promoted, the standby streams the same replicaVersion; its change log
#    is the old one row for row, then its own writes, each once, in order;
#    the zero-stream-replica that followed the old primary follows the new
#    one from its file, without restoring;
#  - with the standby down, a write reaches no subscriber and the slot is
#    not confirmed past it (status() names the standby's slot); once the
#    standby is back, it arrives: nothing reaches a consumer that a
#    promoted standby would not have.
# On 15 and 16, status() says failover is unsupported and the rest is skipped.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use StandbyPair;
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $CDC = '"zero_0/cdc"';

my $schema = q{
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
CREATE TABLE gone (id int PRIMARY KEY, v text);
CREATE TABLE nudge (id bigserial PRIMARY KEY, at timestamptz DEFAULT now());
INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 2000) g;
INSERT INTO gone SELECT g, 'g' || g FROM generate_series(1, 100) g;
};

if (!sp_failover_supported())
{
	my $node = zs_new_node('nofailover', before_extension => $schema);
	is($node->safe_psql('postgres',
			q{SELECT failover || '|' || (failover_standbys IS NULL) || '|' || (failover_synced IS NULL) || '|'
			     || (failover_warning IS NULL) || '|' || (failover_hint IS NULL) FROM zero_stream.status()}),
		'unsupported|true|true|true|true', 'before PostgreSQL 17: status() says failover is unsupported');
	$node->stop;
  SKIP:
	{
		skip 'failover slots need PostgreSQL 17 or later (this is PostgreSQL ' . sp_pg_major() . ')', 1;
	}
	done_testing();
	exit;
}

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
sub psql { my ($node, $sql) = @_; return $node->safe_psql('postgres', $sql); }

# a tail in the background, its frames in a file
my $tails = 0;

sub start_tail
{
	my ($node, $rv, $from, @opts) = @_;
	my $base = $node->basedir . '/tail' . $tails++;
	my $url = zs_changes_url($node, id => "tail$tails", taskID => 'tails', replicaVersion => $rv, watermark => $from);
	my $h = IPC::Run::start([ $TAIL, @opts, $url ], '>', "$base.out", '2>', "$base.err");
	return { h => $h, base => $base };
}

sub tail_output { my ($t) = @_; return -f "$t->{base}.out" ? slurp_file("$t->{base}.out") : ''; }

# the commit watermarks of a tail's frames, checked for whole transactions in order
sub tail_commits
{
	my ($out, $label) = @_;
	my ($open, $last, $bad, @commits) = (undef, '');
	for my $line (grep { length } split /\n/, $out)
	{
		my $m = decode_json($line);
		my ($type, $change, $env) = @{ $m->{msg} };
		if ($type eq 'begin')
		{
			$bad ||= 'begin inside a transaction' if defined $open;
			$open = $env->{commitWatermark};
		}
		elsif ($type eq 'data') { $bad ||= 'data outside a transaction' unless defined $open; }
		elsif ($type eq 'commit')
		{
			$bad ||= 'commit watermark differs from begin' unless defined $open && $env->{watermark} eq $open;
			$bad ||= "watermark $open not after $last" unless ($open cmp $last) > 0;
			push @commits, $open;
			$last = $open;
			undef $open;
		}
		elsif ($type ne 'status') { $bad ||= "unexpected $type"; }
	}
	ok(!$bad, "$label: whole transactions, in order") or diag $bad;
	return \@commits;
}

sub wait_tail_commit
{
	my ($t, $wm, $label) = @_;
	for (1 .. 1800)
	{
		return 1 if tail_output($t) =~ /"commit",\{[^\n]*"watermark":"\Q$wm\E"/;
		usleep(100_000);    # poll: until the tail has the commit
	}
	diag("$label: no commit $wm; tail stderr: " . slurp_file("$t->{base}.err"));
	return 0;
}

# the transactions in a node's log after $after, in order
sub log_commits
{
	my ($node, $after) = @_;
	return [ grep { length } split /\n/, psql($node, qq{
SELECT watermark FROM $CDC."changeLog" WHERE watermark COLLATE "C" > '$after' AND change->>'tag' = 'commit'
 ORDER BY watermark COLLATE "C"}) ];
}

sub log_rows
{
	my ($node) = @_;
	return [ split /\n/, psql($node, qq{
SELECT watermark || ' ' || pos || ' ' || change::text FROM $CDC."changeLog" ORDER BY watermark COLLATE "C", pos}) ];
}

sub start_cli
{
	my ($node, $file, $log) = @_;
	return IPC::Run::start([ $CLI, 'sync', '--task-id', 'tfail', "ws://127.0.0.1:$node->{zs_server_port}", $file ],
		'>', "$log.out", '2>>', $log);
}

sub state_version
{
	my ($file) = @_;
	return -f $file ? zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') : '';
}

sub wait_file_at
{
	my ($file, $target, $label, $log) = @_;
	for (1 .. 1800)
	{
		return 1 if state_version($file) eq $target;
		usleep(100_000);    # poll: until the file is at $target
	}
	diag("$label: $file at " . state_version($file) . ", not $target");
	diag("$label: the replica's log:\n" . slurp_file($log)) if defined $log && -f $log;
	return 0;
}

sub inode { my @s = stat $_[0]; return @s ? "$s[0]:$s[1]" : 'none'; }

sub head { my ($node) = @_; return psql($node, 'SELECT last_watermark FROM zero_stream.status()'); }

sub backfills_done
{
	my ($node) = @_;
	$node->poll_query_until('postgres', qq{SELECT NOT EXISTS (SELECT FROM $CDC."backfilling")})
	  or die 'the backfill did not complete';
	zs_wait_catchup($node);
}

# ---------------------------------------------------------------------------
# The primary, before and without its standby
# ---------------------------------------------------------------------------
my $primary = sp_new_primary('primary', before_extension => $schema);
my $slot = sp_slot_name($primary);
my $rv = psql($primary, 'SELECT replica_version FROM zero_stream.status()');
is(psql($primary, qq{SELECT failover::int FROM pg_replication_slots WHERE slot_name = '$slot'}), '1',
	"the decoder's slot $slot is a failover slot");
my $st = sp_status($primary, qw(failover failover_standbys));
is("$st->{failover} $st->{failover_standbys}", 'on sb1', 'status(): failover on, waiting for sb1');

# no standby has streamed through sb1 yet: a write is held back
psql($primary, q{INSERT INTO t (v) VALUES ('before any standby')});
ok($primary->poll_query_until('postgres',
		q{SELECT failover_warning LIKE '%replication slot "sb1"%not connected%' FROM zero_stream.status()}),
	'with sb1 never connected, failover_warning names it');
like(psql($primary, 'SELECT failover_hint FROM zero_stream.status()'), qr/start that standby, or remove its slot/,
	'and the hint says what to do');
# nothing observable ends this: a moment for a decode that must not happen
usleep(1_000_000);
is(psql($primary, qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'before any standby'}), '0',
	'the write is not decoded while sb1 has not flushed it');

# failover on, no standby named: a warning and a hint
$primary->append_conf('postgresql.conf', "synchronized_standby_slots = ''\n");
$primary->reload;
ok($primary->poll_query_until('postgres',
		q{SELECT failover_standbys IS NULL AND failover_warning LIKE '%synchronized_standby_slots names no standby%'
		    FROM zero_stream.status()}),
	'with synchronized_standby_slots empty, failover_warning says no standby is named');
like(psql($primary, 'SELECT failover_hint FROM zero_stream.status()'),
	qr/Set synchronized_standby_slots to the physical replication slots.*or set zero_stream\.failover = off/,
	'and failover_hint how to name one');
zs_wait_catchup($primary);
is(psql($primary, qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'before any standby'}), '1',
	'waiting for no standby, the held write is decoded');
$primary->append_conf('postgresql.conf', "synchronized_standby_slots = 'sb1'\n");
$primary->reload;
$primary->poll_query_until('postgres', q{SELECT failover_standbys = 'sb1' FROM zero_stream.status()})
  or die 'synchronized_standby_slots was not restored';

# ---------------------------------------------------------------------------
# The standby
# ---------------------------------------------------------------------------
# On 19 a transaction left open across the standby's backup holds the
# primary slot's restart_lsn in a WAL segment the standby never gets, so slot
# synchronization must skip the first copy until it commits (below).
my $held;
if ($primary->pg_version->major >= 19)
{
	$held = zs_session($primary);
	zs_run_in($held, 'BEGIN; INSERT INTO nudge DEFAULT VALUES;');
	psql($primary, 'SELECT pg_switch_wal()');
}
my $standby = sp_new_standby($primary, 'standby');
my $nudge = sub { psql($primary, 'INSERT INTO nudge DEFAULT VALUES'); };
ok($standby->poll_query_until('postgres', q{SELECT state = 'standby' FROM zero_stream.status()}),
	'on the standby the decoder is in state standby');
SKIP:
{
	# 19 records why slot synchronization left a copy temporary: here the
	# held transaction keeps the primary's slot needing WAL the standby lacks
	skip 'slotsync_skip_reason is new in PostgreSQL 19', 2 unless $held;
	ok($standby->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM pg_replication_slots
 WHERE slot_name = '$slot' AND temporary AND slotsync_skip_reason = 'wal_or_rows_removed'}),
		'the first copy on the standby is temporary: slot synchronization skipped it')
	  or diag($standby->safe_psql('postgres', 'SELECT * FROM pg_replication_slots'));
	like(psql($standby, 'SELECT failover_warning || \' | \' || failover_hint FROM zero_stream.status()'),
		qr/no synchronized copy of replication slot "\Q$slot\E" \(slot synchronization skipped it: the primary's slot still needs WAL or catalog rows older than this standby keeps.*\| .*pg_log_standby_snapshot\(\) on the primary/,
		'status() on the standby says why the copy is not kept yet, and how to hasten it');
	zs_run_in($held, 'COMMIT;');
	zs_close_session($held);
}
ok(sp_wait_synced($standby, slot => $slot, nudge => $nudge), "the standby holds a synchronized copy of $slot");
ok($standby->poll_query_until('postgres', 'SELECT failover_synced AND failover_warning IS NULL FROM zero_stream.status()'),
	'status() on the standby: failover_synced, no warning');
$nudge->();
zs_wait_catchup($primary);
ok($primary->poll_query_until('postgres',
		q{SELECT failover_synced AND failover_warning IS NULL AND failover_standbys = 'sb1' FROM zero_stream.status()}),
	'status() on the primary: failover_synced once sb1 has flushed, no warning');
$primary->wait_for_replay_catchup($standby);
ok($standby->poll_query_until('postgres',
		qq{SELECT replica_version = '$rv' AND last_watermark = '@{[ head($primary) ]}' FROM zero_stream.status()}),
	"the standby follows the replicated log: the primary's lineage and head");

# ---------------------------------------------------------------------------
# Writes of every kind, followed by a replica of the primary and a
# subscriber of the standby
# ---------------------------------------------------------------------------
my $dir = $primary->basedir;
my $file = "$dir/app.db";
my $clilog = "$dir/app.log";
my $cli = start_cli($primary, $file, $clilog);
ok(wait_file_at($file, head($primary), 'first sync', $clilog), 'zero-stream-replica restored and follows the primary');
my $ino = inode($file);

my $from = head($primary);
my $stail = start_tail($standby, $rv, $from);
my $scli_file = $standby->basedir . '/standby-app.db';
my $scli_log = $standby->basedir . '/standby-app.log';
my $scli = start_cli($standby, $scli_file, $scli_log);

psql($primary, q{
INSERT INTO t (v) SELECT 'live ' || g FROM generate_series(1, 300) g;
UPDATE t SET v = v || ' updated' WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
TRUNCATE gone;
INSERT INTO gone VALUES (1, 'after truncate');
ALTER TABLE t ADD COLUMN note text;
UPDATE t SET note = 'n' || id WHERE id % 5 = 0;
CREATE TABLE fresh (id int PRIMARY KEY, v text);
INSERT INTO fresh SELECT g, 'f' || g FROM generate_series(1, 50) g;
});
psql($primary, q{ALTER TABLE t ADD COLUMN r int8 DEFAULT (random() * 1e15)::int8});
backfills_done($primary);
psql($primary, q{INSERT INTO t (v, note) VALUES ('after the backfill', 'last')});
zs_wait_catchup($primary);
is(psql($primary, qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' = 'backfill-completed'}), '1',
	'the backfill completed on the primary');
zs_replica_equals($primary, $file, 'replica of the primary after writes of every kind');
is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(r % 1000) || ':' || count(note) FROM t}),
	psql($primary, q{SELECT count(*) || ':' || sum(r % 1000) || ':' || count(note) FROM t}),
	'its backfilled column and added column equal PostgreSQL');
is(zs_sqlite($file, q{SELECT count(*) || ':' || group_concat(v) FROM gone}), '1:after truncate',
	'the truncated table');
is(zs_sqlite($file, q{SELECT count(*) FROM fresh}), '50', 'the table created in the publication');

my $head1 = head($primary);
ok(wait_tail_commit($stail, $head1, 'standby subscriber'), "the standby's subscriber reached the primary's head");
my $got = tail_commits(tail_output($stail), 'standby subscriber');
my $want = log_commits($primary, $from);
cmp_ok(scalar @$want, '>', 3, scalar(@$want) . ' transactions written while the standby was followed');
is_deeply($got, $want, "the standby's subscriber got the primary's transactions, each once, in order");
ok(wait_file_at($scli_file, $head1, 'replica of the standby', $scli_log), 'a zero-stream-replica of the standby reached the head');
is(zs_sqlite($scli_file, q{SELECT count(*) || ':' || sum(length(v)) || ':' || sum(r % 1000) FROM t}),
	psql($primary, q{SELECT count(*) || ':' || sum(length(v)) || ':' || sum(r % 1000) FROM t}),
	"the standby's replica equals the primary");
$stail->{h}->kill_kill;
$scli->signal('INT');
$scli->finish;

# ---------------------------------------------------------------------------
# Promotion
# ---------------------------------------------------------------------------
$cli->signal('INT');
$cli->finish;
my $sv_before = state_version($file);
is($sv_before, $head1, 'the replica stopped at the head');
$primary->wait_for_replay_catchup($standby);
ok(sp_wait_synced($standby, slot => $slot), 'the standby\'s slot copy is synchronized before the promotion');
my $old_rows = log_rows($primary);
my $timeline = psql($primary, 'SELECT timeline_id FROM pg_control_checkpoint()');
is(psql($standby, 'SELECT timeline || \' \' || (promoted_at IS NULL)::int || \' \' || (promoted_from_timeline IS NULL)::int FROM zero_stream.status()'),
	"$timeline 1 1", 'status() on the standby: the primary\'s timeline, no promotion');
$primary->stop;
my $promoting = psql($standby, 'SELECT now()');
sp_promote($standby);
my $new = $standby;
is(psql($new, 'SELECT replica_version FROM zero_stream.status()'), $rv, 'promoted: streaming, the same replicaVersion');
is(psql($new, qq{SELECT timeline || ' ' || promoted_from_timeline || ' ' || (promoted_at >= '$promoting' AND promoted_at <= now())::int
	FROM zero_stream.status()}), ($timeline + 1) . " $timeline 1",
	'status() says when the server was promoted, and from which timeline to which');
my $metrics = psql($new, 'SELECT zero_stream.metrics()');
like($metrics, qr/^zero_stream_timeline ${\($timeline + 1)}$/m, 'metrics: the new timeline');
like($metrics, qr/^zero_stream_last_promotion_timestamp_seconds \d+(\.\d+)?$/m, 'metrics: the promotion\'s time');
ok($new->log_contains(qr/this server was promoted from timeline $timeline to timeline ${\($timeline + 1)}/),
	'the log says the promotion, from which timeline to which');
ok($new->log_contains(qr/was synchronized from the old primary: the change log's lineage goes on/),
	'the log says the synchronized slot carries the lineage on');
is(psql($new, 'SELECT last_reset IS NULL FROM zero_stream.status()'), 't', 'no reset');

# synchronized_standby_slots = 'sb1' came with the configuration; no sb1 here yet
ok($new->poll_query_until('postgres',
		q{SELECT failover_warning LIKE '%replication slot "sb1" named in synchronized_standby_slots does not exist%' FROM zero_stream.status()}),
	'the new primary warns that sb1 does not exist');
my $standby2 = sp_new_standby($new, 'standby2');
ok(sp_wait_synced($standby2, slot => $slot, nudge => sub { psql($new, 'INSERT INTO nudge DEFAULT VALUES') }),
	'a standby rebuilt from the new primary holds a synchronized copy of the slot');

psql($new, q{INSERT INTO t (v) SELECT 'on the new primary ' || g FROM generate_series(1, 100) g});
psql($new, q{UPDATE t SET v = 'changed on the new primary' WHERE id = 5});
psql($new, q{DELETE FROM t WHERE id = 6});
zs_wait_catchup($new);

my $new_rows = log_rows($new);
my $prefix = [ @$new_rows[ 0 .. $#$old_rows ] ];
is_deeply($prefix, $old_rows, 'the new change log begins with the old one, row for row (' . scalar(@$old_rows) . ' rows)');
my $old_head = (split / /, $old_rows->[-1])[0];
is(psql($new, qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark COLLATE "C" <= '$old_head'}), scalar(@$old_rows),
	'nothing was added before the old head');
is(psql($new, qq{
SELECT count(*) || ':' || count(DISTINCT change->'new'->>'id') FROM $CDC."changeLog"
 WHERE change->>'tag' = 'insert' AND change->'new'->>'v' LIKE 'on the new primary %'}), '100:100',
	'the new primary\'s inserts follow, each once');
is(psql($new, qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->>'tag' IN ('update', 'delete')
                 AND watermark COLLATE "C" > '$old_head'}), '2', 'with its update and its delete');
zs_check_log_integrity($new, 'after the promotion');

# the replica of the old primary follows the new one from its file
$cli = start_cli($new, $file, $clilog);
zs_replica_equals($new, $file, 'replica following the new primary');
is(inode($file), $ino, 'the replica file was not replaced');
my $log = slurp_file($clilog);
is(() = $log =~ /restored replicaVersion/g, 1, 'it restored once, before the promotion only');
unlike($log, qr/replacing/, 'it never replaced its file');
like($log, qr/following \Q$file\E from \Q$sv_before\E \(replicaVersion $rv\)\n(?:(?!restored).)*\z/s,
	'after the promotion it followed on from its stateVersion');

# ---------------------------------------------------------------------------
# The gate: with the standby down, nothing passes it
# ---------------------------------------------------------------------------
my $gate_from = head($new);
my $gtail = start_tail($new, $rv, $gate_from);
$standby2->stop;
psql($new, q{INSERT INTO t (v) VALUES ('while the standby is down')});
my $gate_lsn = psql($new, 'SELECT pg_current_wal_lsn()');
ok($new->poll_query_until('postgres',
		q{SELECT failover_warning LIKE '%replication slot "sb1" (synchronized_standby_slots) is not connected%' FROM zero_stream.status()}),
	'status() names the standby\'s slot that holds the stream back');
# nothing observable ends this: a moment for the write to pass the gate,
# which must not happen
usleep(3_000_000);
like(psql($new, 'SELECT failover_hint FROM zero_stream.status()'), qr/start that standby/, 'with a hint');
unlike(tail_output($gtail), qr/while the standby is down/, 'the write reaches no subscriber while the standby is down');
is(psql($new, qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'while the standby is down'}), '0',
	'nor the change log');
is(psql($new, qq{SELECT confirmed_flush_lsn < '$gate_lsn' FROM pg_replication_slots WHERE slot_name = '$slot'}), 't',
	'the slot is not confirmed past it');
isnt(state_version($file), '', 'the replica is there') and
  is(zs_sqlite($file, q{SELECT count(*) FROM t WHERE v = 'while the standby is down'}), '0', 'nor did the replica get it');

$standby2->start;
ok($new->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'while the standby is down'}),
	'the standby back, the write is decoded');
my $gate_head = head($new);
ok(wait_tail_commit($gtail, $gate_head, 'gate subscriber'), 'and reaches the subscriber');
like(tail_output($gtail), qr/while the standby is down/, 'the write itself');
ok($new->poll_query_until('postgres',
		qq{SELECT confirmed_flush_lsn >= '$gate_lsn' FROM pg_replication_slots WHERE slot_name = '$slot'}),
	'and the slot is confirmed past it');
ok(wait_file_at($file, $gate_head, 'gate'), 'the replica got it');
ok($new->poll_query_until('postgres', 'SELECT failover_warning IS NULL AND failover_synced FROM zero_stream.status()'),
	'no warning once the standby is back');
is_deeply(tail_commits(tail_output($gtail), 'gate subscriber'), log_commits($new, $gate_from),
	'the subscriber got every transaction since, once');

$gtail->{h}->kill_kill;
$cli->signal('INT');
$cli->finish;
$standby2->stop;
$new->stop;
done_testing();
