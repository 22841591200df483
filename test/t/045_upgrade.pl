# Upgrades: the SQL of the first release (0.1.0) installed, the library
# of this one streams and says what to run; ALTER EXTENSION zero_stream
# UPDATE under load keeps the change log, the slot, the lineage and every
# subscriber's position (the decoder never stops, a zero-stream-replica
# follows across it); the updated objects equal a fresh install's; SQL of
# a version the library does not know stops the decoder before its next
# store, and nothing is lost once it is put right. The update runs every
# update script from 0.1.0 to this version's (zero_stream.control).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use ZeroStreamTest;

my $CLI = "$FindBin::RealBin/../../zero-stream-replica";
my $CDC = $ZeroStreamTest::CDC;
# this library's version, the control file's default_version
my ($CURRENT) = slurp_file("$FindBin::RealBin/../../zero_stream.control") =~ /^default_version = '([^']+)'/m
  or die 'no default_version in zero_stream.control';
(my $CURRENT_RE = $CURRENT) =~ s/\./\\./g;

my $node = zs_new_node('upgrade', no_extension => 1, before_extension => q{
CREATE TABLE t (id int PRIMARY KEY, v text);
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 1000) g;
});
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;

# --------------------------------------------------------------------------
# the previous version's SQL, this version's library
$node->safe_psql('postgres', q{CREATE EXTENSION zero_stream VERSION '0.1.0'});
zs_wait_streaming($node);
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'zero_stream'}),
	'0.1.0', 'the SQL of 0.1.0 is installed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM json_object_keys(row_to_json(zero_stream.status()))}),
	'43', "0.1.0's status() is answered with its own columns");
my $log = slurp_file($node->logfile);
like($log,
	qr/WARNING:  the zero_stream library is version $CURRENT_RE, but the extension's SQL objects are still version 0\.1\.0/,
	'the decoder says the SQL is older than the library');
like($log, qr/HINT:  Run ALTER EXTENSION zero_stream UPDATE in the streamed database\./,
	'and what to run');

my $replica_version = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
my $slot = $node->safe_psql('postgres', 'SELECT slot_name FROM zero_stream.status()');
my $decoder = zs_decoder_pid($node);

# a subscriber that follows across the update
my $file = "$dir/app.db";
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'app', "ws://127.0.0.1:$sport", $file ],
	'>', "$dir/app.out", '2>>', "$dir/app.log");
ok(zs_replica_at_head($node, $file, "$dir/app.log"), 'a zero-stream-replica follows on 0.1.0');
is($node->safe_psql('postgres',
		q{SELECT string_agg(k, ',' ORDER BY n)
		    FROM (SELECT row_to_json(s) j FROM zero_stream.subscribers() s WHERE s.mode = 'serving' LIMIT 1) r,
		         json_object_keys(r.j) WITH ORDINALITY AS k(k, n)}),
	'id,address,mode,protocol,state,watermark_sent,watermark_acked,messages_sent,messages_acked,backlog_bytes,connected_since,disconnected_at,retained_until',
	"0.1.0's subscribers() is answered with its own columns");
# its position, as the decoder keeps it across restarts
$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM zero_stream.subscriber_positions')
  or die 'no subscriber position was written';
my $positions = $node->safe_psql('postgres', 'SELECT string_agg(id, \',\' ORDER BY id) FROM zero_stream.subscriber_positions');
my $cli_log_at = -s "$dir/app.log";

# --------------------------------------------------------------------------
# ALTER EXTENSION ... UPDATE while transactions stream
my $load_script = "$dir/load.sql";
append_to_file($load_script, q{\set id random(1, 2000)
INSERT INTO t VALUES (:id, 'load') ON CONFLICT (id) DO UPDATE SET v = t.v || '+';
});
my ($lout, $lerr) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-j', '2', '-T', '20', '-f', $load_script,
		'-h', $node->host, '-p', $node->port, 'postgres' ],
	'>', \$lout, '2>', \$lerr);
my $stored = 'SELECT transactions_stored FROM zero_stream.status()';
my $start = $node->safe_psql('postgres', $stored);
$node->poll_query_until('postgres', "SELECT transactions_stored > $start + 100 FROM zero_stream.status()")
  or die 'the load was not stored';
