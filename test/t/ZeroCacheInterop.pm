# Stock zero-cache view-syncers for zero_stream's TAP tests (023, 040): the
# install of @rocicorp/zero and Node 22 from the npm registry
# (test/interop/prepare.sh, cached between runs), view-syncers run with
# zero_stream as their change-streamer (zero-stream-replica as
# ZERO_LITESTREAM_EXECUTABLE), their replica files read with zero's SQLite
# build (test/interop/replica.mjs) and queries of a Zero client
# (test/interop/zero_client.mjs).
#
#   my $zc = zc_install('023', 'interop');  # skip_all if npm is unreachable
#   my $vs = zc_view_syncer($zc, name => 'A');
#   zc_start($vs, $node, ZERO_CHANGE_STREAMER_URI => "ws://127.0.0.1:$port");
#   zc_check_at($vs, $watermark, 'restore: A reaches the head');
#   zc_check_rows($vs, $node, 'issue', [qw(id title)], 'restore: issue');
#   zc_stop($vs);
#
# zc_install reports the install as a test (pass, or fail and the end of
# the test); when the npm registry cannot be reached the test is skipped,
# loudly. Each view-syncer has its own folder, ports and log (in the TAP
# log folder, <test>_view_syncer[_<name>].log); each start is marked in the
# log, and zc_log_since_start reads from the last mark on.
# ZS_INTEROP_LITESTREAM names another zero-stream-replica executable.
package ZeroCacheInterop;

use strict;
use warnings;

use File::Path ();
use FindBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use Exporter 'import';

our @EXPORT = qw(zc_zero_watch zc_zero_watch_lines zc_zero_watch_stop zc_install zc_view_syncer zc_start zc_running zc_stop zc_log_text
  zc_log_tail zc_log_since_start zc_wait_log zc_query zc_state_version zc_check_at
  zc_pg_rows zc_check_rows zc_restores zc_zero_query);

my $INTEROP = "$FindBin::RealBin/../interop";

# The install, as test $test (e.g. '023') of $what (e.g. 'interop'): a hash
# of its folder (dir), node, zero-cache's entry point (zero_cache), the
# zero-stream-replica executable (litestream) and the seconds it took
# (secs). When the npm registry cannot be reached the test is skipped
# (skip_all); a failed install fails and ends the test.
sub zc_install
{
	my ($test, $what) = @_;
	my ($out, $err) = ('', '');
	my $t0 = time;
	IPC::Run::run(["$INTEROP/prepare.sh"], '>', \$out, '2>', \$err);
	my $rc = $? >> 8;
	my $secs = sprintf('%.1f', time - $t0);
	diag("interop install ($secs s): $err");
	if ($rc == 2)
	{
		diag('#' x 72);
		diag("# $test: THE NPM REGISTRY CANNOT BE REACHED: the zero-cache $what test is SKIPPED");
		diag('#' x 72);
		plan skip_all => "the npm registry cannot be reached (zero-cache $what not run)";
	}
	if ($rc != 0)
	{
		fail("zero-cache and Node 22 install from the npm registry (test/interop/prepare.sh exit $rc)");
		done_testing();
		exit;
	}
	my ($dir) = $out =~ /(\S+)\s*$/;
	pass("zero-cache 1.9.0 and Node 22 are installed in $dir ($secs s)");

	my $litestream = $ENV{ZS_INTEROP_LITESTREAM};
	unless ($litestream)
	{
		$litestream = "$FindBin::RealBin/../../zero-stream-replica";
		if (!-x $litestream)
		{
			my $bindir = `pg_config --bindir`;
			chomp $bindir;
			$litestream = "$bindir/zero-stream-replica";
		}
	}
	return {
		test => $test,
		what => $what,
		dir => $dir,
		node => "$dir/node_modules/.bin/node",
		zero_cache => "$dir/node_modules/\@rocicorp/zero/out/zero/src/cli.js",
		litestream => $litestream,
		secs => $secs,
	};
}

# A view-syncer (not started): its folder (dir, default a new temporary
# one), replica file, log, ports and task id. name tells several apart.
sub zc_view_syncer
{
	my ($zc, %opts) = @_;
	my $name = $opts{name};
	my $d = $opts{dir} // PostgreSQL::Test::Utils::tempdir();
	File::Path::make_path("$d/tmp");
	my $suffix = defined $name ? "_$name" : '';
	return {
		zc => $zc,
		name => $name,
		tag => "$zc->{test}: view-syncer" . (defined $name ? " $name" : ''),
		dir => $d,
		replica => "$d/replica.db",
		log => "$PostgreSQL::Test::Utils::log_path/$zc->{test}_view_syncer$suffix.log",
		task_id => "$zc->{what}-vs" . (defined $name ? "-$name" : ''),
		port => PostgreSQL::Test::Cluster::get_free_port(),
		cs_port => PostgreSQL::Test::Cluster::get_free_port(),
		ls_port => PostgreSQL::Test::Cluster::get_free_port(),
		starts => 0,
	};
}

