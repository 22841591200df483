# Exact replicas: "_zero.column_metadata".character_max_length as
# information_schema.columns reports it (char, varchar, bit, varbit, domains),
# and a REPLICA IDENTITY FULL table without a key holding identical rows,
# whose updates and deletes change exactly one row each, in the backup
# replica and in a live zero-stream-replica, row by row against Postgres;
# and the initial copy's indexes: every one zero-cache's initial sync
# creates (unique or not, ASC/DESC), none of the partial or expression ones.
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

# "big" is stored out of line: an update of another column leaves it
# unchanged in TOAST (the decoder takes it from the FULL old row)
my $node = zs_new_node('exact', no_extension => 1, before_extension => q{
CREATE DOMAIN vc7 AS varchar(7);
CREATE DOMAIN vc7_outer AS vc7;
CREATE DOMAIN bit4 AS bit(4);
CREATE TABLE widths (id int PRIMARY KEY, b bit(8), vb varbit(5), c char(3), vc varchar(10),
  d vc7, dd vc7_outer, db bit4, b1 bit, c1 char, bp bpchar, ub varbit, uvc varchar, t text,
  n numeric(10,2), vca varchar(4)[], ts timestamp(3));
INSERT INTO widths VALUES (1, B'10101010', B'101', 'ab', 'hello', 'dom', 'dd', B'1010', B'1', 'x',
  'bp', B'1111', 'v', 't', 1.5, '{ab}', '2024-01-02 03:04:05.678');
CREATE TABLE dups (a int, b text, big text);
ALTER TABLE dups REPLICA IDENTITY FULL;
ALTER TABLE dups ALTER big SET STORAGE EXTERNAL;
INSERT INTO dups VALUES (1, 'x', NULL), (1, 'x', NULL), (2, NULL, NULL), (2, NULL, NULL);
INSERT INTO dups SELECT 3, 'big', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 200) g)
  FROM generate_series(1, 2);
CREATE TABLE idx (id int PRIMARY KEY, code text UNIQUE, a int, b int);
CREATE INDEX idx_a_b ON idx (a DESC, b);
CREATE INDEX idx_partial ON idx (a) WHERE b > 0;
CREATE INDEX idx_expr ON idx (lower(code));
INSERT INTO idx SELECT g, 'c' || g, g % 7, g % 3 FROM generate_series(1, 50) g;
});
my $sport = $node->{zs_server_port};
my $backup = $node->data_dir . '/zero_stream/replica.db';
my $dir = $node->basedir;
my $app = "$dir/app.db";

sub at_head
{
	my ($file, $label) = @_;
	zs_wait_catchup($node);
	my $head = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 600)
	{
		return 1 if -f $file
		  && zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') eq $head;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$label: " . zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') . " vs $head");
	return 0;
}

# the same query on both sides, rows compared one by one in sorted order
sub same_rows
{
	my ($file, $sql, $label) = @_;
	my @pg = sort split /\n/, $node->safe_psql('postgres', $sql);
	my @lite = sort split /\n/, zs_sqlite($file, $sql);
	my $i = 0;
	$i++ while $i < @lite && $i < @pg && $lite[$i] eq $pg[$i];
	ok($i == @pg && $i == @lite, "$label (" . scalar(@pg) . " rows)")
	  or diag("first difference at row $i: SQLite <" . join('> <', @lite)
		  . ">; Postgres <" . join('> <', @pg) . '>');
}

my $dups_sql = q{SELECT a || ':' || coalesce(b, '-') || ':' || coalesce(length(big), -1) || ':'
  || coalesce(substr(big, 3001, 16), '-') FROM dups};

sub dups_equal
{
	my ($label) = @_;
	ok(at_head($backup, $label), "$label: the backup replica caught up");
	same_rows($backup, $dups_sql, "$label: backup replica's dups equals Postgres");
	ok(at_head($app, $label), "$label: zero-stream-replica caught up");
	same_rows($app, $dups_sql, "$label: zero-stream-replica's dups equals Postgres");
}

$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
zs_wait_streaming($node);
ok(at_head($backup, 'copy'), 'the initial copy wrote the backup replica');

# ---------------------------------------------------------------------------
# column_metadata as information_schema reports it
# ---------------------------------------------------------------------------
{
	my @pg = sort split /\n/, $node->safe_psql('postgres', q{
SELECT table_name || '.' || column_name || '=' || coalesce(character_maximum_length::text, 'NULL')
  FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN ('widths', 'dups')});
	my @lite = sort split /\n/, zs_sqlite($backup, q{
SELECT table_name || '.' || column_name || '=' || coalesce(character_max_length, 'NULL')
  FROM "_zero.column_metadata" WHERE table_name IN ('widths', 'dups')});
	is(join(' ', @lite), join(' ', @pg),
		'column_metadata.character_max_length is information_schema.columns.character_maximum_length');
	is(scalar(@lite), 20, 'every column has its metadata');
	is(zs_sqlite($backup, q{SELECT group_concat(column_name || '=' || coalesce(character_max_length, 'NULL'), ' ')
	  FROM (SELECT * FROM "_zero.column_metadata" WHERE table_name = 'widths'
	          AND column_name IN ('b', 'vb', 'c', 'vc', 'd', 'db', 'b1', 'c1', 'bp', 'ub', 'uvc', 'vca') ORDER BY column_name)}),
		'b=8 b1=1 bp=NULL c=3 c1=1 d=7 db=4 ub=NULL uvc=NULL vb=5 vc=10 vca=NULL',
		'bit(8), varbit(5), char(3), varchar(10), a domain over varchar(7), unbounded types');
}

