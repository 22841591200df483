# A worker that fails and is restarted in a loop is visible: each worker
# records the error it stopped on and how often it was restarted
# (zero_stream.workers()), and the decoder keeps streaming meanwhile.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('failures',
	before_extension => 'CREATE TABLE t (id int PRIMARY KEY)');
my $replica_file = $node->data_dir . '/zero_stream/replica.db';

is($node->safe_psql('postgres',
		q{SELECT string_agg(worker || ':' || (pid IS NOT NULL) || ':' || coalesce(last_error, ''), ',' ORDER BY worker) FROM zero_stream.workers()}),
	'decoder:true:,replicator:true:,server:true:',
	'workers(): three running workers, no errors');

# The server cannot listen: it fails, is restarted, and says why
$node->append_conf('postgresql.conf', "zero_stream.listen_addresses = 'no-such-host.invalid'");
$node->restart;
ok($node->poll_query_until('postgres',
		q{SELECT restarts >= 1 AND last_error LIKE '%no-such-host.invalid%' FROM zero_stream.workers() WHERE worker = 'server'}),
	'workers(): the failing server shows its restarts and its error')
  or diag $node->safe_psql('postgres', 'SELECT * FROM zero_stream.workers()');
zs_wait_streaming($node);
$node->safe_psql('postgres', 'INSERT INTO t VALUES (1)');
zs_wait_catchup($node);
is($node->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'id' = '1'}),
	'1', 'the decoder stores transactions while the server fails');

# A change the backup replica cannot take (a trigger added behind the
# replicator's back refuses it): the replicator fails, restarts and says which change
# of which table it could not apply; the decoder goes on storing
$node->append_conf('postgresql.conf', "zero_stream.listen_addresses = '127.0.0.1'");
$node->restart;
zs_wait_streaming($node);
$node->poll_query_until('postgres',
	q{SELECT backup_watermark = last_watermark FROM zero_stream.status()})
  or die 'the backup replica did not catch up';
# (waiting for the replicator's lock, if it holds one)
is(zs_sqlite($replica_file, q{PRAGMA busy_timeout = 10000; CREATE TRIGGER refuse BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END}),
	'10000', 'a trigger on the replica\'s table t refuses rows');
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'INSERT INTO t VALUES (2)');
zs_wait_catchup($node);
ok($node->poll_query_until('postgres',
		q{SELECT restarts >= 1 AND last_error LIKE '%could not apply a change to the backup replica: refused by a trigger%' FROM zero_stream.workers() WHERE worker = 'replicator'}),
	'workers(): the replicator failing on a change says so')
  or diag $node->safe_psql('postgres', 'SELECT * FROM zero_stream.workers()');
# (a run of inserts into one table is written as one statement when the run
# ends, here at the commit: the statement names the table)
like(slurp_file($node->logfile, $log_offset),
	qr/ERROR:  could not apply a change to the backup replica: refused by a trigger \(in: INSERT OR REPLACE INTO "t" [^\n]*\n[^\n]*CONTEXT:  applying change \w+\/\d+ \((?:insert of table public\.t|commit)\) to the backup replica/,
	'the log names the change, its transaction and its table');
is($node->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'id' = '2'}),
	'1', 'the decoder stores transactions while the replicator fails');

# The backup replica is not a SQLite file: the replicator fails the same way
$node->stop;
ok(-f $replica_file, 'the backup replica exists');
open(my $fh, '>', $replica_file) or die;
print $fh 'this is not a SQLite database, not even its header' x 100;
close $fh;
unlink "$replica_file-wal", "$replica_file-shm";
$node->start;
ok($node->poll_query_until('postgres',
		q{SELECT restarts >= 1 AND last_error <> '' FROM zero_stream.workers() WHERE worker = 'replicator'}),
	'workers(): the failing replicator shows its restarts and its error')
  or diag $node->safe_psql('postgres', 'SELECT * FROM zero_stream.workers()');
is($node->safe_psql('postgres', q{SELECT backup_state || '|' || backup_hint FROM zero_stream.status()}),
	'failed|see zero_stream.workers()', 'status(): the backup state says the replicator is failing, and where to look');
is($node->safe_psql('postgres', q{SELECT restarts FROM zero_stream.workers() WHERE worker = 'server'}),
	'0', 'the server, now listening, counts no restart since this start');

$node->stop;
done_testing();
