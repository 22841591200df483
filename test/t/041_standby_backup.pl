# A standby's own backup replica (PostgreSQL 17 and later):
#  - the file a base backup copied along with the data directory is not
#    trusted (SQLite wrote it while the backup read it): the standby's
#    replicator copies the primary's backup replica through SQL over
#    primary_conninfo, then follows the replicated change log, and equals
#    PostgreSQL as the primary writes;
#  - the primary holds its purge floor where the standby's replica is
#    (subscribers() shows "standby sb1"), also while the standby is down,
#    for subscriber_retention after its last report;
#  - a standby held down past that, whose replica the purge has passed,
#    copies the primary's again by itself, then follows;
#  - after a promotion the replica goes on as the new primary's backup
#    replica, and /snapshot-style reservations can be served at once.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;
use StandbyPair;

plan skip_all => 'a standby\'s backup replica is tested with failover slots (PostgreSQL 17 and later)'
  unless sp_failover_supported();

my $primary = sp_new_primary('primary', before_extension => q{
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 2000) g;
}, extra_conf => "zero_stream.subscriber_retention = '1h'\n");
my $standby = sp_new_standby($primary, 'standby');
my $file = $standby->data_dir . '/zero_stream/replica.db';

sub backup_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT backup_state || ' ' || coalesce(backup_watermark, '-') FROM zero_stream.status()});
}

# the standby's replica file against the primary's table t, once the
# standby's replica has the primary's head
sub standby_equals
{
	my ($label) = @_;
	zs_wait_catchup($primary);
	my $head = $primary->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	ok($standby->poll_query_until('postgres',
			qq{SELECT backup_state = 'following' AND backup_watermark = '$head' FROM zero_stream.status()}),
		"$label: the standby's backup replica reaches the primary's head $head")
	  or diag(backup_of($standby));
	is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(length(v)) || ':' || sum(id) FROM t}),
		$primary->safe_psql('postgres', q{SELECT count(*) || ':' || sum(length(v)) || ':' || sum(id) FROM t}),
		"$label: the standby's backup replica equals PostgreSQL");
}

sub restores
{
	my $log = slurp_file($standby->logfile);
	my @n = $log =~ /restored from the primary/g;
	return scalar @n;
}

# 1. the base backup's copy is replaced by a copy of the primary's
ok($standby->poll_query_until('postgres', q{SELECT backup_state = 'following' FROM zero_stream.status()}),
	'the standby\'s replicator follows the replicated log') or diag(backup_of($standby));
is(restores(), 1, 'from a copy of the primary\'s backup replica, not the file the base backup copied');
ok(-f "$file.standby", 'a marker beside it says this standby restored it');

$primary->safe_psql('postgres', q{
INSERT INTO t (v) SELECT 'more ' || g FROM generate_series(1, 500) g;
UPDATE t SET v = v || ' updated' WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
});
standby_equals('after writes on the primary');

# 2. the primary holds the log where the standby's replica is
my $held = $primary->safe_psql('postgres',
	q{SELECT mode || ' ' || watermark_acked FROM zero_stream.subscribers() WHERE id = 'standby sb1'});
my $standby_at = $standby->safe_psql('postgres', 'SELECT backup_watermark FROM zero_stream.status()');
ok($primary->poll_query_until('postgres',
		qq{SELECT watermark_acked = '$standby_at' FROM zero_stream.subscribers() WHERE id = 'standby sb1'}),
	"the primary holds the standby's position (subscribers(): $held)");

# while a standby is down the primary waits for it (synchronized_standby_slots):
# an operator takes it out of the list for the time
sub wait_for_standby
{
	my ($on) = @_;
	$primary->append_conf('postgresql.conf', "synchronized_standby_slots = '" . ($on ? 'sb1' : '') . "'\n");
	$primary->reload;
	$primary->poll_query_until('postgres',
		'SELECT failover_standbys IS ' . ($on ? 'NOT ' : '') . 'NULL FROM zero_stream.status()')
	  or die 'synchronized_standby_slots did not take effect';
}
wait_for_standby(0);
$standby->stop;
# the primary's backup replica moves on; the standby's position holds the floor
for my $i (1 .. 3)
{
	$primary->safe_psql('postgres', "INSERT INTO t (v) SELECT 'while down $i.' || g FROM generate_series(1, 100) g");
}
zs_wait_catchup($primary);
zs_wait_backup($primary);
my (undef, $floor, $held_by) = zs_purge($primary);
is($floor, $standby_at, 'while the standby is down, the purge floor is its backup replica\'s position');
like($held_by, qr/standby sb1/, "and names it ($held_by)");
$standby->start;
wait_for_standby(1);
standby_equals('the standby back within retention');
is(restores(), 1, 'it followed on without copying the primary\'s replica again');

