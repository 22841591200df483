# Shared helpers for zero_stream's TAP tests: a throwaway cluster with the
# extension preloaded, and checks over the stored change log.
package ZeroStreamTest;

use strict;
use warnings;

use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use Exporter 'import';

our @EXPORT = qw(zs_new_node zs_wait_streaming zs_wait_catchup zs_decoder_pid zs_rss_kb
  zs_check_log_integrity zs_sqlite zs_replica_equals zs_wait_ready zs_start_pgbench
  zs_wait_backup zs_changes_url zs_purge zs_session zs_run_in zs_close_session
  zs_wait_backfills zs_replica_at_head zs_test_certs zs_enable_tls zs_crash_kill
  zs_replica_reached zs_start_replica_sampler zs_check_replica_samples);

our $CDC = '"zero_0/cdc"';

# A started node with zero_stream preloaded, streaming database "postgres".
sub zs_new_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $server_port = PostgreSQL::Test::Cluster::get_free_port();
	$node->init(allows_streaming => 'logical');
	$node->{zs_server_port} = $server_port;
	$node->append_conf('postgresql.conf', qq{
zero_stream.port = $server_port
shared_preload_libraries = 'zero_stream'
wal_level = logical
max_replication_slots = 10
restart_after_crash = on
zero_stream.database = 'postgres'
zero_stream.poll_interval = 20
log_min_messages = info
# tests check the change log's contents: purging is tested on its own (025)
zero_stream.purge_interval = 0
# and exact messages: lag reports are tested on their own (031) and with zero-cache (023)
zero_stream.lag_report_interval = 0
});
	$node->append_conf('postgresql.conf', $opts{extra_conf}) if $opts{extra_conf};
	$node->start;
	$node->safe_psql('postgres', $opts{before_extension}) if $opts{before_extension};
	unless ($opts{no_extension})
	{
		$node->safe_psql('postgres', 'CREATE EXTENSION zero_stream');
		zs_wait_streaming($node);
	}
	return $node;
}

# After a kill -9 the postmaster restarts everything and runs crash
# recovery; a psql started meanwhile can fail in ways poll_query_until does
# not retry (its stdin write gets EPIPE). Wait until connections are accepted.
sub zs_wait_ready
{
	my ($node) = @_;
	for (1 .. 1800)
	{
		return if system('pg_isready', '-q', '-h', $node->host, '-p', $node->port) == 0;
		usleep(100_000);    # poll: until the server accepts connections
	}
	die 'the server did not accept connections again';
}

# kill -9 of the server process $pid: a crash. Waits until the postmaster
# has begun its crash restart (until then the old server still accepts
# connections) and then until it accepts connections again.
sub zs_crash_kill
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;
	kill('KILL', $pid) or die "kill -9 $pid: $!";
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	zs_wait_ready($node);
}

sub zs_wait_streaming
{
	my ($node) = @_;
	$node->poll_query_until('postgres',
		"SELECT state = 'streaming' FROM zero_stream.status()")
	  or die "decoder did not start streaming: "
	  . $node->safe_psql('postgres', 'SELECT last_error FROM zero_stream.status()');
}

sub zs_wait_catchup
{
	my ($node, $timeout) = @_;
	$timeout //= '180 s';
	my $ok = $node->safe_psql('postgres',
		"SELECT zero_stream.wait_for_catchup('$timeout')");
	die "decoder did not catch up within $timeout" unless $ok eq 't';
}

# Until the backup replica has the decoder's head.
sub zs_wait_backup
{
	my ($node) = @_;
	$node->poll_query_until('postgres', 'SELECT backup_watermark = last_watermark FROM zero_stream.status()')
	  or die 'the backup replica did not catch up';
}

# A v6 /changes URL of the node's subscriber server with the query %q.
sub zs_changes_url
{
	my ($node, %q) = @_;
	return "ws://127.0.0.1:$node->{zs_server_port}/replication/v6/changes?"
	  . join '&', map { "$_=$q{$_}" } sort keys %q;
}

