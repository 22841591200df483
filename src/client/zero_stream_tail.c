/*-------------------------------------------------------------------------
 * zero_stream_tail.c
 *	  zero-stream-tail: subscribe to a Zero change streamer and print every
 *	  message as one JSON line on stdout, acking each after printing.
 *
 *	  zero-stream-tail [options] 'ws://[user:password@]host:port/replication/v6/changes?...'
 *
 *	  --count N     exit 0 after N messages
 *	  --idle SECS   exit 4 after SECS seconds without a message
 *	  --no-ack      never ack (a stalled subscriber, for tests)
 *	  --timestamps  prefix each line with its receive time (µs since the Unix epoch)
 *	  --start       v7 /subscribe: send start-subscription built from the
 *	                URL's taskID, id, mode, replicaVersion and watermark
 *
 * Exit status: 0 normal close or --count reached; 1 usage; 2 connection or
 * handshake failure (HTTP status on stderr); 3 an error message or a close
 * with an error code (code and reason on stderr); 4 idle timeout.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/base64.h"

#include "http.h"
#include "json_out.h"
#include "websocket.h"

typedef struct Url
{
	char	   *host;
	char	   *port;
	char	   *target;
	char	   *userinfo;		/* "user:password" or NULL */
} Url;

static void
usage(void)
{
	fprintf(stderr, "usage: zero-stream-tail [--count N] [--idle SECS] [--no-ack] [--start] [--timestamps] ws://[user:password@]host:port/path?query\n");
	exit(1);
}

static bool
parse_url(const char *text, Url *url)
{
	const char *p;
	const char *slash;
	const char *at;
	const char *colon;
	char	   *hostport;

	if (strncmp(text, "ws://", 5) != 0)
		return false;
	p = text + 5;
	slash = strchr(p, '/');
	if (slash == NULL)
		slash = p + strlen(p);
	hostport = pnstrdup(p, slash - p);
	at = strrchr(hostport, '@');
	url->userinfo = at ? pnstrdup(hostport, at - hostport) : NULL;
	if (at)
		hostport = (char *) at + 1;
	colon = strrchr(hostport, ':');
	url->host = colon ? pnstrdup(hostport, colon - hostport) : pstrdup(hostport);
	url->port = colon ? pstrdup(colon + 1) : pstrdup("80");
	url->target = *slash ? pstrdup(slash) : pstrdup("/");
	return url->host[0] != '\0';
}

