# The DDL capture's messages ("zero_stream/ddl", "zero_stream/rows") are
# signed, and the decoder takes only those that verify: a role that can
# call pg_logical_emit_message (any role, by default) cannot write rows or
# schema changes into the change log, nor stop the decoder with a malformed
# message, nor replay one of the capture's messages in another transaction;
# the capture's own messages (a create-table, a partition attached with
# rows) reach it. Before 0.5.1 the capture did not sign: messages written
# under 0.5.0's SQL are still read (the stream had no key there), and
# unsigned ones are refused from the update on.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $node = zs_new_node('auth', no_extension => 1, before_extension => q{
CREATE TABLE items (id int PRIMARY KEY, v text);
CREATE TABLE ev (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE ev_a PARTITION OF ev FOR VALUES FROM (0) TO (100);
INSERT INTO ev VALUES (1, 1, 'kept');
CREATE TABLE ev_b (id int, k int, v text, PRIMARY KEY (id, k));
INSERT INTO ev_b SELECT g, 100 + g % 100, 'attached' FROM generate_series(1, 50) g;
CREATE TABLE ev_c (id int, k int, v text, PRIMARY KEY (id, k));
CREATE ROLE mallory LOGIN;
});

sub psql { return $node->safe_psql('postgres', $_[0]); }

# a statement as mallory, who owns nothing and was granted nothing
sub as_mallory
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', "SET ROLE mallory; $sql");
	return ($rc, $err);
}

# how many stored changes match a condition on change
sub changes
{
	my ($where) = @_;
	zs_wait_catchup($node);
	return psql(qq{SELECT count(*) FROM $ZeroStreamTest::CDC."changeLog" WHERE $where});
}

# the log's WARNINGs about messages the decoder ignored, from offset on
sub ignored_since
{
	my ($offset, $pattern) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my @hits = $log =~ /$pattern/g;
	return scalar @hits;
}

# --- under 0.5.0's SQL (no key): the capture's unsigned messages are read,
# and a malformed one is skipped with a WARNING, not an error
psql(q{CREATE EXTENSION zero_stream VERSION '0.5.0'});
zs_wait_streaming($node);
my $offset = -s $node->logfile;
psql(q{CREATE TABLE before_update (id int PRIMARY KEY)});
is(changes(q{change->>'tag' = 'create-table' AND change->'spec'->>'name' = 'before_update'}), 1,
	'0.5.0: the unsigned create-table of the capture is stored');
my ($rc) = as_mallory(q{SELECT pg_logical_emit_message(true, 'zero_stream/rows', 'not json')});
is($rc, 0, 'any role can write a message with the capture\'s prefix');
psql(q{INSERT INTO items VALUES (1, 'after a malformed message')});
is(changes(q{change->>'tag' = 'insert' AND change->'new'->>'v' = 'after a malformed message'}), 1,
	'0.5.0: the decoder goes on past a malformed unsigned message');
ok(ignored_since($offset, qr/WARNING:  malformed partition rows message/) >= 1,
	'0.5.0: with a WARNING that says it is malformed');
is(ignored_since($offset, qr/WARNING:  taking the DDL capture's messages unsigned: the extension's SQL objects predate version 0\.5\.1/),
	1, '0.5.0: a WARNING, once, that the capture\'s messages are taken unsigned until the update');

# --- the update makes a key that only the extension's owner reads (the
# schema usable by mallory: the objects' own privileges keep mallory out)
psql(q{ALTER EXTENSION zero_stream UPDATE; GRANT USAGE ON SCHEMA zero_stream TO mallory});
is(psql(q{SELECT extversion FROM pg_extension WHERE extname = 'zero_stream'}), '0.5.1', 'updated to 0.5.1');
my $err;
($rc, $err) = as_mallory(q{SELECT * FROM zero_stream.capture_key});
like($err, qr/permission denied for table capture_key/, 'another role cannot read the key');
($rc, $err) = as_mallory(q{SELECT zero_stream.emit_capture_message('zero_stream/ddl', '{}')});
like($err, qr/permission denied for function emit_capture_message/, 'nor sign with it');
is(psql(q{SELECT octet_length(key) FROM zero_stream.capture_key}), 32, 'a key of 32 bytes');

# --- forged messages, each of which would change the replicas if taken
$offset = -s $node->logfile;
# every published table gone: drop-table messages for all
as_mallory(q{SELECT pg_logical_emit_message(true, 'zero_stream/ddl',
  '{"tag": "DROP TABLE", "schema": {"tables": [], "indexes": []}, "accountedLeaves": []}')});
