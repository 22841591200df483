/*-------------------------------------------------------------------------
 * round.h
 *	  One round of the decoder: decode what is flushed, store it, confirm.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_ROUND_H
#define ZS_ROUND_H

#include "access/xlogreader.h"

#include "decoder/stream.h"

/*
 * Staged changes beyond this stay on disk, not in memory: at least a
 * quarter more than commit_batch_size, so that a round (which stops at
 * commit_batch_size plus its last transaction) is not written to a file
 * and read back just for its last transaction; only a transaction much
 * larger than a round spills.
 */
#define ZS_ROUND_SPOOL_MEMORY (16 * 1024 * 1024)

/*
 * The WAL reader for a new decoding context: read_local_xlog_page, but a
 * record not all flushed yet ends the round instead of being waited for.
 * Forgets where the previous context's last round was cut.
 */
extern XLogReaderRoutine *zs_round_wal_reader(void);

/*
 * One bounded round: decode what is flushed, store it, confirm. A round
 * ends early at a record that is not all flushed yet. Returns true if WAL
 * was read, so the caller loops again without sleeping; *stored says
 * whether the round stored transactions.
 */
extern bool zs_round_run(ZsStream *s, bool *stored);

/*
 * Confirm the slot up to the pending position once the last store is
 * flushed here (after a short wait, by a flush of our own) and, for a
 * failover slot, by the standbys in synchronized_standby_slots. Returns how
 * long the caller may sleep before calling again (-1: nothing pending);
 * s->confirm_held says whether it waits for the standbys.
 */
extern long zs_round_settle(ZsStream *s);

/* Forget the confirmations of an earlier stream (a new slot, a new start). */
extern void zs_round_forget_confirmations(ZsStream *s);

#endif							/* ZS_ROUND_H */