# 3. held down past subscriber_retention: the purge passes it
wait_for_standby(0);
$standby->stop;
$primary->append_conf('postgresql.conf', "zero_stream.subscriber_retention = '2s'\n");
$primary->reload;
for my $i (1 .. 3)
{
	$primary->safe_psql('postgres', "INSERT INTO t (v) SELECT 'long gone $i.' || g FROM generate_series(1, 100) g");
}
zs_wait_catchup($primary);
zs_wait_backup($primary);
# until the retention has passed for the standby's position (subscribers()
# shows only retained ones, by the purge floor's rule)
ok($primary->poll_query_until('postgres', q{SELECT count(*) = 0 FROM zero_stream.subscribers() WHERE id = 'standby sb1'}),
	'past retention the primary no longer keeps the standby\'s position');
my ($rows, $floor2) = zs_purge($primary);
cmp_ok($rows, '>', 0, "past retention the purge passes the standby's position ($rows rows, floor $floor2)");
cmp_ok($floor2, 'gt', $standby_at, 'the floor is past the standby\'s replica');
$primary->append_conf('postgresql.conf', "zero_stream.subscriber_retention = '1h'\n");
$primary->reload;
# the replicator starts once replay has the purge (else it might apply the
# rows before their deletes arrive, and need no copy)
$standby->append_conf('postgresql.conf', "zero_stream.replica_file = ''\n");
$standby->start;
my $flushed = $primary->safe_psql('postgres', 'SELECT pg_current_wal_flush_lsn()');
ok($standby->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() >= '$flushed'"),
	'the standby replayed the purge');
$standby->append_conf('postgresql.conf', "zero_stream.replica_file = 'zero_stream/replica.db'\n");
$standby->restart;
wait_for_standby(1);
ok(wait_for_restores(2), 'the standby copies the primary\'s backup replica again by itself');
standby_equals('rebuilt after the purge passed it');

sub wait_for_restores
{
	my ($n) = @_;
	for (1 .. 1800)
	{
		return 1 if restores() >= $n;
		usleep(100_000);    # poll: until the standby has restored $n times
	}
	diag(backup_of($standby));
	return 0;
}

# 4. promoted, the standby's replica is the new primary's backup replica
$primary->safe_psql('postgres', "INSERT INTO t (v) VALUES ('last on the old primary')");
zs_wait_catchup($primary);
my $rv = $primary->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
ok(sp_wait_synced($standby, slot => sp_slot_name($primary),
		nudge => sub { $primary->safe_psql('postgres', "INSERT INTO t (v) VALUES ('nudge')") }),
	'the standby holds a synchronized copy of the slot');
standby_equals('before the promotion');
$primary->stop('immediate');
sp_promote($standby);
is($standby->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()'), $rv,
	'promoted, it continues the lineage');
# its configuration, copied from the old primary, names a standby it does not have
like($standby->safe_psql('postgres', 'SELECT failover_warning FROM zero_stream.status()'),
	qr/replication slot "sb1" named in synchronized_standby_slots does not exist/,
	'status() says the new primary waits for a standby slot it does not have');
$standby->append_conf('postgresql.conf', "synchronized_standby_slots = ''\n");
$standby->reload;
$standby->safe_psql('postgres', "INSERT INTO t (v) VALUES ('first on the new primary')");
zs_wait_catchup($standby);
ok($standby->poll_query_until('postgres',
		q{SELECT backup_state = 'following' AND backup_watermark = last_watermark FROM zero_stream.status()}),
	'its backup replica follows the new primary\'s log') or diag(backup_of($standby));
is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
	$standby->safe_psql('postgres', q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
	'and equals PostgreSQL');
is(restores(), 2, 'with no copy made at the promotion');

$standby->stop;
done_testing();
