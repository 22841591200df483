/*-------------------------------------------------------------------------
 * zero_stream_fanout.c
 *	  zero-stream-fanout: N subscriptions of one change stream from one
 *	  process, for benchmarks and tests. A benchmark that runs a client
 *	  process per subscriber measures the machine's scheduler more than the
 *	  server (64 processes on 2 cores starve the server of CPU); this holds
 *	  every connection in one non-blocking poll() loop instead.
 *
 *	  zero-stream-fanout [options] 'ws[s]://host:port/replication/v6/changes?id=c%d&...'
 *
 *	  --subscriptions N  how many (default 1); "%d" in the URL becomes the
 *	                subscription's number (1..N), so each has its own id
 *	  --idle SECS   end once no subscription has received anything for SECS
 *	  --until W     a subscription is done (and closes) once it has received
 *	                the commit of watermark W or a later one; the program
 *	                ends when every one is done
 *	  --ca-file FILE, --no-verify   as zero-stream-tail's (wss://)
 *
 * Each subscription acks every frame as zero-stream-tail does (after
 * reading it; the acks of one read go out together) and counts its frames,
 * messages, rows (data messages) and transactions. It checks that frame
 * ids follow each other, that every transaction is begin, data, commit
 * with the begin's commitWatermark equal to the commit's watermark, that
 * commit watermarks strictly increase, and that it receives the same
 * transactions as every other subscription (they start from the same
 * watermark): the k-th commit of each has the same watermark.
 *
 * At the end (idle, --until reached, or SIGINT/SIGTERM) one line per
 * subscription on stdout:
 *	  sub=<n> id=<id> frames=.. messages=.. rows=.. txns=.. connected_us=..
 *	  first_us=.. last_us=.. first_watermark=.. last_watermark=.. status=ok|<problem>
 * (times: µs since the Unix epoch, of the first and last message received),
 * then one line "all subscriptions=N ok=.. rows=.. txns=.. seconds=.. cpu=.."
 * (seconds since the start; the process's CPU seconds).
 *
 * Exit status: 0 every subscription ok; 1 usage; 2 a connection or
 * handshake failed at the start; 3 a subscription failed (an error
 * message, a close, a broken check); 4 --until given and not reached by
 * every subscription before the idle time or a signal.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/pg_prng.h"

#include "codec/stream_frame.h"
#include "codec/websocket.h"
#include "client/cli_options.h"
#include "client/ws_client.h"

#define WATERMARK_MAX	64
/* bytes read from one connection before the others get their turn */
#define READ_CHUNK		65536
#define READS_PER_TURN	4

typedef struct Subscription
{
	int			number;			/* 1..N */
	char	   *id;				/* the URL's id parameter, for the summary */
	char	   *target;
	ZsClientConn conn;
	ZsWsReader	reader;
	StringInfoData out;			/* masked frames to send, from out_pos */
	int			out_pos;
	bool		open;
	bool		done;			/* --until reached */
	char		problem[256];	/* empty while all is well */

	int64		last_frame_id;	/* 0: none yet */
	int64		frames;
	int64		messages;
	int64		rows;
	int64		txns;
	bool		in_txn;
	char		begin_watermark[WATERMARK_MAX];
	char		first_watermark[WATERMARK_MAX];
	char		last_watermark[WATERMARK_MAX];
	int64		connected_us;
	int64		first_us;
	int64		last_us;
} Subscription;

static char err[ZS_CLIENT_ERR_LEN];
static volatile sig_atomic_t stop_requested = false;
static const char *until = NULL;
static pg_prng_state mask_state;

/* commit watermarks in the order the furthest subscription received them */
static char **commits = NULL;
static int64 commits_len = 0;
static int64 commits_cap = 0;

static void
usage(void)
{
	fprintf(stderr, "usage: zero-stream-fanout [--subscriptions N] [--idle SECS] [--until WATERMARK] [--ca-file FILE] [--no-verify] ws[s]://host:port/path?id=c%%d&...\n");
	exit(1);
}

static void
on_signal(int signo)
{
	stop_requested = true;
}

