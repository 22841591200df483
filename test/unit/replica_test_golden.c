/*-------------------------------------------------------------------------
 * replica_test_golden.c
 *	  Unit tests of the replica library's schema changes and backfills
 *	  against zero-cache 1.9.0: its own messages for the golden workload
 *	  (test/golden), applied to the replica it started from, and the
 *	  replica each produced, checked against the one zero-cache made of
 *	  them (tables, indexes, column and table metadata, changeLog2); then
 *	  the same on a backup replica, which keeps no change log.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "replica_test.h"

/*
 * zero-cache 1.9.0's own messages for T37-T59, T61 and T62 of the golden
 * workload (test/golden/changelog.jsonl; labels in changelog.labels.tsv),
 * each transaction's changes between its begin and commit.
 */
typedef struct GoldenTx
{
	const char *label;
	const char *watermark;
	const char *changes[8];
} GoldenTx;

static const GoldenTx golden[] = {
	{"T37", "61aidd8g", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25936,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"ddl_t\",\"replicaIdentity\":\"d\",\"columns\":{\"a\":{\"pos\":2,"
			"\"dflt\":\"'x'::text\",\"notNull\":true,\"typeOID\":25,\"dataType\":\"text\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null},"
			"\"b\":{\"pos\":3,\"dflt\":null,\"notNull\":false,\"typeOID\":23,\"dataType\":\"int4\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null},"
			"\"c_mood\":{\"pos\":5,\"dflt\":null,\"notNull\":false,\"typeOID\":25738,"
			"\"dataType\":\"mood\",\"pgTypeClass\":\"e\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null},\"c_ts\":{\"pos\":4,"
			"\"dflt\":\"'2000-01-01 00:00:00+00'::timestamp with time zone\",\"notNull\":false,"
			"\"typeOID\":1184,\"dataType\":\"timestamptz\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"id\":{\"pos\":1,\"dflt\":null,"
			"\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_t\","
			"\"name\":\"ddl_t_pkey\",\"unique\":true,\"isPrimaryKey\":true,\"isReplicaIdentity\":false,"
			"\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
		NULL}},
	{"T38", "61aidels", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"a\":\"one\",\"b\":1,\"c_ts\":946684800000,\"c_mood\":\"ok\"}}",
		NULL}},
	{"T39", "61aigca8", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":{\"name\":\"c\",\"spec\":{\"pos\":6,\"dflt\":\"'dflt'::text\",\"notNull\":false,"
			"\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
		NULL}},
	{"T40", "61aigclc", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"a\":\"two\",\"b\":2,\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\"}}",
		NULL}},
	{"T41", "61aihjk0", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":{\"name\":\"d\",\"spec\":{\"pos\":7,\"dflt\":\"42\",\"notNull\":true,"
			"\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
		NULL}},
	{"T42", "61aihjvc", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":3,\"a\":\"three\",\"b\":3,\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":43}}",
		NULL}},
	{"T43", "61aiipo0", {
			"{\"tag\":\"drop-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"column\":\"b\"}",
		NULL}},
	{"T44", "61aiipvs", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":4,\"a\":\"four\",\"c_ts\":946684800000,\"c_mood\":null,\"c\":\"dflt\","
			"\"d\":42}}",
		NULL}},
	{"T45", "61aijv0g", {
			"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"old\":{\"name\":\"a\",\"spec\":{\"pos\":2,\"dflt\":\"'x'::text\",\"notNull\":true,"
			"\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"new\":{\"name\":\"a_renamed\",\"spec\":{\"pos\":2,"
			"\"dflt\":\"'x'::text\",\"notNull\":true,\"typeOID\":25,\"dataType\":\"text\","
			"\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,\"characterMaximumLength\":null}}}",
		NULL}},
	{"T46", "61aijv7c", {
			"{\"tag\":\"update\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_t\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},\"key\":null,"
			"\"old\":null,\"new\":{\"id\":1,\"a_renamed\":\"one (renamed column)\",\"c_ts\":946684800000,"
			"\"c_mood\":\"ok\",\"c\":\"dflt\",\"d\":42}}",
		NULL}},
	{"T47", "61ail1mo", {
			"{\"tag\":\"rename-table\",\"old\":{\"schema\":\"public\",\"name\":\"ddl_t\"},"
			"\"new\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"}}",
		NULL}},
	{"T48", "61ail1x4", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":5,\"a_renamed\":\"five\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":42}}",
		NULL}},
	{"T49", "61aim9p4", {
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_renamed\","
			"\"name\":\"ddl_renamed_c_d_idx\",\"unique\":false,\"isPrimaryKey\":false,"
			"\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"c\":\"DESC\","
			"\"d\":\"ASC\"}}}",
		NULL}},
	{"T50", "61aima40", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":6,\"a_renamed\":\"six\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"indexed\",\"d\":42}}",
		NULL}},
	{"T51", "61aing3s", {
			"{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_renamed_c_d_idx\"}}",
		NULL}},
	{"T52", "61aingcg", {
			"{\"tag\":\"delete\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"key\":{\"id\":6},\"old\":null}",
		NULL}},
	{"T53", "61aipg2o", {
			"{\"tag\":\"update-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"},"
			"\"old\":{\"name\":\"d\",\"spec\":{\"pos\":7,\"dflt\":\"42\",\"notNull\":true,\"typeOID\":23,"
			"\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"new\":{\"name\":\"d\",\"spec\":{\"pos\":7,"
			"\"dflt\":\"42\",\"notNull\":true,\"typeOID\":20,\"dataType\":\"int8\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}}}",
		NULL}},
	{"T54", "61aipim0", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25936,"
			"\"schema\":\"public\",\"name\":\"ddl_renamed\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":7,\"a_renamed\":\"seven\",\"c_ts\":946684800000,\"c_mood\":null,"
			"\"c\":\"dflt\",\"d\":9007199254740993}}",
		NULL}},
	{"T55", "61aiqtxs", {
			"{\"tag\":\"drop-index\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_t_pkey\"}}",
			"{\"tag\":\"drop-table\",\"id\":{\"schema\":\"public\",\"name\":\"ddl_renamed\"}}",
		NULL}},
	{"T56", "61aiqvco", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25762,"
			"\"schema\":\"public\",\"name\":\"idx_ident\",\"rowKey\":{\"columns\":[\"code\",\"region\"],"
			"\"type\":\"index\"},\"keyColumns\":[\"code\",\"region\"],\"replicaIdentity\":\"index\"},"
			"\"new\":{\"code\":\"after-drop\",\"region\":1,\"val\":\"dml after DROP TABLE\"}}",
		NULL}},
	{"T57", "61aitbxk", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25969,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"ddl_tx\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,\"dflt\":null,"
			"\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"v\":{\"pos\":2,\"dflt\":null,"
			"\"notNull\":false,\"typeOID\":25,\"dataType\":\"text\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"ddl_tx\","
			"\"name\":\"ddl_tx_pkey\",\"unique\":true,\"isPrimaryKey\":true,\"isReplicaIdentity\":false,"
			"\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"v\":\"a\"}}",
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"ddl_tx\"},"
			"\"column\":{\"name\":\"w\",\"spec\":{\"pos\":3,\"dflt\":null,\"notNull\":false,"
			"\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null,"
			"\"characterMaximumLength\":null}},\"tableMetadata\":{\"schemaOID\":2200,"
			"\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"v\":\"b\",\"w\":2}}",
			"{\"tag\":\"update\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25969,"
			"\"schema\":\"public\",\"name\":\"ddl_tx\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},\"key\":null,"
			"\"old\":null,\"new\":{\"id\":1,\"v\":\"a\",\"w\":1}}",
		NULL}},
	{"T58", "61aiujf4", {
			"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"full_ident\"},"
			"\"column\":{\"name\":\"created_at\",\"spec\":{\"pos\":5,\"dflt\":null,\"notNull\":false,"
			"\"typeOID\":1184,\"dataType\":\"timestamptz\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null}},"
			"\"tableMetadata\":{\"schemaOID\":2200,\"relationOID\":25755,"
			"\"rowKey\":{\"id\":{\"attNum\":1}}},\"backfill\":{\"attNum\":5}}",
		NULL}},
	{"BACKFILL", "61aiujf4.01", {
			"{\"tag\":\"backfill\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
			"\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
			"\"rowValues\":[[3,1795991645610.779],[10,1795991645610.779]],\"status\":{\"rows\":2,"
			"\"totalRows\":2,\"totalBytes\":24}}",
		NULL}},
	{"BACKFILL", "61aiul74", {
			"{\"tag\":\"backfill-completed\",\"relation\":{\"schema\":\"public\",\"name\":\"full_ident\","
			"\"rowKey\":{\"columns\":[\"id\"]}},\"columns\":[\"created_at\"],\"watermark\":\"61aiul74\","
			"\"status\":{\"rows\":2,\"totalRows\":2,\"totalBytes\":24}}",
		NULL}},
	{"T59", "61aiun0w", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25755,"
			"\"schema\":\"public\",\"name\":\"full_ident\",\"rowKey\":{\"columns\":[\"id\",\"label\","
			"\"amount\",\"tags\",\"created_at\"],\"type\":\"full\"},\"keyColumns\":[\"id\",\"label\","
			"\"amount\",\"tags\",\"created_at\"],\"replicaIdentity\":\"full\"},\"new\":{\"id\":20,"
			"\"label\":\"after volatile default\",\"amount\":null,\"tags\":null,"
			"\"created_at\":1795991650656.714}}",
		NULL}},
	{"T61", "61aivz88", {
			"{\"tag\":\"create-table\",\"spec\":{\"oid\":25977,\"schema\":\"public\",\"schemaOID\":2200,"
			"\"name\":\"geo_point\",\"replicaIdentity\":\"d\",\"columns\":{\"id\":{\"pos\":1,"
			"\"dflt\":null,\"notNull\":true,\"typeOID\":23,\"dataType\":\"int4\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":null,\"characterMaximumLength\":null},\"p\":{\"pos\":2,\"dflt\":null,"
			"\"notNull\":false,\"typeOID\":600,\"dataType\":\"point\",\"pgTypeClass\":\"b\","
			"\"elemPgTypeClass\":\"b\",\"characterMaximumLength\":null}},\"primaryKey\":[\"id\"],"
			"\"publications\":{\"zc_pub\":{\"rowFilter\":null}},\"replicaIdentityColumns\":[\"id\"]},"
			"\"metadata\":{\"schemaOID\":2200,\"relationOID\":25977,\"rowKey\":{\"id\":{\"attNum\":1}}}}",
			"{\"tag\":\"create-index\",\"spec\":{\"schema\":\"public\",\"tableName\":\"geo_point\","
			"\"name\":\"geo_point_pkey\",\"unique\":true,\"isPrimaryKey\":true,"
			"\"isReplicaIdentity\":false,\"isImmediate\":true,\"columns\":{\"id\":\"ASC\"}}}",
		NULL}},
	{"T62", "61aiw06w", {
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":1,\"p\":\"(1.5,-2)\"}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":2,\"p\":\"(-1e+300,1e-300)\"}}",
			"{\"tag\":\"insert\",\"relation\":{\"tag\":\"relation\",\"relationOid\":25977,"
			"\"schema\":\"public\",\"name\":\"geo_point\",\"rowKey\":{\"columns\":[\"id\"],"
			"\"type\":\"default\"},\"keyColumns\":[\"id\"],\"replicaIdentity\":\"default\"},"
			"\"new\":{\"id\":3,\"p\":null}}",
		NULL}},
};