my $log_at = -s $node->logfile;
my $before = $node->safe_psql('postgres', $stored);
$node->safe_psql('postgres', 'ALTER EXTENSION zero_stream UPDATE');
# the next store, while the load goes on, reads the new version
my $noticed = 0;
for (1 .. 600)
{
	$noticed = substr(slurp_file($node->logfile), $log_at)
	  =~ /the extension's SQL objects are now version $CURRENT_RE \(they were 0\.1\.0\); the decoder goes on/;
	last if $noticed;
	usleep(100_000);    # poll: until the decoder logs the update
}
ok($noticed, 'the decoder noticed the update in a store');
ok($node->poll_query_until('postgres', "SELECT transactions_stored > $before + 100 FROM zero_stream.status()"),
	'transactions were stored after the update, under the same load');
$load->finish;
zs_wait_catchup($node);

is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'zero_stream'}),
	$CURRENT, "the SQL is $CURRENT");
is($node->safe_psql('postgres',
		q{SELECT state || ' ' || extension_version || ' ' || library_version || ' ' || coalesce(last_error, '-') FROM zero_stream.status()}),
	"streaming $CURRENT $CURRENT -", "${CURRENT}'s status() tells both versions, and no error");
is($node->safe_psql('postgres',
		qq{SELECT retained_chunks = (SELECT count(*) FROM $CDC."changeLogChunks")
		      AND retained_rows = (SELECT count(*) FROM $CDC."changeLog")
		      AND retained_change_bytes = (SELECT sum(size) FROM $CDC."changeLogChunks")
		    FROM zero_stream.status()}),
	't', "${CURRENT}'s status() counts the log's chunks, rows and change text");
is(zs_decoder_pid($node), $decoder, 'the decoder streamed across the update (the same process)');
is($node->safe_psql('postgres', 'SELECT replica_version || slot_name FROM zero_stream.status()'),
	$replica_version . $slot, 'the same lineage and slot');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot'}),
	'1', 'the slot is the one it was');
is($node->safe_psql('postgres', qq{SELECT string_agg(id, ',' ORDER BY id) FROM zero_stream.subscriber_positions WHERE id = ANY (string_to_array('$positions', ','))}),
	$positions, "every subscriber's position is kept");
zs_check_log_integrity($node, 'across the update');
ok(zs_replica_at_head($node, $file, "$dir/app.log"), 'the zero-stream-replica followed across the update');
is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
	$node->safe_psql('postgres', q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
	'its replica equals PostgreSQL');
ok($cli->pumpable, 'without a restart');
unlike(substr(slurp_file("$dir/app.log"), $cli_log_at), qr/WrongReplicaVersion|restor|snapshot/i,
	'and without a restore');

# --------------------------------------------------------------------------
# the updated objects are a fresh install's
my $objects = q{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'zero_stream'),
member AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
  WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e')
