# A failover pair for zero_stream's TAP tests (PostgreSQL 17 and later): a
# primary made by ZeroStreamTest::zs_new_node whose decoder waits for the
# standby named in synchronized_standby_slots, and streaming standbys made
# from a base backup of it that keep a synchronized copy of the decoder's
# failover slot (sync_replication_slots). After a promotion, the promoted
# server is the next primary: sp_new_standby builds it a fresh standby the
# same way. Each node gets its own zero_stream.port, in $node->{zs_server_port}
# as with zs_new_node.
#
#   my $primary = sp_new_primary('a', before_extension => 'CREATE TABLE ...');
#   my $standby = sp_new_standby($primary, 'b');
#   sp_wait_synced($standby);           # a promotion now keeps the lineage
#   $primary->kill9;  sp_promote($standby);
#   my $next = sp_new_standby($standby, 'c');
#
# On PostgreSQL 15 and 16 sp_new_primary makes a plain zs_new_node (there
# is no synchronized_standby_slots); sp_failover_supported says which.
package StandbyPair;

use strict;
use warnings;

use File::Path ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use Exporter 'import';
use ZeroStreamTest;

our @EXPORT = qw(sp_pg_major sp_failover_supported sp_new_primary sp_ensure_standby_slot
  sp_new_standby sp_wait_synced sp_synced_copy sp_promote sp_slot_name sp_status);

# the physical slot of the standby, named in synchronized_standby_slots
our $STANDBY_SLOT = 'sb1';

my $backups = 0;

# The major version of the PostgreSQL the tests run (pg_config on PATH).
sub sp_pg_major
{
	my $out = `pg_config --version`;
	$out =~ /PostgreSQL (\d+)/ or die "cannot tell the PostgreSQL version from pg_config: $out";
	return $1;
}

sub sp_failover_supported { return sp_pg_major() >= 17; }

# One row of zero_stream.status() as a hash of the named columns.
sub sp_status
{
	my ($node, @cols) = @_;
	my $sep = "\x1f";
	my $row = $node->safe_psql('postgres',
		'SELECT ' . join(" || '$sep' || ", map { "coalesce(${_}::text, '<null>')" } @cols)
		  . ' FROM zero_stream.status()');
	my @v = split /$sep/, $row, -1;
	my %h;
	@h{@cols} = @v;
	return \%h;
}

# The decoder's slot (status().slot_name, once the decoder has one).
sub sp_slot_name
{
	my ($node) = @_;
	$node->poll_query_until('postgres', 'SELECT slot_name IS NOT NULL FROM zero_stream.status()')
	  or die 'status() names no slot';
	return $node->safe_psql('postgres', 'SELECT slot_name FROM zero_stream.status()');
}

# The physical slot the next standby streams through, reserving WAL from
# now on (a promoted standby has none: base backups copy no slots).
sub sp_ensure_standby_slot
{
	my ($node, $slot) = @_;
	$slot //= $STANDBY_SLOT;
	$node->safe_psql('postgres', qq{
SELECT pg_create_physical_replication_slot('$slot', true)
 WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = '$slot')});
}

# A primary: zs_new_node with, on 17 and later, the standby's physical slot
# made before the extension and named in synchronized_standby_slots. Until
# a standby streams through it, the decoder holds back what it has not
# flushed (status() says so in failover_warning).
sub sp_new_primary
{
	my ($name, %opts) = @_;
	$opts{standby_slot} //= $STANDBY_SLOT;
	if (sp_failover_supported())
	{
		$opts{extra_conf} = "synchronized_standby_slots = '$opts{standby_slot}'\n" . ($opts{extra_conf} // '');
		$opts{before_extension} =
		  "SELECT pg_create_physical_replication_slot('$opts{standby_slot}', true);\n"
		  . ($opts{before_extension} // '');
	}
	my $slot = delete $opts{standby_slot};
	my $node = zs_new_node($name, %opts);
	$node->{sp_standby_slot} = $slot;
	return $node;
}

# A streaming hot standby of $primary, started, from a fresh base backup:
# it streams through the physical slot (made if missing), sends
# hot_standby_feedback and synchronizes the primary's failover slots.
# Its postgresql.conf is the primary's (a base backup copies it) with
# these settings after it; extra_conf goes last.
sub sp_new_standby
{
	my ($primary, $name, %opts) = @_;
	my $slot = $opts{standby_slot} // $primary->{sp_standby_slot} // $STANDBY_SLOT;
	sp_ensure_standby_slot($primary, $slot);
	my $backup = 'sp_backup_' . $backups++;
	$primary->backup($backup);
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, $backup, has_streaming => 1);
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	$node->{zs_server_port} = $port;
	$node->{sp_standby_slot} = $slot;	# the name its own next standby uses
	$node->{sp_primary} = $primary;
	my $conninfo = 'port=' . $primary->port . ' host=' . $primary->host
	  . " dbname=postgres application_name=$name";
	$node->append_conf('postgresql.conf', qq{
zero_stream.port = $port
primary_conninfo = '$conninfo'
primary_slot_name = '$slot'
hot_standby_feedback = on
sync_replication_slots = on
});
	$node->append_conf('postgresql.conf', $opts{extra_conf}) if $opts{extra_conf};
	$node->start;
	# remove the backup: a chaos loop makes many
	File::Path::rmtree($primary->backup_dir . "/$backup");
	return $node;
}

# Does $standby hold a synchronized, persistent, valid copy of $slot?
sub sp_synced_copy
{
	my ($standby, $slot) = @_;
	return $standby->safe_psql('postgres', qq{
SELECT count(*) = 1 FROM pg_replication_slots
 WHERE slot_name = '$slot' AND synced AND NOT temporary AND invalidation_reason IS NULL}) eq 't';
}

# Until $standby holds a synchronized persistent copy of the primary's
# decoder slot ($opts{slot}: the primary's status().slot_name). A copy stays
# temporary until the primary's slot needs no WAL older than the standby
# has: its restart_lsn moves when the decoder has read a running-xacts
# record and confirmed past it, so every second a running-xacts record is
# logged on the primary and $opts{nudge} (a code ref, e.g. an insert into
# a table of the test) is called to make the decoder store and confirm.
# The slotsync worker naps longer each time nothing changed (up to 30 s).
sub sp_wait_synced
{
	my ($standby, %opts) = @_;
	my $slot = $opts{slot}
	  || $standby->safe_psql('postgres', 'SELECT slot_name FROM zero_stream.status()')
	  || die 'sp_wait_synced: which slot? (slot => the primary\'s status().slot_name)';
	my $timeout = $opts{timeout} // 180;
	my $start = time;
	my $last_nudge = 0;
	while (time - $start < $timeout)
	{
		return 1 if sp_synced_copy($standby, $slot);
		if (time - $last_nudge >= 1)
		{
			$standby->{sp_primary}->safe_psql('postgres', 'SELECT pg_log_standby_snapshot()')
			  if $standby->{sp_primary};
			$opts{nudge}->() if $opts{nudge};
			$last_nudge = time;
		}
		usleep(100_000);    # poll: until the standby has a synchronized copy
	}
	diag("standby " . $standby->name . " has no synchronized copy of $slot after $timeout s: "
		  . $standby->safe_psql('postgres',
			  q{SELECT string_agg(slot_name || ' synced=' || synced || ' temporary=' || temporary, ', ') FROM pg_replication_slots}));
	return 0;
}

# Promote $standby and wait until its decoder streams.
sub sp_promote
{
	my ($standby) = @_;
	$standby->promote;
	$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'the promotion did not end recovery';
	zs_wait_streaming($standby);
}

1;
