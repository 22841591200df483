# Misconfigurations produce a clear error in the server log and in
# zero_stream.status(), and the decoder recovers once they are fixed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

sub last_error
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres', 'SELECT coalesce(last_error, \'\') FROM zero_stream.status()');
}

sub wait_for_error
{
	my ($node, $pattern, $label, $db) = @_;
	ok($node->poll_query_until($db // 'postgres',
			"SELECT last_error ~ '$pattern' FROM zero_stream.status()"),
		"$label: status() reports an error matching /$pattern/")
	  or diag 'last_error: ' . last_error($node, $db);
}

# --- wal_level is too low: below logical, or on 19 (which turns logical
# decoding on while a logical slot exists) below replica
{
	my $node = zs_new_node('wal', no_extension => 1);
	my $v19 = $node->pg_version->major >= 19;    # (a release candidate is below 19)
	my ($low, $need) = $v19 ? ('minimal', 'replica or logical') : ('replica', 'logical');
	$node->append_conf('postgresql.conf', "wal_level = $low\nmax_wal_senders = 0\n");
	$node->restart;
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'wal_level', 'wal_level');
	like(last_error($node), qr/zero_stream requires wal_level = \Q$need\E \(it is "$low"\)/,
		'wal_level: clear error in status()');
	ok($node->log_contains("HINT:  Set wal_level = $need in postgresql.conf"),
		'wal_level: hint in the server log');
	$node->append_conf('postgresql.conf', 'wal_level = ' . ($v19 ? 'replica' : 'logical') . "\n");
	$node->restart;
	zs_wait_streaming($node);
	is(last_error($node), '', 'wal_level: streaming once fixed, error cleared');
	if ($v19)
	{
		# replica is enough: the decoder's slot turned logical decoding on
		is($node->safe_psql('postgres', 'SHOW effective_wal_level'), 'logical',
			'wal_level = replica on 19: the decoder\'s slot made effective_wal_level logical');
		$node->safe_psql('postgres', q{
CREATE TABLE w (id int PRIMARY KEY, v text);
INSERT INTO w VALUES (1, 'on replica');});
		zs_wait_catchup($node);
		is($node->safe_psql('postgres', qq{
SELECT count(*) FROM $ZeroStreamTest::CDC."changeLog" WHERE change->>'tag' = 'insert' AND change->'new'->>'v' = 'on replica'}),
			'1', 'wal_level = replica on 19: the insert reached the change log');
		is($node->safe_psql('postgres', qq{
SELECT count(*) FROM $ZeroStreamTest::CDC."changeLog" WHERE change->>'tag' = 'create-table' AND change->'spec'->>'name' = 'w'}),
			'1', 'wal_level = replica on 19: the DDL capture announced the new table');
		# and it stays on across a restart, while the slot exists
		$node->restart;
		zs_wait_streaming($node);
		$node->safe_psql('postgres', q{INSERT INTO w VALUES (2, 'after a restart')});
		zs_wait_catchup($node);
		is($node->safe_psql('postgres', qq{
SELECT count(*) FROM $ZeroStreamTest::CDC."changeLog" WHERE change->>'tag' = 'insert' AND change->'new'->>'v' = 'after a restart'}),
			'1', 'wal_level = replica on 19: streaming after a restart');
	}
	$node->stop;
}

# --- a configured publication does not exist
{
	my $node = zs_new_node('pub', no_extension => 1,
		extra_conf => "zero_stream.publications = 'app_pub'\n");
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'app_pub', 'missing publication');
	like(last_error($node),
		qr/publication "app_pub" named in zero_stream.publications does not exist in database "postgres"/,
		'missing publication: clear error in status()');
	$node->safe_psql('postgres', 'CREATE PUBLICATION app_pub FOR TABLES IN SCHEMA public');
	zs_wait_streaming($node);
	is($node->safe_psql('postgres', 'SELECT "publications" FROM "zero_0/cdc"."replicationConfig"'),
		'{_zero_metadata_0,app_pub}', 'missing publication: streams once it exists, with Zero\'s metadata publication');
	$node->stop;
}

# --- the extension is created in another database than zero_stream.database
{
	my $node = zs_new_node('ext', no_extension => 1,
		extra_conf => "zero_stream.database = 'appdb'\n");
	$node->safe_psql('postgres', 'CREATE DATABASE appdb');
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'not installed', 'extension elsewhere');
	like(last_error($node),
		qr/extension "zero_stream" is not installed in database "appdb"; run CREATE EXTENSION zero_stream there/,
		'extension elsewhere: status() in another database says where to create it');
	is($node->safe_psql('postgres', 'SELECT state FROM zero_stream.status()'),
		'waiting for CREATE EXTENSION', 'extension elsewhere: decoder waits');
	$node->safe_psql('appdb', 'CREATE EXTENSION zero_stream');
	ok($node->poll_query_until('appdb', "SELECT state = 'streaming' FROM zero_stream.status()"),
		'extension elsewhere: streams once created')
	  or diag last_error($node, 'appdb');
	$node->stop;
}

