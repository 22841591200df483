# Schema changes carried through the stream: the DDL capture (an event
# trigger of the extension) and the decoder's diff write zero-cache's
# schema-change messages in the DDL's own transaction, and a live
# zero-stream-replica applies them: afterwards every table of its SQLite
# file equals PostgreSQL column by column, declared types included. DDL by
# a non-superuser is captured; DDL on unpublished tables and DDL in a
# database without the extension emit nothing and break nothing; an
# application's own logical messages are never data.
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

my $node = zs_new_node('ddl', before_extension => q{
CREATE TABLE base (id int PRIMARY KEY, label text);
INSERT INTO base SELECT g, 'row ' || g FROM generate_series(1, 50) g;
CREATE ROLE app LOGIN;
GRANT CREATE, USAGE ON SCHEMA public TO app;
CREATE SCHEMA private;
});
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;
my $file = "$dir/app.db";
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'ddl', "ws://127.0.0.1:$sport", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");

sub schema_rows
{
	return $node->safe_psql('postgres', q{
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE change->>'tag' NOT IN ('begin', 'commit', 'insert', 'update', 'delete', 'truncate')});
}

sub wait_replica
{
	my ($label) = @_;
	zs_wait_catchup($node, '60 s');
	my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 600)
	{
		return 1 if -f $file
		  && zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') eq $target;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$label: replica behind; CLI log: " . slurp_file("$dir/cli.log"));
	return 0;
}

# A table's rows on both sides, ordered by id, every column as text.
sub same_table
{
	my ($table, $columns, $label) = @_;
	my $cols = join(" || '|' || ", map { "coalesce(${_}::text, 'NULL')" } @$columns);
	my $pg = $node->safe_psql('postgres', "SELECT string_agg($cols, ',' ORDER BY id) FROM $table");
	my $lite_cols = join(" || '|' || ", map { "coalesce($_, 'NULL')" } @$columns);
	my $lite = zs_sqlite($file, "SELECT group_concat($lite_cols, ',') FROM (SELECT * FROM $table ORDER BY id)");
	is($lite, $pg, "$label: $table equals PostgreSQL");
}

sub declared
{
	my ($table) = @_;
	return zs_sqlite($file,
		"SELECT group_concat(name || ' ' || type, ', ') FROM (SELECT * FROM pragma_table_info('$table') ORDER BY cid)");
}

ok(wait_replica('start'), 'the replica follows');
is(schema_rows(), '0', 'no schema change yet');

# CREATE TABLE, by a role that is not a superuser, then rows
$node->safe_psql('postgres', q{
SET ROLE app;
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int8 DEFAULT 1, tags text[]);
INSERT INTO items VALUES (1, 'one', 5, '{a,b}'), (2, 'two', DEFAULT, NULL);
});
ok(wait_replica('create'), 'CREATE TABLE by a non-superuser reached the replica');
like(declared('items'), qr/^id int4\|NOT_NULL, name text\|NOT_NULL, qty int8, tags text\[\]\|TEXT_ARRAY, _0_version TEXT$/,
	'the new table is typed as zero-cache types it');
same_table('items', [qw(id name qty)], 'create');

# ADD COLUMN with a constant default and NOT NULL with a numeric default
$node->safe_psql('postgres', q{
ALTER TABLE items ADD COLUMN note text DEFAULT 'none';
ALTER TABLE items ADD COLUMN weight int4 NOT NULL DEFAULT 7;
INSERT INTO items (id, name) VALUES (3, 'three');
});
ok(wait_replica('add'), 'ADD COLUMN reached the replica');
like(declared('items'), qr/note text, weight int4/i, 'added columns are typed');
same_table('items', [qw(id name qty note weight)], 'add column');

# RENAME COLUMN, ALTER TYPE, DROP COLUMN
$node->safe_psql('postgres', q{
ALTER TABLE items RENAME COLUMN note TO remark;
ALTER TABLE items ALTER COLUMN weight TYPE int8;
ALTER TABLE items DROP COLUMN tags;
UPDATE items SET remark = 'changed' WHERE id = 1;
});
ok(wait_replica('alter'), 'RENAME/ALTER TYPE/DROP COLUMN reached the replica');
my $decl = declared('items');
unlike($decl, qr/tags/, 'the dropped column is gone');
like($decl, qr/remark text/i, 'the renamed column has its new name');
same_table('items', [qw(id name qty remark weight)], 'alter');

# CREATE/DROP INDEX, RENAME TABLE
$node->safe_psql('postgres', q{
CREATE INDEX items_name_idx ON items (name DESC);
CREATE UNIQUE INDEX items_name_weight ON items (name, weight);
});
ok(wait_replica('index'), 'CREATE INDEX reached the replica');
is(zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items' AND name LIKE 'items_name%'}),
	'2', 'both indexes exist in the replica');
$node->safe_psql('postgres', q{
DROP INDEX items_name_idx;
ALTER TABLE items RENAME TO goods;
INSERT INTO goods (id, name) VALUES (4, 'four');
});
ok(wait_replica('rename'), 'DROP INDEX and RENAME TABLE reached the replica');
is(zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE name = 'items_name_idx'}), '0', 'the dropped index is gone');
is(zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'items'}), '0', 'the old table name is gone');
same_table('goods', [qw(id name qty remark weight)], 'rename');

# DDL and DML mixed in one transaction, then DROP TABLE
$node->safe_psql('postgres', q{
BEGIN;
CREATE TABLE mixed (id int PRIMARY KEY, v text);
INSERT INTO mixed VALUES (1, 'a');
ALTER TABLE mixed ADD COLUMN w int DEFAULT 3;
INSERT INTO mixed VALUES (2, 'b', 4);
UPDATE mixed SET v = 'c' WHERE id = 1;
COMMIT;
});
ok(wait_replica('mixed'), 'DDL and DML in one transaction reached the replica');
same_table('mixed', [qw(id v w)], 'mixed');
$node->safe_psql('postgres', 'DROP TABLE goods');
ok(wait_replica('drop'), 'DROP TABLE reached the replica');
is(zs_sqlite($file, q{SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goods'}), '0', 'the dropped table is gone');

# Nothing for DDL outside the publication or outside the database
my $before = schema_rows();
$node->safe_psql('postgres', q{
CREATE TABLE private.hidden (id int PRIMARY KEY);
ALTER TABLE private.hidden ADD COLUMN x int;
CREATE INDEX ON private.hidden (x);
});
$node->safe_psql('postgres', 'CREATE DATABASE other');
is($node->psql('other', q{CREATE TABLE t (id int PRIMARY KEY); ALTER TABLE t ADD COLUMN y text; DROP TABLE t;}),
	0, 'DDL in a database without the extension works');
zs_wait_catchup($node);
is(schema_rows(), $before, 'DDL on unpublished tables emits no schema change');

# An application's logical messages are never data; a transaction holding
# only a transactional one is stored as an empty begin/commit
my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
$node->safe_psql('postgres', q{SELECT pg_logical_emit_message(true, 'app/event', 'hello')});
$node->safe_psql('postgres', q{SELECT pg_logical_emit_message(false, 'app/event', 'not transactional')});
zs_wait_catchup($node);
is($node->safe_psql('postgres', qq{
SELECT string_agg(change->>'tag', ',' ORDER BY watermark COLLATE "C", pos)
  FROM "zero_0/cdc"."changeLog" WHERE watermark > '$head' COLLATE "C"}),
	'begin,commit', 'an application message is stored as an empty transaction, never as data');

ok(wait_replica('end'), 'the replica follows to the end');
$cli->signal('TERM');
$cli->finish;
$node->stop;
done_testing();
