/*-------------------------------------------------------------------------
 * output_plugin.h
 *	  The "zero_stream" output plugin: pgoutput that skips our own writes.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_OUTPUT_PLUGIN_H
#define ZS_OUTPUT_PLUGIN_H

#include "compat/replication.h"

#define ZS_OUTPUT_PLUGIN_NAME "zero_stream"

/* Set by the decoder: transactions from this origin are not decoded. */
extern ReplOriginId zs_own_origin;

/* Let this session load the plugin where output_plugin_libraries exists. */
extern void zs_output_plugin_allow(void);

#endif							/* ZS_OUTPUT_PLUGIN_H */
