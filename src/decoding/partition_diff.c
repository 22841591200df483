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
 * leaves whose joining or leaving the stream already accounts for
 * ("accountedLeaves"; "emptyLeaves" before 0.5.0, joined leaves only): a
 * leaf that joined holding no row (a partition created as one, or attached
 * empty), and one whose rows the capture carried in the DDL's transaction,
 * as inserts of those that joined or deletes of those that left
 * (decoder/partition_rows.c); the command's lock keeps the leaf as it was
 * read until it commits.
 *
 * A TRUNCATE of a partition changes its root's rows with no change in the
 * stream either (pgoutput sends no truncate of a partition published
 * through its root); the capture carries its rows as deletes before the
 * command runs (src/capture_truncate.c), or, over
 * zero_stream.partition_carry_rows, lists the leaf as emptied.
 *
 * A leaf the capture did not account for (one dropped, one over
 * zero_stream.partition_carry_rows, a change made while no capture ran),
 * and one emptied, cannot be said with zero-cache's messages after the fact (a backfill
 * overwrites what the stream changed after its snapshot unless the replica
 * tracks the columns as backfilling, which only a new table or column
 * does, and deletes need every key at the detach). So its root is reset:
 * the schema diff drops it and creates it again with a backfill of every
 * column, as zero-cache does for a table added to a publication; every
 * replica then holds exactly its rows. Compiles as backend or frontend
 * code.
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include <stdlib.h>

#include "decoding/partition_diff.h"

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* The oids of a JSON array, sorted; returns how many (palloc'd in *out). */
static int
sorted_oids(const ZsJsonDoc *doc, int array, int64 **out)
{
	int			n = 0;

	*out = NULL;
	if (array < 0 || doc->nodes[array].type != ZS_JSON_ARRAY)
		return 0;
	*out = palloc(sizeof(int64) * Max(doc->nodes[array].count, 1));
	for (int e = doc->nodes[array].first_child; e >= 0; e = doc->nodes[e].next)
		if (zs_json_int64(doc, e, &(*out)[n]))
			n++;
	qsort(*out, n, sizeof(int64), cmp_int64);
	return n;
}

bool
zs_partition_root_listed(const int64 *roots, int n, int64 oid)
{
	return n > 0 && bsearch(&oid, roots, n, sizeof(int64), cmp_int64) != NULL;
}

/* an entry's root oid and its "leaves" array; false if malformed */
static bool
entry(const ZsJsonDoc *doc, int p, int64 *root, int *leaves)
{
	int			oid = zs_json_get(doc, p, "oid");

	*leaves = zs_json_get(doc, p, "leaves");
	return oid >= 0 && zs_json_int64(doc, oid, root) &&
		*leaves >= 0 && doc->nodes[*leaves].type == ZS_JSON_ARRAY;
}

/* Did a leaf join or leave that the stream does not account for? (sorted oids) */
static bool
leaves_changed(const int64 *before, int nb, const int64 *after, int na,
			   const int64 *accounted, int nacc)
{
	int			i = 0,
				j = 0;

	while (i < nb || j < na)
	{
		if (j >= na || (i < nb && before[i] < after[j]))
		{
			if (!zs_partition_root_listed(accounted, nacc, before[i]))
				return true;	/* it left, with whatever rows it had */
			i++;
			continue;
		}
		if (i >= nb || after[j] < before[i])
		{
			if (!zs_partition_root_listed(accounted, nacc, after[j]))
				return true;	/* it joined, perhaps with rows */
			j++;
			continue;
		}
		i++;
		j++;
	}
	return false;
}

/* Is any of the (sorted) leaves among the (sorted) listed ones? */
static bool
any_listed(const int64 *leaves, int n, const int64 *listed, int nlisted)
{
	for (int i = 0; i < n; i++)
		if (zs_partition_root_listed(listed, nlisted, leaves[i]))
			return true;
	return false;
}

int
zs_partition_changed_roots(const ZsJsonDoc *prev, const ZsJsonDoc *next,
						   ZsLeafList accounted, ZsLeafList emptied, int64 **roots)
{
	int			pparts = zs_json_get(prev, 0, "partitions");
	int			nparts = zs_json_get(next, 0, "partitions");
	int64	   *accounted_oids = NULL;
	int			naccounted = accounted.doc ? sorted_oids(accounted.doc, accounted.node, &accounted_oids) : 0;
	int64	   *emptied_oids = NULL;
	int			nemptied = emptied.doc ? sorted_oids(emptied.doc, emptied.node, &emptied_oids) : 0;
	int			n = 0;

	*roots = NULL;
	/* a snapshot without partitions (older) changes nothing */
	if (pparts < 0 || nparts < 0 || prev->nodes[pparts].type != ZS_JSON_ARRAY ||
		next->nodes[nparts].type != ZS_JSON_ARRAY)
		return 0;
	for (int q = next->nodes[nparts].first_child; q >= 0; q = next->nodes[q].next)
	{
		int64		root,
					proot;
		int			after_node,
					before_node = -1;
		int64	   *before,
				   *after;
		int			nb,
					na;

		if (!entry(next, q, &root, &after_node))
			continue;
		for (int p = prev->nodes[pparts].first_child; p >= 0 && before_node < 0; p = prev->nodes[p].next)
		{
			int			leaves;

			if (entry(prev, p, &proot, &leaves) && proot == root)
				before_node = leaves;
		}
		if (before_node < 0)
			continue;			/* newly published: create-table copies it */
		nb = sorted_oids(prev, before_node, &before);
		na = sorted_oids(next, after_node, &after);
		if (leaves_changed(before, nb, after, na, accounted_oids, naccounted) ||
			any_listed(after, na, emptied_oids, nemptied))
		{
			if (*roots == NULL)
				*roots = palloc(sizeof(int64) * Max(next->nodes[nparts].count, 1));
			(*roots)[n++] = root;
		}
		if (before)
			pfree(before);
		if (after)
			pfree(after);
	}
	if (accounted_oids)
		pfree(accounted_oids);
	if (emptied_oids)
		pfree(emptied_oids);
	if (n > 1)
		qsort(*roots, n, sizeof(int64), cmp_int64);
	return n;
}

int
zs_partition_all_leaves(const ZsJsonDoc *doc, int64 **leaves)
{
	int			parts = zs_json_get(doc, 0, "partitions");
	int			n = 0;
	int			max = 0;

	*leaves = NULL;
	if (parts < 0 || doc->nodes[parts].type != ZS_JSON_ARRAY)
		return 0;
	for (int p = doc->nodes[parts].first_child; p >= 0; p = doc->nodes[p].next)
	{
		int64		root;
		int			list;

		if (entry(doc, p, &root, &list))
			max += doc->nodes[list].count;
	}
	if (max == 0)
		return 0;
	*leaves = palloc(sizeof(int64) * max);
	for (int p = doc->nodes[parts].first_child; p >= 0; p = doc->nodes[p].next)
	{
		int64		root;
		int			list;

		if (!entry(doc, p, &root, &list))
			continue;
		for (int e = doc->nodes[list].first_child; e >= 0; e = doc->nodes[e].next)
			if (n < max && zs_json_int64(doc, e, &(*leaves)[n]))
				n++;
	}
	if (n > 1)
		qsort(*leaves, n, sizeof(int64), cmp_int64);
	return n;
}