# zero_stream.purge() now: (rows, floor, held_by)
sub zs_purge
{
	my ($node) = @_;
	my $r = $node->safe_psql('postgres',
		q{SELECT rows || '|' || coalesce(floor, '') || '|' || coalesce(held_by, '') FROM zero_stream.purge()});
	return split /\|/, $r, 3;
}

sub zs_decoder_pid
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'zero_stream decoder'");
}

# Resident set size of a process from /proc, in kB: (VmRSS, VmHWM, RssAnon)
sub zs_rss_kb
{
	my ($pid) = @_;
	open my $fh, '<', "/proc/$pid/status" or return;
	my %v;
	while (<$fh>)
	{
		$v{$1} = $2 if /^(VmRSS|VmHWM|RssAnon):\s+(\d+) kB/;
	}
	close $fh;
	return ($v{VmRSS}, $v{VmHWM}, $v{RssAnon});
}

# Every stored transaction: begin at pos 0, commit last, one of each, the
# commit's precommit equal to its watermark, watermarks strictly increasing
# with commit LSNs, and lastWatermark equal to the newest watermark.
sub zs_check_log_integrity
{
	my ($node, $label) = @_;
	my $bad = $node->safe_psql('postgres', qq{
WITH tx AS (
  SELECT watermark,
         count(*) FILTER (WHERE change->>'tag' = 'begin' AND pos = 0) AS begins,
         count(*) FILTER (WHERE change->>'tag' = 'commit') AS commits,
         max(pos) AS last_pos,
         max(pos) FILTER (WHERE change->>'tag' = 'commit') AS commit_pos,
         count(*) AS n,
         bool_and(precommit IS NULL OR precommit = watermark) AS precommit_ok
    FROM $CDC."changeLog" GROUP BY watermark)
SELECT count(*) FROM tx
 WHERE begins <> 1 OR commits <> 1 OR commit_pos <> last_pos OR last_pos <> n - 1
    OR NOT precommit_ok});
	is($bad, '0', "$label: every stored transaction is whole and well-formed");

	my $order = $node->safe_psql('postgres', qq{
SELECT count(*) FROM (
  SELECT watermark, change->>'commitLsn' AS lsn,
         lag(change->>'commitLsn') OVER (ORDER BY watermark COLLATE "C") AS prev
    FROM $CDC."changeLog" WHERE change->>'tag' = 'begin' AND change::jsonb ? 'commitLsn') t
 WHERE prev IS NOT NULL AND prev::text >= lsn::text});
	# commitLsn text is zero-padded, so text order is LSN order
	is($order, '0', "$label: transactions are stored in commit-LSN order");

	my $head = $node->safe_psql('postgres', qq{
SELECT (SELECT "lastWatermark" FROM $CDC."replicationState") =
       (SELECT max(watermark COLLATE "C") FROM $CDC."changeLog")});
	is($head, 't', "$label: lastWatermark is the newest stored transaction");
}

# Output of one SQL statement on a SQLite file (sqlite3 CLI), or "error: ..."
sub zs_sqlite
{
	my ($file, $sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'sqlite3', '-bail', $file, $sql ], '>', \$out, '2>', \$err)
	  or return "error: $err";
	chomp $out;
	return $out;
}

