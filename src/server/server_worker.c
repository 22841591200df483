/*-------------------------------------------------------------------------
 * server_worker.c
 *	  The subscriber server background worker: its main function and its
 *	  loop around one WaitEventSet, which holds the worker's latch (set by
 *	  the decoder after every stored batch, and by signals), the listening
 *	  sockets and every client connection.
 *
 * The loop, in pg_cron's shape: each iteration does one bounded round of
 * work, then reloads the configuration if asked, then waits (at most a 1 s
 * tick, not at all while a snapshot copy is in progress, a connection
 * has input left over or a catch-up has pages left). A round: handle what
 * the last wait reported (accept, send), read requests and frames (a
 * bounded share per connection); give every live subscriber that has room
 * the next page of the committed change log and send it, then catching-up
 * subscribers in turn within the round's catch-up budget (one short
 * read-only transaction for all, flow_control.c); advance
 * snapshot copies; end laggards; close connections past their handshake
 * timeout; ping and drop silent peers; send; drop closed connections;
 * return freed memory to the system after a burst; publish every
 * connection to shared memory. The server never blocks on a
 * client (all sockets are non-blocking, output is buffered per connection
 * and bounded by ack pacing and the backlog limit) and never waits for the
 * decoder.
 *
 * An error leaves the loop through zs_worker_fail(), which records it in
 * the worker's slot (zero_stream.workers()); the postmaster restarts the
 * worker, and subscribers reconnect.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "guc.h"
#include "compat/signal.h"
#include "compat/wait_event_set.h"
#include "server/admission.h"
#include "server/connection.h"
#include "server/flow_control.h"
#include "server/listener.h"
#include "server/peer_log.h"
#include "server/reservations.h"
#include "server/routes.h"
#include "server/subscriber_slots.h"
#include "server/tls.h"
#include "shmem.h"
#include "slot_health.h"

PGDLLEXPORT void zs_server_main(Datum main_arg);

#define TICK_MS				1000
#define SHUTDOWN_DRAIN_MS	1000	/* for close frames after what was queued */
#define SLOT_CHECK_MS		5000	/* how often the slot's health is checked */

/* The loop's own state: what it waits on, and what the last wait reported */
typedef struct ServerLoop
{
	WaitEventSet *wait_set;
	WaitEvent  *events;
	int			max_events;		/* size of the events array */
	int			nevents;		/* reported by the last wait */
	TimestampTz last_slot_check;
} ServerLoop;

/* what the connections receive goes to routes.c */
static const ZsConnHandlers route_handlers = {
	.request = zs_route_request,
	.bad_request = zs_route_bad_request,
	.message = zs_route_message,
};

/* PostgreSQL 15 cannot remove events from a set: rebuild it when connections change */
static void
rebuild_wait_set(ServerLoop *loop, ZsServer *server)
{
	WaitEventSet *wait_set;

	if (loop->wait_set != NULL)
		FreeWaitEventSet(loop->wait_set);
	wait_set = loop->wait_set = zs_create_wait_event_set(2 + server->nlisteners + server->nconns);
	AddWaitEventToSet(wait_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	for (int i = 0; i < server->nlisteners; i++)
		AddWaitEventToSet(wait_set, WL_SOCKET_READABLE, server->listeners[i], NULL,
						  &server->listeners[i]);
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		c->wait_events = zs_conn_wait_events(c);
		c->event_pos = AddWaitEventToSet(wait_set, c->wait_events, c->sock, NULL, c);
	}
	server->conns_changed = false;
}

static void
update_wait_events(ServerLoop *loop, ZsConn *c)
{
	uint32		events = zs_conn_wait_events(c);

	if (c->closed || events == c->wait_events)
		return;
	c->wait_events = events;
	ModifyWaitEvent(loop->wait_set, c->event_pos, events, NULL);
}

/*
 * New connections on a listener. When the pending pool is full, the
 * requests that have arrived are read first (a burst of clients, accepted
 * before a round read them: those whose requests came leave the pool),
 * then accepting goes on, making room or refusing.
 */
static void
accept_connections(ZsServer *server, pgsocket listener)
{
	int			budget = ZS_ACCEPT_BUDGET;

	if (zs_listener_accept(server, listener, false, &budget))
	{
		zs_conns_read_requests(server);
		(void) zs_listener_accept(server, listener, true, &budget);
	}
}

