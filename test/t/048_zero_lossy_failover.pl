# A Zero app through a lossy failover (PostgreSQL 17 and later), with the
# operator's documented step (README, "Failover for Zero apps"): restart
# the view-syncers after the promotion.
#  - the app: a stock zero-cache 1.9.0 view-syncer (ZeroCacheInterop.pm's)
#    on the primary's zero_stream server, with ZERO_MUTATE_URL pointing at
#    an app server (test/interop/push_server.mjs: @rocicorp/zero's
#    PushProcessor and ZQLDatabase over a postgres.js pool, discarded after
#    a connection error; it reads the current primary's connection string
#    from a file for every request, which the test rewrites at the
#    failover, as a failover manager would), and one long-running Zero
#    client (test/interop/zero_mutator.mjs: @rocicorp/zero's client, the
#    same custom mutator item.add, a live query of item) whose events the
#    test reads line by line;
#  - a first mutation is confirmed while the standby streams; then the
#    standby stops receiving WAL (primary_conninfo = ''), and a second
#    mutation commits on the primary (its row, its item_log row, its
#    client's lastMutationID) but is never confirmed: the primary's decoder
#    decodes no WAL the standby has not flushed (synchronized_standby_slots
#    names the standby's slot), so neither its change log nor the
#    view-syncer's replica gets past what the standby has;
#  - kill -9 of the primary; the standby, which holds a synchronized copy
#    of the decoder's slot, is promoted (status() and the metrics say so)
#    and lacks the second mutation; the app server is pointed at it, and
#    the view-syncer is restarted on it (the documented step) with its
#    replica kept (no second restore);
#  - without being restarted, the client reconnects and resends the
#    mutation, which the promoted server applies: it is confirmed exactly
#    once (one item_log row, lastMutationID at its id), the client never
#    resets (no error state, no onClientStateNotFound, no onUpdateNeeded,
#    the same clientID and clientGroupID on every connection), and a third
#    mutation after it is confirmed too.
# On 15 and 16 (no failover slots) the test is skipped; skipped, loudly,
# when the npm registry cannot be reached. Logs: test/tmp_check/log/
# 048_view_syncer_A.log, 048_push_server.log, 048_zero_client.log (the
# client's own log) and 048_zero_client_events.log (its events).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use StandbyPair;
use ZeroCacheInterop;
use ZeroStreamTest;

my $t_start = time;

if (!sp_failover_supported())
{
	plan skip_all => 'failover slots need PostgreSQL 17 or later (this is PostgreSQL '
	  . sp_pg_major() . '): no lossy Zero failover test';
}

my $zc = zc_install('048', 'lossy-failover');
my $INTEROP = "$FindBin::RealBin/../interop";
my $logdir = $PostgreSQL::Test::Utils::log_path;

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
sub psql { my ($node, $sql) = @_; return $node->safe_psql('postgres', $sql); }

sub head { my ($node) = @_; return psql($node, 'SELECT last_watermark FROM zero_stream.status()'); }

sub db_url { my ($node) = @_; return 'postgresql://' . getpwuid($<) . '@127.0.0.1:' . $node->port . '/postgres'; }

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or return '';
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t;
}

# until $code returns true (up to $secs); its last value
sub wait_until
{
	my ($code, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		my $v = $code->();
		return $v if $v;
		usleep(200_000);    # poll: until $code returns true
	}
	return $code->();
}

# the app server: the primary's connection string in a file it reads for
# every request
my $db_file = PostgreSQL::Test::Utils::tempdir() . '/current_primary';

sub point_app_server_at
{
	my ($node) = @_;
	open my $fh, '>', "$db_file.new" or die "$db_file.new: $!";
	print $fh db_url($node), "\n";
	close $fh;
	rename "$db_file.new", $db_file or die "rename $db_file: $!";
}

my $push_port = PostgreSQL::Test::Cluster::get_free_port();
my $push_log = "$logdir/048_push_server.log";
my $push_h;

sub push_log { return slurp($push_log); }

# the view-syncer on $node: its upstream and CVR database, its change
# stream from $node's zero_stream server, its pushes to the app server
sub start_vs
{
	my ($vs, $node) = @_;
	zc_start($vs, $node,
		ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$node->{zs_server_port}",
		ZERO_MUTATE_URL => "http://127.0.0.1:$push_port/mutate");
}

# the Zero client: its events (stdout) are read with pump_nb and copied
# to 048_zero_client_events.log as they come
my ($c_in, $c_out, $c_copied) = ('', '', 0);
my $client_h;
my $events_log = "$logdir/048_zero_client_events.log";

