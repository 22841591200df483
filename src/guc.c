/*-------------------------------------------------------------------------
 * guc.c
 *	  Definitions and validation of the zero_stream.* parameters.
 *
 * Anything that decides which database, slot, schema or publication the
 * decoder works on is PGC_POSTMASTER: changing it under a running stream
 * would break the change log's lineage. Throughput knobs are PGC_SIGHUP.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "nodes/pg_list.h"
#include "replication/slot.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "codec/changelog_chunk.h"
#include "guc.h"

char	   *zs_database = NULL;
char	   *zs_app_id = NULL;
int			zs_shard_num = 0;
int			zs_partition_carry_rows = 1000000;
char	   *zs_carried_leaves = NULL;
char	   *zs_publications = NULL;
char	   *zs_slot_name = NULL;
char	   *zs_task_id = NULL;
int			zs_changelog_chunk_kb = 256;
int			zs_changelog_compression = ZS_CHUNK_LZ4;

static const struct config_enum_entry compression_options[] = {
	{"lz4", ZS_CHUNK_LZ4, false},
	{"pglz", ZS_CHUNK_PGLZ, false},
	{"none", ZS_CHUNK_NONE, false},
	{NULL, 0, false}
};

/* lz4 only where the server was built with it, as default_toast_compression */
static bool
check_compression(int *newval, void **extra, GucSource source)
{
	if (*newval == ZS_CHUNK_LZ4 && !zs_chunk_lz4_available())
	{
		GUC_check_errdetail("This build of PostgreSQL does not support lz4.");
		return false;
	}
	return true;
}
int			zs_commit_batch_kb = 16384;
int			zs_test_unencodable_type = 0;
int			zs_poll_interval_ms = 50;
int			zs_slot_save_interval_ms = 10000;
int			zs_purge_interval_ms = 60000;
int			zs_subscriber_retention_ms = 15 * 60 * 1000;
char	   *zs_listen_addresses = NULL;
char	   *zs_advertise_address = NULL;
int			zs_port = 4849;
int			zs_max_subscribers = 64;
int			zs_max_pending_connections = 64;
int			zs_handshake_timeout_ms = 5000;
int			zs_max_message_kb = 1024;
char	   *zs_subscriber_password = NULL;
bool		zs_ssl = false;
bool		zs_failover = true;
char	   *zs_ssl_cert_file = NULL;
char	   *zs_ssl_key_file = NULL;
int			zs_catchup_page_rows = 2000;
int			zs_catchup_share = 10;
int			zs_slow_subscriber_grace_ms = 30000;
int			zs_backlog_limit_kb = 16384;
int			zs_live_buffer_kb = 24576;
int			zs_lag_report_interval_ms = 30000;
char	   *zs_replica_file = NULL;

/*
 * A postgresql.conf value that fails validation is only a WARNING for an
 * extension's parameter (the placeholder is dropped and the default used).
 * For the settings that name the change log, its slot and publications that
 * would silently stream somewhere else, so the check hooks remember the
 * rejection and _PG_init refuses to load.
 */
static const char *rejected_setting = NULL;

static bool
reject(const char *name)
{
	rejected_setting = name;
	return false;
}

