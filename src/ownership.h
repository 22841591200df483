/*-------------------------------------------------------------------------
 * ownership.h
 *	  The change log's owner: this decoder's identity and address
 *	  (replicationState.owner, ownerAddress), see ownership.c.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_OWNERSHIP_H
#define ZS_OWNERSHIP_H

/*
 * replicationState.owner: the writing worker, "<task_id>@<system
 * identifier>/<timeline>/<slot>", so a cluster made from a copy of this one
 * (a promoted standby, a restored backup) never passes for its writer.
 */
extern char *zs_owner_identity(void);

/*
 * Was owner written by this cluster's decoder, whatever zero_stream.task_id,
 * the timeline and the slot were then (this system identifier)? Only one
 * decoder writes a database's log: another cluster with this system
 * identifier (a copy) writes its own database's.
 */
extern bool zs_owner_is_this_decoder(const char *owner);

/*
 * replicationState.ownerAddress: advertise_address, or listen address:port
 * (wss://address:port with zero_stream.ssl); NULL without a server
 */
extern char *zs_owner_address(void);

#endif							/* ZS_OWNERSHIP_H */
