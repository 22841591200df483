/*-------------------------------------------------------------------------
 * replica_test_apply.c
 *	  How the replica tests apply changes and read the replica back: the
 *	  three ways a change is parsed (RtParseMode), one change or one
 *	  transaction applied as the stream carries it, framed as
 *	  zero-stream-replica reads it in the third pass, and a query's single
 *	  value. A frame's parse is itself checked: only the changes' relations
 *	  are deferred.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sqlite3.h>

#include "replica_test.h"
#include "replica_fixture.h"

ZsJsonDoc	rt_doc;

/* the text of one query's single value ("NULL" for SQL NULL, "<none>" for no row) */
static char result[4096];

const char *
rt_query(ZsReplica *r, const char *sql)
{
	sqlite3_stmt *stmt;

	if (sqlite3_prepare_v2(zs_replica_db(r), sql, -1, &stmt, NULL) != SQLITE_OK)
	{
		snprintf(result, sizeof(result), "<error %s>", sqlite3_errmsg(zs_replica_db(r)));
		return result;
	}
	if (sqlite3_step(stmt) != SQLITE_ROW)
		strcpy(result, "<none>");
	else if (sqlite3_column_type(stmt, 0) == SQLITE_NULL)
		strcpy(result, "NULL");
	else
		snprintf(result, sizeof(result), "%s", (const char *) sqlite3_column_text(stmt, 0));
	sqlite3_finalize(stmt);
	return result;
}

static RtParseMode parse_mode = RT_PARSE_WHOLE;
static bool defer_relation = false;	/* RT_PARSE_STORED */

void
rt_parse_as(RtParseMode mode)
{
	parse_mode = mode;
	defer_relation = mode == RT_PARSE_STORED;
}

static bool
parse_change(const char *json)
{
	return defer_relation ? zs_json_parse_deferring(&rt_doc, json, strlen(json), "relation") :
		zs_json_parse(&rt_doc, json, strlen(json));
}

/* a frame's text, in a buffer grown as needed */
static char *frame_text = NULL;
static size_t frame_size = 0;

static const char *
frame_of(const char *prefix, const char *const *messages, int n, const char *suffix)
{
	size_t		need = strlen(prefix) + strlen(suffix) + 1;
	char	   *p;

	for (int i = 0; i < n; i++)
		need += strlen(messages[i]) + 1;
	if (need > frame_size)
	{
		frame_size = need * 2;
		frame_text = realloc(frame_text, frame_size);
	}
	p = frame_text + sprintf(frame_text, "%s", prefix);
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i > 0 ? "," : "", messages[i]);
	strcpy(p, suffix);
	return frame_text;
}

/*
 * Parse a frame as zero-stream-replica does; the node of its message, or
 * of its batch. Every data message's relation object is deferred, and
 * nothing else is.
 */
static int
parse_frame(const char *text, bool batch)
{
	int			node;
	int			deferred = 0;
	int			relations = 0;

	if (!zs_json_parse_deferring_at(&rt_doc, text, strlen(text), "relation", batch ? 4 : 3))
	{
		fprintf(stderr, "bad test frame: %s\n", rt_doc.error);
		return -1;
	}
	node = zs_json_get(&rt_doc, 0, batch ? "batch" : "msg");
	for (int i = 0; i < rt_doc.nnodes; i++)
		deferred += rt_doc.nodes[i].deferred;
	for (int m = batch ? rt_doc.nodes[node].first_child : node; m >= 0; m = batch ? rt_doc.nodes[m].next : -1)
	{
		int			change = zs_json_at(&rt_doc, m, 1);
		int			rel = zs_json_get(&rt_doc, change, "relation");

		if (rel >= 0 && rt_doc.nodes[rel].type == ZS_JSON_OBJECT)
		{
			CHECK(rt_doc.nodes[rel].deferred, "a framed change's relation is deferred");
			relations++;
		}
	}
	CHECK(deferred == relations, "only the changes' relations are deferred (%d of %d)",
		  deferred, relations);
	return node;
}

bool
rt_apply(ZsReplica *r, const char *json)
{
	if (parse_mode == RT_PARSE_FRAMES)
	{
		char	   *data = psprintf("[\"data\",%s]", json);
		int			msg;
		bool		ok;

		msg = parse_frame(frame_of("{\"id\":7,\"msg\":", (const char *const *) &data, 1, "}"), false);
		pfree(data);
		ok = msg >= 0 && zs_replica_apply_message(r, &rt_doc, msg) == ZS_REPLICA_MESSAGE_APPLIED;
		return ok;
	}
	if (!parse_change(json))
	{
		fprintf(stderr, "bad test JSON: %s\n", rt_doc.error);
		return false;
	}
	return zs_replica_apply_change(r, &rt_doc, 0);
}

