# A publication FOR ALL TABLES covers the change log itself: our own writes
# must not come back through the stream (origin filter), or every stored
# transaction would produce another one forever.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('alltables',
	extra_conf => "zero_stream.publications = 'everything'\n",
	before_extension => q{
CREATE PUBLICATION everything FOR ALL TABLES;
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE SCHEMA other;
CREATE TABLE other.u (id int PRIMARY KEY);
});

$node->safe_psql('postgres', q{
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g;
INSERT INTO other.u VALUES (1);
UPDATE t SET v = 'w' WHERE id <= 10;
DELETE FROM t WHERE id > 90;
});
zs_wait_catchup($node);

my $before = $node->safe_psql('postgres',
	'SELECT transactions_stored || \'|\' || local_commits FROM zero_stream.status()');
is($before =~ /^4\|/ ? 'yes' : $before, 'yes', 'exactly the four user transactions were stored');

is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE change->'relation'->>'schema' = 'zero_0/cdc'
    OR change::text LIKE '%"schema":"zero_0/cdc"%'}),
	'0', 'no change of our own tables is in the log');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'relation'->>'name' = 'u'}),
	'1', 'tables of every schema are streamed');

# idle for a while: nothing new may appear. A feedback loop shows only as
# stores that keep coming, so nothing observable ends this wait: it gives one
# the time to show (the decoder stores within its 1 s round)
sleep 2;
$node->safe_psql('postgres', 'CHECKPOINT');
zs_wait_catchup($node);
sleep 1;    # as above: time for a store the checkpoint would cause
my $after = $node->safe_psql('postgres',
	'SELECT transactions_stored || \'|\' || local_commits FROM zero_stream.status()');
is($after, $before, 'no feedback loop: the log does not grow while idle');

my $decoded = $node->safe_psql('postgres',
	"SELECT total_txns FROM pg_stat_replication_slots WHERE slot_name = 'zero_stream_zero_0'");
cmp_ok($decoded, '<=', 10, "our own commits are filtered before decoding ($decoded txns decoded)");

# our UPDATEs of replicationState work although the publication publishes updates
is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM zero_stream.status()'),
	't', 'no error');
zs_check_log_integrity($node, 'all tables');

# PostgreSQL 19's FOR ALL TABLES ... EXCEPT keeps zero_stream's own tables out
# of a publication that feeds other consumers (README: "Publishing all tables
# to other consumers"), made by the README's recipe; a consumer of
# a plain FOR ALL TABLES publication receives every change-log write, one of
# the EXCEPT publication none, and zero_stream streams its own publication
# changed the same way.
SKIP:
{
	skip 'FOR ALL TABLES EXCEPT needs PostgreSQL 19', 8
	  if $node->pg_version->major < 19;

	my $except_list = q{
SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.oid)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p')
   AND n.nspname IN ('zero_stream', current_setting('zero_stream.app_id') || '_'
                     || current_setting('zero_stream.shard_num') || '/cdc')};
	my $list = $node->safe_psql('postgres', $except_list);
	like($list, qr/"zero_0\/cdc"\."changeLogChunks"/,
		"the README's query lists the change log ($list)");
	like($list, qr/zero_stream\.subscriber_positions/,
		"the README's query lists the subscribers' positions");
	$node->safe_psql('postgres', qq{
DO \$\$ BEGIN
  EXECUTE format('CREATE PUBLICATION others FOR ALL TABLES EXCEPT (TABLE %s)',
    (SELECT string_agg(c.oid::regclass::text, ', ' ORDER BY c.oid)
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p')
        AND n.nspname IN ('zero_stream', current_setting('zero_stream.app_id') || '_'
                          || current_setting('zero_stream.shard_num') || '/cdc')));
END \$\$;
CREATE PUBLICATION plain FOR ALL TABLES;
SELECT pg_create_logical_replication_slot('others_slot', 'pgoutput');
ALTER PUBLICATION everything SET ALL TABLES EXCEPT (TABLE $list);
});
	$node->safe_psql('postgres', q{
INSERT INTO t VALUES (1000, 'after except');
UPDATE other.u SET id = 2;
});
	zs_wait_catchup($node);
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM pg_publication_tables
 WHERE pubname = 'others' AND schemaname IN ('zero_stream', 'zero_0/cdc')}),
		'0', 'pg_publication_tables: no table of zero_stream in the EXCEPT publication');

	# what each publication's consumer would receive of the same WAL
	my $received = sub {
		my ($pub) = @_;
		return $node->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE position('\\x7a65726f5f302f636463'::bytea IN data) > 0)
       || '|' || count(*) FILTER (WHERE get_byte(data, 0) = 73)
  FROM pg_logical_slot_peek_binary_changes('others_slot', NULL, NULL,
       'proto_version', '1', 'publication_names', '$pub')});
	};
	my ($plain_cdc, $plain_ins) = split /\|/, $received->('plain');
	my ($others_cdc, $others_ins) = split /\|/, $received->('others');
	cmp_ok($plain_cdc, '>', 0,
		"a plain FOR ALL TABLES consumer receives the change log's relations ($plain_cdc messages)");
	is($others_cdc, '0', "the EXCEPT publication's consumer receives none of them");
	cmp_ok($plain_ins, '>', $others_ins,
		"the change log's inserts reach only the plain consumer ($plain_ins against $others_ins)");

	# zero_stream streams its own publication changed to EXCEPT: the new rows arrive
	is($node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE (change->'relation'->>'name' = 't' AND change->>'tag' = 'insert'
        AND change->'new'->>'v' = 'after except')
    OR (change->'relation'->>'name' = 'u' AND change->>'tag' = 'update'
        AND change->'new'->>'id' = '2')}),
		'2', 'zero_stream streams after its own publication became FOR ALL TABLES EXCEPT');
	is($node->safe_psql('postgres', 'SELECT last_error IS NULL FROM zero_stream.status()'),
		't', 'no error after the EXCEPT');
	$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('others_slot')");
}
$node->stop;
done_testing();
