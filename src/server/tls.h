/*-------------------------------------------------------------------------
 * tls.h
 *	  Optional TLS on the subscriber server's socket (zero_stream.ssl), with
 *	  the OpenSSL PostgreSQL itself links: the server's context, and the
 *	  non-blocking handshake, reads and writes of one connection.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_TLS_H
#define ZS_TLS_H

#include "server/connection.h"

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

/* Give a new connection its TLS session (server side); false if out of memory. */
extern bool zs_tls_attach(ZsConn *c);

/*
 * Advance the TLS handshake of c without blocking. True once it is done;
 * false while it waits for the peer (c->tls_read_wait says for what) or
 * when it failed: then c is closed, with a rate-limited log line.
 */
extern bool zs_tls_handshake(ZsConn *c);

/*
 * SSL_read/SSL_write as recv/send on a non-blocking socket: bytes moved
 * (> 0); 0 when the peer closed (read only); -1 with errno EAGAIN when
 * the operation waits for the socket (c->tls_read_wait or
 * c->tls_write_wait holds the event), or another errno on failure.
 */
extern ssize_t zs_tls_read(ZsConn *c, void *buf, size_t len);
extern ssize_t zs_tls_write(ZsConn *c, const void *buf, size_t len);

/* Decrypted bytes buffered in the session and not read yet. */
extern bool zs_tls_has_pending(const ZsConn *c);

/* Send the close_notify if possible, and free the session. */
extern void zs_tls_close(ZsConn *c);

#endif							/* ZS_TLS_H */