/* the golden transaction rt_apply_golden() applies next */
static int	golden_next;

/* The next rt_apply_golden() starts at label's transaction. */
void
rt_golden_skip_to(const char *label)
{
	golden_next = 0;
	while (strcmp(golden[golden_next].label, label) != 0)
		golden_next++;
}

/* Apply the golden transactions after the last one applied, through label. */
void
rt_apply_golden(ZsReplica *r, const char *label)
{
	for (; golden_next < (int) lengthof(golden); golden_next++)
	{
		const GoldenTx *tx = &golden[golden_next];

		CHECK(rt_apply_tx(r, tx->watermark, tx->changes), "golden %s (%s): %s",
			  tx->label, tx->watermark, zs_replica_error(r));
		if (strcmp(tx->label, label) == 0)
		{
			golden_next++;
			return;
		}
	}
	CHECK(false, "no golden transaction %s", label);
}

/* The replica zero-cache started from (replica-initial-dump.txt), in part. */
ZsReplica *
rt_golden_replica(int flags)
{
	ZsReplica  *r = rt_open_memory_replica(flags, "61ai84s8", "[\"zc_pub\"]");
	ZsReplicaColumn fcols[] = {
		{"id", "int4", true, false, false, -1},
		{"label", "text", false, false, false, -1},
		{"amount", "numeric", false, false, false, -1},
		{"tags", "text[]", false, false, true, -1},
	};
	const char *fkeys[] = {"id"};
	ZsReplicaTable full = {"public", "full_ident", 4, fcols, "full_ident_pkey", 1, fkeys};
	ZsReplicaColumn icols[] = {
		{"code", "text", true, false, false, -1},
		{"region", "int4", true, false, false, -1},
		{"val", "text", false, false, false, -1},
	};
	const char *ikeys[] = {"code", "region"};
	ZsReplicaTable idx = {"public", "idx_ident", 3, icols, "idx_ident_key", 2, ikeys};

	CHECK(zs_replica_begin(r, "61ai84s8"), "begin copy");
	CHECK(zs_replica_create_table(r, &full), "create full_ident: %s", zs_replica_error(r));
	CHECK(zs_replica_create_table(r, &idx), "create idx_ident: %s", zs_replica_error(r));
	CHECK(zs_replica_commit(r, "61ai84s8") && zs_replica_flush(r), "commit copy");
	/* the two full_ident rows zero backfills in the golden run */
	CHECK(rt_apply1(r, "61ai8tnk", "{\"tag\":\"insert\"," RT_REL("full_ident", "[\"id\"]", "default")
				 ",\"new\":{\"id\":3,\"label\":\"two\",\"amount\":null,\"tags\":[]}}"), "row 3: %s", zs_replica_error(r));
	CHECK(rt_apply1(r, "61ai9gfs", "{\"tag\":\"insert\"," RT_REL("full_ident", "[\"id\"]", "default")
				 ",\"new\":{\"id\":10,\"label\":\"multi\",\"amount\":0.5,\"tags\":[\"x\"]}}"), "row 10: %s", zs_replica_error(r));
	return r;
}