static int
connect_to(const Url *url)
{
	struct addrinfo hints = {0};
	struct addrinfo *res;
	int			rc;
	int			sock = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(url->host, url->port, &hints, &res);
	if (rc != 0)
	{
		fprintf(stderr, "zero-stream-tail: could not resolve %s: %s\n", url->host, gai_strerror(rc));
		exit(2);
	}
	for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next)
	{
		sock = socket(ai->ai_family, SOCK_STREAM, 0);
		if (sock >= 0 && connect(sock, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (sock >= 0)
			close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	if (sock < 0)
	{
		fprintf(stderr, "zero-stream-tail: could not connect to %s:%s: %m\n", url->host, url->port);
		exit(2);
	}
	return sock;
}

static void
write_all(int sock, const char *data, size_t len)
{
	while (len > 0)
	{
		ssize_t		n = send(sock, data, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			fprintf(stderr, "zero-stream-tail: connection lost while sending: %m\n");
			exit(2);
		}
		data += n;
		len -= n;
	}
}

/* a masked client frame */
static void
send_frame(int sock, uint8 opcode, const char *payload, int len)
{
	StringInfoData f;
	uint8		mask[4];
	int			start;

	if (!pg_strong_random(mask, sizeof(mask)))
		memset(mask, 0x5a, sizeof(mask));
	initStringInfo(&f);
	zs_ws_append_header(&f, true, opcode, (uint64) len, mask);
	start = f.len;
	appendBinaryStringInfo(&f, payload, len);
	zs_ws_mask(f.data + start, len, mask, 0);
	write_all(sock, f.data, f.len);
	pfree(f.data);
}

/* {"id":1,"msg":["start-subscription",{...}]} from the URL's query (v7 /subscribe) */
static void
send_start_subscription(int sock, const Url *url)
{
	static const char *const fields[] = {"taskID", "id", "mode", "replicaVersion", "watermark"};
	const char *query = strchr(url->target, '?');
	StringInfoData msg;
	StringInfoData value;
	bool		first = true;

	initStringInfo(&msg);
	initStringInfo(&value);
	appendStringInfoString(&msg, "{\"id\":1,\"msg\":[\"start-subscription\",{");
	for (int i = 0; i < (int) lengthof(fields); i++)
	{
		if (query == NULL || !zs_http_query_param(query + 1, fields[i], &value))
			continue;
		if (!first)
			appendStringInfoChar(&msg, ',');
		first = false;
		zs_json_append_cstring(&msg, fields[i]);
		appendStringInfoChar(&msg, ':');
		zs_json_append_string(&msg, value.data, value.len);
	}
	appendStringInfoString(&msg, "}]}");
	send_frame(sock, ZS_WS_OP_TEXT, msg.data, msg.len);
}

/* Send the upgrade request; return bytes received after the response head. */
static void
handshake(int sock, const Url *url, StringInfo leftover)
{
	uint8		nonce[16];
	char		key[32];
	char		accept[ZS_WS_ACCEPT_KEY_LEN + 1];
	StringInfoData req;
	StringInfoData resp;
	char	   *end;
	int			n;

	if (!pg_strong_random(nonce, sizeof(nonce)))
	{
		fprintf(stderr, "zero-stream-tail: no random source\n");
		exit(2);
	}
	n = pg_b64_encode((const char *) nonce, sizeof(nonce), key, sizeof(key));
	key[n] = '\0';
	initStringInfo(&req);
	appendStringInfo(&req, "GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
					 "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n",
					 url->target, url->host, url->port, key);
	if (url->userinfo)
	{
		char	   *b64 = palloc(pg_b64_enc_len(strlen(url->userinfo)) + 1);
		int			len = pg_b64_encode(url->userinfo, strlen(url->userinfo), b64,
										pg_b64_enc_len(strlen(url->userinfo)));

		b64[len] = '\0';
		appendStringInfo(&req, "Authorization: Basic %s\r\n", b64);
	}
	appendStringInfoString(&req, "\r\n");
	write_all(sock, req.data, req.len);

	initStringInfo(&resp);
	while ((end = strstr(resp.data, "\r\n\r\n")) == NULL)
	{
		char		buf[4096];
		ssize_t		got = recv(sock, buf, sizeof(buf), 0);

		if (got <= 0)
		{
			fprintf(stderr, "zero-stream-tail: connection closed during the handshake\n");
			exit(2);
		}
		appendBinaryStringInfo(&resp, buf, (int) got);
		if (resp.len > 65536)
		{
			fprintf(stderr, "zero-stream-tail: oversized handshake response\n");
			exit(2);
		}
	}
	if (strncmp(resp.data, "HTTP/1.1 101", 12) != 0)
	{
		fprintf(stderr, "zero-stream-tail: server refused the upgrade: %.*s\n",
				(int) (strchr(resp.data, '\r') - resp.data), resp.data);
		exit(2);
	}
	if (!zs_ws_accept_key(key, accept) || strstr(resp.data, accept) == NULL)
	{
		fprintf(stderr, "zero-stream-tail: wrong Sec-WebSocket-Accept in the response\n");
		exit(2);
	}
	end += 4;
	appendBinaryStringInfo(leftover, end, resp.len - (int) (end - resp.data));
}

int
main(int argc, char **argv)
{
	Url			url;
	long		count = -1;
	int			idle_seconds = -1;
	bool		ack = true;
	int			sock;
	ZsWsReader	reader;
	ZsWsMessage msg;
	StringInfoData leftover;
	long		received = 0;
	bool		saw_error = false;
	bool		start = false;
	bool		timestamps = false;
	int			i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++)
	{
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = atol(argv[++i]);
		else if (strcmp(argv[i], "--idle") == 0 && i + 1 < argc)
			idle_seconds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--no-ack") == 0)
			ack = false;
		else if (strcmp(argv[i], "--start") == 0)
			start = true;
		else if (strcmp(argv[i], "--timestamps") == 0)
			timestamps = true;
		else
			usage();
	}
	if (i != argc - 1 || !parse_url(argv[i], &url))
		usage();
	/* fully buffered, flushed whenever we are about to wait for the server */
	setvbuf(stdout, NULL, _IOFBF, 1 << 20);

	sock = connect_to(&url);
	initStringInfo(&leftover);
	handshake(sock, &url, &leftover);
	if (start)
		send_start_subscription(sock, &url);
	zs_ws_reader_init(&reader, false, (uint64) 1 << 30);
	zs_ws_reader_feed(&reader, leftover.data, leftover.len);
	initStringInfo(&msg.payload);

	for (;;)
	{
		ZsWsReadResult r = zs_ws_reader_next(&reader, &msg);

		if (r == ZS_WS_ERROR)
		{
			fprintf(stderr, "zero-stream-tail: protocol error from server: %s\n", reader.error);
			exit(2);
		}
		if (r == ZS_WS_NEED_MORE)
		{
			char		buf[65536];
			struct pollfd pfd = {.fd = sock,.events = POLLIN};
			ssize_t		got;
			int			rc;

			/* nothing left to print until the server sends more */
			fflush(stdout);
			rc = poll(&pfd, 1, idle_seconds >= 0 ? idle_seconds * 1000 : -1);

			if (rc == 0)
			{
				fflush(stdout);
				fprintf(stderr, "zero-stream-tail: no message for %d s\n", idle_seconds);
				exit(4);
			}
			got = recv(sock, buf, sizeof(buf), 0);
			if (got <= 0)
			{
				fprintf(stderr, "zero-stream-tail: connection closed without a close frame\n");
				exit(2);
			}
			zs_ws_reader_feed(&reader, buf, (int) got);
			continue;
		}
		switch (msg.opcode)
		{
			case ZS_WS_OP_TEXT:
				{
					long long	id = 0;

					/* the server's acks of our own upstream frames */
					if (strncmp(msg.payload.data, "{\"ack\":", 7) == 0)
						break;

					if (timestamps)
					{
						struct timeval tv;

						gettimeofday(&tv, NULL);
						printf("%lld ", (long long) tv.tv_sec * 1000000 + tv.tv_usec);
					}
					fwrite(msg.payload.data, 1, msg.payload.len, stdout);
					{
						/* errors come alone: {"id":n,"msg":["error",...]} */
						const char *comma = strchr(msg.payload.data, ',');

						saw_error |= comma != NULL &&
							strncmp(comma, ",\"msg\":[\"error\",", 16) == 0;
					}
					fputc('\n', stdout);
					if (ack && sscanf(msg.payload.data, "{\"id\":%lld", &id) == 1)
					{
						char		frame[64];

						snprintf(frame, sizeof(frame), "{\"ack\":%lld}", id);
						send_frame(sock, ZS_WS_OP_TEXT, frame, (int) strlen(frame));
					}
					if (count >= 0 && ++received >= count)
					{
						send_frame(sock, ZS_WS_OP_CLOSE, "\x03\xe8", 2);
						exit(0);
					}
					break;
				}
			case ZS_WS_OP_PING:
				send_frame(sock, ZS_WS_OP_PONG, msg.payload.data, msg.payload.len);
				break;
			case ZS_WS_OP_CLOSE:
				{
					int			code = msg.payload.len >= 2
						? ((uint8) msg.payload.data[0] << 8) | (uint8) msg.payload.data[1] : 1005;

					fprintf(stderr, "closed: %d %.*s\n", code,
							Max(msg.payload.len - 2, 0), msg.payload.data + 2);
					send_frame(sock, ZS_WS_OP_CLOSE, msg.payload.data, Min(msg.payload.len, 2));
					exit(code == ZS_WS_CLOSE_NORMAL && !saw_error ? 0 : 3);
				}
			default:
				break;
		}
	}
}
