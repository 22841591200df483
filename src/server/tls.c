/*-------------------------------------------------------------------------
 * tls.c
 *	  Optional TLS on the subscriber server's socket.
 *
 * With zero_stream.ssl on, every accepted connection starts with a TLS
 * handshake before its HTTP request, so that Basic credentials
 * (zero_stream.subscriber_password) and the stream never cross the network
 * in clear text. It uses the OpenSSL that PostgreSQL links (libssl,
 * libcrypto): no other library. The certificate and key are PEM files named
 * by zero_stream.ssl_cert_file and zero_stream.ssl_key_file, relative to
 * the data directory (the server's working directory) unless absolute, and
 * by default PostgreSQL's own server.crt and server.key; the key file is
 * held to PostgreSQL's rule on its permissions, and may not have a
 * passphrase. zero_stream.ssl needs a restart (it decides what the port
 * speaks, and the scheme of the backupURL and ownerAddress); the files are
 * read again on a configuration reload, for the connections accepted after
 * it, and a reload that fails keeps the previous ones.
 *
 * Nothing here blocks the server's loop: the socket stays non-blocking, and
 * SSL_accept, SSL_read and SSL_write that need the socket again return at
 * once, leaving in the session the event they wait for (read_wait,
 * write_wait), which the connection (connection.c) turns into its wait
 * events. TLS 1.3 may make a read wait for the
 * socket to be writable and a write wait for it to be readable, so each
 * side records its own. The handshake is part of the connection's pending
 * phase (admission.c): it counts against zero_stream.max_pending_connections
 * and zero_stream.handshake_timeout like a request head being sent. A
 * handshake that fails is logged with one rate-limited line (peer_log.c)
 * and reported to the connection, which closes; a plain HTTP request on the
 * TLS port is answered first with a plain 400 saying so, as it cannot read
 * anything else. This file is a transport under the connection: it works
 * on a session (a socket and the peer's address for the log) and never on
 * the connection itself.
 *
 * Sessions are neither cached nor resumed (no session tickets): a
 * subscriber connects once and stays. Renegotiation is refused.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "storage/latch.h"

#include "guc.h"
#include "server/peer_log.h"
#include "server/tls.h"

static SSL_CTX *context = NULL;

/* the most specific text for the last OpenSSL error, or errno's */
static const char *
tls_error_text(unsigned long ecode, int save_errno)
{
	const char *reason;

	if (ecode == 0)
		return save_errno != 0 ? strerror(save_errno) : "the connection was closed";
	reason = ERR_reason_error_string(ecode);
	if (reason != NULL)
		return reason;
	return psprintf("OpenSSL error %lu", ecode);
}

/* a key with a passphrase cannot be used: never prompt on the terminal */
static int
no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	if (size > 0)
		buf[0] = '\0';
	return 0;
}

/*
 * PostgreSQL's rule for its own key file (be-secure-common.c): owned by the
 * server's user and not readable by others, or owned by root and readable
 * by the group at most. NULL if the file passes, else why not.
 */
static const char *
key_file_problem(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return psprintf("could not access it: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return "it is not a regular file";
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return "it must be owned by the database user or root";
	if ((st.st_uid == geteuid() && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) ||
		(st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IXGRP | S_IRWXO)) != 0))
		return "it has group or world access";
	return NULL;
}

/*
 * A server context with the configured certificate and key, or NULL after
 * a message at elevel (which returns only below ERROR).
 */
static SSL_CTX *
create_context(int elevel)
{
	SSL_CTX    *ctx;
	const char *what = NULL;
	const char *file = NULL;
	const char *hint = NULL;
	const char *problem = NULL;
	unsigned long ecode;

	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL)
	{
		const char *why = tls_error_text(ERR_get_error(), errno);

		ereport(elevel,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create the subscriber server's TLS context: %s", why)));
		return NULL;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
						SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* the output buffer is compacted and refilled between retries */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);

	if (zs_ssl_cert_file == NULL || zs_ssl_cert_file[0] == '\0')
		what = "zero_stream.ssl_cert_file is empty";
	else if (zs_ssl_key_file == NULL || zs_ssl_key_file[0] == '\0')
		what = "zero_stream.ssl_key_file is empty";
	else if (SSL_CTX_use_certificate_chain_file(ctx, zs_ssl_cert_file) != 1)
	{
		what = "could not load the server certificate file \"%s\" (zero_stream.ssl_cert_file)";
		file = zs_ssl_cert_file;
		hint = "It must be a PEM certificate, followed by its chain; a relative path is under the data directory.";
	}
	else if ((problem = key_file_problem(zs_ssl_key_file)) != NULL)
	{
		what = "the private key file \"%s\" (zero_stream.ssl_key_file) cannot be used";
		file = zs_ssl_key_file;
		hint = "It must be owned by the database user with permissions u=rw (0600) or less, or by root with u=rw,g=r (0640) or less.";
	}
	else if (SSL_CTX_use_PrivateKey_file(ctx, zs_ssl_key_file, SSL_FILETYPE_PEM) != 1)
	{
		what = "could not load the private key file \"%s\" (zero_stream.ssl_key_file)";
		file = zs_ssl_key_file;
		hint = "It must be a PEM private key without a passphrase; a relative path is under the data directory.";
	}
	else if (SSL_CTX_check_private_key(ctx) != 1)
	{
		what = "the private key \"%s\" does not match the server certificate";
		file = zs_ssl_key_file;
		hint = "zero_stream.ssl_key_file must hold the key of the certificate in zero_stream.ssl_cert_file.";
	}
	if (what == NULL)
		return ctx;

	ecode = ERR_get_error();
	SSL_CTX_free(ctx);
	ERR_clear_error();
	ereport(elevel,
			(errcode(ERRCODE_CONFIG_FILE_ERROR),
			 errmsg_internal(what, file),
			 problem != NULL ? errdetail("The file: %s.", problem) :
			 ecode != 0 ? errdetail("OpenSSL: %s.", tls_error_text(ecode, 0)) : 0,
			 hint ? errhint("%s", hint) : 0));
	return NULL;
}

