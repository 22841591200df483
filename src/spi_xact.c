/*-------------------------------------------------------------------------
 * spi_xact.c
 *	  The bracket every background worker uses to run SQL: a transaction,
 *	  an active snapshot and an SPI connection, and what the worker is doing
 *	  in pg_stat_activity, as PostgreSQL's own background workers (and
 *	  pg_cron) do it.
 *
 * An error inside the bracket leaves through the worker's error handling:
 * a worker's ERROR is FATAL for its process, so the postmaster restarts it
 * and the aborted transaction needs no cleanup here.
 *
 * A commit leaves no resource owner behind (CurrentResourceOwner is NULL
 * after it): the bracket gives back the one the worker had before, so
 * that what the worker does between transactions and registers with it
 * (the server's SHA-1 of a WebSocket handshake, right after a page was
 * read) does not dereference NULL.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "spi_xact.h"

/* the worker's own resource owner outside the bracket, if it has one */
static ResourceOwner outside_owner = NULL;

void
zs_spi_xact_begin(const char *activity)
{
	/* (never a transaction's: it is gone after the commit) */
	outside_owner = IsTransactionState() ? NULL : CurrentResourceOwner;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	if (SPI_connect() != SPI_OK_CONNECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not connect to SPI")));
	PushActiveSnapshot(GetTransactionSnapshot());
	if (activity != NULL)
		pgstat_report_activity(STATE_RUNNING, activity);
}

void
zs_spi_xact_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	if (outside_owner != NULL)
		CurrentResourceOwner = outside_owner;
	pgstat_report_activity(STATE_IDLE, NULL);
}
