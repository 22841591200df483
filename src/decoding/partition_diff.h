/*-------------------------------------------------------------------------
 * partition_diff.h
 *	  Which partitioned tables, published through their root, had rows
 *	  join or leave with a partition between two snapshots of the
 *	  published schema (see partition_diff.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PARTITION_DIFF_H
#define ZS_PARTITION_DIFF_H

#include "codec/json_read.h"

/*
 * A list of leaf partitions: a JSON array of oids in doc at node, or none
 * if doc is NULL.
 */
typedef struct ZsLeafList
{
	const ZsJsonDoc *doc;
	int			node;
} ZsLeafList;

/*
 * The partitioned tables (oids), published through their root in both
 * snapshots (the documents' "partitions"), whose rows must be sent again:
 * a leaf left (DETACH, also CONCURRENTLY, or DROP) or joined (ATTACH) that
 * is not among the leaves the stream accounts for (accounted: the DDL
 * capture's "accountedLeaves", or "emptyLeaves"); or a leaf it has in both
 * is among emptied (the capture's "emptiedLeaves": a TRUNCATE's leaves it
 * did not carry). A partition created as one (CREATE TABLE ... PARTITION OF) joins
 * empty. Returns how many, sorted, in *roots (palloc'd; NULL if none).
 */
extern int	zs_partition_changed_roots(const ZsJsonDoc *prev, const ZsJsonDoc *next,
									   ZsLeafList accounted, ZsLeafList emptied,
									   int64 **roots);

extern int	zs_partition_all_leaves(const ZsJsonDoc *doc, int64 **leaves);

/* Is oid among roots[0 .. n - 1] (sorted)? */
extern bool zs_partition_root_listed(const int64 *roots, int n, int64 oid);

#endif							/* ZS_PARTITION_DIFF_H */
