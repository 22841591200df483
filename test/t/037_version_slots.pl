# What differs between PostgreSQL versions, on the version this
# runs on: the decoder's slot is created with the same meaning on each
# (logical, of this database, our output plugin, not two-phase; on 17 and
# later a failover slot, not a synced one, and no longer a failover slot once
# zero_stream.failover is turned off by a reload), the change log is written
# through its replication origin (16 added sharing one), and an invalidated
# slot is told apart by the same status() text (16 replaced the position of
# the removed WAL by a cause; TAP 028 loses a slot on every version).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('versions', before_extension => 'CREATE TABLE t (id int PRIMARY KEY, v text)');
sub sql { return $node->safe_psql('postgres', $_[0]); }
my $version = sql('SHOW server_version_num');
note("PostgreSQL $version");

is(sql(q{SELECT slot_type || '|' || database || '|' || plugin || '|' || two_phase::int || '|' || temporary::int
		   FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
	'logical|postgres|zero_stream|0|0', 'the slot: logical, this database, our plugin, not two-phase, persistent');
if ($version >= 170000)
{
	is(sql(q{SELECT failover::int || '|' || synced::int FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
		'1|0', '17+: a failover slot (zero_stream.failover is on by default), not a synced one');
	$node->append_conf('postgresql.conf', "zero_stream.failover = off\n");
	$node->reload;
	ok($node->poll_query_until('postgres',
			q{SELECT NOT failover FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
		'17+: zero_stream.failover = off and a reload: no longer a failover slot');
	is(sql('SELECT failover FROM zero_stream.status()'), 'off', '17+: status() says failover is off');
	is(sql(q{SELECT invalidation_reason IS NULL FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
		't', '17+: not invalidated');
}
if ($version >= 160000)
{
	is(sql(q{SELECT conflicting IS NOT TRUE FROM pg_replication_slots WHERE slot_name = 'zero_stream_zero_0'}),
		't', '16+: no recovery conflict');
}

# the origin: ours
is(sql(q{SELECT count(*) FROM pg_replication_origin_status s JOIN pg_replication_origin o ON o.roident = s.local_id
		  WHERE o.roname LIKE 'zero_stream%'}), '1', 'one replication origin of ours');
sql(q{INSERT INTO t VALUES (1, 'a')});
zs_wait_catchup($node);
is(sql(q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'insert'}), '1',
	'stored through that origin, on this version');
is(sql('SELECT last_error IS NULL AND slot_warning IS NULL FROM zero_stream.status()'), 't',
	'no error, no slot warning');

done_testing();