# Start $vs with $upstream (a node: its upstream and CVR database); %env
# says where its change stream comes from (ZERO_CHANGE_STREAMER_URI or
# ZERO_CHANGE_STREAMER_MODE) and overrides any other setting.
sub zc_start
{
	my ($vs, $upstream, %env) = @_;
	my $zc = $vs->{zc};
	$vs->{starts}++;
	open my $fh, '>>', $vs->{log} or die "$vs->{log}: $!";
	print $fh "\n===== $vs->{tag} start $vs->{starts}: upstream " . $upstream->name
	  . join('', map { ", $_=$env{$_}" } sort keys %env) . " =====\n";
	close $fh;
	local %ENV = %ENV;
	delete $ENV{$_} for grep { /^(ZERO_|PG|NODE_)/ } keys %ENV;
	%ENV = (%ENV,
		PATH => "$zc->{dir}/node_modules/.bin:$ENV{PATH}",
		ZERO_UPSTREAM_DB => 'postgresql://' . getpwuid($<) . '@127.0.0.1:' . $upstream->port . '/postgres',
		ZERO_REPLICA_FILE => $vs->{replica},
		ZERO_LITESTREAM_EXECUTABLE => $zc->{litestream},
		ZERO_NUM_SYNC_WORKERS => '1',
		ZERO_UPSTREAM_MAX_CONNS => '2',
		ZERO_CVR_MAX_CONNS => '2',
		ZERO_CHANGE_MAX_CONNS => '1',
		ZERO_PORT => $vs->{port},
		ZERO_CHANGE_STREAMER_PORT => $vs->{cs_port},
		ZERO_LITESTREAM_PORT => $vs->{ls_port},
		ZERO_TASK_ID => $vs->{task_id},
		ZERO_ADMIN_PASSWORD => 'interop',
		ZERO_ENABLE_TELEMETRY => 'false',
		ZERO_LOG_FORMAT => 'text',
		ZERO_LOG_LEVEL => 'info',
		ZERO_STORAGE_DB_TMP_DIR => "$vs->{dir}/tmp",
		%env);
	my $d = $vs->{dir};
	$vs->{h} = IPC::Run::start([ $zc->{node}, $zc->{zero_cache} ],
		'<', '/dev/null', '>>', $vs->{log}, '2>>', $vs->{log},
		init => sub { chdir $d or die "chdir $d: $!" });
}

sub zc_running { my ($vs) = @_; return $vs->{h} && $vs->{h}->pumpable; }

# Stop $vs (TERM, then KILL after 30 s); its exit status, if it ran.
sub zc_stop
{
	my ($vs) = @_;
	my $h = $vs->{h} or return;
	if ($h->pumpable)
	{
		$h->signal('TERM');
		my $deadline = time + 30;
		usleep(100_000) while $h->pumpable && time < $deadline;    # poll: until zero-cache has exited
	}
	$h->kill_kill if $h->pumpable;
	eval { $h->finish };
	my $rc = $h->full_result;
	delete $vs->{h};
	return $rc;
}

sub zc_log_text
{
	my ($vs) = @_;
	open my $fh, '<', $vs->{log} or return '';
	local $/;
	my $t = <$fh>;
	close $fh;
	return $t;
}

# the last $n (60) lines of $vs's log
sub zc_log_tail
{
	my ($vs, $n) = @_;
	my @lines = split /\n/, zc_log_text($vs);
	$n //= 60;
	$n = @lines if @lines < $n;
	return join("\n", @lines[ -$n .. -1 ]);
}

# the log since $vs's last start
sub zc_log_since_start
{
	my ($vs) = @_;
	my $t = zc_log_text($vs);
	my $i = rindex($t, "===== $vs->{tag} start");
	return $i < 0 ? $t : substr($t, $i);
}