/* T37-T47: create-table, create-index, add-column, drop-column, update-column (rename), rename-table */
static void
test_golden_tables(ZsReplica *r)
{
	rt_apply_golden(r, "T37");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("ddl_t")),
			  "CREATE TABLE \"ddl_t\" (\n\"id\" \"int4|NOT_NULL\",\n\"a\" \"text|NOT_NULL\",\n\"b\" \"int4\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"text\"\n)");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_t\" (\"id\" ASC)");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("ddl_t")),
			  "a:text100-- b:int4000-- c_mood:mood010-- c_ts:timestamptz000-- id:int4100--");
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("ddl_t")),
			  "public.ddl_t 00 {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(rt_query(r, "SELECT group_concat(pos || \"table\" || rowKey || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aidd8g'"),
			  "-1ddl_t61aidd8gr");

	/* ADD COLUMN with a constant default, then NOT NULL with a numeric one */
	rt_apply_golden(r, "T41");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("ddl_t")),
			  "CREATE TABLE \"ddl_t\" (\n\"id\" \"int4|NOT_NULL\",\n\"a\" \"text|NOT_NULL\",\n\"b\" \"int4\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"text\"\n"
			  ", \"c\" \"text\" DEFAULT 'dflt', \"d\" \"int4|NOT_NULL\" DEFAULT 42)");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || c || d || _0_version, ' ') FROM (SELECT * FROM ddl_t ORDER BY id)"),
			  "1dflt4261aidels 2dflt4261aigclc");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("ddl_t")),
			  "a:text100-- b:int4000-- c_mood:mood010-- c_ts:timestamptz000-- id:int4100-- c:text000-- d:int4100--");
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("ddl_t")),
			  "public.ddl_t 61aihjk0 {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");

	rt_apply_golden(r, "T43");		/* DROP COLUMN b */
	CHECK_STR(rt_query(r, RT_COLUMNS("ddl_t")), "id,a,c_ts,c_mood,_0_version,c,d");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE table_name = 'ddl_t' AND column_name = 'b'"), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || '/' || d) FROM (SELECT * FROM ddl_t ORDER BY id)"), "1/42,2/42,3/43");

	rt_apply_golden(r, "T46");		/* RENAME COLUMN a, then an update using the new name */
	CHECK_STR(rt_query(r, RT_COLUMNS("ddl_t")), "id,a_renamed,c_ts,c_mood,_0_version,c,d");
	CHECK_STR(rt_query(r, "SELECT column_name || upstream_type || is_not_null FROM \"_zero.column_metadata\" "
					"WHERE table_name = 'ddl_t' AND column_name LIKE 'a%'"), "a_renamedtext1");
	CHECK_STR(rt_query(r, "SELECT a_renamed FROM ddl_t WHERE id = 1"), "one (renamed column)");
	CHECK_STR(rt_query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'ddl_t'"), "61aijv0g");

	rt_apply_golden(r, "T48");		/* RENAME TABLE: the metadata follows, the index stays */
	CHECK_STR(rt_query(r, "SELECT group_concat(name) FROM sqlite_master WHERE name LIKE 'ddl%'"), "ddl_renamed,ddl_t_pkey");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_renamed\" (\"id\" ASC)");
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("ddl_renamed")),
			  "public.ddl_renamed 61ail1mo {\"schemaOID\":2200,\"relationOID\":25936,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(rt_query(r, "SELECT group_concat(DISTINCT table_name) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'ddl%'"),
			  "ddl_renamed");
	/* zero logs the reset of the new name, then of the old one in its place */
	CHECK_STR(rt_query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61ail1mo'"),
			  "ddl_tr");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM ddl_renamed"), "5");
}

