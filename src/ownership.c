/*-------------------------------------------------------------------------
 * ownership.c
 *	  Who owns the change log: the identity this cluster's decoder writes
 *	  into replicationState.owner, how an owner read back is recognized as
 *	  this cluster's decoder, and the ownerAddress where view-syncers in
 *	  discover mode reach our server (docs/zero-protocol.md §6).
 *
 * The identity is "<task_id>@<system identifier>/<timeline>/<slot>": a
 * cluster made from a copy of this one (a promoted standby, a restored
 * backup) has the same system identifier but writes its own database's
 * log, and a task id alone would let two streamers pass for each other.
 * The changelog/ writer claims the log with it and checks it at every
 * store; the purge checks it after each batch.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xlog.h"
#include "utils/memutils.h"

#include "guc.h"
#include "ownership.h"

char *
zs_owner_identity(void)
{
	static char *identity = NULL;

	/*
	 * Checked at every store: computed once. Nothing in it changes while a
	 * worker runs: task_id and slot_name are postmaster settings, and only
	 * the decoder calls this, once recovery (and with it any timeline
	 * switch) is over; on a standby it waits for the promotion first.
	 */
	if (identity == NULL)
		identity = MemoryContextStrdup(TopMemoryContext,
									   psprintf("%s@" UINT64_FORMAT "/%u/%s", zs_task_id,
												GetSystemIdentifier(), GetWALInsertionTimeLine(),
												zs_effective_slot_name()));
	return identity;
}

bool
zs_owner_is_this_decoder(const char *owner)
{
	const char *at = strrchr(owner, '@');
	char		system[32];
	const char *p;
	int			len;

	/* "@<system identifier>/<timeline>/<slot>": a task id may hold an '@' */
	if (at == NULL)
		return false;
	len = snprintf(system, sizeof(system), UINT64_FORMAT "/", GetSystemIdentifier());
	if (strncmp(at + 1, system, len) != 0)
		return false;
	p = at + 1 + len;
	if (!isdigit((unsigned char) *p))
		return false;
	while (isdigit((unsigned char) *p))
		p++;
	return *p == '/' && p[1] != '\0';
}

/* host:port of the first listen address */
static char *
listen_host_port(void)
{
	char	   *first;
	char	   *comma;

	first = pstrdup(zs_listen_addresses ? zs_listen_addresses : "127.0.0.1");
	if ((comma = strchr(first, ',')) != NULL)
		*comma = '\0';
	first = pstrdup(first + strspn(first, " "));
	/* a wildcard is no address to reach: the host's name is */
	if (strcmp(first, "*") == 0 || strcmp(first, "0.0.0.0") == 0 || strcmp(first, "::") == 0)
	{
		char		host[256];

		if (gethostname(host, sizeof(host)) != 0)
			strlcpy(host, "localhost", sizeof(host));
		host[sizeof(host) - 1] = '\0';
		first = pstrdup(host);
	}
	if (strchr(first, ':') != NULL)	/* IPv6 literal */
		return psprintf("[%s]:%d", first, zs_port);
	return psprintf("%s:%d", first, zs_port);
}

char *
zs_owner_address(void)
{
	if (zs_advertise_address != NULL && zs_advertise_address[0] != '\0')
		return pstrdup(zs_advertise_address);
	if (zs_port == 0)
		return NULL;			/* no server: nothing to discover */
	/* a TLS port is reached only with its scheme: say it */
	if (zs_ssl)
		return psprintf("wss://%s", listen_host_port());
	return listen_host_port();
}
