/*-------------------------------------------------------------------------
 * purge.h
 *	  The decoder's purges of the change log (see purge.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_PURGE_H
#define ZS_PURGE_H

/*
 * Between decoding rounds: purge if it is time or zero_stream.purge() asked,
 * for a bounded time. gate is the log's head when the decoder started: the
 * backup replica's watermark counts once it reached it. decoding: the
 * decoder stored decoded transactions in this iteration (the purge then
 * takes only its share of the decoder's time). Returns true if the purge
 * goes on at the next call.
 */
extern bool zs_purge_step(const char *gate, bool decoding);

#endif							/* ZS_PURGE_H */
