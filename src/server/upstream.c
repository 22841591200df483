/*-------------------------------------------------------------------------
 * upstream.c
 *	  Parsing what a subscriber sends (docs/zero-protocol.md §2.3, §2.6).
 *
 * A /changes subscriber sends acks only: {"ack":n}, in order. A v7
 * /subscribe connection carries frames both ways: the client acks our
 * frames the same way, and sends its own {"id":n,"msg"|"batch":...}
 * frames, which we ack in turn. Their messages are reserve-snapshot
 * (answered with a "reserved" message in a frame of its own) and
 * start-subscription (which creates the subscription, continuing the frame
 * ids of the reservation's messages, and ends the reservation). Everything
 * here works on the subscription and the connection's ZsUpstream state;
 * what a new reservation or subscription means for the other connections
 * is routes.c's business.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <cjson/cJSON.h>

#include "codec/websocket.h"
#include "server/reservation_offer.h"
#include "server/upstream.h"

static bool
missing(const char *value)
{
	return value == NULL || value[0] == '\0';
}

static const char *
json_string(const cJSON *object, const char *name)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);

	return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* {"ack":n} to the client, for an upstream frame (v7) */
static void
send_ack(StringInfo out, int64 id)
{
	char		ack[48];
	int			len = snprintf(ack, sizeof(ack), "{\"ack\":" INT64_FORMAT "}", id);

	zs_ws_append_frame(out, ZS_WS_OP_TEXT, ack, len);
}

/* ["reserved",{"tag":"snapshot",...}] in a frame of its own, before any subscription */
static bool
reserve_snapshot(ZsUpstream *up, const cJSON *body, StringInfo out, char **error)
{
	const char *task = json_string(body, "taskID");
	StringInfoData frame;
	StringInfoData status;

	if (missing(task))
	{
		*error = pstrdup("Missing taskID in snapshot request");
		return false;
	}
	initStringInfo(&status);
	if (!zs_reservation_offer_make(up->host, task, "snapshot", &status, up->reserved_watermark, error))
		return false;
	up->reserved_task = pstrdup(task);
	initStringInfo(&frame);
	appendStringInfo(&frame, "{\"id\":" INT64_FORMAT ",\"batch\":[[\"reserved\",%s]]}",
					 ++up->sent, status.data);
	zs_ws_append_frame(out, ZS_WS_OP_TEXT, frame.data, frame.len);
	pfree(frame.data);
	pfree(status.data);
	return true;
}

/* One upstream application message of a /subscribe connection (§2.6). */
static bool
handle_upstream_message(ZsSubscriber **sub, int protocol, ZsUpstream *up, const cJSON *msg,
						StringInfo out, char **error)
{
	const cJSON *type = cJSON_GetArrayItem(msg, 0);
	const cJSON *body = cJSON_GetArrayItem(msg, 1);
	ZsSubscribeParams params;

	if (!cJSON_IsArray(msg) || !cJSON_IsString(type) || !cJSON_IsObject(body))
	{
		*error = pstrdup("malformed upstream message");
		return false;
	}
	if (strcmp(type->valuestring, "reserve-snapshot") == 0)
	{
		if (*sub != NULL || up->reserved_task != NULL)
		{
			*error = pstrdup("reserve-snapshot after a reservation or subscription on this connection");
			return false;
		}
		return reserve_snapshot(up, body, out, error);
	}
	if (strcmp(type->valuestring, "start-subscription") != 0)
	{
		*error = psprintf("unknown upstream message type: %s", type->valuestring);
		return false;
	}
	if (*sub != NULL)
	{
		*error = pstrdup("start-subscription on a connection that is already subscribed");
		return false;
	}
	params.id = json_string(body, "id");
	params.task_id = json_string(body, "taskID");
	params.replica_version = json_string(body, "replicaVersion");
	params.watermark = json_string(body, "watermark");
	params.mode = json_string(body, "mode");
	params.batched = true;		/* always batched on /subscribe */
	/* frame ids continue after the reservation's; the subscription releases it */
	params.frames_sent = up->sent;
	params.frames_acked = up->acked;
	*sub = zs_subscriber_start(&params, protocol, error);
	if (*sub == NULL)
		return false;
	up->reserved_task = NULL;
	up->started_task = zs_subscriber_task(*sub);
	return true;
}