/* A new in-memory replica of that replicaVersion and publications, no tables yet. */
ZsReplica *
rt_open_memory_replica(int flags, const char *replica_version, const char *publications)
{
	char		err[256];
	ZsReplica  *r = zs_replica_open(":memory:", ZS_REPLICA_CREATE | flags, err, sizeof(err));

	if (r == NULL)
	{
		fprintf(stderr, "open: %s\n", err);
		exit(1);
	}
	CHECK(zs_replica_init(r, replica_version, publications, "{}"), "init: %s", zs_replica_error(r));
	return r;
}

ZsReplica *
rt_new_replica(int flags)
{
	ZsReplica  *r = rt_open_memory_replica(flags, "0a", "[\"pub\"]");

	CHECK(zs_fixture_create_tables(r, false), "create the fixture tables: %s", zs_replica_error(r));
	return r;
}

/* Apply one transaction as the stream carries it: begin, ["data", change]..., commit. */
bool
rt_apply_tx(ZsReplica *r, const char *watermark, const char *const *changes)
{
	char		msg[8192];

	if (parse_mode == RT_PARSE_FRAMES)
	{
		/* one batch frame: begin, ["data", change]..., commit */
		int			n = 0,
					batch;
		char	  **messages;
		bool		ok = true;

		while (changes[n] != NULL)
			n++;
		messages = malloc(sizeof(char *) * (n + 2));
		messages[0] = psprintf("[\"begin\",{\"tag\":\"begin\",\"json\":\"s\"},{\"commitWatermark\":\"%s\"}]",
							   watermark);
		for (int i = 0; i < n; i++)
			messages[i + 1] = psprintf("[\"data\",%s]", changes[i]);
		messages[n + 1] = psprintf("[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"%s\"}]", watermark);
		batch = parse_frame(frame_of("{\"id\":9,\"batch\":[", (const char *const *) messages, n + 2, "]}"),
							true);
		ok = batch >= 0;
		for (int m = ok ? rt_doc.nodes[batch].first_child : -1; ok && m >= 0; m = rt_doc.nodes[m].next)
			ok = zs_replica_apply_message(r, &rt_doc, m) == ZS_REPLICA_MESSAGE_APPLIED;
		for (int i = 0; i < n + 2; i++)
			pfree(messages[i]);
		free(messages);
		if (!ok)
		{
			if (zs_replica_in_transaction(r))
				(void) zs_replica_rollback(r);
			return false;
		}
		return zs_replica_flush(r);
	}
	if (defer_relation)
	{
		/* as the replicator applies stored changes */
		if (!zs_replica_begin(r, watermark))
			return false;
		for (int i = 0; changes[i] != NULL; i++)
			if (!parse_change(changes[i]) || !zs_replica_apply_change(r, &rt_doc, 0))
			{
				(void) zs_replica_rollback(r);
				return false;
			}
		return zs_replica_commit(r, watermark) && zs_replica_flush(r);
	}
	snprintf(msg, sizeof(msg), "[\"begin\",{\"tag\":\"begin\",\"json\":\"s\"},{\"commitWatermark\":\"%s\"}]", watermark);
	if (!zs_json_parse(&rt_doc, msg, strlen(msg)) ||
		zs_replica_apply_message(r, &rt_doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		return false;
	for (int i = 0; changes[i] != NULL; i++)
	{
		snprintf(msg, sizeof(msg), "[\"data\",%s]", changes[i]);
		if (!zs_json_parse(&rt_doc, msg, strlen(msg)))
		{
			fprintf(stderr, "bad test JSON: %s\n", rt_doc.error);
			return false;
		}
		if (zs_replica_apply_message(r, &rt_doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		{
			(void) zs_replica_rollback(r);
			return false;
		}
	}
	snprintf(msg, sizeof(msg), "[\"commit\",{\"tag\":\"commit\"},{\"watermark\":\"%s\"}]", watermark);
	if (!zs_json_parse(&rt_doc, msg, strlen(msg)) ||
		zs_replica_apply_message(r, &rt_doc, 0) != ZS_REPLICA_MESSAGE_APPLIED)
		return false;
	return zs_replica_flush(r);
}

/* A transaction of one change, or several, as the stream carries it */
bool
rt_apply1(ZsReplica *r, const char *watermark, const char *change)
{
	const char *changes[] = {change, NULL};

	return rt_apply_tx(r, watermark, changes);
}

void
rt_setup(void)
{
	zs_json_doc_init(&rt_doc);
}

void
rt_teardown(void)
{
	free(frame_text);
	frame_text = NULL;
	frame_size = 0;
	zs_json_doc_free(&rt_doc);
}

RT_COUNTS(rt_apply_counts)
