# A decoding round ends at a WAL record that is only partly flushed
# (read_flushed_wal_page in decoder/round.c). The WAL writer
# flushes asynchronous commits page by page, so the record at the flush
# position is often cut in two. The decoder stores what it decoded before
# that record at once (here a transaction committed before a large
# asynchronous one), instead of waiting inside the WAL reader until the
# rest is flushed (up to wal_writer_delay, 10 s here), and reads the record
# again from its start once it is. An asynchronous load of records of every
# size is then stored whole, once each, in commit order.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $CDC = '"zero_0/cdc"';
my $node = zs_new_node('partial',
	extra_conf => qq{
wal_writer_delay = '10s'
wal_writer_flush_after = 0
# room for the large transaction: evicting its dirty pages would flush WAL
shared_buffers = 32MB
wal_buffers = 4MB
log_min_messages = debug1
},
	before_extension => q{
CREATE TABLE marks (id int PRIMARY KEY);
CREATE TABLE bulk (id bigserial PRIMARY KEY, v text);
});
sub sql { return $node->safe_psql('postgres', $_[0]); }
my $message = qr/decoding round ends at [0-9A-F]+\/[0-9A-F]+: the record there is not all flushed yet/;

# One session, asynchronous commits: a mark, then about 300 kB of WAL in
# records of about 1 kB. The second commit wakes the WAL writer, which
# flushes the whole pages (past the mark's commit) and then sleeps for
# wal_writer_delay, leaving the record across the last page boundary cut.
# Twice: a record boundary can fall on that page boundary (rarely).
sub lsn_number
{
	my ($hi, $lo) = split m{/}, $_[0];
	return hex($hi) * 2**32 + hex($lo);
}

# Returns whether a round ended at a record cut between the mark's commit
# and the bulk transaction's end: the mark stored without waiting for the
# rest of the WAL.
sub mark_then_bulk
{
	my ($id) = @_;
	zs_wait_catchup($node);
	# nothing unflushed from before (the decoder flushes its own last store
	# when idle; that flush would take the mark's commit with it)
	$node->poll_query_until('postgres', q{SELECT pg_current_wal_flush_lsn() = pg_current_wal_insert_lsn()})
	  or die 'WAL is not flushed';
	my $log_from = -s $node->logfile;
	my ($after_mark, $bulk_end) = split /\n/, sql(qq{SET synchronous_commit = off;
INSERT INTO marks VALUES ($id);
SELECT pg_current_wal_insert_lsn();
INSERT INTO bulk (v) SELECT repeat(md5(g::text), 30) FROM generate_series(1, 300) g;
SELECT pg_current_wal_insert_lsn();});
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM $CDC."changeLog" WHERE change->>'tag' = 'insert'
  AND change->'relation'->>'name' = 'marks' AND change->'new'->>'id' = '$id'}),
		"mark $id: the transaction before the cut record is stored");
	my @ends = slurp_file($node->logfile, $log_from) =~ /decoding round ends at ([0-9A-F]+\/[0-9A-F]+): the record there is not all flushed yet/g;
	return grep { lsn_number($_) >= lsn_number($after_mark) && lsn_number($_) < lsn_number($bulk_end) } @ends;
}

my $head = sql('SELECT last_watermark FROM zero_stream.status()');
my $cut = mark_then_bulk(1);
$cut = mark_then_bulk(2) || $cut;
ok($cut, 'a round ended at a record of the bulk transaction cut by the flush, '
	  . 'without waiting for the WAL writer to flush the rest (wal_writer_delay is 10 s)');

zs_wait_catchup($node, '60 s');
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head'
  AND change->>'tag' = 'insert' AND change->'relation'->>'name' = 'bulk'}), '600',
	'the large transactions follow whole once their records are flushed');

# Asynchronous commits of every size from four clients: records are cut at
# the flush position again and again, and each is read again from its start.
my $script = "$PostgreSQL::Test::Utils::tmp_check/partial_flush.sql";
open my $fh, '>', $script or die $!;
print $fh q{SET synchronous_commit = off;
\set n random(1, 40)
INSERT INTO bulk (v) SELECT repeat(md5(random()::text), (:n * random())::int + 1) FROM generate_series(1, :n);
};
close $fh;
my $log_from = -s $node->logfile;
my $rows_before = sql('SELECT count(*) FROM bulk');
$head = sql('SELECT last_watermark FROM zero_stream.status()');
my $load = zs_start_pgbench($node, 5, 4, $script);
$load->finish;
sql('CHECKPOINT');
zs_wait_catchup($node, '120 s');
my $rows = sql('SELECT count(*) FROM bulk') - $rows_before;
cmp_ok($rows, '>', 1000, "the load inserted $rows rows");
is(sql(qq{SELECT count(*) FROM $CDC."changeLog" WHERE watermark > '$head'
  AND change->>'tag' = 'insert' AND change->'relation'->>'name' = 'bulk'}), $rows,
	'every inserted row is in the change log once');
is(sql(qq{SELECT count(DISTINCT change->'new'->>'id') FROM $CDC."changeLog" WHERE watermark > '$head'
  AND change->>'tag' = 'insert' AND change->'relation'->>'name' = 'bulk'}), $rows,
	'each with its own key');
my $cuts = () = slurp_file($node->logfile, $log_from) =~ /$message/g;
cmp_ok($cuts, '>', 0, "rounds ended at cut records ($cuts times)");
zs_check_log_integrity($node, 'after the asynchronous load');
$node->stop;
done_testing();