SELECT line FROM (
  SELECT 'member ' || pg_describe_object(classid, objid, 0) AS line FROM member
  UNION ALL
  SELECT format('function %s(%s) returns %s: %s %s %s strict=%s volatile=%s secdef=%s config=%s acl=%s comment=%s',
      p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), l.lanname,
      coalesce(p.probin, ''), md5(p.prosrc), p.proisstrict, p.provolatile, p.prosecdef,
      coalesce(p.proconfig::text, ''), coalesce(p.proacl::text, 'default'),
      coalesce(obj_description(p.oid, 'pg_proc'), ''))
  FROM member m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
  JOIN pg_language l ON l.oid = p.prolang
  UNION ALL
  SELECT format('relation %s kind=%s acl=%s comment=%s', c.relname, c.relkind,
      coalesce(c.relacl::text, 'default'), coalesce(obj_description(c.oid, 'pg_class'), ''))
  FROM member m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  UNION ALL
  SELECT format('column %s.%s #%s %s notnull=%s default=%s', c.relname, a.attname, a.attnum,
      format_type(a.atttypid, a.atttypmod), a.attnotnull, coalesce(pg_get_expr(ad.adbin, ad.adrelid), ''))
  FROM member m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
  UNION ALL
  SELECT format('constraint %s.%s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
  FROM member m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
  JOIN pg_constraint k ON k.conrelid = c.oid
  UNION ALL
  SELECT 'index ' || pg_get_indexdef(i.indexrelid)
  FROM member m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
  UNION ALL
  SELECT 'trigger ' || pg_get_triggerdef(g.oid)
  FROM member m JOIN pg_trigger g ON m.classid = 'pg_class'::regclass AND g.tgrelid = m.objid
  UNION ALL
  SELECT format('event trigger %s on %s: %s tags=%s enabled=%s', e.evtname, e.evtevent,
      e.evtfoid::regproc, coalesce(e.evttags::text, ''), e.evtenabled)
  FROM member m JOIN pg_event_trigger e ON m.classid = 'pg_event_trigger'::regclass AND e.oid = m.objid
  UNION ALL
  SELECT format('schema %s acl=%s', n.nspname, coalesce(n.nspacl::text, 'default'))
  FROM member m JOIN pg_namespace n ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
  UNION ALL
  SELECT format('configuration %s', array(SELECT unnest(extconfig)::regclass::text ORDER BY 1))
  FROM pg_extension WHERE extname = 'zero_stream'
) lines ORDER BY line COLLATE "C"};
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION zero_stream');
my $updated = $node->safe_psql('postgres', $objects);
my $fresh = $node->safe_psql('fresh', $objects);
cmp_ok(scalar(() = $fresh =~ /^function /mg), '>=', 15, 'the comparison sees the functions');
like($fresh, qr/^event trigger zero_stream_capture_ddl_start on ddl_command_start/m,
	'and the event triggers');
like($fresh, qr/^function metrics\(\) returns text/m, "and 0.2.0's new function");
like($fresh, qr/^function subscribers\(.*OUT retained_because text\)/m, "and 0.3.0's new column");
like($fresh, qr/^function status\(.*OUT retained_chunks bigint, OUT retained_change_bytes bigint\)/m,
	"and 0.4.0's new columns");
is($updated, $fresh, "0.1.0 updated to $CURRENT has a fresh ${CURRENT}'s objects, grants and event triggers");
$node->safe_psql('postgres', 'DROP DATABASE fresh');

# --------------------------------------------------------------------------
# SQL this library does not know (a newer package's, the server not
# restarted): no store, a clear error, nothing lost once it is put right
my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
$node->safe_psql('postgres', q{UPDATE pg_extension SET extversion = '9.0.0' WHERE extname = 'zero_stream'});
$node->safe_psql('postgres', q{INSERT INTO t VALUES (100001, 'after 9.0.0')});
$node->poll_query_until('postgres',
	q{SELECT state = 'waiting for ALTER EXTENSION UPDATE' FROM zero_stream.status()})
  or die 'the decoder did not wait: ' . $node->safe_psql('postgres', 'SELECT state FROM zero_stream.status()');
like($node->safe_psql('postgres', 'SELECT last_error FROM zero_stream.status()'),
	qr/the extension's SQL objects are version 9\.0\.0, which this zero_stream library \(version $CURRENT_RE\) does not know: the decoder waits\. Install the zero_stream library of the installed SQL's version/,
	'status() says what is wrong and what to install');
like(slurp_file($node->logfile), qr/ERROR:  the extension's SQL objects are version 9\.0\.0/,
	"the store was refused in the store's own transaction");
# nothing observable ends this: a moment for a write to the log that must
# not happen
usleep(500_000);
is($node->safe_psql('postgres', qq{SELECT "lastWatermark" FROM $CDC."replicationState"}), $head,
	'nothing was written to the log');
$node->safe_psql('postgres', qq{UPDATE pg_extension SET extversion = '$CURRENT' WHERE extname = 'zero_stream'});
zs_wait_streaming($node);
zs_wait_catchup($node);
is($node->safe_psql('postgres', qq{SELECT count(*) FROM $CDC."changeLog" WHERE change->'new'->>'v' = 'after 9.0.0'}),
	'1', 'the transaction is stored once the SQL is one the library knows');
zs_check_log_integrity($node, 'after the unknown version');
ok(zs_replica_at_head($node, $file, "$dir/app.log"), 'the subscriber has it too');

$cli->signal('INT');
$cli->finish;
$node->stop;
done_testing();