/* Only [a-z0-9_]: Zero's app ids and replication slot names */
static bool
is_lower_identifier(const char *p)
{
	for (; *p; p++)
	{
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return true;
}

static bool
check_app_id(char **newval, void **extra, GucSource source)
{
	if (*newval == NULL || **newval == '\0')
	{
		GUC_check_errdetail("zero_stream.app_id must not be empty.");
		return reject("zero_stream.app_id");
	}
	if (!is_lower_identifier(*newval))
	{
		GUC_check_errdetail("zero_stream.app_id may contain only lower-case letters, digits and underscores, as in Zero's ZERO_APP_ID.");
		return reject("zero_stream.app_id");
	}
	return true;
}

static bool
check_slot_name(char **newval, void **extra, GucSource source)
{
	const char *p = *newval;

	if (p == NULL || *p == '\0')
		return true;			/* derived from app_id and shard_num */
	if (strlen(p) >= NAMEDATALEN)
	{
		GUC_check_errdetail("Replication slot names are at most %d characters.", NAMEDATALEN - 1);
		return reject("zero_stream.slot_name");
	}
	if (!is_lower_identifier(p))
	{
		GUC_check_errdetail("Replication slot names may contain only lower-case letters, digits and underscores.");
		return reject("zero_stream.slot_name");
	}
	return true;
}

static bool
check_publications(char **newval, void **extra, GucSource source)
{
	char	   *copy;
	List	   *names;
	bool		ok;

	if (*newval == NULL || **newval == '\0')
		return true;
	copy = pstrdup(*newval);
	ok = SplitIdentifierString(copy, ',', &names);
	if (!ok)
		GUC_check_errdetail("zero_stream.publications must be a comma-separated list of publication names.");
	list_free(names);
	pfree(copy);
	return ok ? true : reject("zero_stream.publications");
}

/* the range is checked here, not by the GUC machinery, so it can be remembered */
static bool
check_shard_num(int *newval, void **extra, GucSource source)
{
	if (*newval >= 0)
		return true;
	GUC_check_errdetail("zero_stream.shard_num must not be negative.");
	return reject("zero_stream.shard_num");
}

void
zs_define_gucs(void)
{
	DefineCustomStringVariable("zero_stream.database",
							   "Database whose changes zero_stream streams.",
							   "The decoder connects to this database; CREATE EXTENSION zero_stream must be run in it.",
							   &zs_database, "postgres", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("zero_stream.app_id",
							   "Zero application id (ZERO_APP_ID).",
							   "Names the change-log schema \"<app_id>_<shard_num>/cdc\" and the default publication.",
							   &zs_app_id, "zero", PGC_POSTMASTER, 0,
							   check_app_id, NULL, NULL);
	DefineCustomIntVariable("zero_stream.shard_num",
							"Zero shard number (ZERO_SHARD_NUM).",
							NULL,
							&zs_shard_num, 0, INT_MIN, INT_MAX, PGC_POSTMASTER, 0,
							check_shard_num, NULL, NULL);
	DefineCustomStringVariable("zero_stream.publications",
							   "Comma-separated publications to stream (ZERO_APP_PUBLICATIONS).",
							   "Empty means \"_<app_id>_public_<shard_num>\", created FOR TABLES IN SCHEMA public if missing.",
							   &zs_publications, "", PGC_POSTMASTER, 0,
							   check_publications, NULL, NULL);
	DefineCustomStringVariable("zero_stream.slot_name",
							   "Logical replication slot owned by the decoder.",
							   "Empty means \"zero_stream_<app_id>_<shard_num>\".",
							   &zs_slot_name, "", PGC_POSTMASTER, 0,
							   check_slot_name, NULL, NULL);
	DefineCustomStringVariable("zero_stream.task_id",
							   "Owner id written to replicationState.owner (Zero's task id).",
							   NULL,
							   &zs_task_id, "zero_stream", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.changelog_chunk_size",
							"Encoded rows (change text and keys) stored in one change-log chunk.",
							"Every local commit stores its transactions in chunks of at most this much before compression; a larger transaction is split into several, and one change larger than this is a chunk of its own.",
							&zs_changelog_chunk_kb, 256, 8, 65536, PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("zero_stream.changelog_compression",
							 "How change-log chunks are compressed.",
							 "lz4 (where PostgreSQL was built with it), pglz or none; chunks written before a change keep theirs.",
							 &zs_changelog_compression,
							 zs_chunk_lz4_available() ? ZS_CHUNK_LZ4 : ZS_CHUNK_PGLZ,
							 compression_options, PGC_SIGHUP, 0,
							 check_compression, NULL, NULL);
	DefineCustomIntVariable("zero_stream.commit_batch_size",
							"Decoded data grouped into one local change-log commit.",
							"Whole upstream transactions are grouped until this much change text is pending; one larger transaction is still committed whole.",
							&zs_commit_batch_kb, 16384, 64, 1048576, PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	/*
	 * Fault injection, for TAP 013 only: the decoder's encoder
	 * (decoding/change_encode.c, the one reader) treats every value of this
	 * type as one it cannot read, which takes it down the fallback that
	 * stores the value as its text, counts it in status().value_errors and
	 * warns. Nothing else reaches that path on purpose (the canonical
	 * session settings give every value a text the encoder reads), and the
	 * TAP suites test the build that is installed, so the setting is in
	 * every build rather than behind a test-only build flag: hidden (not in
	 * SHOW ALL or the sample file), superuser-only, read by the decoder at
	 * reload, 0 (no type) disables it; it costs one comparison per column
	 * value. Nothing else reads it.
	 */
	DefineCustomIntVariable("zero_stream.test_unencodable_type",
							"Fault injection for tests: treat every value of this type OID as one the encoder cannot read.",
							"Exercises the fallback that stores such a value as its text; 0 (the default) disables it. Not for production use.",
							&zs_test_unencodable_type, 0, 0, INT_MAX, PGC_SIGHUP,
							GUC_NOT_IN_SAMPLE | GUC_NO_SHOW_ALL | GUC_SUPERUSER_ONLY,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.poll_interval",
							"Longest wait for new WAL when no commit wakes the decoder.",
							NULL,
							&zs_poll_interval_ms, 50, 1, 60000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.slot_save_interval",
							"How often the decoder writes its confirmed slot position to disk.",
							NULL,
							&zs_slot_save_interval_ms, 10000, 100, 3600000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.purge_interval",
							"How often the decoder deletes change-log rows that nothing needs any more.",
							"0 disables purging (zero_stream.purge() still purges on demand).",
							&zs_purge_interval_ms, 60000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.subscriber_retention",
							"How long the change log keeps what a disconnected subscriber needs to resume.",
							"A subscriber that returns later than this may be told WatermarkTooOld and restore.",
							&zs_subscriber_retention_ms, 15 * 60 * 1000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("zero_stream.advertise_address",
							   "Address of the subscriber server that view-syncers in discover mode use (replicationState.ownerAddress).",
							   "host:port, or a URL with its scheme; empty means the first of listen_addresses and port.",
							   &zs_advertise_address, "", PGC_SIGHUP, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("zero_stream.listen_addresses",
							   "Addresses the subscriber server listens on.",
							   "Comma-separated host names or IP addresses, or * for all. Anything but loopback should be combined with zero_stream.subscriber_password.",
							   &zs_listen_addresses, "127.0.0.1", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.port",
							"TCP port of the subscriber server (ZERO_CHANGE_STREAMER_PORT); 0 disables it.",
							NULL,
							&zs_port, 4849, 0, 65535, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.max_subscribers",
							"Most simultaneous connections to the subscriber server.",
							NULL,
							&zs_max_subscribers, 64, 1, 10000, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.max_pending_connections",
							"Most connections of the subscriber server still sending their HTTP request.",
							"They are not counted in zero_stream.max_subscribers. When all are taken, a new connection replaces the one that has been sending its request longest, or is answered 503 if every one is new.",
							&zs_max_pending_connections, 64, 1, 10000, PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.handshake_timeout",
							"Longest time a connection to the subscriber server may take to send its HTTP request.",
							"A connection whose request head is not complete (or whose HTTP reply is not taken) this long after it was accepted is closed.",
							&zs_handshake_timeout_ms, 5000, 100, 600000, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.max_message_size",
							"Largest WebSocket message a subscriber may send.",
							"Larger messages close the connection with code 1009.",
							&zs_max_message_kb, 1024, 1, 1048576, PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomStringVariable("zero_stream.subscriber_password",
							   "Password subscribers must send with HTTP Basic authentication.",
							   "Empty means no authentication (as zero-cache). A ws://user:password@host URL sends it.",
							   &zs_subscriber_password, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomBoolVariable("zero_stream.failover",
							 "Whether the decoder's slot is a failover slot, synchronized to standbys (PostgreSQL 17 and later).",
							 "When on, a standby with sync_replication_slots continues the same change log after its promotion; "
							 "the decoder sends and confirms nothing that the standbys in synchronized_standby_slots have not flushed. "
							 "Without effect before PostgreSQL 17.",
							 &zs_failover, true, PGC_SIGHUP, 0,
							 NULL, NULL, NULL);
	DefineCustomBoolVariable("zero_stream.ssl",
							 "Whether the subscriber server speaks TLS (wss:// and https://).",
							 "When on, every connection to zero_stream.port must start with a TLS handshake; plain ws:// and http:// clients are refused.",
							 &zs_ssl, false, PGC_POSTMASTER, 0,
							 NULL, NULL, NULL);
	DefineCustomStringVariable("zero_stream.ssl_cert_file",
							   "Certificate (PEM, with its chain) of the subscriber server's TLS.",
							   "Relative paths are under the data directory; the default is PostgreSQL's own. Read again on reload.",
							   &zs_ssl_cert_file, "server.crt", PGC_SIGHUP, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("zero_stream.ssl_key_file",
							   "Private key (PEM, without a passphrase) of the subscriber server's TLS.",
							   "Relative paths are under the data directory; the default is PostgreSQL's own. Read again on reload.",
							   &zs_ssl_key_file, "server.key", PGC_SIGHUP, GUC_SUPERUSER_ONLY,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("zero_stream.catchup_page_rows",
							"Change-log rows read per page for a subscriber.",
							NULL,
							&zs_catchup_page_rows, 2000, 1, 100000, PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.catchup_share",
							"Most of the server worker's time that subscribers catching up may take while another one is live, in percent.",
							"Live subscribers are served first in every loop iteration; catching-up ones then get pages in turn for at most 10 ms (1 ms and 250-row pages while a subscriber is live). While a subscriber is live, every iteration that reads pages for catching-up subscribers (its whole time: the pages, the acks and writes it handles) adds a pause in catch-up (not in live serving) that keeps catch-up within this share of the worker's time, and of the CPU that the decoder and live subscribers need; iterations during the pause do not lengthen it. 100 disables the pause.",
							&zs_catchup_share, 10, 1, 100, PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.slow_subscriber_grace_period",
							"How long a subscriber may lag behind the live stream before it is disconnected.",
							"A subscriber that had caught up, then falls behind because it does not acknowledge fast enough while another subscriber keeps up, gets StreamTooFarBehind after this long (ZERO_CHANGE_STREAMER_FLOW_CONTROL_SLOW_SUBSCRIBER_GRACE_PERIOD_SECONDS). 0 disables it.",
							&zs_slow_subscriber_grace_ms, 30000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.subscriber_backlog_limit",
							"Output queued for one subscriber beyond which no more change-log rows are read for it.",
							"The per-subscriber high-water mark (zero-cache: 16 MiB); reading resumes when the subscriber has taken the output below it.",
							&zs_backlog_limit_kb, 16384, 64, 1048576, PGC_SIGHUP, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.live_buffer",
							"Shared memory for the decoder's latest round of changes, sent to live subscribers before it is stored.",
							"Live subscribers get a round as soon as it is decoded, while the decoder stores it; the rest of a round larger than this is sent from the decoder's spool file if the round spilled there, else once stored (keep it above 1.25 x commit_batch_size). 0 sends only stored changes.",
							&zs_live_buffer_kb, 24576, 0, 1048576, PGC_POSTMASTER, GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.lag_report_interval",
							"How often the decoder measures replication lag with a logical message (ZERO_REPLICATION_LAG_REPORT_INTERVAL_MS).",
							"Live subscribers get each measurement as a status message with zero-cache's lagReport; 0 disables.",
							&zs_lag_report_interval_ms, 30000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("zero_stream.partition_carry_rows",
							"Most rows of a partition that the DDL capture carries when it is attached to or detached from a table published through its root.",
							"Up to this many rows are written into the stream in the DDL's own transaction (inserts of the rows that joined, deletes of those that left), and every replica changes exactly those rows; a larger partition resets its root (every replica drops its rows and backfills them). 0 always resets.",
							&zs_partition_carry_rows, 1000000, 0, INT_MAX, PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomStringVariable("zero_stream.carried_leaves",
							   "The partitions a DROP TABLE of this transaction took from a root, whose rows the DDL capture carried (internal).",
							   "Set by the DDL capture at the start of the command for its end, for this transaction only.",
							   &zs_carried_leaves, "", PGC_SUSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE | GUC_NO_RESET_ALL,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("zero_stream.replica_file",
							   "SQLite file of the backup replica (relative paths are under the data directory).",
							   "Written by the initial copy when the slot is created, kept current by the replicator worker, and served to new subscribers as their snapshot. Empty disables the copy, the replicator and snapshots.",
							   &zs_replica_file, "zero_stream/replica.db", PGC_POSTMASTER, 0,
							   NULL, NULL, NULL);

	MarkGUCPrefixReserved("zero_stream");
}

const char *
zs_rejected_identity_setting(void)
{
	return rejected_setting;
}

char *
zs_cdc_schema_name(void)
{
	return psprintf("%s_%d/cdc", zs_app_id, zs_shard_num);
}

char *
zs_effective_slot_name(void)
{
	if (zs_slot_name != NULL && zs_slot_name[0] != '\0')
		return pstrdup(zs_slot_name);
	return psprintf("zero_stream_%s_%d", zs_app_id, zs_shard_num);
}

char *
zs_origin_name(void)
{
	return psprintf("zero_stream_%s_%d", zs_app_id, zs_shard_num);
}

char *
zs_default_publication_name(void)
{
	return psprintf("_%s_public_%d", zs_app_id, zs_shard_num);
}

char *
zs_metadata_publication_name(void)
{
	return psprintf("_%s_metadata_%d", zs_app_id, zs_shard_num);
}

List *
zs_app_publication_list(bool *is_default)
{
	List	   *names;

	*is_default = (zs_publications == NULL || zs_publications[0] == '\0');
	if (*is_default)
		return list_make1(zs_default_publication_name());
	/* validated by the check hook */
	(void) SplitIdentifierString(pstrdup(zs_publications), ',', &names);
	return names;
}

List *
zs_publication_list(void)
{
	bool		is_default;

	return lappend(zs_app_publication_list(&is_default), zs_metadata_publication_name());
}

Datum
zs_publication_array(List *publications)
{
	Datum	   *names = palloc(sizeof(Datum) * Max(list_length(publications), 1));
	ListCell   *lc;

	foreach(lc, publications)
		names[foreach_current_index(lc)] = CStringGetTextDatum((char *) lfirst(lc));
	return PointerGetDatum(construct_array(names, list_length(publications), TEXTOID, -1,
										   false, TYPALIGN_INT));
}

void
zs_set_canonical_session(const char *application_name)
{
	SetConfigOption("synchronous_commit", "on", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("DateStyle", "ISO, YMD", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("TimeZone", "UTC", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("IntervalStyle", "postgres", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("extra_float_digits", "1", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("bytea_output", "hex", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lc_monetary", "C", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("application_name", application_name, PGC_SUSET, PGC_S_OVERRIDE);
	/* catalog queries and small inserts: JIT would only load LLVM (~60 MB) */
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);
}
