# The purge does not depend on the change log's statistics. After a bulk
# load the log has never been analyzed (here autovacuum is off, as it is
# for the first minutes after a load of millions of rows), and a batch that
# deletes a key range could be planned as a sequential scan of the whole
# log: a purge of ten million rows would take hours. With auto_explain
# logging every statement the decoder runs:
#   - the log as zero_stream creates it is purged through its chunks'
#     primary key by the table AM, with no DELETE statement at all, and
#     exactly the chunks below the floor go;
#   - a log someone gave a trigger is purged with queries (the trigger
#     runs for every chunk deleted), in batches of rows, each of which
#     reads the primary key and deletes by TID, never scanning the log.
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
is(sql("SELECT reltuples FROM pg_class WHERE oid = '$CDC.\"changeLogChunks\"'::regclass"), '-1',
	'the change log has never been analyzed');
# a chunk is kept whole if it holds a row of the newest transaction
my $newest = sql(qq{SELECT max(watermark) FROM $CDC."changeLogChunks"});
my $kept = sql(qq{SELECT sum(rows) FROM $CDC."changeLogChunks" WHERE watermark = '$newest'});
my $before = sql(qq{SELECT count(*) FROM $CDC."changeLog"});

my $offset = -s $node->logfile;
my $purged = sql('SELECT rows FROM zero_stream.purge()');
is($purged, $before - $kept, 'everything but the chunks of the newest transaction is purged');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $kept, 'the newest transaction stays');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark = '$newest'}),
	5002, 'with every row of it (begin, 5,000 inserts, commit)');

# the plans the decoder logged while purging: none deletes
my $log = slurp_file($node->logfile, $offset);
my @plans = grep { /LOG:  duration: [0-9.]+ ms  plan:/ && /changeLogChunks/ && !/purge_plan\.pl/ } split /\n(?=\d{4}-\d\d-\d\d )/, $log;
cmp_ok(scalar(@plans), '>', 0, 'the decoder\'s statements were logged');
is(scalar(grep { /DELETE FROM/ } @plans), 0, 'the purge ran no DELETE statement');
is(scalar(grep { /Seq Scan on "changeLogChunks"/ } @plans), 0, 'nor any statement that scanned the change log');

# a trigger on the log: the purge's queries delete, and run it
sql(qq{CREATE SEQUENCE purge_seen;
	CREATE FUNCTION count_purge() RETURNS trigger LANGUAGE plpgsql AS
	  \$\$BEGIN PERFORM nextval('public.purge_seen'); RETURN OLD; END\$\$;
	CREATE TRIGGER count_purge BEFORE DELETE ON $CDC."changeLogChunks"
	  FOR EACH ROW EXECUTE FUNCTION count_purge()});
sql("INSERT INTO t (v) SELECT 'row ' || g FROM generate_series(1, 5000) g") for 1 .. 10;
zs_wait_catchup($node);
$node->poll_query_until('postgres', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()')
  or die 'the backup replica did not catch up';
$newest = sql(qq{SELECT max(watermark) FROM $CDC."changeLogChunks"});
$kept = sql(qq{SELECT sum(rows) FROM $CDC."changeLogChunks" WHERE watermark = '$newest'});
$before = sql(qq{SELECT count(*) FROM $CDC."changeLog"});
my $chunks = sql(qq{SELECT count(*) FILTER (WHERE watermark <> '$newest') FROM $CDC."changeLogChunks"});
$offset = -s $node->logfile;
$purged = sql('SELECT rows FROM zero_stream.purge()');
is($purged, $before - $kept, 'with a trigger, everything but the chunks of the newest transaction is purged');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog"}), $kept, 'the newest transaction stays');
is(sql('SELECT last_value FROM purge_seen'), $chunks, 'the trigger ran for every chunk purged');

$log = slurp_file($node->logfile, $offset);
@plans = grep { /LOG:  duration: [0-9.]+ ms  plan:/ && /DELETE FROM/ && /changeLogChunks/ } split /\n(?=\d{4}-\d\d-\d\d )/, $log;
cmp_ok(scalar(@plans), '>', 1, 'the purge ran in several batches, each plan logged');
is(scalar(grep { /Seq Scan on "changeLogChunks"/ } @plans), 0, 'no batch scanned the whole change log');
is(scalar(grep { /Tid Scan on "changeLogChunks"/ } @plans), scalar(@plans), 'every batch deleted by TID');
is(scalar(grep { /Index Scan (using|on) "changeLogChunks_pkey"/ } @plans), scalar(@plans),
	'every batch found its chunks through the primary key');

$node->stop;
done_testing();
