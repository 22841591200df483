/*-------------------------------------------------------------------------
 * metrics.h
 *	  zero_stream's state in Prometheus's text exposition format, see
 *	  metrics.c.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_METRICS_H
#define ZS_METRICS_H

#define ZS_METRICS_PATH "/metrics"
#define ZS_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition of everything status() and subscribers() tell (palloc'd). */
extern char *zs_metrics_text(void);

#endif							/* ZS_METRICS_H */