sub events
{
	$client_h->pump_nb if $client_h && $client_h->pumpable;
	if (length($c_out) > $c_copied)
	{
		open my $fh, '>>', $events_log or die "$events_log: $!";
		print $fh substr($c_out, $c_copied);
		close $fh;
		$c_copied = length($c_out);
	}
	return $c_out;
}

sub client_send
{
	my ($line) = @_;
	$c_in .= "$line\n";
	$client_h->pump_nb while length($c_in) && $client_h->pumpable;
}

# until the client's events match $re (up to $secs, 120): the first group
# or 1; '' if not
sub wait_event
{
	my ($re, $secs) = @_;
	my $got = wait_until(sub { my @m = events() =~ $re; @m ? (defined $m[0] ? $m[0] : 1) : '' }, $secs // 120);
	return $got;
}

sub events_tail
{
	my @lines = split /\n/, events();
	return join("\n", @lines > 40 ? @lines[ -40 .. -1 ] : @lines);
}

# ---------------------------------------------------------------------------
# 1. primary, standby, the app server, view-syncer A, the Zero client
# ---------------------------------------------------------------------------
my $primary = sp_new_primary('primary',
	extra_conf => q{
listen_addresses = '127.0.0.1'
max_connections = 60
zero_stream.lag_report_interval = 1s
},
	before_extension => q{
CREATE TABLE item (id text PRIMARY KEY, title text NOT NULL);
-- written by the server side of the mutator alone: one row per application
-- of a mutation, whatever the item's key says
CREATE TABLE item_log (n bigserial PRIMARY KEY, item_id text NOT NULL, client_id text NOT NULL,
                       mutation_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE nudge (id bigserial PRIMARY KEY, at timestamptz DEFAULT now());
});
my $slot = sp_slot_name($primary);
my $rv = psql($primary, 'SELECT replica_version FROM zero_stream.status()');
# the client's live query of item may read it (zero-deploy-permissions'
# ANYONE_CAN, compiled)
psql($primary, q{UPDATE zero.permissions SET permissions = '{"tables":{"item":{"row":{"select":[["allow",{"type":"and","conditions":[]}]]}}}}'});

my $standby = sp_new_standby($primary, 'standby');
ok(sp_wait_synced($standby, slot => $slot, nudge => sub { psql($primary, 'INSERT INTO nudge DEFAULT VALUES') }),
	"the standby holds a synchronized copy of the decoder's slot $slot");

point_app_server_at($primary);
{
	local %ENV = %ENV;
	$ENV{ZS_INTEROP_DIR} = $zc->{dir};
	$push_h = IPC::Run::start([ $zc->{node}, "$INTEROP/push_server.mjs", $push_port, $db_file ],
		'<', '/dev/null', '>>', $push_log, '2>>', $push_log);
}
ok(wait_until(sub { push_log() =~ /^listening $push_port$/m }, 60), "the app server listens on port $push_port")
  or diag(push_log());

my $A = zc_view_syncer($zc, name => 'A');
start_vs($A, $primary);
ok(zc_wait_log($A, qr/Local replica at version \Q$rv\E and watermark \S+ is compatible/),
	"view-syncer A restores a replica of the primary's lineage (replicaVersion $rv)")
  or diag("view-syncer A log tail:\n" . zc_log_tail($A));
ok(zc_wait_log($A, qr/zero-cache ready/), 'A is ready for clients') or diag(zc_log_tail($A));

{
	local %ENV = %ENV;
	$ENV{ZS_INTEROP_DIR} = $zc->{dir};
	# Zero's default (1 minute) would settle the pending mutation's
	# .server promise with an error if A's restart took longer on a busy
	# machine; the mutation would still be resent, but not reported
	$ENV{ZS_ZERO_DISCONNECT_TIMEOUT_MS} = '600000';
	$client_h = IPC::Run::start([ $zc->{node}, "$INTEROP/zero_mutator.mjs", "http://127.0.0.1:$A->{port}" ],
		'<', \$c_in, '>', \$c_out, '2>>', "$logdir/048_zero_client.log");
}
my $connected_re = qr/^state connected client=(\S+) group=(\S+)$/m;
ok(wait_event($connected_re), 'the Zero client connects to A') or diag(events_tail());
my ($client_id, $group_id) = events() =~ $connected_re;
$client_id //= '?';
$group_id //= '?';
diag("the client: clientID $client_id, clientGroupID $group_id");

# a first mutation, while the standby streams
client_send('add before-1 first');
my $mid1 = wait_event(qr/^sent before-1 mid=(\d+)$/m, 60);
ok(wait_event(qr/^confirmed before-1$/m), "the first mutation (id $mid1) is confirmed")
  or diag(events_tail() . "\napp server:\n" . push_log());
ok(wait_event(qr/^rows complete .*\bbefore-1\b/m, 60), 'the client\'s live query of item has its row')
  or diag(events_tail());
is(psql($primary, qq{SELECT "lastMutationID" FROM zero_0.clients WHERE "clientID" = '$client_id'}), $mid1,
	"zero_0.clients: the client's lastMutationID is $mid1");

# ---------------------------------------------------------------------------
# 2. the standby stops receiving WAL; a second mutation commits on the
#    primary alone and is not confirmed
# ---------------------------------------------------------------------------
# the client's CVR as the view-syncer last wrote it, rows included (they
# are flushed after the rest), must be on the standby: the promoted
# server's CVR is what the client reconnects to
ok($primary->poll_query_until('postgres', q{
SELECT count(*) > 0 AND bool_and(i.version = r.version)
  FROM "zero_0/cvr".instances i JOIN "zero_0/cvr"."rowsVersion" r USING ("clientGroupID")}),
	'the client group\'s CVR is flushed (rowsVersion = version)')
  or diag(psql($primary, q{SELECT i.version || ' ' || coalesce(r.version, '-') FROM "zero_0/cvr".instances i
	LEFT JOIN "zero_0/cvr"."rowsVersion" r USING ("clientGroupID")}));
$primary->wait_for_replay_catchup($standby);
ok(sp_synced_copy($standby, $slot), 'the standby\'s copy of the slot is synchronized before the cut');
my $timeline = psql($primary, 'SELECT timeline FROM zero_stream.status()');

$standby->append_conf('postgresql.conf', "primary_conninfo = ''\n");
$standby->reload;
ok($standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver'),
	'the standby\'s walreceiver stopped (primary_conninfo is empty)');
ok($primary->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_replication WHERE application_name = 'standby'}),
	'the primary streams to no standby');
