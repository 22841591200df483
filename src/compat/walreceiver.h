/*-------------------------------------------------------------------------
 * compat/walreceiver.h
 *	  A connection from a standby to its primary for SQL (libpqwalreceiver,
 *	  which PostgreSQL's slot sync worker uses the same way), across
 *	  PostgreSQL 15 to 18.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_WALRECEIVER_H
#define ZS_COMPAT_WALRECEIVER_H

#include "replication/walreceiver.h"

/*
 * 17 added replication: false, a plain connection, as the slot sync
 * worker's. Before, every connection is a replication connection: logical
 * (replication=database) is the one that runs SQL. 16 added
 * must_use_password: false, the role's own authentication decides.
 */
static inline WalReceiverConn *
zs_walrcv_connect_sql(const char *conninfo, const char *appname, char **err)
{
#if PG_VERSION_NUM >= 170000
	return walrcv_connect(conninfo, false, false, false, appname, err);
#elif PG_VERSION_NUM >= 160000
	return walrcv_connect(conninfo, true, false, appname, err);
#else
	return walrcv_connect(conninfo, true, appname, err);
#endif
}

#endif							/* ZS_COMPAT_WALRECEIVER_H */
