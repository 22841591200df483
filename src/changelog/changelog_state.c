/*-------------------------------------------------------------------------
 * changelog_state.c
 *	  The change log's replicationState row: its head, and who owns the
 *	  log (the owner identity and where view-syncers reach its server).
 *	  Runs inside the caller's transaction with SPI connected.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"

#include "changelog/changelog.h"
#include "changelog/changelog_spi.h"
#include "changelog/changelog_writer.h"
#include "ownership.h"

/* The text column just selected from the single replicationState row, or NULL. */
static char *
state_row_value(void)
{
	bool		isnull;
	Datum		d;

	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change log %s has no replicationState row", zs_cdc_schema_name()),
				 errhint("Drop schema %s to let zero_stream start a new change log.",
						 changelog_quoted_schema())));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? NULL : TextDatumGetCString(d);
}

/* One text column of the single replicationState row, or NULL. */
static char *
read_state_column(const char *column)
{
	changelog_exec(psprintf("SELECT %s FROM %s.\"replicationState\"", quote_identifier(column),
					  changelog_quoted_schema()),
			 SPI_OK_SELECT);
	return state_row_value();
}

bool
zs_changelog_taken_over(char **owner)
{
	*owner = NULL;
	/* a log not initialized yet has no state row, and no owner */
	changelog_exec(psprintf("SELECT \"owner\" FROM %s.\"replicationState\" FOR UPDATE", changelog_quoted_schema()),
			 SPI_OK_SELECT);
	if (SPI_processed == 0)
		return false;
	*owner = state_row_value();
	return *owner != NULL && !zs_owner_is_this_decoder(*owner);
}

void
zs_changelog_claim_ownership(const char *address)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		values[2];
	char		nulls[2] = {' ', address ? ' ' : 'n'};
	char	   *owner;

	/* the row stays locked until the caller's commit: no takeover can interleave */
	if (zs_changelog_taken_over(&owner))
		zs_changelog_report_taken_over(owner);
	values[0] = CStringGetTextDatum(zs_owner_identity());
	values[1] = address ? CStringGetTextDatum(address) : (Datum) 0;
	changelog_exec_args(psprintf("UPDATE %s.\"replicationState\" SET \"owner\" = $1, \"ownerAddress\" = $2",
						   changelog_quoted_schema()),
				  2, types, values, nulls, SPI_OK_UPDATE);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("change log %s has no replicationState row", zs_cdc_schema_name())));
}

void
zs_changelog_read_head(char *last_watermark)
{
	strlcpy(last_watermark, read_state_column("lastWatermark"), ZS_WATERMARK_MAXLEN);
}
