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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "pgstat.h"
#include "utils/snapmgr.h"

#include "spi_xact.h"

void
zs_spi_xact_begin(const char *activity)
{
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
	pgstat_report_activity(STATE_IDLE, NULL);
}
