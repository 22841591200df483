# Failover with the real thing (PostgreSQL 17 and later): stock zero-cache
# 1.9.0 view-syncers (ZeroCacheInterop.pm's, run as TAP 023 runs them:
# ZERO_CHANGE_STREAMER_URI, zero-stream-replica as
# ZERO_LITESTREAM_EXECUTABLE, the replica file read with zero's SQLite) on a
# primary and standbys made by StandbyPair.pm.
#  - view-syncer A follows the primary's zero_stream server: it restores,
#    then live writes reach its replica; a last burst of writes is not
#    waited for before the primary stops (immediate), as in a failover;
#  - the standby, which holds a synchronized copy of the decoder's slot, is
#    promoted and gets a standby of its own; A, restarted on the new
#    primary's server, goes on from its replica with no restore (the same
#    file, the same replicaVersion, no second restore in its log), its
#    stateVersion was no later than the new primary's head (nothing reached
#    it that the standby lacked), reaches the new primary's last_watermark,
#    and its rows equal PostgreSQL's after further writes there;
#  - view-syncer B follows the new primary's standby (its zero_stream
#    server serves read-only from the replicated change log and its own
#    backup replica), restores from it, and a Zero client's query
#    (test/interop/zero_client.mjs, @rocicorp/zero's client; the
#    permissions that let it read were written on the first primary)
#    served by B returns the current rows; a write on the primary reaches
#    B and the client.
# B's CVR and upstream (mutations) are the primary's, as a deployment's are:
# the standby is read-only. On 15 and 16 (no failover slots) the test is
# skipped; skipped, loudly, when the npm registry cannot be reached. The
# view-syncers' logs are test/tmp_check/log/040_view_syncer_{A,B}.log.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use StandbyPair;
use ZeroCacheInterop;
use ZeroStreamTest;

my $t_start = time;

if (!sp_failover_supported())
{
	plan skip_all => 'failover slots need PostgreSQL 17 or later (this is PostgreSQL '
	  . sp_pg_major() . '): no zero-cache failover test';
}

# ---------------------------------------------------------------------------
# zero-cache and Node 22 from the npm registry (cached), as in 023
# ---------------------------------------------------------------------------
my $zc = zc_install('040', 'failover');

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
sub psql { my ($node, $sql) = @_; return $node->safe_psql('postgres', $sql); }

sub head { my ($node) = @_; return psql($node, 'SELECT last_watermark FROM zero_stream.status()'); }

sub inode { my @s = stat $_[0]; return @s ? "$s[0]:$s[1]" : 'none'; }

