/*-------------------------------------------------------------------------
 * reservations.c
 *	  Snapshot reservations and the snapshots served under them
 *	  (docs/zero-protocol.md §2.5-2.6).
 *
 * A reservation answers "where do I restore from" (reservation_offer.c)
 * and pins the change log at the backup watermark of the moment, the
 * position a restored copy resumes from.
 *
 * The registry is the connections themselves: a connection holds at most
 * one reservation (up.reserved_task), taken by a legacy /snapshot request
 * or a v7 reserve-snapshot message, and held until the task's subscription
 * starts, a newer reservation for the task is taken, or the socket closes.
 * Only a task holding one may download GET /replica/<taskID>: a consistent
 * copy of the backup replica made in steps (replica/backup_copy.h), a few
 * pages per loop iteration so the server keeps serving meanwhile, then
 * sent from its file by the connection.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/fd.h"
#include "utils/memutils.h"

#include "codec/websocket.h"
#include "replica/backup_copy.h"
#include "server/connection.h"
#include "server/reservation_offer.h"
#include "server/reservations.h"

#define SNAPSHOT_STEP_PAGES	256		/* pages copied per loop iteration and client */

/* ---------------------------------------------------------------- registry */

void
zs_reservation_release(ZsServer *server, const char *task, ZsConn *except)
{
	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *other = server->conns[i];

		if (other == except || other->closed || other->up.reserved_task == NULL ||
			strcmp(other->up.reserved_task, task) != 0)
			continue;
		other->up.reserved_task = NULL;
		zs_conn_send_close(other, ZS_WS_CLOSE_NORMAL, NULL);
	}
}

void
zs_reservation_open(ZsServer *server, ZsConn *c, const char *task)
{
	StringInfoData body;
	StringInfoData frame;
	char	   *error = NULL;
	MemoryContext old = MemoryContextSwitchTo(c->context);

	initStringInfo(&body);
	if (!zs_reservation_offer_make(c->up.host, task, "status", &body, c->up.reserved_watermark, &error))
	{
		MemoryContextSwitchTo(old);
		zs_conn_send_close(c, ZS_WS_CLOSE_PROTOCOL_ERROR, psprintf("Error: %s", error));
		return;
	}
	zs_reservation_release(server, task, c);
	c->up.reserved_task = pstrdup(task);
	MemoryContextSwitchTo(old);
	initStringInfo(&frame);
	appendStringInfo(&frame, "{\"id\":%d,\"msg\":[\"status\",%s]}", (int) ++c->up.sent, body.data);
	zs_ws_append_frame(&c->out, ZS_WS_OP_TEXT, frame.data, frame.len);
}

static bool
task_is_reserved(ZsServer *server, const char *task)
{
	for (int i = 0; i < server->nconns; i++)
	{
		const ZsConn *c = server->conns[i];

		if (!c->closed && c->up.reserved_task != NULL &&
			strcmp(c->up.reserved_task, task) == 0)
			return true;
	}
	return false;
}

/* ---------------------------------------------------------------- serving */

static void
snapshot_failed(ZsConn *c, const char *error)
{
	ereport(LOG,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("could not serve a snapshot to %s: %s", c->address, error)));
	zs_conn_send_http(c, "503 Service Unavailable", NULL, psprintf("%s\n", error));
}

void
zs_reservation_serve_snapshot(ZsServer *server, ZsConn *c, const char *task)
{
	char	   *error = NULL;
	MemoryContext old;

	if (!task_is_reserved(server, task))
	{
		zs_conn_send_http(c, "404 Not Found", NULL,
						  psprintf("no snapshot reservation is open for task \"%s\"\n", task));
		return;
	}
	old = MemoryContextSwitchTo(c->context);
	c->copy = zs_backup_copy_start(&error);
	MemoryContextSwitchTo(old);
	if (c->copy == NULL)
		snapshot_failed(c, error);
}

/* A finished copy: its headers, then its file. */
static void
send_snapshot(ZsConn *c)
{
	char	   *error = NULL;
	char		replica_version[ZS_WATERMARK_MAXLEN];
	char		watermark[ZS_WATERMARK_MAXLEN];
	off_t		size = 0;
	int			fd;

	AcquireExternalFD();
	fd = zs_backup_copy_finish(c->copy, &size, replica_version, watermark, &error);
	c->copy = NULL;
	if (fd < 0)
	{
		ReleaseExternalFD();
		snapshot_failed(c, error);
		return;
	}
	appendStringInfo(&c->out,
					 "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.sqlite3\r\n"
					 "Content-Length: " INT64_FORMAT "\r\nX-Replica-Version: %s\r\n"
					 "X-Replica-Watermark: %s\r\nConnection: close\r\n\r\n",
					 (int64) size, replica_version, watermark);
	zs_conn_send_file(c, fd, size);
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			 errmsg("sending snapshot of replicaVersion %s at %s (" INT64_FORMAT " bytes) to %s",
					replica_version, watermark, (int64) size, c->address)));
}

bool
zs_reservation_advance_copies(ZsServer *server)
{
	bool		pending = false;

	for (int i = 0; i < server->nconns; i++)
	{
		ZsConn	   *c = server->conns[i];
		char	   *error = NULL;
		int			rc;

		if (c->closed || c->copy == NULL)
			continue;
		rc = zs_backup_copy_step(c->copy, SNAPSHOT_STEP_PAGES, &error);
		if (rc == 0)
			pending = true;
		else if (rc > 0)
			send_snapshot(c);
		else
		{
			zs_backup_copy_abort(c->copy);
			c->copy = NULL;
			snapshot_failed(c, error);
		}
	}
	return pending;
}