static int64
now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64) tv.tv_sec * 1000000 + tv.tv_usec;
}

/* the subscription's first problem is the one reported; it stops reading */
static void
sub_fail(Subscription *sub, const char *fmt,...) pg_attribute_printf(2, 3);

static void
sub_fail(Subscription *sub, const char *fmt,...)
{
	va_list		ap;

	if (sub->problem[0] == '\0')
	{
		va_start(ap, fmt);
		vsnprintf(sub->problem, sizeof(sub->problem), fmt, ap);
		va_end(ap);
	}
	if (sub->open)
		zs_client_close(&sub->conn);
	sub->open = false;
}

/* queue one masked frame */
static void
queue_frame(Subscription *sub, uint8 opcode, const char *payload, int len)
{
	uint32		m = pg_prng_uint32(&mask_state);
	uint8		mask[4];
	int			start;

	memcpy(mask, &m, sizeof(mask));
	zs_ws_append_header(&sub->out, true, opcode, (uint64) len, mask);
	start = sub->out.len;
	appendBinaryStringInfo(&sub->out, payload, len);
	zs_ws_mask(sub->out.data + start, len, mask, 0);
}

/* send what the socket takes */
static void
flush_out(Subscription *sub)
{
	while (sub->open && sub->out_pos < sub->out.len)
	{
		ssize_t		n = zs_client_write_some(&sub->conn, sub->out.data + sub->out_pos,
											 sub->out.len - sub->out_pos, err);

		if (n < 0)
		{
			sub_fail(sub, "%s", err);
			return;
		}
		if (n == 0)
			return;
		sub->out_pos += (int) n;
	}
	if (sub->out_pos == sub->out.len)
	{
		resetStringInfo(&sub->out);
		sub->out_pos = 0;
	}
}

static void
copy_watermark(char *dest, const ZsStreamMessage *msg)
{
	memcpy(dest, msg->watermark, msg->watermark_len);
	dest[msg->watermark_len] = '\0';
}

/* the k-th commit must be the same for every subscription */
static bool
check_commit_sequence(Subscription *sub, const char *watermark)
{
	int64		k = sub->txns;

	if (k < commits_len)
		return strcmp(commits[k], watermark) == 0;
	if (commits_len == commits_cap)
	{
		commits_cap = commits_cap ? commits_cap * 2 : 4096;
		commits = commits ? repalloc(commits, commits_cap * sizeof(char *))
			: palloc(commits_cap * sizeof(char *));
	}
	commits[commits_len++] = pstrdup(watermark);
	return true;
}

/* one change message of the subscription's stream */
static void
take_message(Subscription *sub, const ZsStreamMessage *msg, int64 now)
{
	sub->messages++;
	if (sub->first_us == 0)
		sub->first_us = now;
	sub->last_us = now;
	if (msg->watermark != NULL && msg->watermark_len >= WATERMARK_MAX)
	{
		sub_fail(sub, "watermark_too_long");
		return;
	}
	switch (msg->type)
	{
		case ZS_STREAM_BEGIN:
			if (sub->in_txn)
			{
				sub_fail(sub, "begin_inside_transaction:%s", sub->begin_watermark);
				return;
			}
			sub->in_txn = true;
			copy_watermark(sub->begin_watermark, msg);
			break;
		case ZS_STREAM_DATA:
			if (!sub->in_txn)
			{
				sub_fail(sub, "data_outside_transaction_after:%s", sub->last_watermark);
				return;
			}
			sub->rows++;
			break;
		case ZS_STREAM_COMMIT:
			{
				char		watermark[WATERMARK_MAX];

				copy_watermark(watermark, msg);
				if (!sub->in_txn || strcmp(watermark, sub->begin_watermark) != 0)
				{
					sub_fail(sub, "commit_without_its_begin:%s", watermark);
					return;
				}
				if (sub->last_watermark[0] && strcmp(watermark, sub->last_watermark) <= 0)
				{
					sub_fail(sub, "watermark_not_increasing:%s_after_%s", watermark, sub->last_watermark);
					return;
				}
				if (!check_commit_sequence(sub, watermark))
				{
					sub_fail(sub, "transaction_%lld_differs:%s_vs_%s", (long long) sub->txns + 1,
							 watermark, commits[sub->txns]);
					return;
				}
				sub->in_txn = false;
				sub->txns++;
				strcpy(sub->last_watermark, watermark);
				if (sub->first_watermark[0] == '\0')
					strcpy(sub->first_watermark, watermark);
				if (until != NULL && strcmp(watermark, until) >= 0)
					sub->done = true;
				break;
			}
		case ZS_STREAM_ROLLBACK:
			sub->in_txn = false;
			break;
		case ZS_STREAM_ERROR:
			sub_fail(sub, "error_message:%.200s", msg->text);
			return;
		case ZS_STREAM_STATUS:
		case ZS_STREAM_OTHER:
			break;
	}
}