# until the log since $vs's last start matches $re (up to $secs, 120)
sub zc_wait_log
{
	my ($vs, $re, $secs) = @_;
	my $deadline = time + ($secs // 120);
	while (time < $deadline)
	{
		return 1 if zc_log_since_start($vs) =~ $re;
		last unless zc_running($vs);
		usleep(200_000);    # poll: until the log matches
	}
	return zc_log_since_start($vs) =~ $re;
}

# output of one SQL statement on $vs's replica, or "error: ..."
sub zc_query
{
	my ($vs, $sql) = @_;
	my $zc = $vs->{zc};
	my ($out, $err) = ('', '');
	local $ENV{ZS_INTEROP_DIR} = $zc->{dir};
	IPC::Run::run([ $zc->{node}, "$INTEROP/replica.mjs", $vs->{replica}, $sql ], '>', \$out, '2>', \$err)
	  or return "error: $err";
	chomp $out;
	return $out;
}

sub zc_state_version
{
	my ($vs) = @_;
	return zc_query($vs, 'SELECT stateVersion FROM "_zero.replicationState"');
}

# Test $name: until $vs's stateVersion is $want or later (up to $secs,
# 120, and while it runs). Later: the view-syncer's own DDL (its CVR tables
# in the upstream database) is stored in the log as zero-cache stores it,
# as transactions of their own that may come after $want was read.
sub zc_check_at
{
	my ($vs, $want, $name, $secs) = @_;
	my $have = '';
	my $deadline = time + ($secs // 120);
	my $reached = sub { $have =~ /^[0-9a-z]+(?:\.[0-9a-z]+)?$/ && ($have cmp $want) >= 0 };
	while (time < $deadline)
	{
		$have = zc_state_version($vs);	# or an error, while the file is replaced
		last if $reached->() || !zc_running($vs);
		usleep(200_000);    # poll: until the replica reaches $want
	}
	return ok($reached->(), $name)
	  || diag("its stateVersion: '$have'; view-syncer "
		  . (zc_running($vs) ? 'running' : 'NOT running') . "; log tail:\n" . zc_log_tail($vs));
}

# a table's rows as "v1|v2|..." lines, sorted, in PostgreSQL on $node
sub zc_pg_rows
{
	my ($node, $table, $cols) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT concat_ws('|', " . join(', ', map { "coalesce(${_}::text, '')" } @$cols) . ") FROM $table");
	return join("\n", sort split /\n/, $out);
}

# Test "$name ($n rows)": $table's rows in $vs's replica are those in
# PostgreSQL on $node.
sub zc_check_rows
{
	my ($vs, $node, $table, $cols, $name) = @_;
	my $pg = zc_pg_rows($node, $table, $cols);
	my $lite = zc_query($vs, 'SELECT ' . join(', ', map { qq{"$_"} } @$cols) . " FROM \"$table\"");
	$lite = join("\n", sort split /\n/, $lite) unless $lite =~ /^error: /;
	my $n = $pg eq '' ? 0 : scalar(() = $pg =~ /^/mg);
	return is($lite, $pg, "$name ($n rows)");
}

# how many restores by zero-stream-replica a view-syncer's log text shows
sub zc_restores { my ($text) = @_; return scalar(() = $text =~ /zero-stream-replica: restored /g); }

# One query through $vs by a Zero client: its rows, sorted, or "error: ...".
# @cols are "name:type" (string, number, boolean), "name:type:key" for the
# columns of a composite primary key (else the first is the key).
sub zc_zero_query
{
	my ($vs, $table, $order, @cols) = @_;
	my $zc = $vs->{zc};
	my ($out, $err) = ('', '');
	local $ENV{ZS_INTEROP_DIR} = $zc->{dir};
	IPC::Run::run([ $zc->{node}, "$INTEROP/zero_client.mjs", "http://127.0.0.1:$vs->{port}", $table, $order, @cols ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(120))
	  or return "error: $err";
	return join("\n", sort split /\n/, $out);
}

# A Zero client watching $table through $vs (test/interop/zero_watch.mjs):
# two materialized views, all rows and those with $col >= $value, each
# change a line "<view> <resultType> <rows>". @cols as for zc_zero_query.
sub zc_zero_watch
{
	my ($vs, $table, $col, $value, @cols) = @_;
	my $zc = $vs->{zc};
	my $w = { out => '', err => '' };
	local $ENV{ZS_INTEROP_DIR} = $zc->{dir};
	$w->{h} = IPC::Run::start([ $zc->{node}, "$INTEROP/zero_watch.mjs", "http://127.0.0.1:$vs->{port}",
			$table, $col, $value, @cols ], '>', \$w->{out}, '2>', \$w->{err});
	return $w;
}

# What $w printed so far, as [view, resultType, rows] triples.
sub zc_zero_watch_lines
{
	my ($w) = @_;
	$w->{h}->pump_nb if $w->{h}->pumpable;
	return [ map { [ split / / ] } grep { /^(all|where) \S+ \d+$/ } split /\n/, $w->{out} ];
}

# Stop $w; its lines, as zc_zero_watch_lines.
sub zc_zero_watch_stop
{
	my ($w) = @_;
	$w->{h}->signal('TERM');
	$w->{h}->finish;
	return zc_zero_watch_lines($w);
}

1;
