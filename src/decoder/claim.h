/*-------------------------------------------------------------------------
 * claim.h
 *	  The decoder's claim on its change log.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CLAIM_H
#define ZS_CLAIM_H

#include "decoder/stream.h"

/*
 * Take the change log (an ERROR if it has been taken over) and read where
 * it stands: the head into s->stored_head, the last row for live rounds,
 * the published schema there as the stage's baseline (the current one,
 * stored, if the log has none).
 */
extern void zs_claim_change_log(ZsStream *s);

/* After a reload: keep replicationState.ownerAddress current. */
extern void zs_claim_readvertise(void);

/* Has another change streamer taken the change log over? (*owner: its owner) */
extern bool zs_claim_taken_over(char **owner);

/*
 * Wait, without the slot, until zero_stream.resync() asks for a new
 * lineage here; exits the process if the extension is dropped meanwhile.
 */
extern void zs_claim_wait_while_taken_over(const char *slot_name, const char *taken_by);

#endif							/* ZS_CLAIM_H */
