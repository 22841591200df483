# Values that could stop or corrupt replication (no value PostgreSQL
# accepts may be a poison pill), each through the real path: decoder, change log, server, a live
# zero-stream-replica, and its SQLite file compared with PostgreSQL.
#  1. numerics beyond the double's range or precision (1e64, 2e308, -1e70,
#     70-digit integers and fractions, numeric[]), which once made the
#     decoder fail and restart forever;
#  2. numerics outside the normal doubles, spelled as JavaScript's Number();
#  3. json[] elements re-written as JavaScript's JSON.parse does;
#  4. timestamps after 294247 AD;
#  5. a REPLICA IDENTITY FULL table without a key holding identical rows;
#  6. column_metadata.character_max_length of bit(8).
# And the fallback: a value the encoder cannot read is stored as its text,
# reported with its transaction, and holds nothing back.
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

my $schema = q{
CREATE TABLE nums (id int PRIMARY KEY, n numeric, na numeric[]);
CREATE TABLE jarr (id int PRIMARY KEY, j json[], jb jsonb[]);
CREATE TABLE times (id int PRIMARY KEY, t timestamp, tz timestamptz, d date);
CREATE TABLE dup (a int, b text);
ALTER TABLE dup REPLICA IDENTITY FULL;
CREATE TABLE bits (id int PRIMARY KEY, b bit(8), vb varbit(5), c char(3), v varchar(10));
CREATE TABLE small (id int PRIMARY KEY, s int2);
INSERT INTO nums VALUES (0, 1, '{1}');
INSERT INTO dup VALUES (1, 'x'), (1, 'x'), (2, NULL), (2, NULL);
INSERT INTO bits VALUES (1, B'10101010', B'101', 'ab', 'hello');
};

my $node = zs_new_node('poison', no_extension => 1, before_extension => $schema);
$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
zs_wait_streaming($node);
my $sport = $node->{zs_server_port};
my $dir = $node->basedir;
my $file = "$dir/app.db";

my $cli = IPC::Run::start([ $CLI, 'sync', '--task-id', 'poison', "ws://127.0.0.1:$sport", $file ],
	'>', "$dir/cli.out", '2>>', "$dir/cli.log");

sub state_version
{
	return '' unless -f $file;
	return zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"');
}

sub wait_replica
{
	my ($label) = @_;
	zs_wait_catchup($node, '60 s');
	my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 600)
	{
		return 1 if state_version() eq $target;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$label: replica at " . state_version() . ", log at $target");
	return 0;
}

sub decoder_healthy
{
	my ($label) = @_;
	my $st = $node->safe_psql('postgres',
		q{SELECT state || '|' || coalesce(last_error, '') FROM zero_stream.status()});
	is($st, 'streaming|', "$label: the decoder streams, no error");
}

ok(wait_replica('initial'), 'the replica restored the snapshot and follows');

# ---------------------------------------------------------------------------
# 1, 2: numerics. Every one in its own transaction, then a sentinel.
# ---------------------------------------------------------------------------
my @numerics = (
	'1e64', '2e308', '-2e308', '-1e70', '1' . ('0' x 70), '1.' . ('0' x 70),
	'0.' . ('0' x 69) . '1', ('9' x 70) . '.' . ('9' x 70),
	'1e-1000', '-1e-1000', '1.23456789e-320', '5e-324', '2.5e-324',
	'9007199254740993', '12345678901234567890', '0.1', 'NaN', 'Infinity', '-Infinity');
my $id = 0;
for my $v (@numerics)
{
	$id++;
	$node->safe_psql('postgres', "INSERT INTO nums VALUES ($id, '$v', ARRAY['$v'::numeric, 1])");
}
$node->safe_psql('postgres', q{INSERT INTO nums VALUES (1000, 42, '{1e64,NULL}')});
ok(wait_replica('numerics'), 'every numeric transaction reached the replica');
decoder_healthy('numerics');

# What zero-cache writes: JSON.stringify(Number(text)) (Node's outputs),
# integers beyond 2^53 in exponent form (the documented correction)
my %js = (
	'1e64' => '1e+64', '2e308' => 'null', '-2e308' => 'null', '-1e70' => '-1e+70',
	('1' . ('0' x 70)) => '1e+70', ('1.' . ('0' x 70)) => '1',
	('0.' . ('0' x 69) . '1') => '1e-70', (('9' x 70) . '.' . ('9' x 70)) => '1e+70',
	'1e-1000' => '0', '-1e-1000' => '0', '1.23456789e-320' => '1.2347e-320',
	'5e-324' => '5e-324', '2.5e-324' => '5e-324', '9007199254740993' => '9.007199254740992e+15',
	'12345678901234567890' => '1.2345678901234567e+19', '0.1' => '0.1', 'NaN' => 'null',
	'Infinity' => 'null', '-Infinity' => 'null');
my $stored = $node->safe_psql('postgres', q{
SELECT string_agg((change->'new'->>'id') || '=' || coalesce(change->'new'->>'n', 'null')
                  || '=' || (change->'new'->'na')::text, ' ' ORDER BY (change->'new'->>'id')::int)
  FROM "zero_0/cdc"."changeLog"
 WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'nums'});