/* T49-T56: create-index (DESC), drop-index, ALTER COLUMN TYPE, drop-table */
static void
test_golden_indexes(ZsReplica *r)
{
	rt_apply_golden(r, "T49");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("ddl_renamed_c_d_idx")),
			  "CREATE INDEX \"ddl_renamed_c_d_idx\" ON \"ddl_renamed\" (\"c\" DESC,\"d\" ASC)");
	CHECK_STR(rt_query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aim9p4'"),
			  "ddl_renamedr");
	rt_apply_golden(r, "T51");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM sqlite_master WHERE name = 'ddl_renamed_c_d_idx'"), "0");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aing3s'"), "0");

	/*
	 * int4 -> int8: the table is built again, defaults kept but the changed
	 * column's, the other columns declared as SQLite reports them (a declared
	 * "text" as "TEXT"), as zero's rebuild declares them
	 */
	rt_apply_golden(r, "T53");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("ddl_renamed")),
			  "CREATE TABLE \"ddl_renamed\" (\n\"id\" \"int4|NOT_NULL\",\n\"a_renamed\" \"text|NOT_NULL\",\n"
			  "\"c_ts\" \"timestamptz\",\n\"c_mood\" \"mood|TEXT_ENUM\",\n\"_0_version\" \"TEXT\",\n"
			  "\"c\" \"TEXT\" DEFAULT 'dflt',\n\"d\" \"int8|NOT_NULL\"\n)");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("ddl_t_pkey")), "CREATE UNIQUE INDEX \"ddl_t_pkey\" ON \"ddl_renamed\" (\"id\" ASC)");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'tmp.%'"), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || a_renamed || d || _0_version, ' ') FROM (SELECT * FROM ddl_renamed ORDER BY id)"),
			  "1one (renamed column)4261aijv7c 2two4261aigclc 3three4361aihjvc 4four4261aiipvs 5five4261ail1x4");
	CHECK_STR(rt_query(r, "SELECT upstream_type || is_not_null FROM \"_zero.column_metadata\" WHERE table_name = 'ddl_renamed' AND column_name = 'd'"),
			  "int81");
	CHECK_STR(rt_query(r, "SELECT minRowVersion FROM \"_zero.tableMetadata\" WHERE \"table\" = 'ddl_renamed'"), "61aipg2o");
	rt_apply_golden(r, "T54");
	CHECK_STR(rt_query(r, "SELECT d || typeof(d) FROM ddl_renamed WHERE id = 7"), "9007199254740993integer");

	rt_apply_golden(r, "T56");		/* drop-index, drop-table */
	CHECK_STR(rt_query(r, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'ddl%'"), "0");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE table_name LIKE 'ddl%'"), "0");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.tableMetadata\" WHERE \"table\" LIKE 'ddl%'"), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(\"table\" || op) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aiqtxs'"),
			  "ddl_renamedr");
}