void
zs_tls_init(void)
{
	if (!zs_ssl)
		return;
	context = create_context(ERROR);
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			 errmsg("the subscriber server uses TLS with the certificate \"%s\"",
					zs_ssl_cert_file)));
}

void
zs_tls_reload(void)
{
	SSL_CTX    *ctx;

	if (context == NULL)
		return;
	ctx = create_context(WARNING);
	if (ctx == NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIG_FILE_ERROR),
				 errmsg("the subscriber server keeps its previous TLS certificate and key")));
		return;
	}
	/* sessions in progress hold a reference to the old context */
	SSL_CTX_free(context);
	context = ctx;
}

bool
zs_tls_enabled(void)
{
	return context != NULL;
}

bool
zs_tls_attach(ZsTlsSession *tls, pgsocket sock, const char *address, const char *host)
{
	SSL		   *ssl;

	ERR_clear_error();
	ssl = SSL_new(context);
	if (ssl == NULL || SSL_set_fd(ssl, sock) != 1)
	{
		const char *why = tls_error_text(ERR_get_error(), errno);

		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not start TLS for the connection from %s: %s", address, why)));
		if (ssl != NULL)
			SSL_free(ssl);
		ERR_clear_error();
		return false;
	}
	SSL_set_accept_state(ssl);
	memset(tls, 0, sizeof(*tls));
	tls->ssl = ssl;
	tls->sock = sock;
	tls->address = address;
	tls->host = host;
	tls->read_wait = WL_SOCKET_READABLE;
	return true;
}

/*
 * A plain HTTP request reached the TLS port: say so in plain HTTP, the
 * only thing such a client reads. What it sent is read first (a little,
 * without waiting), so that closing sends FIN rather than RST, which could
 * discard the answer before the client reads it.
 */
static void
answer_plain_http(pgsocket sock)
{
	static const char reply[] =
		"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
		"Content-Length: 61\r\nConnection: close\r\n\r\n"
		"This port requires TLS: use a wss:// or https:// URL for it.\n";
	char		buf[4096];

	StaticAssertStmt(sizeof("This port requires TLS: use a wss:// or https:// URL for it.\n") - 1 == 61,
					 "Content-Length of the plain HTTP answer");
	for (int i = 0; i < 4 && recv(sock, buf, sizeof(buf), 0) > 0; i++)
		;
	(void) send(sock, reply, sizeof(reply) - 1, 0);
}

/* The handshake failed: log it (rate-limited), and answer plain HTTP in kind. */
static void
handshake_failed(ZsTlsSession *tls, int ssl_error, int save_errno)
{
	unsigned long ecode = ERR_get_error();
	bool		plain_http = ERR_GET_LIB(ecode) == ERR_LIB_SSL &&
		ERR_GET_REASON(ecode) == SSL_R_HTTP_REQUEST;
	int64		suppressed;

	ERR_clear_error();
	tls->failed = true;
	/* a peer that connects and hangs up (a port probe) is no failure to report */
	if (ecode == 0 && save_errno == 0 &&
		(ssl_error == SSL_ERROR_SYSCALL || ssl_error == SSL_ERROR_ZERO_RETURN))
		ereport(DEBUG1,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("connection from %s closed during its TLS handshake", tls->address)));
	else if (zs_peer_log_allowed(ZS_PEER_TLS_FAILED, tls->host, &suppressed))
	{
		if (plain_http)
			ereport(LOG,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("TLS handshake with %s failed: it sent a plain HTTP request", tls->address),
					 zs_peer_log_detail(suppressed),
					 errhint("zero_stream.ssl is on: subscribers must use wss:// and https:// URLs.")));
		else
			ereport(LOG,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("TLS handshake with %s failed: %s", tls->address,
							tls_error_text(ecode, save_errno)),
					 zs_peer_log_detail(suppressed)));
	}
	if (plain_http)
		answer_plain_http(tls->sock);
}