my %got = map { my ($i, $n, $a) = split /=/, $_, 3; ($i => [ $n, $a ]) } split / /, $stored;
my @wrong;
$id = 0;
for my $v (@numerics)
{
	$id++;
	my $want = $js{$v};
	my ($n, $a) = @{ $got{$id} // [ 'missing', '' ] };
	push @wrong, "$v: n=$n (want $want)" unless $n eq $want;
	push @wrong, "$v: na=$a (want [$want,1])" unless $a eq "[$want,1]";
}
is(join('; ', @wrong), '', 'numerics are stored as JavaScript\'s Number() prints them');
is($got{1000}[1], '[1e+64,null]', 'numeric[] with 1e64 and NULL');

# The replica holds the same doubles (NULL for what JavaScript makes null)
my @rows = split /\n/, zs_sqlite($file,
	q{SELECT id || '|' || CASE WHEN n IS NULL THEN 'NULL' ELSE printf('%.17g', n) END FROM nums WHERE id BETWEEN 1 AND 999 ORDER BY id});
my %replica = map { split /\|/, $_, 2 } @rows;
@wrong = ();
$id = 0;
for my $v (@numerics)
{
	$id++;
	my $want = $js{$v};
	my $have = $replica{$id} // 'missing';
	if ($want eq 'null')
	{
		push @wrong, "$v: $have (want NULL)" unless $have eq 'NULL';
		next;
	}
	my $w = 0 + $want;
	my $h = $have eq 'NULL' ? 'nan' : 0 + $have;
	push @wrong, "$v: $have (want $want)"
	  unless $h eq 'nan' ? 0 : abs($h - $w) <= abs($w) * 1e-15 + 5e-324;
}
is(join('; ', @wrong), '', 'the SQLite replica holds each numeric as the same double');

# ---------------------------------------------------------------------------
# 3: json[] elements as JavaScript parses and re-writes them
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
INSERT INTO jarr VALUES
  (1, ARRAY['[1e+400, {"a":1e-400,"b":1,"a":2}]'::json, '{"b":1,"2":2,"1":3}'],
      ARRAY['{"x": 1e-400, "y": [0.1000000000000000055511151231257827]}'::jsonb]),
  (2, ARRAY['"lone \ud800"'::json, '12345678901234567890123', 'null'], NULL),
  (3, ARRAY[repeat('[', 3000) || '1' || repeat(']', 3000)]::json[], NULL);
});
ok(wait_replica('json arrays'), 'json[] transactions reached the replica');
decoder_healthy('json arrays');
is(zs_sqlite($file, q{SELECT j || ' ' || jb FROM jarr WHERE id = 1}),
	'[[null,{"a":2,"b":1}],{"1":3,"2":2,"b":1}] [{"x":0,"y":[0.1]}]',
	'json[] elements: out-of-range numbers null, last duplicate key, index keys first');
is(zs_sqlite($file, q{SELECT j FROM jarr WHERE id = 2}),
	"[\"lone \x{ef}\x{bf}\x{bd}\",12345678901234567890123,null]",
	'json[] elements: a lone surrogate as Node writes it, big integers exact');
is(zs_sqlite($file, q{SELECT length(j) FROM jarr WHERE id = 3}), 6003,
	'json[] element nested 3,000 deep');

# ---------------------------------------------------------------------------
# 4: timestamps at the end of PostgreSQL's range
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{
INSERT INTO times VALUES
  (1, '294276-12-31 23:59:59.999999', '294276-12-31 23:59:59.999999+00', '5874897-12-31'),
  (2, '0099-06-15 12:00:00.5', '0001-01-01 00:00:00+00', '0044-03-15 BC'),
  (3, '4713-01-01 00:00:00 BC', '1969-12-31 23:59:59.999999+00', '0099-12-31');
});
ok(wait_replica('timestamps'), 'timestamp transactions reached the replica');
decoder_healthy('timestamps');
is($node->safe_psql('postgres', q{
SELECT change->'new'->>'t' FROM "zero_0/cdc"."changeLog"
 WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'times' AND change->'new'->>'id' = '1'}),
	'9224318015999999.999', 'a timestamp after 294247 AD is its exact milliseconds');
# the replica holds milliseconds: compare with PostgreSQL's own epoch
my $pg_ms = $node->safe_psql('postgres', q{
SELECT string_agg(id || ':' || round(extract(epoch FROM t) * 1000, 3) || ':'
                  || round(extract(epoch FROM tz) * 1000, 3) || ':' || (extract(epoch FROM d) * 1000)::bigint,
                  ' ' ORDER BY id) FROM times});
