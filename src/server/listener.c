/*-------------------------------------------------------------------------
 * listener.c
 *	  The server's listening sockets, and accepting connections on them.
 *
 * One socket per address that zero_stream.listen_addresses resolves to
 * ("*" = every address), on zero_stream.port, opened once at start: the
 * settings need a restart. Listening on a non-loopback address without
 * zero_stream.subscriber_password logs a warning. A connection for which
 * admission.c finds no room among the pending ones (or beyond the
 * process's file descriptors) is answered 503 and closed at once, logged
 * rate-limited; the others become connections (connection.c) with
 * TCP_NODELAY, as their frames are small and paced, and with a TLS session
 * when zero_stream.ssl is on (tls.c). A listener event accepts at most
 * ZS_ACCEPT_BUDGET connections. When the pending pool is full, accepting
 * stops before the next connection and says so: the worker reads the
 * requests that have arrived (which may admit their connections), then
 * accepts on, so that accepting never runs the request path itself.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "storage/fd.h"
#include "utils/varlena.h"

#include "guc.h"
#include "server/admission.h"
#include "server/connection.h"
#include "server/listener.h"
#include "server/peer_log.h"
#include "server/tls.h"

static bool
is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *) sa)->sin6_addr);
	return false;
}

/* Listen on every address host resolves to; *remote is set if one is not loopback. */
static void
listen_on_host(const char *host, const char *port, pgsocket *socks, int *nsocks,
			   bool *remote)
{
	struct addrinfo hints = {0};
	struct addrinfo *res;
	int			rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	rc = getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, port, &hints, &res);
	if (rc != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not resolve listen address \"%s\": %s",
						host, gai_strerror(rc))));
	for (struct addrinfo *ai = res; ai != NULL && *nsocks < ZS_MAX_LISTENERS; ai = ai->ai_next)
	{
		pgsocket	sock = socket(ai->ai_family, SOCK_STREAM, 0);
		int			one = 1;

		if (sock == PGINVALID_SOCKET)
			continue;
		(void) setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			(void) setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(sock, ai->ai_addr, ai->ai_addrlen) < 0 || listen(sock, 128) < 0)
		{
			int			save_errno = errno;

			closesocket(sock);
			freeaddrinfo(res);
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_socket_access(),
					 errmsg("could not listen on %s port %d: %m", host, zs_port),
					 errhint("Another process may use the port; change zero_stream.port or zero_stream.listen_addresses.")));
		}
		pg_set_noblock(sock);
		ReserveExternalFD();
		*remote |= !is_loopback(ai->ai_addr);
		socks[(*nsocks)++] = sock;
	}
	freeaddrinfo(res);
}

int
zs_listeners_open(pgsocket *socks)
{
	char	   *copy = pstrdup(zs_listen_addresses);
	List	   *hosts;
	ListCell   *lc;
	char		port[16];
	bool		remote = false;
	int			nsocks = 0;

	if (!SplitGUCList(copy, ',', &hosts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid zero_stream.listen_addresses: \"%s\"", zs_listen_addresses)));
	snprintf(port, sizeof(port), "%d", zs_port);
	foreach(lc, hosts)
		listen_on_host((char *) lfirst(lc), port, socks, &nsocks, &remote);
	if (nsocks == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("no address to listen on in zero_stream.listen_addresses")));
	if (remote && (zs_subscriber_password == NULL || zs_subscriber_password[0] == '\0'))
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("the subscriber server listens on a non-loopback address without authentication"),
				 errhint("Set zero_stream.subscriber_password so that only subscribers knowing it can read the change log.")));
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			 errmsg("listening for subscribers on %s port %d", zs_listen_addresses, zs_port)));
	return nsocks;
}

/*
 * No room: a best-effort 503 (the socket is new, so this small write fits),
 * except on a TLS port, where a client could not read it.
 */
static void
refuse(pgsocket sock, const char *host, const char *port, const char *why)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	int64		suppressed;

	if (!zs_tls_enabled())
		(void) send(sock, busy, sizeof(busy) - 1, 0);
	closesocket(sock);
	if (zs_peer_log_allowed(ZS_PEER_REFUSED, host, &suppressed))
		ereport(LOG,
				(errcode(ERRCODE_TOO_MANY_CONNECTIONS),
				 errmsg("refused a connection from %s:%s: %s", host, port, why),
				 zs_peer_log_detail(suppressed)));
}

bool
zs_listener_accept(ZsServer *server, pgsocket listener, bool requests_read, int *budget)
{
	for (; *budget > 0; (*budget)--)
	{
		struct sockaddr_storage addr;
		socklen_t	addrlen = sizeof(addr);
		pgsocket	sock;
		char		host[NI_MAXHOST] = "?";
		char		port[NI_MAXSERV] = "?";
		int			one = 1;
		ZsConn	   *c;

		if (!requests_read && zs_admission_pool_full(server))
			return true;
		sock = accept(listener, (struct sockaddr *) &addr, &addrlen);
		if (sock == PGINVALID_SOCKET)
		{
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				ereport(LOG,
						(errcode_for_socket_access(),
						 errmsg("could not accept a connection: %m")));
			return false;
		}
		(void) getnameinfo((struct sockaddr *) &addr, addrlen, host, sizeof(host), port,
						   sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
		if (!zs_admission_make_room(server))
		{
			refuse(sock, host, port,
				   psprintf("zero_stream.max_pending_connections (%d) reached",
							zs_max_pending_connections));
			continue;
		}
		if (!AcquireExternalFD())
		{
			refuse(sock, host, port, "out of file descriptors");
			continue;
		}
		pg_set_noblock(sock);
		(void) setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = zs_conn_add(server, sock, host, port);
		if (zs_tls_enabled() && !zs_tls_attach(&c->tls, sock, c->address, c->host))
			zs_conn_close(c);
	}
	return false;
}