/*
 * What the last wait reported: the latch, new connections, writable
 * clients; readable ones are marked, for zs_conns_read().
 */
static void
handle_events(ServerLoop *loop, ZsServer *server)
{
	for (int i = 0; i < loop->nevents; i++)
	{
		WaitEvent  *ev = &loop->events[i];

		if (ev->events & WL_LATCH_SET)
			ResetLatch(MyLatch);
		else if (ev->user_data != NULL && ev->user_data >= (void *) server->listeners &&
				 ev->user_data < (void *) (server->listeners + ZS_MAX_LISTENERS))
			accept_connections(server, *(pgsocket *) ev->user_data);
		else if (ev->user_data != NULL)
		{
			ZsConn	   *c = (ZsConn *) ev->user_data;

			if (ev->events & WL_SOCKET_READABLE)
				c->read_ready = true;
			if (!c->closed && (ev->events & WL_SOCKET_WRITEABLE))
				zs_conn_flush(c);
		}
	}
}

/* every SLOT_CHECK_MS: is the decoder's slot about to be lost? */
static void
check_slot_health(ServerLoop *loop)
{
	TimestampTz now = GetCurrentTimestamp();

	if (!TimestampDifferenceExceeds(loop->last_slot_check, now, SLOT_CHECK_MS))
		return;
	loop->last_slot_check = now;
	zs_warn_if_slot_at_risk();
}

/*
 * One round of work after a wait; the longest the next wait may sleep:
 * 0 if a snapshot copy still has steps to make, a connection has input
 * left or catch-up has pages left to read now, else until catch-up's
 * pause ends or the tick.
 */
static long
serve_round(ServerLoop *loop, ZsServer *server)
{
	ZsFlowRound flow;
	instr_time	start;
	instr_time	elapsed;

	char		head[ZS_WATERMARK_MAXLEN];
	char		replica_version[ZS_WATERMARK_MAXLEN];
	bool		copies_pending;
	bool		input_pending;

	INSTR_TIME_SET_CURRENT(start);
	handle_events(loop, server);
	input_pending = zs_conns_read(server);

	/* the log's head and lineage, as the decoder last published them */
	LWLockAcquire(zs_shared->lock, LW_SHARED);
	strlcpy(head, zs_shared->last_watermark, sizeof(head));
	strlcpy(replica_version, zs_shared->replica_version, sizeof(replica_version));
	LWLockRelease(zs_shared->lock);

	zs_flow_serve_pages(server, head, replica_version, &flow);
	zs_flow_send_lag_reports(server);
	copies_pending = zs_reservation_advance_copies(server);
	zs_flow_check_laggards(server, head);
	zs_admission_check_timeouts(server);
	zs_conns_check_liveness(server);
	zs_peer_log_sweep();
	for (int i = 0; i < server->nconns; i++)
	{
		if (!server->conns[i]->closed)
			zs_conn_flush(server->conns[i]);
		if (!server->conns_changed)
			update_wait_events(loop, server->conns[i]);
	}
	zs_conns_remove_closed(server);
	zs_conns_trim_memory(server, !flow.catching_up);
	zs_publish_subscriber_slots(server, head);
	check_slot_health(loop);
	/* catch-up's cost is its rounds' whole time: pages, acks, writes */
	if (flow.catchup_served)
	{
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);
		zs_flow_pace_catchup(server, INSTR_TIME_GET_MICROSEC(elapsed));
	}
	if (copies_pending || input_pending)
		return 0;
	return flow.next_ms >= 0 ? Min(flow.next_ms, TICK_MS) : TICK_MS;
}

static volatile sig_atomic_t shutdown_requested = false;

/* SIGTERM: as die(), and the exit sends close frames (close_at_exit) */
static void
server_sigterm(SIGNAL_ARGS)
{
	shutdown_requested = true;
	die(ZS_SIGNAL_ARGS_PASSED);
}

/*
 * When a fast shutdown (or any SIGTERM) ends the worker: every WebSocket
 * client gets a close frame, 1001 going away, after what it was already
 * sent, so that it logs a clean close, not a reset, and reconnects. Each
 * is a lingering close (zs_conn_send_close_lingering): the server sends
 * FIN after the frame and waits for the client to close its side, so that
 * the client's unread acks do not turn the close into an RST. All of it
 * takes at most SHUTDOWN_DRAIN_MS, then whatever is still open is closed.
 * Requests still in their HTTP head and downloads are just closed. After
 * an error the sockets just close with the process: a frame being queued
 * may have been cut.
 */
