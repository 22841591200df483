# Property test of value encoding: thousands of random values of every
# built-in type (and arrays of them: 1-D to 6-D, explicit lower bounds, NULL
# elements, large), plus each type's edge cases, inserted through a real
# server in many transactions; then every row is read back from the change
# log and compared with PostgreSQL's own output of the same value
# (test/tools/value_check.py says how each type must decode).
#
# Properties:
#  * the decoder never stops: every group of transactions is stored within
#    a bounded time, status() stays 'streaming' with no last_error and no
#    value_errors (values stored as text because they could not be encoded);
#  * every inserted row is in the change log exactly once;
#  * every value decodes to what PostgreSQL says it is (numbers within the
#    double's rounding, everything else exactly);
#  * numbers and json[] elements are spelled as zero-cache's JavaScript
#    spells them;
#  * a sentinel transaction committed last is stored: nothing is held back.
#
# The values come from a seed printed below; ZS_FUZZ_SEED=<n> repeats a run.
# Groups that could stop a decoder (extreme numerics, json[] number edges,
# deep json) come last. Should a group stop it, the test says which value
# (from the server log), checks what was stored, and goes on with the next
# groups on a fresh cluster, so one such value hides nothing else.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use ZeroStreamTest;

my $CHECK = "$FindBin::RealBin/../tools/value_check.py";
my $GROUP_TIMEOUT = 60;    # seconds for the decoder to store one group
my $MAX_CLUSTERS = 4;      # fresh clusters after a stuck decoder, at most

plan skip_all => 'python3 is not available'
  unless system('python3 -c "import sys; sys.exit(sys.version_info < (3, 6))" 2>/dev/null') == 0;

my $seed = $ENV{ZS_FUZZ_SEED} // int(time() * 1000 + $$) % 1_000_000_007;
diag "value fuzz seed $seed (repeat with ZS_FUZZ_SEED=$seed)";

my $dir = PostgreSQL::Test::Utils::tempdir('value_fuzz');

# A cluster whose server settings differ from the decoder's own display
# settings (TimeZone UTC, ISO dates, ...): stored values must not depend on
# them. The inserts are read with ISO dates; the session zone stays
# Asia/Kolkata, so timestamptz inputs without an offset cross LMT offsets.
my $cluster_count = 0;

sub new_cluster
{
	$cluster_count++;
	my $node = PostgreSQL::Test::Cluster->new("fuzz$cluster_count");
	$node->init(allows_streaming => 'logical', extra => [ '--encoding=UTF8', '--locale=C' ]);
	$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'zero_stream'
wal_level = logical
max_replication_slots = 10
zero_stream.database = 'postgres'
zero_stream.port = 0
zero_stream.replica_file = ''
zero_stream.poll_interval = 20
log_min_messages = info
timezone = 'Asia/Kolkata'
datestyle = 'SQL, DMY'
intervalstyle = 'iso_8601'
extra_float_digits = 0
bytea_output = 'escape'
});
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
	zs_wait_streaming($node);
	return $node;
}

sub run_sql_file
{
	my ($node, $file) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGOPTIONS} = '-c datestyle=ISO,YMD';
	IPC::Run::run(
		[
			'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', $node->host, '-p', $node->port,
			'-d', 'postgres', '-f', $file
		],
		'>', \$out, '2>', \$err)
	  or die "psql -f $file failed (a generator bug; seed $seed): $err";
}

# state, last_error, value_errors, last_value_error, confirmed_lsn
sub decoder_status
{
	my ($node) = @_;
	my $row = $node->safe_psql('postgres', q{
SELECT concat_ws(E'\x1f', state, coalesce(last_error, ''),
                 coalesce((to_jsonb(s)->>'value_errors')::bigint, 0),
                 coalesce(to_jsonb(s)->>'last_value_error', ''), confirmed_lsn)
  FROM zero_stream.status() s});
	return split /\x1f/, $row, -1;
}