# ---------------------------------------------------------------------------
# identical rows of a keyless REPLICA IDENTITY FULL table
# ---------------------------------------------------------------------------
my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'exact', "ws://127.0.0.1:$sport", $app ],
	'>', "$dir/cli.out", '2>', "$dir/cli.log");
dups_equal('after the copy');
is(zs_sqlite($app, 'SELECT count(*) FROM dups'), '6', 'the copied identical rows are all there');

# ---------------------------------------------------------------------------
# the indexes of the initial copy, declared as zero-cache declares them
# ---------------------------------------------------------------------------
{
	my $expected = join("\n",
		'CREATE INDEX "idx_a_b" ON "idx" ("a" DESC,"b" ASC)',
		'CREATE UNIQUE INDEX "idx_code_key" ON "idx" ("code" ASC)',
		'CREATE UNIQUE INDEX "idx_pkey" ON "idx" ("id" ASC)');
	my $sql = q{SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idx' ORDER BY name};
	is(zs_sqlite($backup, $sql), $expected,
		'backup replica: the key, a second unique and a DESC index; no partial or expression index');
	is(zs_sqlite($app, $sql), $expected,
		'zero-stream-replica: the key, a second unique and a DESC index; no partial or expression index');
	my $rows = q{SELECT id || ':' || code || ':' || a || ':' || b FROM idx};
	same_rows($backup, $rows, 'backup replica: the indexed table\'s rows');
	same_rows($app, $rows, 'zero-stream-replica: the indexed table\'s rows');
}

$node->safe_psql('postgres',
	q{UPDATE dups SET b = 'y' WHERE ctid = (SELECT ctid FROM dups WHERE a = 1 LIMIT 1)});
dups_equal('one of two identical rows updated');
is(zs_sqlite($app, q{SELECT group_concat(b, ' ') FROM (SELECT b FROM dups WHERE a = 1 ORDER BY b)}), 'x y',
	'the update changed exactly one of the identical rows');

$node->safe_psql('postgres',
	q{UPDATE dups SET b = 'y' WHERE ctid = (SELECT ctid FROM dups WHERE a = 1 AND b = 'x' LIMIT 1)});
dups_equal('the other one updated');
is(zs_sqlite($backup, 'SELECT count(*) FROM dups WHERE a = 1'), '2', 'the second update inserted nothing');

$node->safe_psql('postgres',
	q{DELETE FROM dups WHERE ctid = (SELECT ctid FROM dups WHERE a = 2 LIMIT 1)});
dups_equal('one of two identical rows with NULLs deleted');
is(zs_sqlite($app, 'SELECT count(*) FROM dups WHERE a = 2 AND b IS NULL'), '1', 'exactly one NULL row is left');

$node->safe_psql('postgres',
	q{UPDATE dups SET a = 4 WHERE ctid = (SELECT ctid FROM dups WHERE a = 3 LIMIT 1)});
dups_equal('one of two identical rows updated, its TOASTed value unchanged');
is(zs_sqlite($app, 'SELECT group_concat(a || length(big), \' \') FROM (SELECT * FROM dups WHERE a IN (3, 4) ORDER BY a)'),
	'36400 46400', 'the unchanged TOAST value is kept');

$node->safe_psql('postgres', q{
INSERT INTO dups VALUES (5, 's', NULL), (5, 's', NULL), (6, NULL, 'n'), (6, NULL, 'n');
UPDATE dups SET b = 't' WHERE a = 5;
DELETE FROM dups WHERE a = 1;
UPDATE dups SET big = 'm' WHERE ctid = (SELECT ctid FROM dups WHERE a = 6 LIMIT 1);
});
dups_equal('streamed identical rows, both updated by one statement, both deleted');

# a keyless FULL table published after the copy: created from its first row
$node->safe_psql('postgres', q{
CREATE TABLE late_full (k int, v text);
ALTER TABLE late_full REPLICA IDENTITY FULL;
INSERT INTO late_full VALUES (1, 'a'), (1, 'a'), (2, NULL), (2, NULL);
});
$node->safe_psql('postgres', q{
UPDATE late_full SET v = 'b' WHERE ctid = (SELECT ctid FROM late_full WHERE k = 1 LIMIT 1);
DELETE FROM late_full WHERE ctid = (SELECT ctid FROM late_full WHERE k = 2 LIMIT 1);
});
my $late_sql = q{SELECT k || ':' || coalesce(v, '-') FROM late_full};
ok(at_head($backup, 'late table'), 'late table: the backup replica caught up');
same_rows($backup, $late_sql, 'a keyless FULL table published after the copy: backup replica equals Postgres');
ok(at_head($app, 'late table'), 'late table: zero-stream-replica caught up');
same_rows($app, $late_sql, 'a keyless FULL table published after the copy: zero-stream-replica equals Postgres');

$cli->signal('INT');
$cli->finish;
$node->stop;
done_testing();