/* one WebSocket message */
static void
take_ws_message(Subscription *sub, ZsWsMessage *wsmsg, int64 now)
{
	switch (wsmsg->opcode)
	{
		case ZS_WS_OP_TEXT:
			{
				ZsStreamFrame frame;
				ZsStreamMessage msg;
				int			rc = 0;
				char		ack[64];

				if (sub->done)
					return;		/* closing: what follows --until is not counted */
				if (!zs_stream_frame_parse(wsmsg->payload.data, wsmsg->payload.len, &frame))
				{
					sub_fail(sub, "not_a_stream_frame:%.80s", wsmsg->payload.data);
					return;
				}
				if (frame.kind == ZS_FRAME_ACK)
					return;		/* the server's ack of an upstream frame */
				if (sub->last_frame_id != 0 && frame.id != sub->last_frame_id + 1)
				{
					sub_fail(sub, "frame_id_%lld_after_%lld", (long long) frame.id,
							 (long long) sub->last_frame_id);
					return;
				}
				sub->last_frame_id = frame.id;
				sub->frames++;
				while (!sub->done && (rc = zs_stream_frame_next_message(&frame, &msg)) == 1)
				{
					take_message(sub, &msg, now);
					if (!sub->open)
						return;
				}
				if (rc < 0)
				{
					sub_fail(sub, "malformed_message_in_frame_%lld", (long long) frame.id);
					return;
				}
				snprintf(ack, sizeof(ack), "{\"ack\":%lld}", (long long) frame.id);
				queue_frame(sub, ZS_WS_OP_TEXT, ack, (int) strlen(ack));
				if (sub->done)
					queue_frame(sub, ZS_WS_OP_CLOSE, "\x03\xe8", 2);
				break;
			}
		case ZS_WS_OP_PING:
			queue_frame(sub, ZS_WS_OP_PONG, wsmsg->payload.data, wsmsg->payload.len);
			break;
		case ZS_WS_OP_CLOSE:
			{
				int			code = wsmsg->payload.len >= 2
					? ((uint8) wsmsg->payload.data[0] << 8) | (uint8) wsmsg->payload.data[1] : 1005;

				if (sub->done)
				{
					zs_client_close(&sub->conn);
					sub->open = false;
				}
				else
					sub_fail(sub, "closed:%d:%.*s", code, Max(wsmsg->payload.len - 2, 0),
							 wsmsg->payload.data + 2);
				break;
			}
		default:
			break;
	}
}

/* read what is there, up to a few chunks */
static void
read_some(Subscription *sub, char *buf)
{
	for (int i = 0; i < READS_PER_TURN && sub->open; i++)
	{
		ssize_t		got = zs_client_read(&sub->conn, buf, READ_CHUNK, err);
		int64		now;
		ZsWsMessage wsmsg;
		ZsWsReadResult r;

		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (got < 0)
		{
			sub_fail(sub, "%s", err);
			return;
		}
		if (got == 0)
		{
			if (sub->done)
			{
				zs_client_close(&sub->conn);
				sub->open = false;
			}
			else
				sub_fail(sub, "connection_closed_without_a_close_frame");
			return;
		}
		now = now_us();
		zs_ws_reader_feed(&sub->reader, buf, (int) got);
		initStringInfo(&wsmsg.payload);
		while (sub->open && (r = zs_ws_reader_next(&sub->reader, &wsmsg)) != ZS_WS_NEED_MORE)
		{
			if (r == ZS_WS_ERROR)
			{
				sub_fail(sub, "websocket_protocol_error:%s", sub->reader.error);
				break;
			}
			take_ws_message(sub, &wsmsg, now);
		}
		pfree(wsmsg.payload.data);
		if (got < READ_CHUNK && !zs_client_pending(&sub->conn))
			return;
	}
}

