/*-------------------------------------------------------------------------
 * partition_rows.h
 *	  The rows of a leaf partition that joined or left a table published
 *	  through its root, as the DDL capture carries them (see
 *	  partition_rows.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PARTITION_ROWS_H
#define ZS_PARTITION_ROWS_H

#include "codec/json_read.h"
#include "decoding/pgoutput_read.h"

/* The prefix of the logical messages that carry them */
#define ZS_ROWS_MESSAGE_PREFIX "zero_stream/rows"

/* One message being read */
typedef struct ZsPartitionRows
{
	ZsJsonDoc	doc;
	bool		is_delete;
	ZsPgoutputMsg relation;		/* the root's relation message */
	int			next_row;		/* node of the next row, -1 at the end */
} ZsPartitionRows;

/*
 * Read a message's content (not copied: it must outlive rows). On success
 * rows->relation describes the root as pgoutput would at this point of the
 * stream; returns NULL, or what is malformed. Close it either way.
 */
extern const char *zs_partition_rows_open(ZsPartitionRows *rows, const char *content, int len);

/*
 * The next row as the root's insert (a leaf that joined) or delete (one
 * that left) in msg, whose tuple storage (new_tuple, old_tuple) the caller
 * provides; the values point into rows. False at the end, or with *error
 * set when the row is malformed.
 */
extern bool zs_partition_rows_next(ZsPartitionRows *rows, ZsPgoutputMsg *msg, const char **error);

extern void zs_partition_rows_close(ZsPartitionRows *rows);

#endif							/* ZS_PARTITION_ROWS_H */