/* T57-T62: DDL and DML in one transaction, a backfill, a point column */
static void
test_golden_backfill(ZsReplica *r)
{
	rt_apply_golden(r, "T57");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("ddl_tx")),
			  "CREATE TABLE \"ddl_tx\" (\n\"id\" \"int4|NOT_NULL\",\n\"v\" \"text\",\n\"_0_version\" \"text\"\n, \"w\" \"int4\")");
	CHECK_STR(rt_query(r, RT_INDEX_SQL("ddl_tx_pkey")), "CREATE UNIQUE INDEX \"ddl_tx_pkey\" ON \"ddl_tx\" (\"id\" ASC)");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || v || w || _0_version, ' ') FROM (SELECT * FROM ddl_tx ORDER BY id)"),
			  "1a161aitbxk 2b261aitbxk");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("ddl_tx")), "id:int4100-- v:text000-- w:int4000--");

	/* ADD COLUMN ... DEFAULT now(): typed, backfilling, no version bump yet */
	rt_apply_golden(r, "T58");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("full_ident")),
			  "CREATE TABLE \"full_ident\" (\n\"id\" \"int4|NOT_NULL\",\n\"label\" \"text\",\n\"amount\" \"numeric\",\n"
			  "\"tags\" \"text[]|TEXT_ARRAY\",\n\"_0_version\" \"text\" DEFAULT '61ai84s8'\n, \"created_at\" \"timestamptz\")");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("full_ident")),
			  "id:int4100-- label:text000-- amount:numeric000-- tags:text[]001-- created_at:timestamptz000-{\"attNum\":5}");
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("full_ident")),
			  "public.full_ident 00 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE stateVersion = '61aiujf4'"), "0");

	rt_apply_golden(r, "BACKFILL");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || ' ' || created_at || ' ' || typeof(created_at) || ' ' || _0_version, ', ') "
					"FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "3 1795991645610.78 real 61ai8tnk, 10 1795991645610.78 real 61ai9gfs");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM full_ident WHERE created_at = 1795991645610.779"), "2");
	rt_apply_golden(r, "BACKFILL");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.column_metadata\" WHERE backfill IS NOT NULL"), "0");
	CHECK_STR(rt_query(r, RT_TABLE_METADATA("full_ident")),
			  "public.full_ident 61aiul74 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}} NULL");
	rt_apply_golden(r, "T59");
	CHECK_STR(rt_query(r, "SELECT label || _0_version FROM full_ident WHERE id = 20 AND created_at = 1795991650656.714"),
			  "after volatile default61aiun0w");

	/* zero's replica-dump.txt: the changeLog2 rows of T37-T59 and both tableMetadata rows */
	CHECK_STR(rt_query(r, "SELECT group_concat(stateVersion || ' ' || pos || ' ' || \"table\" || ' ' || "
					"CASE WHEN op IN ('r', 't') THEN '-' ELSE rowKey END || ' ' || op || backfillingColumnVersions, '|') "
					"FROM (SELECT * FROM \"_zero.changeLog2\" WHERE stateVersion >= '61aidd8g' ORDER BY stateVersion, pos)"),
			  "61aidd8g -1 ddl_t - r{}|61aigca8 -1 ddl_t - r{}|61aigclc 0 ddl_t {\"id\":2} s{}|"
			  "61aihjk0 -1 ddl_t - r{}|61aihjvc 0 ddl_t {\"id\":3} s{}|61aiipo0 -1 ddl_t - r{}|"
			  "61aiipvs 0 ddl_t {\"id\":4} s{}|61aijv0g -1 ddl_t - r{}|61aijv7c 0 ddl_t {\"id\":1} s{}|"
			  "61ail1mo -1 ddl_t - r{}|61ail1x4 0 ddl_renamed {\"id\":5} s{}|61aim9p4 -1 ddl_renamed - r{}|"
			  "61aingcg 0 ddl_renamed {\"id\":6} d{}|61aipg2o -1 ddl_renamed - r{}|"
			  "61aipim0 0 ddl_renamed {\"id\":7} s{}|61aiqtxs -1 ddl_renamed - r{}|"
			  "61aiqvco 0 idx_ident {\"code\":\"after-drop\",\"region\":1} s{}|61aitbxk -1 ddl_tx - r{}|"
			  "61aitbxk 1 ddl_tx {\"id\":2} s{}|61aitbxk 2 ddl_tx {\"id\":1} s{}|"
			  "61aiul74 -1 full_ident - r{}|61aiun0w 0 full_ident {\"id\":20} s{}");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\" WHERE op = 'r' AND rowKey <> stateVersion"), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(\"schema\" || '.' || \"table\" || ' ' || minRowVersion || ' ' || upstreamMetadata, '|') "
					"FROM (SELECT * FROM \"_zero.tableMetadata\" ORDER BY \"table\")"),
			  "public.ddl_tx 61aitbxk {\"schemaOID\":2200,\"relationOID\":25969,\"rowKey\":{\"id\":{\"attNum\":1}}}|"
			  "public.full_ident 61aiul74 {\"schemaOID\":2200,\"relationOID\":25755,\"rowKey\":{\"id\":{\"attNum\":1}}}");
	CHECK_STR(rt_query(r, "SELECT stateVersion FROM \"_zero.replicationState\""), "61aiun0w");

	/* a scalar point (its type has an element type): declared "point", not an array */
	rt_apply_golden(r, "T62");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("geo_point")),
			  "CREATE TABLE \"geo_point\" (\n\"id\" \"int4|NOT_NULL\",\n\"p\" \"point\",\n\"_0_version\" \"text\"\n)");
	CHECK_STR(rt_query(r, RT_COLUMN_METADATA("geo_point")), "id:int4100-- p:point000--");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || coalesce(p, '-'), ' ') FROM (SELECT * FROM geo_point ORDER BY id)"),
			  "1(1.5,-2) 2(-1e+300,1e-300) 3-");
}

