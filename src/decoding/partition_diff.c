/*-------------------------------------------------------------------------
 * partition_diff.c
 *	  Partitions that join or leave a table published through its root.
 *
 * With publish_via_partition_root, pgoutput sends a partition's changes as
 * its root's, but a partition that is attached with rows, detached (also
 * CONCURRENTLY) or dropped changes the root's rows with no change in the
 * stream: replicas would miss the attached rows and keep the detached
 * ones. zero_stream.published_schema() lists, in "partitions", the leaf
 * partitions ([{"oid": root, "leaves": [oid, …]}, …]) of each table
 * published through its root, and the DDL capture adds to its message the
 * new leaves that hold no row ("emptyLeaves": a partition created as one,
 * or attached empty; the command's lock keeps it so until it commits).
 *
 * zero-cache's messages cannot say "these rows joined the table" safely
 * (a backfill overwrites what the stream changed after its snapshot unless
 * the replica tracks the columns as backfilling, which only a new table or
 * column does), nor "the rows of this partition left" (deletes need every
 * key at the detach, and the detached table is no longer in the stream).
 * So such a root is reset: the schema diff drops it and creates it again
 * with a backfill of every column, as zero-cache does for a table added to
 * a publication; every replica then holds exactly its rows. Compiles as
 * backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "decoding/partition_diff.h"

/* the "leaves" array of root in a snapshot's "partitions", or -1 */
static int
leaves_of(const ZsJsonDoc *doc, int64 root)
{
	int			parts = zs_json_get(doc, 0, "partitions");

	if (parts < 0 || doc->nodes[parts].type != ZS_JSON_ARRAY)
		return -1;
	for (int p = doc->nodes[parts].first_child; p >= 0; p = doc->nodes[p].next)
	{
		int			oid = zs_json_get(doc, p, "oid");
		int			leaves = zs_json_get(doc, p, "leaves");
		int64		v;

		if (oid >= 0 && zs_json_int64(doc, oid, &v) && v == root &&
			leaves >= 0 && doc->nodes[leaves].type == ZS_JSON_ARRAY)
			return leaves;
	}
	return -1;
}

static bool
array_has(const ZsJsonDoc *doc, int array, int64 value)
{
	if (array < 0 || doc->nodes[array].type != ZS_JSON_ARRAY)
		return false;
	for (int e = doc->nodes[array].first_child; e >= 0; e = doc->nodes[e].next)
	{
		int64		v;

		if (zs_json_int64(doc, e, &v) && v == value)
			return true;
	}
	return false;
}

bool
zs_partition_root_changed(const ZsJsonDoc *prev, const ZsJsonDoc *next, int64 root,
						  ZsEmptyLeaves empty)
{
	int			before = leaves_of(prev, root);
	int			after = leaves_of(next, root);

	/* not partitioned in one of them (or a snapshot without partitions) */
	if (before < 0 || after < 0)
		return false;
	for (int e = prev->nodes[before].first_child; e >= 0; e = prev->nodes[e].next)
	{
		int64		leaf;

		if (zs_json_int64(prev, e, &leaf) && !array_has(next, after, leaf))
			return true;		/* it left, with whatever rows it had */
	}
	for (int e = next->nodes[after].first_child; e >= 0; e = next->nodes[e].next)
	{
		int64		leaf;

		if (zs_json_int64(next, e, &leaf) && !array_has(prev, before, leaf) &&
			!(empty.doc != NULL && array_has(empty.doc, empty.node, leaf)))
			return true;		/* it joined, perhaps with rows */
	}
	return false;
}
