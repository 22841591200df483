/*-------------------------------------------------------------------------
 * tls.h
 *	  Optional TLS on the subscriber server's socket (zero_stream.ssl), with
 *	  the OpenSSL PostgreSQL itself links: the server's context, and the
 *	  non-blocking handshake, reads and writes of one connection's session.
 *	  A transport below the connection: it knows a socket and a peer's
 *	  address, not the connection that reads and writes through it.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_TLS_H
#define ZS_TLS_H

#include <sys/types.h>

struct ssl_st;					/* OpenSSL's SSL, used by tls.c only */

/*
 * One connection's TLS session. The connection reads the fields; tls.c
 * writes them.
 */
typedef struct ZsTlsSession
{
	struct ssl_st *ssl;			/* OpenSSL's SSL, or NULL without TLS */
	pgsocket	sock;
	const char *address;		/* the peer's host:port, for the log */
	const char *host;			/* the peer's address, for rate-limiting it */
	bool		established;	/* the handshake is done */
	bool		failed;			/* a TLS error: no close_notify */
	uint32		read_wait;		/* WL_SOCKET_* the handshake or a read waits for, or 0 */
	uint32		write_wait;		/* WL_SOCKET_* a write waits for, or 0 */
} ZsTlsSession;

/* Where a handshake stands after a step of it. */
typedef enum ZsTlsHandshakeResult
{
	ZS_TLS_HANDSHAKE_DONE,
	ZS_TLS_HANDSHAKE_WAITING,	/* for the socket: read_wait says what for */
	ZS_TLS_HANDSHAKE_FAILED		/* logged: the caller closes the connection */
} ZsTlsHandshakeResult;

/*
 * At the server's start: with zero_stream.ssl on, load the certificate and
 * key; ERROR if they cannot be used (the worker restarts, the error is in
 * zero_stream.workers()).
 */
extern void zs_tls_init(void);

/*
 * After a configuration reload: load the certificate and key again for the
 * connections accepted from now on. If that fails, a WARNING says why and
 * the previous ones stay in use.
 */
extern void zs_tls_reload(void);

/* Does the server speak TLS? */
extern bool zs_tls_enabled(void);

/*
 * Start a server-side session on the accepted socket sock of the peer at
 * address (host without its port); both strings must outlive the session.
 * False, logged, if out of memory.
 */
extern bool zs_tls_attach(ZsTlsSession *tls, pgsocket sock, const char *address,
						  const char *host);

/*
 * Advance the handshake without blocking. A handshake that fails is logged
 * (rate-limited), and a plain HTTP request is answered in plain HTTP.
 */
extern ZsTlsHandshakeResult zs_tls_handshake(ZsTlsSession *tls);

/*
 * SSL_read/SSL_write as recv/send on a non-blocking socket: bytes moved
 * (> 0); 0 when the peer closed (read only); -1 with errno EAGAIN when
 * the operation waits for the socket (read_wait or write_wait holds the
 * event), or another errno on failure.
 */
extern ssize_t zs_tls_read(ZsTlsSession *tls, void *buf, size_t len);
extern ssize_t zs_tls_write(ZsTlsSession *tls, const void *buf, size_t len);

/* Decrypted bytes buffered in the session and not read yet. */
extern bool zs_tls_has_pending(const ZsTlsSession *tls);

/* Send the close_notify if possible, and free the session. */
extern void zs_tls_close(ZsTlsSession *tls);

#endif							/* ZS_TLS_H */
