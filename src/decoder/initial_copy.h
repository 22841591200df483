/*-------------------------------------------------------------------------
 * initial_copy.h
 *	  Copy the published tables into a new backup replica, as of the slot's
 *	  consistent snapshot.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_INITIAL_COPY_H
#define ZS_INITIAL_COPY_H

#include "nodes/pg_list.h"

/*
 * Runs in the caller's transaction, on the slot's snapshot, with SPI
 * connected. Does nothing if zero_stream.replica_file is empty.
 */
extern void zs_initial_copy(const char *replica_version, List *publications,
							const char *published_schema);

#endif							/* ZS_INITIAL_COPY_H */