my $lite_ms = zs_sqlite($file, q{SELECT group_concat(id || ':' || printf('%.3f', t) || ':' || printf('%.3f', tz) || ':' || printf('%d', d), ' ') FROM (SELECT * FROM times ORDER BY id)});
my @pg = split / /, $pg_ms;
my @lite = split / /, $lite_ms;
my @diff;
for my $i (0 .. $#pg)
{
	my @a = split /:/, $pg[$i];
	my @b = split /:/, ($lite[$i] // '');
	for my $c (1 .. 3)
	{
		my ($x, $y) = ($a[$c], $b[$c] // 'missing');
		push @diff, "$a[0].$c: pg $x, replica $y"
		  unless $y ne 'missing' && abs($x - $y) <= abs($x) * 2e-16 + 0.0005;
	}
}
is(join('; ', @diff), '', 'timestamps and dates (years 1-99, BC, far future) equal PostgreSQL\'s epoch');

# ---------------------------------------------------------------------------
# 5: identical rows in a keyless REPLICA IDENTITY FULL table
# ---------------------------------------------------------------------------
sub dup_rows
{
	return (
		$node->safe_psql('postgres',
			q{SELECT string_agg(a || ':' || coalesce(b, 'NULL'), ',' ORDER BY a, b) FROM dup}),
		zs_sqlite($file,
			q{SELECT group_concat(a || ':' || coalesce(b, 'NULL'), ',') FROM (SELECT a, b FROM dup ORDER BY a, b)}));
}
$node->safe_psql('postgres',
	q{UPDATE dup SET b = 'y' WHERE ctid = (SELECT min(ctid) FROM dup WHERE a = 1)});
ok(wait_replica('dup update'), 'update of one identical row replicated');
my ($pg, $lite) = dup_rows();
is($lite, $pg, 'one of two identical rows updated: the replica changed exactly one');
$node->safe_psql('postgres', q{UPDATE dup SET b = 'z' WHERE a = 1 AND b = 'x'});
ok(wait_replica('dup second update'), 'second update replicated');
($pg, $lite) = dup_rows();
is($lite, $pg, 'the other identical row updated: still two rows');
$node->safe_psql('postgres',
	q{DELETE FROM dup WHERE ctid = (SELECT min(ctid) FROM dup WHERE a = 2)});
ok(wait_replica('dup delete'), 'delete of one identical row replicated');
($pg, $lite) = dup_rows();
is($lite, $pg, 'one of two identical rows (with NULLs) deleted: exactly one left');
is($lite, '1:y,1:z,2:NULL', 'the replica holds the expected rows');

# ---------------------------------------------------------------------------
# 6: column metadata as information_schema reports it
# ---------------------------------------------------------------------------
my $info = $node->safe_psql('postgres', q{
SELECT string_agg(column_name || '=' || coalesce(character_maximum_length::text, 'NULL'), ',' ORDER BY column_name)
  FROM information_schema.columns WHERE table_name = 'bits'});
my $meta = zs_sqlite($file, q{
SELECT group_concat(column_name || '=' || coalesce(character_max_length, 'NULL'), ',')
  FROM (SELECT * FROM "_zero.column_metadata" WHERE table_name = 'bits' ORDER BY column_name)});
is($meta, $info, 'column_metadata.character_max_length as information_schema reports it');
like($info, qr/b=8/, 'bit(8) has length 8');

# ---------------------------------------------------------------------------
# The fallback: a value the encoder cannot read (made so on purpose with a
# test-only setting) is stored as its text, with a report, and nothing waits
# ---------------------------------------------------------------------------
$node->safe_psql('postgres', q{ALTER SYSTEM SET zero_stream.test_unencodable_type = 21});
$node->reload;
my $log_offset = -s $node->logfile;
my $sent = 0;
for (1 .. 100)
{
	$sent++;
	$node->safe_psql('postgres', "INSERT INTO small VALUES ($sent, 7)");
	zs_wait_catchup($node, '30 s');
	last if $node->safe_psql('postgres', 'SELECT value_errors FROM zero_stream.status()') > 0;
	usleep(100_000);    # poll: until the decoder has reloaded the setting (a value error counted)
}
$node->safe_psql('postgres', q{INSERT INTO nums VALUES (2000, 1, NULL)});
zs_wait_catchup($node, '30 s');
decoder_healthy('fallback');
my ($count, $last) = split /\|/, $node->safe_psql('postgres',
	q{SELECT value_errors || '|' || last_value_error FROM zero_stream.status()});
ok($count >= 1, 'status counts the value stored as text');
like($last, qr/column public\.small\.s \(type 21\) in transaction \d+ \(commit LSN [0-9A-F]+\/[0-9A-F]+\)/,
	'status names the column, type, transaction and commit LSN');
is($node->safe_psql('postgres', qq{
SELECT change->'new'->'s' FROM "zero_0/cdc"."changeLog"
 WHERE change->>'tag' = 'insert' AND change->'relation'->>'name' = 'small' AND change->'new'->>'id' = '$sent'}),
	'"7"', 'the value is stored as its text');
ok($node->log_contains('WARNING:  cannot encode a value of column public\.small\.s', $log_offset),
	'the server log has the warning');
is($node->safe_psql('postgres', q{SELECT count(*) FROM "zero_0/cdc"."changeLog" WHERE change->'new'->>'id' = '2000'}),
	'1', 'the next transaction is stored too');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET zero_stream.test_unencodable_type});
$node->reload;

ok(wait_replica('end'), 'the replica follows to the end');
$cli->signal('TERM');
$cli->finish;
$node->stop;
done_testing();