/* "%d" -> n, everywhere in text */
static char *
substitute_number(const char *text, int n)
{
	StringInfoData out;

	initStringInfo(&out);
	for (const char *p = text; *p; p++)
	{
		if (p[0] == '%' && p[1] == 'd')
		{
			appendStringInfo(&out, "%d", n);
			p++;
		}
		else
			appendStringInfoChar(&out, *p);
	}
	return out.data;
}

static char *
query_id(const char *target)
{
	const char *p = strstr(target, "?id=");
	size_t		len;

	if (p == NULL)
		p = strstr(target, "&id=");
	if (p == NULL)
		return pstrdup("-");
	p += 4;
	len = strcspn(p, "&");
	return pnstrdup(p, len);
}

static void
subscribe(Subscription *sub, const ZsUrl *url)
{
	StringInfoData leftover;
	int			http_status;

	if (!zs_client_connect(url, &sub->conn, err))
	{
		fprintf(stderr, "zero-stream-fanout: subscription %d: %s\n", sub->number, err);
		exit(2);
	}
	initStringInfo(&leftover);
	if (!zs_client_ws_handshake(&sub->conn, url, sub->target, &leftover, &http_status, err) ||
		!zs_client_set_nonblocking(&sub->conn, err))
	{
		fprintf(stderr, "zero-stream-fanout: subscription %d: %s\n", sub->number, err);
		exit(2);
	}
	sub->open = true;
	sub->connected_us = now_us();
	zs_ws_reader_init(&sub->reader, false, (uint64) 1 << 30);
	initStringInfo(&sub->out);
	if (leftover.len > 0)
	{
		ZsWsMessage wsmsg;
		ZsWsReadResult r;

		zs_ws_reader_feed(&sub->reader, leftover.data, leftover.len);
		initStringInfo(&wsmsg.payload);
		while (sub->open && (r = zs_ws_reader_next(&sub->reader, &wsmsg)) != ZS_WS_NEED_MORE)
		{
			if (r == ZS_WS_ERROR)
			{
				sub_fail(sub, "websocket_protocol_error:%s", sub->reader.error);
				break;
			}
			take_ws_message(sub, &wsmsg, sub->connected_us);
		}
		pfree(wsmsg.payload.data);
	}
	pfree(leftover.data);
}

