/*-------------------------------------------------------------------------
 * zero_stream_tail.c
 *	  zero-stream-tail: subscribe to a Zero change streamer and print every
 *	  message as one JSON line on stdout, acking each after printing.
 *
 *	  zero-stream-tail [options] 'ws[s]://[user:password@]host:port/replication/v6/changes?...'
 *
 *	  --count N     exit 0 after N messages
 *	  --idle SECS   exit 4 after SECS seconds without a message
 *	  --no-ack      never ack (a stalled subscriber, for tests)
 *	  --timestamps  prefix each line with its receive time (µs since the Unix epoch)
 *	  --start       v7 /subscribe: send start-subscription built from the
 *	                URL's taskID, id, mode, replicaVersion and watermark
 *	  --ca-file FILE  wss://: verify the server's certificate against the CA
 *	                certificates in FILE (default $ZS_SSL_CA_FILE, else the
 *	                system's)
 *	  --no-verify   wss://: do not verify the server's certificate (also
 *	                ZS_SSL_NO_VERIFY=1); the connection is encrypted but
 *	                the server is not authenticated
 *
 * Exit status: 0 normal close or --count reached; 1 usage; 2 connection or
 * handshake failure (HTTP status on stderr); 3 an error message or a close
 * with an error code (code and reason on stderr); 4 idle timeout.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include "codec/http.h"
#include "codec/json_out.h"
#include "codec/websocket.h"
#include "client/cli_options.h"
#include "client/ws_client.h"

static void
usage(void)
{
	fprintf(stderr, "usage: zero-stream-tail [--count N] [--idle SECS] [--no-ack] [--start] [--timestamps] [--ca-file FILE] [--no-verify] ws[s]://[user:password@]host:port/path?query\n");
	exit(1);
}

static char err[ZS_CLIENT_ERR_LEN];

static void
fail(void)
{
	fprintf(stderr, "zero-stream-tail: %s\n", err);
	exit(2);
}

static void
send_frame(ZsClientConn *conn, uint8 opcode, const char *payload, int len)
{
	if (!zs_client_send_frame(conn, opcode, payload, len, err))
		fail();
}

/* {"id":1,"msg":["start-subscription",{...}]} from the URL's query (v7 /subscribe) */
static void
send_start_subscription(ZsClientConn *conn, const ZsUrl *url)
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
	send_frame(conn, ZS_WS_OP_TEXT, msg.data, msg.len);
}

int
main(int argc, char **argv)
{
	ZsUrl		url;
	long		count = -1;
	int			idle_seconds = -1;
	bool		ack = true;
	ZsClientConn conn;
	ZsCliTls	tls;
	ZsWsReader	reader;
	ZsWsMessage msg;
	StringInfoData leftover;
	long		received = 0;
	bool		saw_error = false;
	bool		start = false;
	bool		timestamps = false;
	int			http_status;
	int			i;
	const ZsCliOption options[] = {
		{"--count", ZS_CLI_LONG, &count},
		{"--idle", ZS_CLI_INT, &idle_seconds},
		{"--no-ack", ZS_CLI_FLAG, &ack, false},
		{"--start", ZS_CLI_FLAG, &start, true},
		{"--timestamps", ZS_CLI_FLAG, &timestamps, true},
	};

	i = zs_cli_parse_options(argc, argv, 1, options, lengthof(options), &tls);
	if (i < 0 || i != argc - 1 || !zs_url_parse(argv[i], &url) || !zs_url_is_websocket(&url))
		usage();
	zs_cli_tls_configure(&tls);
	signal(SIGPIPE, SIG_IGN);
	/* fully buffered, flushed whenever we are about to wait for the server */
	setvbuf(stdout, NULL, _IOFBF, 1 << 20);

	if (!zs_client_connect(&url, &conn, err))
		fail();
	initStringInfo(&leftover);
	if (!zs_client_ws_handshake(&conn, &url, NULL, &leftover, &http_status, err))
		fail();
	if (start)
		send_start_subscription(&conn, &url);
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
			ssize_t		got;
			int			rc;

			/* nothing left to print until the server sends more */
			fflush(stdout);
			rc = zs_client_wait(&conn, idle_seconds >= 0 ? idle_seconds * 1000 : -1);

			if (rc == 0)
			{
				fflush(stdout);
				fprintf(stderr, "zero-stream-tail: no message for %d s\n", idle_seconds);
				exit(4);
			}
			if (rc < 0)
				continue;		/* a signal */
			got = zs_client_read(&conn, buf, sizeof(buf), err);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				fail();
			if (got == 0)
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
						send_frame(&conn, ZS_WS_OP_TEXT, frame, (int) strlen(frame));
					}
					if (count >= 0 && ++received >= count)
					{
						send_frame(&conn, ZS_WS_OP_CLOSE, "\x03\xe8", 2);
						exit(0);
					}
					break;
				}
			case ZS_WS_OP_PING:
				send_frame(&conn, ZS_WS_OP_PONG, msg.payload.data, msg.payload.len);
				break;
			case ZS_WS_OP_CLOSE:
				{
					int			code = msg.payload.len >= 2
						? ((uint8) msg.payload.data[0] << 8) | (uint8) msg.payload.data[1] : 1005;

					fprintf(stderr, "closed: %d %.*s\n", code,
							Max(msg.payload.len - 2, 0), msg.payload.data + 2);
					send_frame(&conn, ZS_WS_OP_CLOSE, msg.payload.data, Min(msg.payload.len, 2));
					exit(code == ZS_WS_CLOSE_NORMAL && !saw_error ? 0 : 3);
				}
			default:
				break;
		}
	}
}