# --- the slot is in use by another consumer, or is not ours
{
	my $node = zs_new_node('slot', no_extension => 1,
		extra_conf => "zero_stream.slot_name = 'busy'\n");
	$node->safe_psql('postgres',
		"SELECT pg_create_logical_replication_slot('busy', 'test_decoding')");
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'busy', 'foreign slot');
	like(last_error($node), qr/replication slot "busy" was not created by zero_stream/,
		'foreign slot: clear error');

	# another consumer holds the slot while the decoder restarts
	$node->safe_psql('postgres', "SELECT pg_drop_replication_slot('busy')");
	zs_wait_streaming($node);
	my $has_plugin_list = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'");
	if ($has_plugin_list)
	{
		$node->append_conf('postgresql.conf',
			"output_plugin_libraries = 'pgoutput, test_decoding, zero_stream'\n");
		$node->reload;
	}
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'");
	my ($out, $err) = ('', '');
	my $recv = IPC::Run::start(
		[
			'pg_recvlogical', '-d', $node->connstr('postgres'), '-S', 'busy', '--start',
			'-o', 'proto_version=1', '-o', 'publication_names=_zero_public_0', '-f', '/dev/null'
		],
		'>', \$out, '2>', \$err);
	ok($node->poll_query_until('postgres',
			"SELECT active_pid IS NOT NULL AND active_pid <> coalesce((SELECT pid FROM zero_stream.status()), 0) FROM pg_replication_slots WHERE slot_name = 'busy'"),
		'slot in use: another consumer holds the slot')
	  or diag "pg_recvlogical: $err";
	wait_for_error($node, 'in use', 'slot in use');
	like(last_error($node), qr/replication slot "busy" is in use by process \d+/,
		'slot in use: clear error');
	$recv->kill_kill;
	ok($node->poll_query_until('postgres', q{
SELECT s.state = 'streaming' AND r.active_pid = s.pid
  FROM zero_stream.status() s, pg_replication_slots r WHERE r.slot_name = 'busy'}),
		'slot in use: decoder resumes and holds the slot once the other consumer is gone')
	  or diag 'last_error: ' . last_error($node);
	$node->stop;
}

# --- invalid parameter values stop the server with a clear message
{
	my $node = zs_new_node('guc', no_extension => 1);
	$node->stop;
	$node->append_conf('postgresql.conf', "zero_stream.app_id = 'Bad-App'\n");
	ok(!$node->start(fail_ok => 1), 'invalid app_id: server refuses to start');
	ok($node->log_contains(
		'invalid value for parameter "zero_stream.app_id": "Bad-App"'),
		'invalid app_id: named in the log');
	ok($node->log_contains('may contain only lower-case letters, digits and underscores'),
		'invalid app_id: the rule is explained');
	ok($node->log_contains('zero_stream cannot start: zero_stream.app_id has an invalid value'),
		'invalid app_id: zero_stream does not fall back to the default');

	# a throughput knob falls back to its default with a warning, as usual
	$node->append_conf('postgresql.conf',
		"zero_stream.app_id = 'zero'\nzero_stream.changelog_chunk_size = 0\n");
	$node->start;
	ok($node->log_contains('0 kB is outside the valid range for parameter "zero_stream.changelog_chunk_size"'),
		'chunk size 0: range in the log');
	is($node->safe_psql('postgres', 'SHOW zero_stream.changelog_chunk_size'), '256kB',
		'chunk size 0: default used');
	$node->stop;
}

# --- publications Zero reserves or cannot use (zero-cache's checks)
{
	my $node = zs_new_node('pubs', no_extension => 1,
		extra_conf => "zero_stream.publications = '_mine'\n");
	$node->safe_psql('postgres', 'CREATE PUBLICATION _mine FOR TABLES IN SCHEMA public');
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'names starting with "_" are reserved', 'reserved publication name');
	ok($node->log_contains('HINT:  Rename the publication'), 'reserved publication name: the fix is in the hint');
	$node->append_conf('postgresql.conf', "zero_stream.publications = 'no_truncate'\n");
	$node->restart;
	$node->safe_psql('postgres',
		q{CREATE PUBLICATION no_truncate FOR TABLES IN SCHEMA public WITH (publish = 'insert, update, delete')});
	wait_for_error($node, 'must publish insert, update, delete and truncate', 'publication without truncate');
	ok($node->log_contains(q{HINT:  ALTER PUBLICATION no_truncate SET \(publish = 'insert, update, delete, truncate'\)}),
		'publication without truncate: the fix is in the hint');
	$node->safe_psql('postgres', q{ALTER PUBLICATION no_truncate SET (publish = 'insert, update, delete, truncate')});
	zs_wait_streaming($node);
	is($node->safe_psql('postgres', 'SELECT "publications" FROM "zero_0/cdc"."replicationConfig"'),
		'{_zero_metadata_0,no_truncate}', 'publication without truncate: streams once fixed');
	$node->stop;
}

# --- a published table Zero's replicas cannot hold stops the initial copy
{
	my $node = zs_new_node('tables', no_extension => 1, before_extension => q{
CREATE TABLE keyless (a int, b text);
ALTER TABLE keyless REPLICA IDENTITY NOTHING;
CREATE TABLE fine (id int PRIMARY KEY, "_0_version" text);
});
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	wait_for_error($node, 'REPLICA IDENTITY NOTHING', 'unreplicable table');
	like(last_error($node), qr/^Zero cannot replicate 2 published tables: public.fine uses the column name _0_version, which Zero reserves; public.keyless has REPLICA IDENTITY NOTHING/,
		'unreplicable tables: each named, with the reason');
	ok($node->log_contains('WARNING:  published table public.fine uses the column name _0_version'),
		'every problem is also logged on its own');
	$node->safe_psql('postgres', q{ALTER TABLE keyless REPLICA IDENTITY FULL; ALTER TABLE fine RENAME COLUMN "_0_version" TO v});
	zs_wait_streaming($node);
	$node->safe_psql('postgres', q{INSERT INTO fine VALUES (1, 'x')});
	zs_wait_catchup($node);
	is(last_error($node), '', 'unreplicable tables: streams once fixed');
	$node->stop;
}

done_testing();
