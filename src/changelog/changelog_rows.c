/*-------------------------------------------------------------------------
 * changelog_rows.c
 *	  "<app>_<shard>/cdc"."changeLogRows"(chunk): a chunk's rows, one per
 *	  change, as zero-cache's changeLog has them (watermark, pos, change,
 *	  precommit). The changeLog view applies it to every chunk, so SQL
 *	  readers (the golden comparisons, operators' queries, zero-cache's
 *	  tools) read it as a table of rows; zero_stream's own readers read the
 *	  chunks directly (changelog_read.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "codec/changelog_chunk.h"
#include "compat/varlena_access.h"

PG_FUNCTION_INFO_V1(zs_changelog_chunk_rows);

Datum
zs_changelog_chunk_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bytea	   *chunk = PG_GETARG_BYTEA_PP(0);
	StringInfoData raw;
	ZsChunkReader r;
	const char *error = NULL;
	int			rc;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != 4)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("changeLogRows must return (watermark, pos, change, precommit)")));
	initStringInfo(&raw);
	if (!zs_chunk_unpack(VARDATA_ANY(chunk), VARSIZE_ANY_EXHDR(chunk), &raw, &error))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a change-log chunk cannot be read: %s", error)));
	zs_chunk_reader_init(&r, raw.data, raw.len);
	while ((rc = zs_chunk_reader_next(&r, &error)) == 1)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, !r.has_precommit};

		values[0] = CStringGetTextDatum(r.watermark);
		values[1] = Int64GetDatum(r.pos);
		/* json is stored as its text */
		values[2] = PointerGetDatum(cstring_to_text_with_len(r.change, r.change_len));
		values[3] = r.has_precommit ? CStringGetTextDatum(r.precommit) : (Datum) 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	if (rc == -1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a change-log chunk cannot be read: %s", error),
				 errdetail("%d rows read before, the last at %s/" INT64_FORMAT ".",
						   r.nrows, r.watermark, (int64) r.pos)));
	pfree(raw.data);
	return (Datum) 0;
}
