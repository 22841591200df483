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
 * Leaf partitions known to hold no row when they joined: the DDL capture's
 * "emptyLeaves" (a JSON array of oids in doc at node, or none if node < 0).
 */
typedef struct ZsEmptyLeaves
{
	const ZsJsonDoc *doc;
	int			node;
} ZsEmptyLeaves;

/*
 * The partitioned tables (oids), published through their root in both
 * snapshots (the documents' "partitions"), whose rows must be sent again:
 * a leaf left (DETACH, also CONCURRENTLY, or DROP), or a leaf joined
 * (ATTACH) that is not known to be empty. A partition created as one
 * (CREATE TABLE ... PARTITION OF) joins empty. Returns how many, sorted,
 * in *roots (palloc'd; NULL if none).
 */
extern int	zs_partition_changed_roots(const ZsJsonDoc *prev, const ZsJsonDoc *next,
									   ZsEmptyLeaves empty, int64 **roots);

/* Is oid among roots[0 .. n - 1] (sorted)? */
extern bool zs_partition_root_listed(const int64 *roots, int n, int64 oid);

#endif							/* ZS_PARTITION_DIFF_H */
