/*
 * The tables the replica library's unit tests and its fuzz target start
 * from: one of every identity and many column kinds (replica_test_apply.c,
 * test/fuzz/fuzz_replica.c). Include after replica/replica_apply.h.
 */
#ifndef ZS_REPLICA_FIXTURE_H
#define ZS_REPLICA_FIXTURE_H

/*
 * Create t (int8 key, text, int4, float8, text[], an enum, bpchar(5)),
 * full_ident (the golden workload's), app.idx_ident (a two-column key) and,
 * with with_items, items (timestamptz and jsonb). false at the first that
 * fails (zs_replica_error() says why).
 */
static inline bool
zs_fixture_create_tables(ZsReplica *r, bool with_items)
{
	ZsReplicaColumn cols[] = {
		{"id", "int8", true, false, false, -1},
		{"big", "text", false, false, false, -1},
		{"n", "int4", false, false, false, -1},
		{"f", "float8", false, false, false, -1},
		{"tags", "text[]", false, false, true, -1},
		{"mood", "mood", false, true, false, -1},
		{"c", "bpchar", false, false, false, 5},
	};
	const char *keys[] = {"id"};
	ZsReplicaTable t = {"public", "t", 7, cols, "t_pkey", 1, keys};
	ZsReplicaColumn fcols[] = {
		{"id", "int4", true, false, false, -1},
		{"label", "text", false, false, false, -1},
		{"amount", "numeric", false, false, false, -1},
	};
	ZsReplicaTable full = {"public", "full_ident", 3, fcols, "full_ident_pkey", 1, keys};
	ZsReplicaColumn icols[] = {
		{"code", "text", true, false, false, -1},
		{"region", "int4", true, false, false, -1},
		{"val", "text", false, false, false, -1},
	};
	const char *ikeys[] = {"code", "region"};
	ZsReplicaTable idx = {"app", "idx_ident", 3, icols, "idx_ident_key", 2, ikeys};
	ZsReplicaColumn items_cols[] = {
		{"id", "int4", true, false, false, -1},
		{"title", "text", false, false, false, -1},
		{"n", "int4", false, false, false, -1},
		{"ts", "timestamptz", false, false, false, -1},
		{"payload", "jsonb", false, false, false, -1},
	};
	ZsReplicaTable items = {"public", "items", 5, items_cols, "items_pkey", 1, keys};

	return zs_replica_create_table(r, &t) && zs_replica_create_table(r, &full) &&
		zs_replica_create_table(r, &idx) && (!with_items || zs_replica_create_table(r, &items));
}

#endif							/* ZS_REPLICA_FIXTURE_H */