static void
close_at_exit(int code, Datum arg)
{
	ZsServer   *server = (ZsServer *) DatumGetPointer(arg);
	TimestampTz deadline;
	int			nclosing = 0;
	int			nopen = 0;
	int			nunsent = 0;

	if (!shutdown_requested)
		return;
	/* an error on the way out may have left our lock held */
	LWLockReleaseAll();
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), SHUTDOWN_DRAIN_MS);
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];

		if (c->closed)
			continue;
		if (c->state != ZS_CONN_WEBSOCKET || c->file_fd >= 0 || c->close_after_flush)
		{
			if (!c->close_after_flush)
				zs_conn_close(c);
			continue;
		}
		zs_conn_send_close_lingering(c, ZS_WS_CLOSE_GOING_AWAY, "server shutting down");
		nclosing++;
	}
	for (;;)
	{
		nopen = nunsent = 0;
		for (int i = 0; i < server->nconns; i++)
		{
			ZsConn	   *c = server->conns[i];

			zs_conn_flush(c);
			if (!c->closed && !c->write_shut)
				nunsent++;
			if (zs_conn_linger(c))
				nopen++;
		}
		if (nopen == 0 || GetCurrentTimestamp() >= deadline)
			break;
		pg_usleep(10 * 1000L);
	}
	for (int i = 0; i < server->nconns; i++)
		zs_conn_close(server->conns[i]);
	if (nclosing > 0)
		ereport(LOG,
				(errmsg_plural("zero_stream server shutting down: %d subscriber connection closed with 1001 going away",
							   "zero_stream server shutting down: %d subscriber connections closed with 1001 going away",
							   nclosing, nclosing),
				 nunsent > 0 ? errdetail_plural("%d of them had output not yet sent.",
												"%d of them had output not yet sent.", nunsent, nunsent) : 0));
}

static void
run_server(void)
{
	ZsServer   *server;
	ServerLoop	loop = {0};
	MemoryContext loop_context;
	ResourceOwner owner;
	long		timeout;

	/* for what the loop uses outside transactions (SHA-1 of the handshake) */
	owner = ResourceOwnerCreate(NULL, "zero_stream server");
	CurrentResourceOwner = owner;

	zs_tls_init();
	server = MemoryContextAllocZero(TopMemoryContext, sizeof(ZsServer));
	server->nlisteners = zs_listeners_open(server->listeners);
	zs_conns_init(server, &route_handlers);
	before_shmem_exit(close_at_exit, PointerGetDatum(server));
	/* open connections: max_subscribers admitted, max_pending_connections others */
	loop.max_events = 2 + ZS_MAX_LISTENERS + zs_max_subscribers + zs_max_pending_connections;
	loop.events = MemoryContextAlloc(TopMemoryContext, sizeof(WaitEvent) * loop.max_events);
	loop_context = AllocSetContextCreate(TopMemoryContext, "zero_stream server loop",
										 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		MemoryContext old;

		zs_worker_check_interrupts();
		old = MemoryContextSwitchTo(loop_context);
		timeout = serve_round(&loop, server);
		MemoryContextSwitchTo(old);
		MemoryContextReset(loop_context);
		/* a committed read transaction leaves no resource owner behind */
		CurrentResourceOwner = owner;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			zs_tls_reload();
		}

		if (server->conns_changed)
			rebuild_wait_set(&loop, server);
		loop.nevents = WaitEventSetWait(loop.wait_set, timeout, loop.events,
										loop.max_events, PG_WAIT_EXTENSION);
	}
}

void
zs_server_main(Datum main_arg)
{
	MemoryContext worker_context;

	zs_worker_attach(ZS_WORKER_SERVER, "zero_stream server");
	/* a fast shutdown closes the connections with a close frame first */
	pqsignal(SIGTERM, server_sigterm);
	worker_context = AllocSetContextCreate(TopMemoryContext, "zero_stream server",
										   ALLOCSET_DEFAULT_SIZES);

	PG_TRY();
	{
		run_server();
	}
	PG_CATCH();
	{
		zs_worker_fail(ZS_WORKER_SERVER, worker_context);
	}
	PG_END_TRY();
}