# Once the SQLite replica $file has reached the decoder's head: its table t
# (count and total length of v) equals PostgreSQL's.
sub zs_replica_equals
{
	my ($node, $file, $label) = @_;
	zs_wait_catchup($node, '120 s');
	my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	for (1 .. 1200)
	{
		last if -f $file && zs_sqlite($file, 'SELECT stateVersion FROM "_zero.replicationState"') eq $target;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	is(zs_sqlite($file, q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
		$node->safe_psql('postgres', q{SELECT count(*) || ':' || sum(length(v)) FROM t}),
		"$label: the replica equals PostgreSQL");
}

# pgbench in the background against database "postgres" for $seconds with
# $clients clients on 2 threads; @scripts are its -f arguments
sub zs_start_pgbench
{
	my ($node, $seconds, $clients, @scripts) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '-n', '-c', $clients, '-j', '2', '-T', $seconds,
			(map { ('-f', $_) } @scripts),
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

# A psql session on database "postgres" kept open across steps (a
# transaction holding an xid, a lock): zs_run_in runs SQL in it and returns
# what it printed.
sub zs_session
{
	my ($node) = @_;
	my ($in, $out) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1',
			'-h', $node->host, '-p', $node->port, '-d', 'postgres' ],
		'<', \$in, '>', \$out, '2>', \my $err);
	return { h => $h, in => \$in, out => \$out };
}

sub zs_run_in
{
	my ($s, $sql) = @_;
	${ $s->{out} } = '';
	${ $s->{in} } .= "$sql\n\\echo done\n";
	$s->{h}->pump until ${ $s->{out} } =~ /done\n/;
	return ${ $s->{out} } =~ s/done\n//r;
}

sub zs_close_session { my ($s) = @_; ${ $s->{in} } .= "\\q\n"; $s->{h}->finish; }

# Until every backfill the log asks for is stored (its "backfilling" table
# empty, everything committed stored).
sub zs_wait_backfills
{
	my ($node) = @_;
	$node->poll_query_until('postgres', qq{SELECT NOT EXISTS (SELECT FROM $CDC."backfilling")})
	  or die 'timed out waiting for the backfills to complete';
	zs_wait_catchup($node, '120 s');
}

# Until the replica file $path is at the log's head (up to 120 s); if it is
# not, 0, with the end of $log (a zero-stream-replica's) as a diagnostic.
sub zs_replica_at_head
{
	my ($node, $path, $log) = @_;
	my $target = $node->safe_psql('postgres', 'SELECT last_watermark FROM zero_stream.status()');
	my $sv = '';
	for (1 .. 1200)
	{
		$sv = -f $path ? (zs_sqlite($path, 'SELECT stateVersion FROM "_zero.replicationState"') // '') : '';
		return 1 if $sv eq $target;
		usleep(100_000);    # poll: until the replica is at the log's head
	}
	diag("$path at '$sv', behind $target" . (defined $log && -f $log ? "; log:\n" . slurp_file($log) : ''));
	return 0;
}

# Until the SQLite replica $path's head is at watermark $wm or later (while
# writes go on; watermarks order byte by byte); false after 120 s.
sub zs_replica_reached
{
	my ($path, $wm) = @_;
	for (1 .. 1200)
	{
		my $sv = -f $path ? (zs_sqlite($path, 'SELECT stateVersion FROM "_zero.replicationState"') // '') : '';
		return 1 if $sv =~ /^[0-9a-z.]+$/ && ($sv cmp $wm) >= 0;
		usleep(100_000);    # poll: until the replica reaches $wm
	}
	return 0;
}

# The SQLite replica $path sampled every 20 ms into the file $out, a line
# each: its head, the count of $table's rows matching $kept, and of all its
# rows ("head|kept|all"), until zs_check_replica_samples stops it.
sub zs_start_replica_sampler
{
	my ($path, $out, $table, $kept) = @_;
	return IPC::Run::start([ 'bash', '-c', qq{
while kill -0 $$ 2>/dev/null; do
  sqlite3 -cmd '.timeout 2000' '$path' 'SELECT (SELECT stateVersion FROM "_zero.replicationState") || char(124) ||
    (SELECT count(*) FROM $table WHERE $kept) || char(124) || (SELECT count(*) FROM $table)' 2>/dev/null
  # the sampler's pace: samples are taken all along, nothing to wait for
  sleep 0.02
done } ], '>', $out);
}

# Stop the sampler once it sampled the head $head, then check its samples:
# more than $min of them; the kept rows always $kept_rows (they never left
# the replica); every count of all rows one of @$totals, the counts
# PostgreSQL committed in order (the replica never held a state PostgreSQL
# never had), and in that order.
sub zs_check_replica_samples
{
	my ($sampler, $out, $head, $totals, $kept_rows, $min, $table) = @_;
	for (1 .. 600)
	{
		last if (slurp_file($out) =~ /(?:^|\n)\Q$head\E\|/);
		usleep(100_000);    # poll: until a sample at the head
	}
	$sampler->kill_kill;
	my @lines = grep { /^[0-9a-z.]+\|\d+\|\d+$/ } split /\n/, slurp_file($out);
	cmp_ok(scalar(@lines), '>', $min, scalar(@lines) . ' samples of the replica');
	my %allowed = map { $totals->[$_] => $_ } 0 .. $#$totals;
	my ($min_kept, $last_phase, @wrong, @backwards) = ($kept_rows, 0);
	for my $line (@lines)
	{
		my ($sv, $kept, $all) = split /\|/, $line;
		$min_kept = $kept if $kept < $min_kept;
		if (!exists $allowed{$all}) { push @wrong, $line; next; }
		push @backwards, $line if $allowed{$all} < $last_phase;
		$last_phase = $allowed{$all} if $allowed{$all} > $last_phase;
	}
	is($min_kept, $kept_rows, "the $kept_rows kept rows of $table never left the replica");
	is(scalar(@wrong), 0, "every sample of $table is a state PostgreSQL committed (" . join(', ', @$totals) . ')')
	  or diag(join("\n", @wrong[0 .. ($#wrong < 9 ? $#wrong : 9)]));
	is(scalar(@backwards), 0, 'in commit order') or diag(join("\n", @backwards[0 .. 0]));
}

# A test CA "ca" (and one more for each name of @more_cas) and a server
# certificate for 127.0.0.1 and localhost signed by "ca", made with the
# openssl CLI: <name>.crt and <name>.key in the folder returned.
sub zs_test_certs
{
	my (@more_cas) = @_;
	my $certs = PostgreSQL::Test::Utils::tempdir('tls');
	my $openssl = sub {
		my ($out, $err) = ('', '');
		IPC::Run::run([ 'openssl', @_ ], '<', \'', '>', \$out, '2>', \$err)
		  or die "openssl @_: $err";
	};
	PostgreSQL::Test::Utils::append_to_file("$certs/server.ext",
		"subjectAltName = IP:127.0.0.1, DNS:localhost\n");
	for my $ca ('ca', @more_cas)
	{
		$openssl->('req', '-x509', '-new', '-nodes', '-newkey', 'rsa:2048', '-days', '2',
			'-keyout', "$certs/$ca.key", '-out', "$certs/$ca.crt", '-subj', "/CN=zero_stream test $ca");
	}
	$openssl->('req', '-new', '-nodes', '-newkey', 'rsa:2048', '-keyout', "$certs/server.key",
		'-out', "$certs/server.csr", '-subj', '/CN=localhost');
	$openssl->('x509', '-req', '-in', "$certs/server.csr", '-CA', "$certs/ca.crt", '-CAkey', "$certs/ca.key",
		'-CAcreateserial', '-days', '2', '-extfile', "$certs/server.ext", '-out', "$certs/server.crt");
	return $certs;
}

# TLS on the node's subscriber server with zs_test_certs's server
# certificate, copied into the data directory and named by relative
# paths; then a restart, until the decoder streams again.
sub zs_enable_tls
{
	my ($node, $certs) = @_;
	mkdir $node->data_dir . '/tls';
	copy("$certs/server.crt", $node->data_dir . '/tls/zs.crt') or die;
	copy("$certs/server.key", $node->data_dir . '/tls/zs.key') or die;
	chmod 0600, $node->data_dir . '/tls/zs.key';
	$node->append_conf('postgresql.conf', q{
zero_stream.ssl = on
zero_stream.ssl_cert_file = 'tls/zs.crt'
zero_stream.ssl_key_file = 'tls/zs.key'
});
	$node->restart;
	zs_wait_streaming($node);
}

1;
