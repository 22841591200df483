/*-------------------------------------------------------------------------
 * output_plugin.c
 *	  Thin wrapper around pgoutput.
 *
 * PostgreSQL 15's pgoutput never filters by origin, so the change-log rows
 * the decoder writes would be decoded again, and loop forever under a
 * publication FOR ALL TABLES. The decoder writes under its own replication
 * origin, and this wrapper adds the origin filter that drops those
 * transactions in decode.c, before they reach the reorder buffer.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "replication/logical.h"
#include "replication/output_plugin.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "decoding/output_plugin.h"

ReplOriginId zs_own_origin = InvalidReplOriginId;

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

static bool
zs_filter_by_origin(LogicalDecodingContext *ctx, ReplOriginId origin_id)
{
	return origin_id != InvalidReplOriginId && origin_id == zs_own_origin;
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	LogicalOutputPluginInit pgoutput_init;

	pgoutput_init = (LogicalOutputPluginInit)
		load_external_function("pgoutput", "_PG_output_plugin_init", false, NULL);
	pgoutput_init(cb);
	cb->filter_by_origin_cb = zs_filter_by_origin;
}

/*
 * Minor releases from 15.19 on only load output plugins listed in
 * output_plugin_libraries (a superuser setting); older ones do not have it,
 * and naming it in postgresql.conf would stop them from starting. So the
 * decoder, a superuser session, appends itself for its own session only.
 */
void
zs_output_plugin_allow(void)
{
	const char *current = GetConfigOption("output_plugin_libraries", true, false);
	char	   *copy;
	List	   *names;
	ListCell   *lc;

	if (current == NULL)
		return;
	copy = pstrdup(current);
	if (SplitIdentifierString(copy, ',', &names))
	{
		foreach(lc, names)
		{
			if (strcmp((char *) lfirst(lc), ZS_OUTPUT_PLUGIN_NAME) == 0)
				return;
		}
	}
	SetConfigOption("output_plugin_libraries",
					current[0] == '\0' ? ZS_OUTPUT_PLUGIN_NAME
					: psprintf("%s, %s", current, ZS_OUTPUT_PLUGIN_NAME),
					PGC_SUSET, PGC_S_OVERRIDE);
}
