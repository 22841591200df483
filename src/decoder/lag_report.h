/*-------------------------------------------------------------------------
 * lag_report.h
 *	  Replication lag reports (see lag_report.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_LAG_REPORT_H
#define ZS_LAG_REPORT_H

/* "<app>/<shard>/lag-report/v1": the logical messages' prefix */
extern const char *zs_lag_report_prefix(void);

/* Between decoding rounds: write the next report's message when it is time. */
extern void zs_lag_report_step(void);

/* A report's message was decoded: publish the report for the server. */
extern void zs_lag_report_received(const char *content, int len);

#endif							/* ZS_LAG_REPORT_H */