# everything before the cut reached the standby, so A gets all of it
my $head_cut = head($primary);
zc_check_at($A, $head_cut, "A's replica reaches the primary's head before the second mutation ($head_cut)");
my $sv_cut = zc_state_version($A);

client_send('add lost-1 second');
my $mid2 = wait_event(qr/^sent lost-1 mid=(\d+)$/m, 60);
is($mid2, $mid1 + 1, "the second mutation has id $mid2");
ok(wait_until(sub { push_log() =~ /^result \Q$client_id\E $mid2 ok$/m }, 120),
	'the app server applied it on the primary') or diag(push_log());
is(psql($primary, q{SELECT (SELECT count(*) FROM item WHERE id = 'lost-1') || ' ' || (SELECT count(*) FROM item_log WHERE item_id = 'lost-1')}),
	'1 1', 'the primary has its row and its one item_log row');
is(psql($primary, qq{SELECT "lastMutationID" FROM zero_0.clients WHERE "clientID" = '$client_id'}), $mid2,
	"the primary's zero_0.clients: lastMutationID $mid2");
ok($primary->poll_query_until('postgres', q{SELECT coalesce(failover_warning ~ '\msb1\M', false) FROM zero_stream.status()}),
	'status().failover_warning: the decoder waits for the standby\'s slot sb1')
  or diag(psql($primary, 'SELECT failover_warning FROM zero_stream.status()'));
# The decoder decodes only WAL the standbys in synchronized_standby_slots
# have flushed (src/decoder/round.c), so the transaction is neither stored
# nor sent. What is held back is an absence: nothing observable says it
# will not come. Give it the time it takes when nothing holds it back (the
# first mutation was confirmed well within a second of its commit).
sleep 3;
is(psql($standby, q{SELECT count(*) FROM item WHERE id = 'lost-1'}), '0', 'the standby never received it');
is(head($primary), $head_cut, "the primary's change log stays at $head_cut: the decoder did not decode past the standby");
is(zc_state_version($A), $sv_cut, "A's replica stays at $sv_cut: nothing the standby lacks reached the view-syncer");
unlike(events(), qr/^(?:confirmed|rejected) lost-1/m, 'the client has no confirmation of the second mutation');

# ---------------------------------------------------------------------------
# 3. kill -9 of the primary; the standby is promoted; the app server and
#    the view-syncer are pointed at it (the view-syncer restarted); the
#    client is not touched
# ---------------------------------------------------------------------------
$primary->kill9;
# the promoted server has no standby: it waits for none
$standby->append_conf('postgresql.conf', "synchronized_standby_slots = ''\n");
$standby->reload;
sp_promote($standby);
my $new = $standby;
is(psql($new, 'SELECT replica_version FROM zero_stream.status()'), $rv, 'promoted: the same replicaVersion');
is(psql($new, q{SELECT timeline || ' ' || promoted_from_timeline || ' ' || CASE WHEN promoted_at IS NULL THEN 'null' ELSE 'set' END
	FROM zero_stream.status()}),
	($timeline + 1) . " $timeline set", "status(): promoted at a time, from timeline $timeline to " . ($timeline + 1));
