# Storage compatibility with zero-cache: run the golden workload
# (test/golden: every value type, DML kind and identity) and compare
# our change log with the one zero-cache 1.9.0 stored. Every row must be
# identical except the documented corrections: every schema-change row and
# the backfill transactions of T58 (ADD COLUMN ... DEFAULT now()) included.
# Then compare our backup replica with zero-cache's replica of the same log.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

# vendored in the repository (test/golden/README.md says how it was captured)
my $golden = "$FindBin::RealBin/../golden";
die "golden change log missing: $golden/changelog.jsonl" unless -f "$golden/changelog.jsonl";

my $node = zs_new_node('golden', no_extension => 1,
	extra_conf => "zero_stream.publications = 'zc_pub'\n");
my @conn = ('-h', $node->host, '-p', $node->port, '-d', 'postgres');
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', @conn, '-f', "$golden/setup.sql" ],
	'golden setup.sql');
$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
zs_wait_streaming($node);
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', @conn, '-f', "$golden/workload.sql" ],
	'golden workload.sql');
zs_wait_catchup($node);

my $ours = $node->basedir . '/ours.jsonl';
my ($stdout, $stderr);
IPC::Run::run([ "$golden/dump_changelog.sh", @conn, 'zero_0/cdc' ], '>', $ours, '2>', \$stderr)
  or die "dump failed: $stderr";
IPC::Run::run([ 'python3', "$golden/compare.py", '--max-diffs', '1000', "$golden/changelog.jsonl", $ours ],
	'>', \$stdout, '2>', \$stderr);

my ($identical, $total) = $stdout =~ /^(\d+) of (\d+) changes identical$/m;
ok(defined $identical, "compare.py ran: $identical of $total changes identical") or diag $stdout . $stderr;

# the columns whose values zero_stream corrects (test/golden/README.md)
my %corrected = map { $_ => 1 }
  qw(c_date c_numeric c_numeric_arr c_point_arr c_text_arr c_timestamp c_timestamptz_arr);

my (@unexpected, $corrections, $corrected_rows);
for my $block (split /^(?=--- )/m, $stdout)
{
	next unless $block =~ /^--- /;
	my @paths = $block =~ /^  \.change\.(\S+):$/mg;
	if ($block =~ /^--- (golden|other) only/ || !@paths)
	{
		push @unexpected, $block;
		next;
	}
	my $all_corrected = 1;
	for my $path (@paths)
	{
		(my $column = $path) =~ s/^new\.//;
		$column =~ s/\[\d+\]$//;
		$corrected{$column} ? $corrections++ : ($all_corrected = 0);
	}
	$all_corrected ? $corrected_rows++ : push @unexpected, $block;
}
is(scalar(@unexpected), 0,
	"every difference is a documented correction ($corrections values in $corrected_rows rows)")
  or diag join "\n", @unexpected[ 0 .. ($#unexpected < 5 ? $#unexpected : 5) ];
is($identical + $corrected_rows, $total,
	"all $total rows compared: $identical identical, $corrected_rows with corrected values, none missing");

# The backup replica against zero-cache's replica of the same log: every
# value and its SQLite storage class, except the corrections and the values
# of now() (test/tools/golden_replica.py).
$node->poll_query_until('postgres',
	'SELECT backup_watermark = last_watermark FROM zero_stream.status()')
  or die 'the replicator did not catch up';
IPC::Run::run([ 'python3', "$FindBin::RealBin/../tools/golden_replica.py", "$golden/replica-dump.txt",
		$node->data_dir . '/zero_stream/replica.db' ], '>', \$stdout, '2>', \$stderr);
is($? >> 8, 0, 'the backup replica stores every value as zero-cache\'s replica does')
  or diag $stdout . $stderr;
my ($compared, $same) = $stdout =~ /(\d+) values compared: (\d+) identical/;
note $stdout;
cmp_ok($same // 0, '>', 300, "values compared with zero-cache's replica: " . ($stdout =~ s/\n.*//sr));

$node->stop;
done_testing();
