# Discover mode: a view-syncer with ZERO_CHANGE_STREAMER_MODE=discover reads
# replicationState.ownerAddress and connects to ws://<ownerAddress>/. The
# decoder writes the server's address there when it takes ownership, and
# keeps it current when zero_stream.advertise_address is reloaded; the
# address it writes answers.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use ZeroStreamTest;

my $TAIL = "$FindBin::RealBin/../../zero-stream-tail";
my $node = zs_new_node('discover', before_extension => 'CREATE TABLE t (id int PRIMARY KEY)');
my $sport = $node->{zs_server_port};

sub owner
{
	return $node->safe_psql('postgres',
		q{SELECT coalesce("owner", '') || ' ' || coalesce("ownerAddress", 'NULL') FROM "zero_0/cdc"."replicationState"});
}

like(owner(), qr{^zero_stream\@\d+/1/zero_stream_zero_0 127\.0\.0\.1:$sport$},
	'owner names the writer (task_id@system identifier/timeline/slot); ownerAddress: the listen address and port');

# the advertised address answers: a subscriber reaches the stream through it
my ($address) = owner() =~ / (\S+)$/;
my $rv = $node->safe_psql('postgres', 'SELECT replica_version FROM zero_stream.status()');
$node->safe_psql('postgres', 'INSERT INTO t VALUES (1)');
zs_wait_catchup($node);
my ($out, $err) = ('', '');
IPC::Run::run([ $TAIL, '--count', '3', '--idle', '10',
		"ws://$address/replication/v6/changes?id=d&taskID=d&replicaVersion=$rv&watermark=$rv" ],
	'>', \$out, '2>', \$err);
like($out, qr/"insert"/, 'a subscriber reaches the stream at ws://<ownerAddress>/') or diag $err;

$node->safe_psql('postgres', q{ALTER SYSTEM SET zero_stream.advertise_address = 'cs.example.internal:4849'});
$node->reload;
ok($node->poll_query_until('postgres',
		q{SELECT "ownerAddress" = 'cs.example.internal:4849' FROM "zero_0/cdc"."replicationState"}),
	'a reloaded advertise_address is written to ownerAddress');

# a server that does not run advertises nothing
$node->safe_psql('postgres', q{ALTER SYSTEM RESET zero_stream.advertise_address});
$node->append_conf('postgresql.conf', 'zero_stream.port = 0');
$node->restart;
zs_wait_streaming($node);
like(owner(), qr{^zero_stream\@\S+ NULL$}, 'without a server, ownerAddress is NULL');

$node->stop;
done_testing();