like(psql($new, 'SELECT zero_stream.metrics()'), qr/^zero_stream_last_promotion_timestamp_seconds \d+(\.\d+)?$/m,
	'metrics: zero_stream_last_promotion_timestamp_seconds');
is(psql($new, q{SELECT (SELECT count(*) FROM item WHERE id = 'lost-1') || ' ' || (SELECT count(*) FROM item_log WHERE item_id = 'lost-1')
	|| ' ' || (SELECT "lastMutationID" FROM zero_0.clients WHERE "clientID" = '} . $client_id . q{')}),
	"0 0 $mid1", 'the failover lost the second mutation: no row, no item_log row, lastMutationID ' . $mid1);

point_app_server_at($new);
zc_stop($A);
start_vs($A, $new);
ok(zc_wait_log($A, qr/Local replica at version \Q$rv\E and watermark \S+ is compatible/),
	'A, restarted on the promoted server, takes its replica as it is')
  or diag("view-syncer A log tail:\n" . zc_log_tail($A));
ok(zc_wait_log($A, qr/zero-cache ready/), 'A is ready on the promoted server') or diag(zc_log_tail($A));

# ---------------------------------------------------------------------------
# 4. the client resends, the mutation is applied once and confirmed
# ---------------------------------------------------------------------------
ok(wait_event(qr/^confirmed lost-1$/m, 180), 'the second mutation is confirmed after the restart')
  or diag(events_tail() . "\napp server:\n" . push_log() . "\nview-syncer A:\n" . zc_log_tail($A));
is(scalar(() = events() =~ /^confirmed lost-1$/mg), 1, 'the client saw its confirmation once');
is(psql($new, q{SELECT (SELECT count(*) FROM item WHERE id = 'lost-1') || ' ' || (SELECT count(*) FROM item_log WHERE item_id = 'lost-1')}),
	'1 1', 'the promoted server has its row and one item_log row (applied once)');
is(psql($new, qq{SELECT "lastMutationID" FROM zero_0.clients WHERE "clientID" = '$client_id'}), $mid2,
	"the promoted server's zero_0.clients: lastMutationID $mid2");
diag('the app server applied mutation ' . $mid2 . ' '
	  . scalar(() = push_log() =~ /^result \Q$client_id\E $mid2 ok$/mg)
	  . ' times (once on each primary)');

client_send('add after-1 third');
my $mid3 = wait_event(qr/^sent after-1 mid=(\d+)$/m, 60);
ok(wait_event(qr/^confirmed after-1$/m), "a third mutation (id $mid3) is confirmed") or diag(events_tail());
ok(wait_event(qr/^rows complete after-1,before-1,lost-1$/m, 60), 'the client\'s live query has the three rows')
  or diag(events_tail());
is(psql($new, q{SELECT string_agg(item_id || ':' || mutation_id, ',' ORDER BY n) FROM item_log}),
	"before-1:$mid1,lost-1:$mid2,after-1:$mid3", 'item_log on the promoted server: each mutation applied once, in order');

my $ev = events();
my @ids = $ev =~ /^state \S+.* client=(\S+ group=\S+)$/mg;
my %distinct = map { $_ => 1 } @ids;
is(join(',', sort keys %distinct), "$client_id group=$group_id", 'the client kept its clientID and clientGroupID');
cmp_ok(scalar(() = $ev =~ /^state connected /mg), '>=', 2, 'the client reconnected (to the restarted view-syncer)');
is(join("\n", $ev =~ /^((?:state error|client-state-not-found|update-needed|rejected|fatal)\b.*)$/mg), '',
	'the client never reset: no error state, no onClientStateNotFound, no onUpdateNeeded, no rejection');
ok($client_h->pumpable, 'the client process is still running');
is(zc_restores(zc_log_text($A)), 1, 'A restored once, before the failover only');
unlike(zc_log_since_start($A), qr/zero-stream-replica: restored|WrongReplicaVersion/,
	'A\'s log since its restart on the promoted server: no restore, no WrongReplicaVersion');
ok(zc_running($A), 'A keeps running') or diag(zc_log_tail($A));

# ---------------------------------------------------------------------------
# the end
# ---------------------------------------------------------------------------
client_send('quit');
wait_until(sub { events(); !$client_h->pumpable }, 30);
$client_h->kill_kill if $client_h->pumpable;
eval { $client_h->finish };
zc_stop($A);
$push_h->signal('TERM');
wait_until(sub { !$push_h->pumpable }, 30);
$push_h->kill_kill if $push_h->pumpable;
eval { $push_h->finish };
$new->stop;
diag(sprintf('048 took %.0f s (the install %s s of it)', time - $t_start, $zc->{secs}));
done_testing();