# a row PostgreSQL never had, carried as if a partition had joined
my $ev = psql(q{SELECT 'ev'::regclass::oid});
my $forged_rows = qq|{"root": $ev, "op": "insert",
  "relation": {"schema": "public", "name": "ev", "replicaIdentity": "d",
    "columns": [{"name": "id", "typeOID": 23, "typmod": -1, "key": true},
                {"name": "k", "typeOID": 23, "typmod": -1, "key": true},
                {"name": "v", "typeOID": 25, "typmod": -1, "key": false}]},
  "rows": [["666", "5", "forged"]]}|;
($rc, $err) = as_mallory(qq|SELECT pg_logical_emit_message(true, 'zero_stream/rows', '$forged_rows')|);
is($rc, 0, 'a forged partition rows message written') or diag $err;
# the same in an envelope with a made-up signature
my $mac = 'ab' x 32;
($rc, $err) = as_mallory(qq|SELECT pg_logical_emit_message(true, 'zero_stream/rows',
  '{"mac":"$mac","message":$forged_rows}')|);
is($rc, 0, 'and one with a made-up signature') or diag $err;
# a malformed schema, which would stop the decoder if it were the capture's
as_mallory(q{SELECT pg_logical_emit_message(true, 'zero_stream/ddl', '{"tag": "x", "schema": 5}')});
psql(q{INSERT INTO items VALUES (2, 'after the forged messages')});
is(changes(q{change->>'tag' = 'insert' AND change->'new'->>'v' = 'after the forged messages'}), 1,
	'the decoder streams on past forged messages');
is(changes(q{change->>'tag' IN ('drop-table', 'truncate', 'reset')}), 0, 'no table dropped, truncated or reset');
is(changes(q{change->'new'->>'v' = 'forged'}), 0, 'no forged row stored');
is(ignored_since($offset,
		qr/WARNING:  ignoring a "zero_stream\/(?:ddl|rows)" message that the DDL capture did not write/),
	4, 'each forged message ignored with a WARNING');
is(ignored_since($offset, qr/DETAIL:  It is not signed\./), 3, 'three of them are not signed');
is(ignored_since($offset, qr/DETAIL:  Its signature does not verify/), 1, 'and one has a signature that does not verify');
is(psql(q{SELECT state || ' ' || coalesce(last_error, '-') FROM zero_stream.status()}), 'streaming -',
	'status() shows no error');

# --- the capture's own messages, signed: a create-table, and a partition
# attached with rows (carried in the ATTACH's transaction)
psql(q{SELECT pg_create_logical_replication_slot('peek', 'test_decoding')});
psql(q{CREATE TABLE after_update (id int PRIMARY KEY)});
is(changes(q{change->>'tag' = 'create-table' AND change->'spec'->>'name' = 'after_update'}), 1,
	'the signed create-table is stored');
psql(q{ALTER TABLE ev ATTACH PARTITION ev_b FOR VALUES FROM (100) TO (200)});
is(changes(q{change->>'tag' = 'insert' AND change->'new'->>'v' = 'attached'}), 50,
	'the attached partition\'s 50 rows are stored, signed');
is(changes(q{change->>'tag' = 'reset'}), 0, 'without a reset');

# --- a signed message replayed in another transaction, by a superuser even
my $signed = psql(q{SELECT substring(data FROM 'prefix: zero_stream/rows, sz: [0-9]+ content:(.*)$')
  FROM pg_logical_slot_peek_changes('peek', NULL, NULL)
 WHERE data LIKE 'message: transactional: 1 prefix: zero_stream/rows%' LIMIT 1});
like($signed, qr/^\{"mac":"[0-9a-f]{64}","message":\{"root" : /, 'the capture wrote it in its envelope');
psql(q{SELECT pg_drop_replication_slot('peek')});
$offset = -s $node->logfile;
$signed =~ s/'/''/g;
psql(qq{SELECT pg_logical_emit_message(true, 'zero_stream/rows', '$signed')});
psql(q{INSERT INTO items VALUES (3, 'after the replay')});
is(changes(q{change->>'tag' = 'insert' AND change->'new'->>'v' = 'after the replay'}), 1,
	'the decoder streams on past the replay');
is(changes(q{change->>'tag' = 'insert' AND change->'new'->>'v' = 'attached'}), 50,
	'the replayed rows are not stored again');
is(ignored_since($offset, qr/DETAIL:  Its signature does not verify: another key, another transaction/), 1,
	'the replay is ignored: its signature is for another transaction');

# --- DETACH and DROP carry signed deletes
psql(q{ALTER TABLE ev DETACH PARTITION ev_b});
is(changes(q{change->>'tag' = 'delete' AND change->'key'->>'k' >= '100'}), 50,
	'the detached partition\'s rows are deleted, signed');
is(changes(q{change->>'tag' = 'reset'}), 0, 'still without a reset');
zs_check_log_integrity($node, "signed capture");

done_testing();
