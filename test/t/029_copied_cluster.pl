# A second writer: a cluster made from a base backup of the first
# (pg_basebackup, then promoted) while the original keeps running. Both hold
# a copy of the change log; they must never pass for one another:
#  - while a standby, the copy's decoder decodes nothing: it follows the
#    replicated change log (state standby, the original's head);
#  - promoted, it has no slot (base backups do not copy them), so it starts
#    its own lineage (a new replicaVersion, last_reset says why) and names
#    itself owner with its own timeline;
#  - the original goes on streaming its lineage, untouched;
#  - a subscriber of the original's lineage is told WrongReplicaVersion by
#    the copy, never served a diverging log.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $a = zs_new_node('original', before_extension => q{
CREATE TABLE t (id bigserial PRIMARY KEY, v text);
INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 500) g;
});
$a->safe_psql('postgres', q{INSERT INTO t (v) VALUES ('before the copy')});
zs_wait_catchup($a);
my $rv_a = $a->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $owner_a = $a->safe_psql('postgres', 'SELECT "owner" FROM "zero_0/cdc"."replicationState"');

$a->backup('copy');
my $b = PostgreSQL::Test::Cluster->new('copy');
$b->init_from_backup($a, 'copy', has_streaming => 1);
my $bport = PostgreSQL::Test::Cluster::get_free_port();
$b->append_conf('postgresql.conf', "zero_stream.port = $bport\n");
$b->start;
ok($b->poll_query_until('postgres', q{SELECT pid IS NOT NULL AND state = 'standby' FROM zero_stream.status()}),
	'as a standby, the copy\'s decoder decodes nothing (state standby)');
my $head_a = $a->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
ok($b->poll_query_until('postgres', qq{SELECT last_watermark = '$head_a' AND replica_version = '$rv_a' FROM zero_stream.status()}),
	'it follows the replicated change log: the original\'s lineage and head');
is($b->safe_psql('postgres', 'SELECT transactions_stored FROM zero_stream.status()'), '0',
	'and stores nothing itself');

$b->promote;
ok($b->poll_query_until('postgres', qq{SELECT state = 'streaming' AND replica_version <> '$rv_a' FROM zero_stream.status()}),
	'promoted, the copy starts its own lineage');
like($b->safe_psql('postgres', 'SELECT last_reset FROM zero_stream.status()'), qr/was missing/,
	'and says why (its slot was not copied)');
my $owner_b = $b->safe_psql('postgres', 'SELECT "owner" FROM "zero_0/cdc"."replicationState"');
isnt($owner_b, $owner_a, "the copy names itself owner ($owner_b), not the original ($owner_a)");
like($owner_b, qr{/2/}, 'with its own timeline');

# both write; each log holds its own cluster's transactions only
$a->safe_psql('postgres', q{INSERT INTO t (v) VALUES ('only on the original')});
$b->safe_psql('postgres', q{INSERT INTO t (v) VALUES ('only on the copy')});
zs_wait_catchup($a);
zs_wait_catchup($b);
is($a->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'v' = 'only on the copy'}), '0',
	'the original\'s log has none of the copy\'s writes');
is($a->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'v' = 'only on the original'}), '1',
	'the original goes on streaming its lineage');
is($a->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()'), $rv_a, 'with its replicaVersion');
is($b->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'v' = 'only on the copy'}), '1',
	'the copy streams its own writes');

IPC::Run::run([ $TAIL, "ws://127.0.0.1:$bport/replication/v6/changes?id=s&taskID=x&replicaVersion=$rv_a&watermark=$rv_a" ],
	'>', \my $out, '2>', \my $err, IPC::Run::timeout(60));
like($out, qr/"error",\{"type":1,"message":"current replica version is/,
	'a subscriber of the original\'s lineage is told WrongReplicaVersion by the copy');

$b->stop;
$a->stop;
done_testing();