ZsTlsHandshakeResult
zs_tls_handshake(ZsTlsSession *tls)
{
	int			rc;
	int			ssl_error;

	if (tls->established)
		return ZS_TLS_HANDSHAKE_DONE;
	if (tls->failed)
		return ZS_TLS_HANDSHAKE_FAILED;
	ERR_clear_error();
	errno = 0;
	rc = SSL_accept(tls->ssl);
	if (rc == 1)
	{
		tls->established = true;
		tls->read_wait = 0;
		return ZS_TLS_HANDSHAKE_DONE;
	}
	ssl_error = SSL_get_error(tls->ssl, rc);
	switch (ssl_error)
	{
		case SSL_ERROR_WANT_READ:
			tls->read_wait = WL_SOCKET_READABLE;
			return ZS_TLS_HANDSHAKE_WAITING;
		case SSL_ERROR_WANT_WRITE:
			tls->read_wait = WL_SOCKET_WRITEABLE;
			return ZS_TLS_HANDSHAKE_WAITING;
		default:
			handshake_failed(tls, ssl_error, errno);
			return ZS_TLS_HANDSHAKE_FAILED;
	}
}

/*
 * An SSL_read or SSL_write that did not move bytes: -1 with errno EAGAIN
 * and *wait set if it waits for the socket, 0 at the peer's end (reads),
 * -1 with another errno on failure (logged, rate-limited, if TLS failed).
 */
static ssize_t
io_result(ZsTlsSession *tls, int rc, uint32 *wait, int save_errno)
{
	int			ssl_error = SSL_get_error(tls->ssl, rc);
	unsigned long ecode;
	int64		suppressed;

	switch (ssl_error)
	{
		case SSL_ERROR_WANT_READ:
			*wait = WL_SOCKET_READABLE;
			errno = EAGAIN;
			return -1;
		case SSL_ERROR_WANT_WRITE:
			*wait = WL_SOCKET_WRITEABLE;
			errno = EAGAIN;
			return -1;
		case SSL_ERROR_ZERO_RETURN:
			return 0;			/* the peer's close_notify */
		case SSL_ERROR_SYSCALL:
			ecode = ERR_get_error();
			tls->failed = true;
			if (ecode == 0)
			{
				if (save_errno == 0)
					return 0;	/* closed without close_notify */
				errno = save_errno;
				return -1;
			}
			break;
		default:
			ecode = ERR_get_error();
			tls->failed = true;
			break;
	}
	ERR_clear_error();
	if (zs_peer_log_allowed(ZS_PEER_TLS_FAILED, tls->host, &suppressed))
		ereport(LOG,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("TLS error on the connection from %s: %s", tls->address,
						tls_error_text(ecode, save_errno)),
				 zs_peer_log_detail(suppressed)));
	errno = ECONNRESET;
	return -1;
}

ssize_t
zs_tls_read(ZsTlsSession *tls, void *buf, size_t len)
{
	int			n;

	ERR_clear_error();
	errno = 0;
	tls->read_wait = 0;
	n = SSL_read(tls->ssl, buf, (int) Min(len, (size_t) INT_MAX));
	if (n > 0)
		return n;
	return io_result(tls, n, &tls->read_wait, errno);
}

ssize_t
zs_tls_write(ZsTlsSession *tls, const void *buf, size_t len)
{
	int			n;

	ERR_clear_error();
	errno = 0;
	tls->write_wait = 0;
	n = SSL_write(tls->ssl, buf, (int) Min(len, (size_t) INT_MAX));
	if (n > 0)
		return n;
	n = (int) io_result(tls, n, &tls->write_wait, errno);
	if (n == 0)
	{
		errno = EPIPE;			/* a write cannot end normally */
		return -1;
	}
	return n;
}

bool
zs_tls_has_pending(const ZsTlsSession *tls)
{
	return tls->ssl != NULL && SSL_pending(tls->ssl) > 0;
}

void
zs_tls_close(ZsTlsSession *tls)
{
	if (tls->ssl == NULL)
		return;
	/* best effort: the socket is non-blocking, and the peer's answer is not awaited */
	if (tls->established && !tls->failed)
	{
		ERR_clear_error();
		(void) SSL_shutdown(tls->ssl);
	}
	SSL_free(tls->ssl);
	ERR_clear_error();
	tls->ssl = NULL;
}
