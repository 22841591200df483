# The purge's plans do not depend on the change log's statistics. After a
# bulk load the log has never been analyzed (here autovacuum is off, as it
# is for the first minutes after a load of millions of rows), and a batch
# that deletes a key range could be planned as a sequential scan of the
# whole log: a purge of ten million rows would take hours. With auto_explain logging every statement the decoder runs, the
# purge of such a log must read the primary key and delete by TID, never
# scan the log, and delete exactly the rows below the floor.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('purge_plan', extra_conf => q{
shared_preload_libraries = 'zero_stream, auto_explain'
auto_explain.log_min_duration = 0
auto_explain.log_nested_statements = on
autovacuum = off
},
	before_extension => 'CREATE TABLE t (id bigserial PRIMARY KEY, v text)');
my $CDC = '"zero_0/cdc"';

sub sql { return $node->safe_psql('postgres', $_[0]); }

# 40 transactions of 5,000 rows: a log of 200,000 rows, never analyzed
sql("INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 5000) g") for 1 .. 40;
zs_wait_catchup($node);
$node->poll_query_until('postgres', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()')
  or die 'the backup replica did not catch up';
is(sql("SELECT reltuples FROM pg_class WHERE oid = '$CDC.\"changeLog\"'::regclass"), '-1',
	'the change log has never been analyzed');
my $newest = sql(qq{SELECT max(watermark COLLATE "C") FROM $CDC."changeLog"});
my $kept = sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark = '$newest'});
my $before = sql(qq{SELECT count(*) FROM $CDC."changeLog"});

my $offset = -s $node->logfile;
my $purged = sql('SELECT rows FROM zero_stream.purge()');
is($purged, $before - $kept, 'everything but the newest transaction is purged');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $kept, 'the newest transaction stays');

# the plans the decoder logged while purging
my $log = slurp_file($node->logfile, $offset);
my @plans = grep { /LOG:  duration: [0-9.]+ ms  plan:/ && /DELETE FROM/ && /changeLog/ } split /\n(?=\d{4}-\d\d-\d\d )/, $log;
cmp_ok(scalar(@plans), '>', 1, 'the purge ran in several batches, each plan logged');
is(scalar(grep { /Seq Scan on "changeLog"/ } @plans), 0, 'no batch scanned the whole change log');
is(scalar(grep { /Tid Scan on "changeLog"/ } @plans), scalar(@plans), 'every batch deleted by TID');
is(scalar(grep { /Index Scan using "changeLog_pkey"/ } @plans), scalar(@plans),
	'every batch found its rows through the primary key');

$node->stop;
done_testing();
