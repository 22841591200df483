/*-------------------------------------------------------------------------
 * test_replica.c
 *	  Unit tests of the JSON reader and the SQLite replica library
 *	  (src/replica/), against an in-memory SQLite database: row changes,
 *	  and every schema change and backfill as zero-cache 1.9.0 sent them in
 *	  the golden workload (test/golden), checked against the replica
 *	  zero-cache made of them. This file runs them: the tests that apply
 *	  changes three times, once for each way a change is parsed
 *	  (RtParseMode); the tests themselves are in replica_test_*.c, grouped
 *	  by what they test (replica_test.h lists them).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "replica_test.h"

/* The tests that apply changes: run as a subscriber parses them, then as the replicator does. */
static void
test_applying(void)
{
	test_changes();
	test_row_runs();
	test_keyless();
	test_golden_schema_changes();
	test_backfill_newer_changes();
	test_schema_change_details();
	test_schema_change_errors();
	test_bad_row_keys();
	test_quoted_names();
	test_row_shapes();
}

int
main(void)
{
	rt_setup();
	test_json_reader();
	test_schema();
	test_foreign_file();
	test_applying();
	/* again, with each change's relation deferred and cached */
	rt_parse_as(RT_PARSE_STORED);
	test_applying();
	/* again, as zero-stream-replica reads frames */
	rt_parse_as(RT_PARSE_FRAMES);
	test_applying();
	rt_teardown();

	/* every file's checks, counted by unit.h in that file */
	rt_apply_counts(&unit_passed, &unit_failed);
	rt_json_read_counts(&unit_passed, &unit_failed);
	rt_rows_counts(&unit_passed, &unit_failed);
	rt_golden_counts(&unit_passed, &unit_failed);
	rt_schema_changes_counts(&unit_passed, &unit_failed);
	rt_bad_input_counts(&unit_passed, &unit_failed);
	return unit_report("replica");
}