void
test_golden_schema_changes(void)
{
	ZsReplica  *r = rt_golden_replica(ZS_REPLICA_LOG_CHANGES);

	golden_next = 0;
	test_golden_tables(r);
	test_golden_indexes(r);
	test_golden_backfill(r);
	CHECK(golden_next == (int) lengthof(golden), "every golden transaction applied");
	zs_replica_close(r);

	/* a backup replica (no change log) gets the same tables, and no changeLog2 rows */
	r = rt_golden_replica(0);
	golden_next = 0;
	rt_apply_golden(r, "T62");
	CHECK_STR(rt_query(r, RT_TABLE_SQL("ddl_tx")),
			  "CREATE TABLE \"ddl_tx\" (\n\"id\" \"int4|NOT_NULL\",\n\"v\" \"text\",\n\"_0_version\" \"text\"\n, \"w\" \"int4\")");
	CHECK_STR(rt_query(r, "SELECT count(*) FROM \"_zero.changeLog2\""), "0");
	CHECK_STR(rt_query(r, "SELECT group_concat(id || created_at, ' ') FROM (SELECT * FROM full_ident ORDER BY id)"),
			  "31795991645610.78 101795991645610.78 201795991650656.71");
	CHECK_STR(rt_query(r, "SELECT group_concat(\"table\" || minRowVersion) FROM \"_zero.tableMetadata\""),
			  "ddl_tx61aitbxk,full_ident61aiul74,geo_point00");
	zs_replica_close(r);
}

RT_COUNTS(rt_golden_counts)