# The server log's lines about values the decoder could not encode.
sub value_log_lines
{
	my ($node) = @_;
	my @lines = grep { /cannot encode|could not encode|value of .* as Zero JSON|The value's text/i }
	  split /\n/, slurp_file($node->logfile);
	my %seen;
	@lines = grep { !$seen{ s/^\S+ \S+ \S+ \[\d+\] //r }++ } @lines;
	splice @lines, 0, @lines - 6 if @lines > 6;
	return join "\n", map { length > 400 ? substr($_, 0, 400) . '...' : $_ } @lines;
}

# Wait until every committed transaction is stored. Returns 'ok', or
# ('stuck', error) when the decoder keeps failing without progress, or
# ('timeout', status) after $limit seconds.
sub wait_stored
{
	my ($node, $limit) = @_;
	my $deadline = time + $limit;
	my ($err_since, $last_lsn) = (undef, '');
	for (;;)
	{
		return ('ok') if eval { zs_wait_catchup($node, '1 s'); 1 };
		my ($state, $err, undef, undef, $lsn) = decoder_status($node);
		if ($lsn ne $last_lsn || $err eq '')
		{
			$err_since = $err eq '' ? undef : time;
			$last_lsn = $lsn;
		}
		return ('stuck', "state '$state', last_error: $err") if defined $err_since && time - $err_since >= 4;
		return ('timeout', "state '$state', last_error: $err, confirmed_lsn $lsn") if time > $deadline;
	}
}

# Run the checker on one cluster's tables and change log, report.
sub check_cluster
{
	my ($node, $label) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			'python3', $CHECK, 'check', '--dir', $dir, '--host', $node->host,
			'--port', $node->port, '--max-report', '30', '--per-column', '2'
		],
		'>', \$out, '2>', \$err);
	my %r = $out =~ /^RESULT (\w+)=(\d+)$/mg;
	unless (ok(defined $r{values_checked}, "$label: value_check.py ran"))
	{
		diag $out . $err;
		return;
	}
	my @details = grep { !/^RESULT / } split /\n/, $out;
	my $summary = join "\n", grep { /^(SUMMARY|MISSING|DUPLICATE|UNPARSABLE)/ } @details;
	my $mismatches = join "\n", grep { !/^(SUMMARY|MISSING|DUPLICATE|UNPARSABLE)/ } @details;

	ok( $r{missing} == 0 && $r{duplicate} == 0 && $r{unknown} == 0 && $r{unparsable} == 0,
		"$label: each of $r{rows_expected} rows is in the change log exactly once")
	  or diag "missing $r{missing}, duplicated $r{duplicate}, unknown $r{unknown}, "
	  . "unparsable $r{unparsable} (seed $seed)\n$summary";
	is($r{value_mismatches}, 0,
		"$label: all $r{values_checked} values decode to PostgreSQL's output")
	  or diag "seed $seed\n" . join("\n", grep { /^SUMMARY (value|checker) / } split /\n/, $summary)
	  . "\n" . join("\n", grep { !/^\s*$/ } $mismatches =~ /^(MISMATCH \[(?:value|checker)\].*\n(?:    .*\n?)*)/mg);
	is($r{spelling_mismatches}, 0,
		"$label: numbers and json[] elements are spelled as JavaScript spells them")
	  or diag "seed $seed\n" . join("\n", grep { /^SUMMARY spelling / } split /\n/, $summary)
	  . "\n" . join("\n", grep { !/^\s*$/ } $mismatches =~ /^(MISMATCH \[spelling\].*\n(?:    .*\n?)*)/mg);
	note $out;
}

# ---------------------------------------------------------------- generate
my $node = new_cluster();
my $with_xml = $node->psql('postgres', q{SELECT '<a/>'::xml}) == 0;
note 'xml: ' . ($with_xml ? 'built' : 'not built, skipped');

my ($gen_out, $gen_err) = ('', '');
IPC::Run::run([ 'python3', $CHECK, 'generate', '--seed', $seed, '--out', $dir, ($with_xml ? '--xml' : ()) ],
	'>', \$gen_out, '2>', \$gen_err)
  or die "value_check.py generate failed: $gen_err";
my @groups = map { my @f = split / /; { name => $f[0], file => $f[1], rows => $f[2], txs => $f[3] } }
  grep { /\S/ } split /\n/, $gen_out;
my $total_rows = 0;
$total_rows += $_->{rows} for @groups;
note "groups: " . join(', ', map { "$_->{name} ($_->{rows} rows, $_->{txs} tx)" } @groups);
cmp_ok($total_rows, '>=', 2000, "generated $total_rows rows in " . scalar(@groups) . ' groups');

run_sql_file($node, "$dir/schema.sql");

# ---------------------------------------------------------------- insert
my $started = time;
for my $i (0 .. $#groups)
{
	my $g = $groups[$i];
	run_sql_file($node, "$dir/$g->{file}");
	my ($result, $detail) = wait_stored($node, $GROUP_TIMEOUT);
	my ($state, $err, $value_errors, $last_value_error) = decoder_status($node);
	my $ok = ok($result eq 'ok' && $value_errors == 0,
		"group $g->{name}: $g->{rows} rows in $g->{txs} transactions stored, no value error");
	next if $ok;

	diag "group $g->{name} (seed $seed): "
	  . ($result eq 'ok' ? "value_errors $value_errors, last: $last_value_error" : "decoder $result: $detail");
	my $log = value_log_lines($node);
	diag "server log:\n$log" if $log ne '';
	# the decoder is stuck: after the last group, the sentinel shows it
	next if $result eq 'ok' || $i == $#groups;

	# check what it stored, then carry on with a fresh cluster
	check_cluster($node, "cluster $cluster_count (stopped in group $g->{name})");
	$node->stop('immediate');
	if ($cluster_count >= $MAX_CLUSTERS)
	{
		fail("groups after $g->{name} not run: the decoder stopped on $MAX_CLUSTERS clusters");
		$node = undef;
		last;
	}
	$node = new_cluster();
	run_sql_file($node, "$dir/schema.sql");
}
note sprintf('inserted and stored in %.1f s', time - $started);

# ---------------------------------------------------------------- sentinel
SKIP:
{
	skip 'no running cluster left', 5 unless defined $node;

	$node->safe_psql('postgres', q{INSERT INTO fz_sentinel VALUES (1, 'committed last')});
	my ($result, $detail) = wait_stored($node, 30);
	is($result, 'ok', 'the sentinel transaction, committed last, is stored')
	  or diag $detail;
	is( $node->safe_psql('postgres', q~
SELECT count(*) FROM "zero_0/cdc"."changeLog"
 WHERE change::text LIKE '{"tag":"insert","relation":{"tag":"relation",%"name":"fz_sentinel"%'~),
		'1', 'the sentinel row is in the change log once');

	my ($state, $err, $value_errors, $last_value_error) = decoder_status($node);
	is($state, 'streaming', 'the decoder is streaming');
	is($err, '', 'zero_stream.status().last_error is empty');
	is($value_errors, 0, 'zero_stream.status().value_errors is 0')
	  or diag "last_value_error: $last_value_error\n" . value_log_lines($node);

	check_cluster($node, "cluster $cluster_count");
	$node->stop;
}

done_testing();