/*
 * {"ack":n} exactly as subscribers send it (JSON.stringify of an integer
 * id): taken without a JSON parse, since a v6 subscriber sends one per
 * message. Anything else (spaces, other members, other numbers) goes
 * through cJSON, as every other message does.
 */
static bool
plain_ack(const char *text, int len, int64 *id)
{
	int64		v = 0;
	int			i;

	if (len < 9 || len > 7 + 18 + 1 || memcmp(text, "{\"ack\":", 7) != 0 || text[len - 1] != '}')
		return false;
	if (text[7] == '0' && len != 9)
		return false;			/* a leading zero: let cJSON judge */
	for (i = 7; i < len - 1; i++)
	{
		if (text[i] < '0' || text[i] > '9')
			return false;
		v = v * 10 + (text[i] - '0');
	}
	*id = v;
	return true;
}

/* {"ack":n} and nothing else; false with *error otherwise */
static bool
parse_ack(const cJSON *json, int64 *id, char **error)
{
	const cJSON *ack = json ? cJSON_GetObjectItemCaseSensitive(json, "ack") : NULL;

	if (ack == NULL || !cJSON_IsNumber(ack) || cJSON_GetArraySize(json) != 1)
	{
		*error = pstrdup("unexpected message from subscriber (only {\"ack\":n} is accepted)");
		return false;
	}
	*id = (int64) ack->valuedouble;
	return true;
}

bool
zs_upstream_receive(ZsSubscriber **sub, int protocol, ZsUpstream *up,
					const char *text, int len, StringInfo out, char **error)
{
	cJSON	   *json;
	const cJSON *id;
	const cJSON *msg;
	const cJSON *batch;
	bool		ok = true;
	int64		ack_id;

	if (*sub != NULL && plain_ack(text, len, &ack_id))
		return zs_subscriber_ack(*sub, ack_id, error);
	json = cJSON_ParseWithLength(text, len);
	if (json == NULL || !cJSON_IsObject(json))
	{
		cJSON_Delete(json);
		*error = pstrdup("upstream frame is not a JSON object");
		return false;
	}
	/* an ack of one of our frames */
	if (cJSON_GetObjectItemCaseSensitive(json, "ack") != NULL)
	{
		if (*sub == NULL)
		{
			const cJSON *ack = cJSON_GetObjectItemCaseSensitive(json, "ack");

			/* only the reservation's frames can be acked before a subscription */
			ok = cJSON_IsNumber(ack) && (int64) ack->valuedouble == up->acked + 1 &&
				up->acked < up->sent;
			if (ok)
				up->acked++;
			else
				*error = pstrdup("ack before start-subscription");
		}
		else
			ok = parse_ack(json, &ack_id, error) && zs_subscriber_ack(*sub, ack_id, error);
		cJSON_Delete(json);
		return ok;
	}
	id = cJSON_GetObjectItemCaseSensitive(json, "id");
	msg = cJSON_GetObjectItemCaseSensitive(json, "msg");
	batch = cJSON_GetObjectItemCaseSensitive(json, "batch");
	if (!cJSON_IsNumber(id) || (msg == NULL) == (batch == NULL) ||
		(batch != NULL && !cJSON_IsArray(batch)))
	{
		ok = false;
		*error = pstrdup("upstream frame needs an id and exactly one of msg or batch");
	}
	else if ((int64) id->valuedouble != up->upstream_id + 1)
	{
		ok = false;
		*error = psprintf("unexpected upstream frame id " INT64_FORMAT " (expected " INT64_FORMAT ")",
						  (int64) id->valuedouble, up->upstream_id + 1);
	}
	else if (msg != NULL)
		ok = handle_upstream_message(sub, protocol, up, msg, out, error);
	else
	{
		const cJSON *item;

		cJSON_ArrayForEach(item, batch)
		{
			if (!(ok = handle_upstream_message(sub, protocol, up, item, out, error)))
				break;
		}
	}
	if (ok)
	{
		up->upstream_id += 1;
		send_ack(out, up->upstream_id);
	}
	cJSON_Delete(json);
	return ok;
}

bool
zs_upstream_receive_ack(ZsSubscriber *sub, const char *text, int len, char **error)
{
	cJSON	   *json;
	int64		id;
	bool		ok;

	if (plain_ack(text, len, &id))
		return zs_subscriber_ack(sub, id, error);
	json = cJSON_ParseWithLength(text, len);
	ok = parse_ack(json, &id, error) && zs_subscriber_ack(sub, id, error);
	cJSON_Delete(json);
	return ok;
}
