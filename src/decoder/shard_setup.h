/*-------------------------------------------------------------------------
 * shard_setup.h
 *	  Zero's metadata tables and publication (see shard_setup.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SHARD_SETUP_H
#define ZS_SHARD_SETUP_H

#include "nodes/pg_list.h"

/*
 * Check the application's publications, and create whatever is missing of
 * <app>.permissions, <app>_<shard>.clients/.mutations and the publication
 * _<app>_metadata_<shard>, in its own transaction.
 */
extern void zs_shard_setup(List *app_publications);

/*
 * Report, at elevel, every published table Zero's replicas cannot hold
 * (zero-cache's validate()); in the caller's transaction. Returns how many.
 */
extern int	zs_shard_setup_check_tables(List *publications, int elevel);

#endif							/* ZS_SHARD_SETUP_H */
