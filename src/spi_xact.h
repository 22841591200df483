/*-------------------------------------------------------------------------
 * spi_xact.h
 *	  The one bracket in which the workers run SQL (see spi_xact.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_SPI_XACT_H
#define ZS_SPI_XACT_H

/*
 * Start a transaction with a fresh snapshot and an SPI connection; a
 * non-NULL activity is shown in pg_stat_activity until the commit.
 */
extern void zs_spi_xact_begin(const char *activity);

/* Close the SPI connection and commit; the worker shows as idle again. */
extern void zs_spi_xact_commit(void);

#endif							/* ZS_SPI_XACT_H */
