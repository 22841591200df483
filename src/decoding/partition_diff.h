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
 * Does the partitioned table root (an oid), published through its root in
 * both snapshots (the documents' "partitions"), need its rows sent again?
 * True if a leaf left it (DETACH, also CONCURRENTLY, or DROP), or a leaf
 * joined it (ATTACH) that is not known to be empty. A partition created
 * as one (CREATE TABLE ... PARTITION OF) joins empty.
 */
extern bool zs_partition_root_changed(const ZsJsonDoc *prev, const ZsJsonDoc *next,
									  int64 root, ZsEmptyLeaves empty);

#endif							/* ZS_PARTITION_DIFF_H */