# start $vs with $upstream (a node: its upstream and CVR database) and the
# change stream of $server's zero_stream server
sub start_vs
{
	my ($vs, $upstream, $server) = @_;
	zc_start($vs, $upstream, ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$server->{zs_server_port}");
}

# until $vs's stateVersion is $want (up to $secs)
sub check_at
{
	my ($vs, $want, $label, $secs) = @_;
	return zc_check_at($vs, $want, "$label: view-syncer $vs->{name}'s replica reaches last_watermark $want", $secs);
}

sub check_rows
{
	my ($vs, $node, $label, $table, $cols) = @_;
	return zc_check_rows($vs, $node, $table, $cols,
		"$label: $table in view-syncer $vs->{name}'s replica equals PostgreSQL");
}

# worker failures in a view-syncer's log text
sub failures
{
	my ($text) = @_;
	return join("\n",
		$text =~ /^(.*(?:exited with code \((?!0\))|Error while validating|no such table|WrongReplicaVersion).*)$/mg);
}

my @ISSUE = qw(id title n);
my @KV = qw(a b v);

# ---------------------------------------------------------------------------
# 1. primary and standby; view-syncer A on the primary
# ---------------------------------------------------------------------------
my $conf = q{
listen_addresses = '127.0.0.1'
max_connections = 60
# the view-syncers also get lag reports, as from zero-cache's own streamer
zero_stream.lag_report_interval = 1s
};
my $primary = sp_new_primary('primary',
	extra_conf => $conf,
	before_extension => q{
CREATE TABLE issue (id text PRIMARY KEY, title text NOT NULL, n int);
CREATE TABLE kv (a int, b text, v text, PRIMARY KEY (a, b));
CREATE TABLE nudge (id bigserial PRIMARY KEY, at timestamptz DEFAULT now());
INSERT INTO issue SELECT 'i' || g, 'issue ' || g, g FROM generate_series(1, 300) g;
INSERT INTO kv SELECT g % 7, 'k' || g, 'v' || g FROM generate_series(1, 100) g;
});
my $slot = sp_slot_name($primary);
my $rv = psql($primary, 'SELECT replica_version FROM zero_stream.status()');
$primary->poll_query_until('postgres', q{SELECT backup_state = 'following' FROM zero_stream.status()})
  or diag('the backup replica of the primary is not following: '
	  . psql($primary, 'SELECT backup_state FROM zero_stream.status()'));

my $standby = sp_new_standby($primary, 'standby');
ok(sp_wait_synced($standby, slot => $slot, nudge => sub { psql($primary, 'INSERT INTO nudge DEFAULT VALUES') }),
	"the standby holds a synchronized copy of the decoder's slot $slot");

my $A = zc_view_syncer($zc, name => 'A');
start_vs($A, $primary, $primary);
ok(zc_wait_log($A, qr/Local replica at version \Q$rv\E and watermark \S+ is compatible/),
	"A restores a replica of the primary's lineage (replicaVersion $rv)")
  or diag("view-syncer A log tail:\n" . zc_log_tail($A));
zs_wait_catchup($primary);
check_at($A, head($primary), 'restore');

psql($primary, q{
INSERT INTO issue VALUES ('new1', 'live insert', 1001), ('new2', 'second', NULL);
UPDATE issue SET title = 'updated' WHERE id IN ('i1', 'i2');
UPDATE issue SET id = 'i3-renamed' WHERE id = 'i3';
DELETE FROM issue WHERE id = 'i4';
INSERT INTO kv VALUES (100, 'x', 'composite');
UPDATE kv SET v = 'changed' WHERE a = 1;
DELETE FROM kv WHERE a = 3;
});
# the Zero client of part 3 may read issue (zero-deploy-permissions'
# ANYONE_CAN, compiled): the rule reaches the standbys with the rest
psql($primary, q{UPDATE zero.permissions SET permissions = '{"tables":{"issue":{"row":{"select":[["allow",{"type":"and","conditions":[]}]]}}}}'});
psql($primary, q{BEGIN; UPDATE issue SET n = n + 1 WHERE n < 50; UPDATE kv SET b = 'rekeyed' WHERE a = 2 AND b = 'k2'; COMMIT;});
zs_wait_catchup($primary);
check_at($A, head($primary), 'live writes on the primary');
check_rows($A, $primary, 'live writes on the primary', 'issue', \@ISSUE);
check_rows($A, $primary, 'live writes on the primary', 'kv', \@KV);
like(zc_query($A, 'SELECT permissions FROM "zero.permissions"'), qr/"issue"/, 'the permissions reached A\'s replica');
my $ino = inode($A->{replica});

# ---------------------------------------------------------------------------
# 2. failover: the primary stops right after a burst of writes; the
#    standby is promoted; A goes on from its replica on the new primary
# ---------------------------------------------------------------------------
ok(sp_synced_copy($standby, $slot), 'the standby\'s copy of the slot is synchronized before the failover');
for my $i (1 .. 5)
{
	psql($primary, "INSERT INTO issue SELECT 'burst$i-' || g, 'burst', g FROM generate_series(1, 20) g");
}
psql($primary, q{UPDATE kv SET v = 'burst' WHERE a = 5});
$primary->stop('immediate');
sp_promote($standby);
my $new = $standby;
is(psql($new, 'SELECT replica_version FROM zero_stream.status()'), $rv,
	'promoted: the new primary streams the same replicaVersion');
is(psql($new, 'SELECT last_reset IS NULL FROM zero_stream.status()'), 't', 'with no reset');

# the promoted standby waits for sb1 (synchronized_standby_slots came with
# its configuration): give it a standby of its own
my $standby2 = sp_new_standby($new, 'standby2');
ok($standby2->poll_query_until('postgres', q{SELECT state = 'standby' FROM zero_stream.status()}),
	'the new primary\'s standby: the decoder is in state standby');
ok($new->poll_query_until('postgres', 'SELECT failover_warning IS NULL FROM zero_stream.status()'),
	'the new primary waits for no missing standby')
  or diag(psql($new, 'SELECT failover_warning FROM zero_stream.status()'));

my $sv_before = zc_state_version($A);
zc_stop($A);
my $new_head = head($new);
diag('of the burst\'s 100 rows, ' . psql($new, q{SELECT count(*) FROM issue WHERE title = 'burst'})
	  . ' reached the standby before the primary stopped');
ok($sv_before =~ /^[0-9a-z]+$/ && ($sv_before cmp $new_head) <= 0,
	"A's stateVersion ($sv_before) is not past the new primary's head ($new_head): it got nothing the standby lacked");
start_vs($A, $new, $new);
ok(zc_wait_log($A, qr/Local replica at version \Q$rv\E and watermark \Q$sv_before\E is compatible/),
	"the new primary's server takes A's replica as it is (replicaVersion $rv, watermark $sv_before)")
  or diag("view-syncer A log tail:\n" . zc_log_tail($A));
ok(zc_wait_log($A, qr/zero-cache ready/), 'A is ready on the new primary') or diag(zc_log_tail($A));
check_at($A, $new_head, 'after the promotion');

psql($new, q{
INSERT INTO issue VALUES ('after1', 'on the new primary', 7);
UPDATE issue SET title = 'changed on the new primary' WHERE id = 'i5';
DELETE FROM issue WHERE id = 'i6';
INSERT INTO kv VALUES (200, 'new', 'primary');
DELETE FROM kv WHERE a = 0;
});
zs_wait_catchup($new);
check_at($A, head($new), 'writes on the new primary');
check_rows($A, $new, 'writes on the new primary', 'issue', \@ISSUE);
check_rows($A, $new, 'writes on the new primary', 'kv', \@KV);
is(inode($A->{replica}), $ino, 'A\'s replica file is the same file (not restored again)');
is(zc_query($A, 'SELECT replicaVersion FROM "_zero.replicationConfig"'), $rv, 'A\'s replica keeps replicaVersion ' . $rv);
is(zc_restores(zc_log_text($A)), 1, 'A restored once, before the failover only');
unlike(zc_log_since_start($A), qr/zero-stream-replica: restored|WrongReplicaVersion/,
	'A\'s log since its restart on the new primary: no restore, no WrongReplicaVersion');
ok(zc_running($A), 'A keeps running on the new primary') or diag(zc_log_tail($A));
is(failures(zc_log_since_start($A)), '', 'A logged no worker failure on the new primary');

# ---------------------------------------------------------------------------
# 3. view-syncer B on the new primary's standby, and a Zero client through B
# ---------------------------------------------------------------------------
$new->wait_for_replay_catchup($standby2);
my $head2 = head($new);
ok($standby2->poll_query_until('postgres',
		qq{SELECT replica_version = '$rv' AND last_watermark = '$head2' AND backup_state = 'following'
		     FROM zero_stream.status()}),
	'the new primary\'s standby follows its lineage and head, with its backup replica following')
  or diag(psql($standby2, 'SELECT state, replica_version, last_watermark, backup_state, backup_detail FROM zero_stream.status()'));

my $B = zc_view_syncer($zc, name => 'B');
start_vs($B, $new, $standby2);
ok(zc_wait_log($B, qr/Local replica at version \Q$rv\E and watermark \S+ is compatible/),
	"B restores from the standby's server a replica of the same lineage (replicaVersion $rv)")
  or diag("view-syncer B log tail:\n" . zc_log_tail($B));
check_at($B, $head2, 'B on the standby');
check_rows($B, $new, 'B on the standby', 'issue', \@ISSUE);
check_rows($B, $new, 'B on the standby', 'kv', \@KV);

# the client connects once B's syncer listens (else it backs off for seconds)
ok(zc_wait_log($B, qr/zero-cache ready/), 'B is ready for clients') or diag(zc_log_tail($B));
my @issue_cols = ('id:string', 'title:string', 'n:number');
is(zc_zero_query($B, 'issue', 'id', @issue_cols), zc_pg_rows($new, 'issue', \@ISSUE),
	'a Zero client\'s query served by B returns the current rows of issue');

psql($new, q{INSERT INTO issue VALUES ('after2', 'seen through the standby', 8); UPDATE issue SET n = 0 WHERE id = 'i7'});
zs_wait_catchup($new);
$new->wait_for_replay_catchup($standby2);
check_at($B, head($new), 'a write on the primary, through the standby');
check_at($A, head($new), 'the same write, on the primary');
is(zc_zero_query($B, 'issue', 'id', @issue_cols), zc_pg_rows($new, 'issue', \@ISSUE),
	'the Zero client through B sees the write');

ok(zc_running($B), 'B is still running') or diag(zc_log_tail($B));
is(failures(zc_log_text($B)), '', 'B logged no worker failure');
zc_stop($A);
zc_stop($B);
$standby2->stop;
$new->stop;
diag(sprintf('040 took %.0f s (the install %s s of it)', time - $t_start, $zc->{secs}));
done_testing();
