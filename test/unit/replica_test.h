/*-------------------------------------------------------------------------
 * replica_test.h
 *	  What the files of test/unit/test_replica share: the ways a test applies
 *	  changes to an in-memory replica and reads it back (replica_test_apply.c),
 *	  the golden workload's replica (replica_test_golden.c), the macros that
 *	  spell change messages and catalog queries, and each file's test
 *	  functions, which test_replica.c runs.
 *
 * unit.h keeps its counters in each file that includes it; every file of
 * this binary defines RT_COUNTS(rt_<file>_counts), and main adds them to
 * its own before unit_report().
 *-------------------------------------------------------------------------
 */
#ifndef ZS_REPLICA_TEST_H
#define ZS_REPLICA_TEST_H

#include "codec/json_read.h"
#include "replica/replica_apply.h"
#include "unit.h"

/* A function that adds this file's unit.h counters to *passed and *failed. */
#define RT_COUNTS(name) \
	void \
	name(int *passed, int *failed) \
	{ \
		*passed += unit_passed; \
		*failed += unit_failed; \
	}

/* A change's relation member, of public.name, keyed by cols (a JSON array). */
#define RT_REL(name, cols, type) \
	"\"relation\":{\"tag\":\"relation\",\"relationOid\":1,\"schema\":\"public\",\"name\":\"" name "\"," \
	"\"rowKey\":{\"columns\":" cols ",\"type\":\"" type "\"}}"

/* An add-column change of public.table, and a column spec of a base type. */
#define RT_ADD_COLUMN(table, col, spec) \
	"{\"tag\":\"add-column\",\"table\":{\"schema\":\"public\",\"name\":\"" table "\"}," \
	"\"column\":{\"name\":\"" col "\",\"spec\":" spec "}}"
#define RT_SPEC(type, extra) "{\"pos\":9,\"dataType\":\"" type "\",\"pgTypeClass\":\"b\",\"elemPgTypeClass\":null" extra "}"

/* Queries of the replica's tables, indexes and zero's metadata of them. */
#define RT_TABLE_SQL(name) "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '" name "'"
#define RT_INDEX_SQL(name) "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = '" name "'"
#define RT_COLUMN_METADATA(table) \
	"SELECT group_concat(column_name || ':' || upstream_type || is_not_null || is_enum || is_array || " \
	"coalesce(character_max_length, '-') || coalesce(backfill, '-'), ' ') FROM " \
	"(SELECT * FROM \"_zero.column_metadata\" WHERE table_name = '" table "' ORDER BY rowid)"
#define RT_TABLE_METADATA(table) \
	"SELECT \"schema\" || '.' || \"table\" || ' ' || minRowVersion || ' ' || coalesce(upstreamMetadata, 'NULL') " \
	"|| ' ' || coalesce(metadata, 'NULL') FROM \"_zero.tableMetadata\" WHERE \"table\" = '" table "'"
#define RT_COLUMNS(table) "SELECT group_concat(name) FROM pragma_table_info('" table "')"

/*
 * How the apply tests parse changes: whole, as a subscriber did (first
 * pass); as the replicator reads stored changes, the relation deferred and
 * read once (second pass); as zero-stream-replica reads frames, the
 * relation of each change in a frame deferred (third pass).
 */
typedef enum RtParseMode
{
	RT_PARSE_WHOLE,
	RT_PARSE_STORED,
	RT_PARSE_FRAMES
} RtParseMode;

/* replica_test_apply.c */
extern ZsJsonDoc rt_doc;		/* the document every change is parsed into */
extern void rt_setup(void);
extern void rt_teardown(void);
extern void rt_parse_as(RtParseMode mode);
extern const char *rt_query(ZsReplica *r, const char *sql);
extern bool rt_apply(ZsReplica *r, const char *json);
extern bool rt_apply_tx(ZsReplica *r, const char *watermark, const char *const *changes);
extern bool rt_apply1(ZsReplica *r, const char *watermark, const char *change);
extern ZsReplica *rt_open_memory_replica(int flags, const char *replica_version, const char *publications);
extern ZsReplica *rt_new_replica(int flags);
extern void rt_apply_counts(int *passed, int *failed);

/* replica_test_golden.c */
extern ZsReplica *rt_golden_replica(int flags);
extern void rt_golden_skip_to(const char *label);
extern void rt_apply_golden(ZsReplica *r, const char *label);
extern void test_golden_schema_changes(void);
extern void rt_golden_counts(int *passed, int *failed);

/* replica_test_json_read.c */
extern void test_json_reader(void);
extern void rt_json_read_counts(int *passed, int *failed);

/* replica_test_rows.c */
extern void test_schema(void);
extern void test_changes(void);
extern void test_row_runs(void);
extern void test_keyless(void);
extern void test_quoted_names(void);
extern void test_row_shapes(void);
extern void rt_rows_counts(int *passed, int *failed);

/* replica_test_schema_changes.c */
extern void test_backfill_newer_changes(void);
extern void test_schema_change_details(void);
extern void rt_schema_changes_counts(int *passed, int *failed);

/* replica_test_bad_input.c */
extern void test_schema_change_errors(void);
extern void test_bad_row_keys(void);
extern void test_foreign_file(void);
extern void rt_bad_input_counts(int *passed, int *failed);

#endif							/* ZS_REPLICA_TEST_H */
