/*-------------------------------------------------------------------------
 * changelog_spi.h
 *	  The statements of changelog/'s SPI files on the change log's schema:
 *	  its quoted name, and statements that must succeed.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CHANGELOG_SPI_H
#define ZS_CHANGELOG_SPI_H

#include "executor/spi.h"
#include "utils/builtins.h"

#include "guc.h"

/* "<app_id>_<shard_num>/cdc", quoted as an identifier */
static inline char *
changelog_quoted_schema(void)
{
	return (char *) quote_identifier(zs_cdc_schema_name());
}

/* sql, which must return expected (an SPI_OK_ code) */
static inline void
changelog_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_execute failed (%s): %s",
								 SPI_result_code_string(rc), sql)));
}

/* sql with arguments, which must return expected (an SPI_OK_ code) */
static inline void
changelog_exec_args(const char *sql, int nargs, Oid *types, Datum *values,
					const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("SPI_execute_with_args failed (%s): %s",
								 SPI_result_code_string(rc), sql)));
}

#endif							/* ZS_CHANGELOG_SPI_H */