int
main(int argc, char **argv)
{
	ZsUrl		url;
	int			nsubs = 1;
	int			idle_seconds = -1;
	ZsCliTls	tls;
	Subscription *subs;
	struct pollfd *pfds;
	int		   *polled;
	char	   *buf;
	int64		started_us;
	int64		last_activity;
	int64		rows = 0;
	int64		txns = 0;
	int			ok = 0;
	bool		all_done = false;
	bool		any_failed = false;
	struct rusage ru;
	int			i;
	const ZsCliOption options[] = {
		{"--subscriptions", ZS_CLI_INT, &nsubs},
		{"--idle", ZS_CLI_INT, &idle_seconds},
		{"--until", ZS_CLI_STRING, &until},
	};

	i = zs_cli_parse_options(argc, argv, 1, options, lengthof(options), &tls);
	if (i < 0 || i != argc - 1 || nsubs < 1 || !zs_url_parse(argv[i], &url) ||
		!zs_url_is_websocket(&url))
		usage();
	if (nsubs > 1 && strstr(url.target, "%d") == NULL)
	{
		fprintf(stderr, "zero-stream-fanout: with more than one subscription the URL needs %%d (each its own id)\n");
		exit(1);
	}
	zs_cli_tls_configure(&tls);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	{
		uint64		seed;

		if (!pg_strong_random(&seed, sizeof(seed)))
			seed = (uint64) now_us() ^ (uint64) getpid();
		pg_prng_seed(&mask_state, seed);
	}

	subs = palloc0(nsubs * sizeof(Subscription));
	pfds = palloc(nsubs * sizeof(struct pollfd));
	polled = palloc(nsubs * sizeof(int));
	buf = palloc(READ_CHUNK);
	started_us = now_us();
	for (int s = 0; s < nsubs; s++)
	{
		subs[s].number = s + 1;
		subs[s].target = substitute_number(url.target, s + 1);
		subs[s].id = query_id(subs[s].target);
		subscribe(&subs[s], &url);
		flush_out(&subs[s]);
	}
	last_activity = now_us();

	while (!stop_requested)
	{
		int			n = 0;
		int			timeout = -1;
		int			rc;
		int64		now;
		bool		pending = false;

		all_done = true;
		for (int s = 0; s < nsubs; s++)
		{
			Subscription *sub = &subs[s];

			if (!sub->open)
				continue;
			if (!sub->done)
				all_done = false;
			pfds[n].fd = sub->conn.sock;
			pfds[n].events = POLLIN | (sub->out_pos < sub->out.len ? POLLOUT : 0);
			pfds[n].revents = 0;
			polled[n++] = s;
			pending |= zs_client_pending(&sub->conn);
		}
		if (n == 0 || (until != NULL && all_done))
			break;
		if (idle_seconds >= 0)
		{
			int64		left = last_activity + (int64) idle_seconds * 1000000 - now_us();

			if (left <= 0)
				break;
			timeout = (int) Min(left / 1000 + 1, INT_MAX);
		}
		if (pending)
			timeout = 0;
		rc = poll(pfds, n, timeout);
		if (rc < 0 && errno != EINTR)
		{
			fprintf(stderr, "zero-stream-fanout: poll: %m\n");
			exit(2);
		}
		if (rc <= 0 && !pending)
			continue;
		now = now_us();
		for (int k = 0; k < n; k++)
		{
			Subscription *sub = &subs[polled[k]];
			int64		before = sub->messages + sub->frames;

			if (pfds[k].revents & POLLOUT)
				flush_out(sub);
			if ((pfds[k].revents & (POLLIN | POLLERR | POLLHUP)) || zs_client_pending(&sub->conn))
				read_some(sub, buf);
			flush_out(sub);
			if (sub->messages + sub->frames != before)
				last_activity = now;
		}
	}

	for (int s = 0; s < nsubs; s++)
	{
		Subscription *sub = &subs[s];
		bool		sub_ok = sub->problem[0] == '\0';

		if (sub_ok && until != NULL && !sub->done)
			snprintf(sub->problem, sizeof(sub->problem), "until_not_reached");
		printf("sub=%d id=%s frames=%lld messages=%lld rows=%lld txns=%lld connected_us=%lld "
			   "first_us=%lld last_us=%lld first_watermark=%s last_watermark=%s status=%s\n",
			   sub->number, sub->id, (long long) sub->frames, (long long) sub->messages,
			   (long long) sub->rows, (long long) sub->txns, (long long) sub->connected_us,
			   (long long) sub->first_us, (long long) sub->last_us,
			   sub->first_watermark[0] ? sub->first_watermark : "-",
			   sub->last_watermark[0] ? sub->last_watermark : "-",
			   sub->problem[0] ? sub->problem : "ok");
		any_failed |= !sub_ok;
		ok += sub->problem[0] == '\0';
		rows += sub->rows;
		txns += sub->txns;
		if (sub->open)
		{
			if (!sub->done)
				queue_frame(sub, ZS_WS_OP_CLOSE, "\x03\xe8", 2);
			flush_out(sub);
			zs_client_close(&sub->conn);
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("all subscriptions=%d ok=%d rows=%lld txns=%lld seconds=%.3f cpu=%.2f\n", nsubs, ok,
		   (long long) rows, (long long) txns, (now_us() - started_us) / 1e6,
		   ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	fflush(stdout);
	if (any_failed)
		return 3;
	return ok == nsubs ? 0 : 4;
}
