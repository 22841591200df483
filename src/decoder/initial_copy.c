/*-------------------------------------------------------------------------
 * initial_copy.c
 *	  Copy every published table, as of the new slot's consistent snapshot,
 *	  into a new backup replica (docs/zero-protocol.md §8, "initial sync").
 *
 * The decoder calls this inside the REPEATABLE READ transaction that runs
 * on the slot's initial snapshot (decoder/lineage.c), so the copy plus the
 * change log from the consistent point on is exactly the database. Rows go
 * through the same path as streamed inserts: each row's output-function
 * text becomes a pgoutput-shaped tuple, change_encode.c writes the Zero
 * insert, and the replica library applies it, so a copied value is stored
 * exactly as a streamed one would be.
 *
 * Indexes: after a table's rows, every index of it that zero-cache's
 * published-schema query lists (zero_stream.published_schema(): unique or
 * not, ASC/DESC, no expression or partial index) is applied as the
 * create-index message the stream would carry for it, so it is named and
 * declared as zero-cache's initial sync and its replicator make it. The
 * key's unique index is the exception: zs_replica_create_table() makes it
 * before the rows, which are upserted on it.
 *
 * Crash safety: the copy is written to "<replica_file>.tmp" and renamed over
 * the replica file (durably) only when complete; the slot is persisted
 * after that. A crash before the rename leaves the old replica file (or
 * none) and no slot, so the next start copies again; a crash after it but
 * before the slot is persisted leaves a replica whose replicaVersion no
 * slot has, which the next copy replaces. The replicator only applies to a
 * replica whose replicaVersion is the change log's.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "decoding/change_encode.h"
#include "guc.h"
#include "decoder/initial_copy.h"
#include "decoding/schema_snapshot.h"
#include "codec/json_out.h"
#include "codec/json_read.h"
#include "replica/backup_file.h"
#include "replica/replica_apply.h"
#include "shmem.h"

#define COPY_FETCH_ROWS 2000
#define COPY_COMMIT_ROWS 100000	/* rows per SQLite commit while copying */
#define COPY_LOG_INTERVAL_MS 10000

typedef struct CopyTable
{
	Oid			relid;
	char	   *schema;
	char	   *name;
	char		replident;
	int64		estimated_rows;
} CopyTable;

/* An index of a published table, as the create-index message that makes it. */
typedef struct CopyIndex
{
	char	   *schema;
	char	   *table;
	char	   *name;
	char	   *message;		/* {"tag":"create-index","spec":{...}} */
} CopyIndex;

static void
remove_sqlite_files(const char *path)
{
	char		err[512];

	if (!zs_replica_remove_files(path, err, sizeof(err)))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("%s", err)));
}

static void
ensure_parent_directory(const char *path)
{
	char	   *dir = pstrdup(path);
	struct stat st;

	get_parent_directory(dir);
	if (dir[0] != '\0' && stat(dir, &st) != 0)
	{
		if (MakePGDirectory(dir) != 0 && errno != EEXIST)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not create directory \"%s\" for zero_stream.replica_file: %m", dir)));
	}
	pfree(dir);
}

static void
replica_error(ZsReplica *r, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
			 errmsg("initial copy: %s: %s", what, zs_replica_error(r))));
}

static int
cstring_cmp(const ListCell *a, const ListCell *b)
{
	return strcmp((const char *) lfirst(a), (const char *) lfirst(b));
}

/* publications as a sorted JSON array, as zero-cache writes it */
static char *
publications_json(List *publications)
{
	List	   *sorted = list_copy(publications);
	StringInfoData out;
	ListCell   *lc;

	list_sort(sorted, cstring_cmp);
	initStringInfo(&out);
	appendStringInfoChar(&out, '[');
	foreach(lc, sorted)
	{
		if (foreach_current_index(lc) > 0)
			appendStringInfoChar(&out, ',');
		zs_json_append_cstring(&out, (char *) lfirst(lc));
	}
	appendStringInfoChar(&out, ']');
	return out.data;
}

static List *
published_tables(Datum publication_names)
{
	Oid			argtypes[2] = {TEXTARRAYOID, TEXTOID};
	Datum		args[2];
	List	   *tables = NIL;

	args[0] = publication_names;
	args[1] = CStringGetTextDatum(zs_cdc_schema_name());
	if (SPI_execute_with_args(
							  "SELECT c.oid, n.nspname, c.relname, c.relreplident::text, "
							  "       greatest(c.reltuples, 0)::int8 "
							  "  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
							  " WHERE c.oid IN (SELECT format('%I.%I', schemaname, tablename)::regclass "
							  "                   FROM pg_publication_tables WHERE pubname = ANY ($1)) "
							  "   AND n.nspname <> $2 AND n.nspname <> '" ZS_EXTENSION_SCHEMA "' "
							  " ORDER BY n.nspname, c.relname",
							  2, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not list published tables")));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		CopyTable  *t = palloc(sizeof(CopyTable));
		bool		isnull;

		t->relid = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		t->schema = SPI_getvalue(tup, desc, 2);
		t->name = SPI_getvalue(tup, desc, 3);
		t->replident = SPI_getvalue(tup, desc, 4)[0];
		t->estimated_rows = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		tables = lappend(tables, t);
	}
	return tables;
}

/*
 * The indexes of the published schema (zero_stream.published_schema(), which
 * the caller took on the copy's snapshot), in table and name order, each as
 * the create-index message schema_diff.c would emit for it.
 */
static List *
published_indexes(const char *published_schema)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	List	   *indexes = NIL;

	args[0] = CStringGetTextDatum(published_schema);
	if (SPI_execute_with_args(
							  "SELECT i->>'schema', i->>'tableName', i->>'name', "
							  "       json_build_object('tag', 'create-index', 'spec', i)::text "
							  "  FROM json_array_elements($1::json->'indexes') i "
							  " ORDER BY 1, 2, 3",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not list the indexes of the published tables")));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		CopyIndex  *index = palloc(sizeof(CopyIndex));

		index->schema = SPI_getvalue(tup, desc, 1);
		index->table = SPI_getvalue(tup, desc, 2);
		index->name = SPI_getvalue(tup, desc, 3);
		index->message = SPI_getvalue(tup, desc, 4);
		indexes = lappend(indexes, index);
	}
	return indexes;
}

/*
 * Create the indexes of a copied table (all but its key's, which
 * zs_replica_create_table() made) through the replica's create-index, the
 * function that applies the streamed message.
 */
static void
create_indexes(ZsReplica *r, const CopyTable *t, const ZsReplicaTable *spec, List *indexes)
{
	ZsJsonDoc	doc;
	ListCell   *lc;

	zs_json_doc_init(&doc);
	foreach(lc, indexes)
	{
		CopyIndex  *index = lfirst(lc);

		if (strcmp(index->schema, t->schema) != 0 || strcmp(index->table, t->name) != 0)
			continue;
		if (spec->nkeys > 0 && spec->key_index != NULL && strcmp(index->name, spec->key_index) == 0)
			continue;
		if (!zs_json_parse(&doc, index->message, strlen(index->message)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg_internal("initial copy: invalid create-index JSON: %s", doc.error)));
		if (!zs_replica_apply_change(r, &doc, 0))
			replica_error(r, psprintf("creating index \"%s\" of %s.%s", index->name, t->schema, t->name));
	}
	zs_json_doc_free(&doc);
}

/*
 * Columns as pgoutput describes them (generated columns are not
 * published), with the replica's declared types, and the replica's unique
 * key: the primary key, else the replica identity index. A column's
 * character_max_length is information_schema.columns'
 * character_maximum_length, computed by the same functions: the length of
 * char(n), varchar(n), bit(n) and varbit(n), a domain's of its base type,
 * NULL (-1 here) for everything else.
 */
static void
describe_table(const CopyTable *t, Datum publication_names, ZsReplicaTable *spec,
			   ZsPgoutputMsg *rel)
{
	Oid			argtypes[2] = {OIDOID, TEXTARRAYOID};
	Datum		args[2] = {ObjectIdGetDatum(t->relid), publication_names};
	int			n;
	int16	   *identity_keys = NULL;
	int			nidentity = 0;
	int16		index_keys[ZS_MAX_KEY_COLUMNS];
	int			nindex = 0;
	int			named = 0;

	spec->schema = t->schema;
	spec->name = t->name;
	spec->key_index = NULL;
	spec->nkeys = 0;
	spec->key_columns = palloc(sizeof(char *) * ZS_MAX_KEY_COLUMNS);

	/* the key index, and which columns pgoutput flags as key */
	if (SPI_execute_with_args(
							  "SELECT ic.relname, array_to_string(i.indkey::int2[], ','), i.indisprimary, i.indisreplident "
							  "  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
							  " WHERE i.indrelid = $1 AND i.indisunique AND i.indisvalid "
							  "   AND (i.indisprimary OR i.indisreplident) "
							  " ORDER BY i.indisprimary DESC",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the indexes of \"%s\"", t->name)));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		bool		primary = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
		bool		replident = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		char	   *attnums = SPI_getvalue(tup, desc, 2);	/* "1,2" */
		int16	   *keys = palloc(sizeof(int16) * ZS_MAX_KEY_COLUMNS);
		int			nkeys = 0;

		for (char *p = strtok(attnums, ","); p && nkeys < ZS_MAX_KEY_COLUMNS; p = strtok(NULL, ","))
			keys[nkeys++] = (int16) atoi(p);
		if (i == 0)
		{
			spec->key_index = SPI_getvalue(tup, desc, 1);
			memcpy(index_keys, keys, sizeof(int16) * nkeys);
			nindex = nkeys;
		}
		if ((t->replident == 'd' && primary) || (t->replident == 'i' && replident))
		{
			identity_keys = keys;
			nidentity = nkeys;
		}
	}

	if (SPI_execute_with_args(
							  "SELECT a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull, "
							  "       coalesce(et.typname, t.typname) "
							  "         || repeat('[]', CASE WHEN et.oid IS NULL THEN 0 ELSE greatest(a.attndims, 1) END), "
							  "       coalesce(et.typtype, t.typtype) = 'e', et.oid IS NOT NULL, "
							  "       coalesce(information_schema._pg_char_max_length("
							  "                  information_schema._pg_truetypid(a, t), "
							  "                  information_schema._pg_truetypmod(a, t)), -1) "
							  "  FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
							  "  LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typlen = -1 AND t.typelem <> 0 "
							  " WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' "
							  "   AND NOT EXISTS (SELECT FROM pg_publication_tables pt "
							  "                    WHERE pt.pubname = ANY ($2) AND pt.attnames IS NOT NULL "
							  "                      AND format('%I.%I', pt.schemaname, pt.tablename)::regclass = a.attrelid "
							  "                      AND NOT a.attname = ANY (pt.attnames)) "
							  " ORDER BY a.attnum",
							  2, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the columns of \"%s\"", t->name)));

	n = (int) SPI_processed;
	spec->ncolumns = n;
	spec->columns = palloc0(sizeof(ZsReplicaColumn) * Max(n, 1));
	rel->type = ZS_PGO_RELATION;
	rel->relid = t->relid;
	rel->nspname = t->schema;
	rel->relname = t->name;
	rel->replident = t->replident;
	rel->natts = n;
	rel->attrs = palloc0(sizeof(ZsRelationAttr) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int16		attnum = DatumGetInt16(SPI_getbinval(tup, desc, 1, &isnull));
		ZsReplicaColumn *c = &spec->columns[i];
		ZsRelationAttr *a = &rel->attrs[i];

		c->name = SPI_getvalue(tup, desc, 2);
		c->not_null = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
		c->upstream_type = SPI_getvalue(tup, desc, 6);
		c->is_enum = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
		c->is_array = DatumGetBool(SPI_getbinval(tup, desc, 8, &isnull));
		c->char_max_length = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));

		a->name = c->name;
		a->typid = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		a->typmod = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		a->is_key = (t->replident == 'f');
		for (int k = 0; k < nidentity; k++)
			a->is_key |= (identity_keys[k] == attnum);
		for (int k = 0; k < nindex; k++)
			if (index_keys[k] == attnum)
			{
				spec->key_columns[k] = c->name;
				named++;
			}
	}
	/* a key column that is not published leaves the replica without that key */
	spec->nkeys = (named == nindex) ? nindex : 0;
	if (spec->nkeys == 0)
		spec->key_index = NULL;
}

static void
publish_progress(const char *table, int64 rows, int64 estimated, int table_no, int ntables)
{
	ZsCopyProgress *p = &zs_shared->copy_progress;

	LWLockAcquire(zs_shared->lock, LW_EXCLUSIVE);
	p->table_no = table != NULL ? table_no : 0;
	p->ntables = ntables;
	strlcpy(p->table, table != NULL ? table : "", sizeof(p->table));
	p->rows = rows;
	p->estimated = estimated;
	LWLockRelease(zs_shared->lock);
}

static int64
copy_rows(ZsReplica *r, const char *replica_version, const CopyTable *t,
		  const ZsPgoutputMsg *relmsg, const char *row_filter, int table_no, int ntables)
{
	StringInfoData sql;
	SPIPlanPtr	plan;
	Portal		portal;
	ZsRelation *rel;
	ZsPgoutputMsg msg;
	ZsTuple    *tuple = palloc0(sizeof(ZsTuple));
	StringInfoData change;
	ZsJsonDoc	doc;
	MemoryContext batch_context = AllocSetContextCreate(CurrentMemoryContext, "zero_stream copy batch",
														ALLOCSET_DEFAULT_SIZES);
	int64		rows = 0;
	TimestampTz last_log = GetCurrentTimestamp();
	char	   *qualified = psprintf("%s.%s", quote_identifier(t->schema), quote_identifier(t->name));

	zs_encode_prepare(zs_relcache_update(relmsg));
	rel = zs_relcache_lookup(t->relid);

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	for (int i = 0; i < relmsg->natts; i++)
		appendStringInfo(&sql, "%s%s", i > 0 ? ", " : "", quote_identifier(relmsg->attrs[i].name));
	if (relmsg->natts == 0)
		appendStringInfoString(&sql, "NULL");
	/*
	 * What the publications publish of it: a partitioned table (published
	 * through its root) with its partitions, any other without inheritance
	 * children; only the rows the publications' row filters let through.
	 */
	appendStringInfo(&sql, " FROM %s%s", get_rel_relkind(t->relid) == RELKIND_PARTITIONED_TABLE ? "" : "ONLY ",
					 qualified);
	if (row_filter != NULL)
		appendStringInfo(&sql, " WHERE %s", row_filter);
	plan = SPI_prepare(sql.data, 0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not prepare \"%s\": %s", sql.data, SPI_result_code_string(SPI_result))));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);

	memset(&msg, 0, sizeof(msg));
	msg.type = ZS_PGO_INSERT;
	msg.relid = t->relid;
	msg.new_tuple = tuple;
	tuple->natts = relmsg->natts;
	initStringInfo(&change);
	zs_json_doc_init(&doc);

	for (;;)
	{
		MemoryContext old;

		SPI_cursor_fetch(portal, true, COPY_FETCH_ROWS);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(batch_context);
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;

			for (int c = 0; c < relmsg->natts; c++)
			{
				char	   *value = SPI_getvalue(tup, desc, c + 1);

				tuple->cols[c].kind = value ? ZS_PGO_COL_TEXT : ZS_PGO_COL_NULL;
				tuple->cols[c].data = value;
				tuple->cols[c].len = value ? strlen(value) : 0;
			}
			resetStringInfo(&change);
			zs_encode_insert(&change, rel, &msg);
			if (!zs_json_parse(&doc, change.data, change.len))
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg_internal("initial copy produced invalid JSON: %s", doc.error)));
			if (!zs_replica_apply_change(r, &doc, 0))
				replica_error(r, psprintf("copying %s", qualified));
			rows++;
		}
		/* bounded SQLite transactions: the journal does not grow with the table */
		if (rows % COPY_COMMIT_ROWS < COPY_FETCH_ROWS &&
			(!zs_replica_commit(r, replica_version) || !zs_replica_flush(r) ||
			 !zs_replica_begin(r, replica_version)))
			replica_error(r, psprintf("committing part of %s", qualified));
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_context);
		SPI_freetuptable(SPI_tuptable);
		publish_progress(qualified, rows, t->estimated_rows, table_no, ntables);
		if (TimestampDifferenceExceeds(last_log, GetCurrentTimestamp(), COPY_LOG_INTERVAL_MS))
		{
			ereport(LOG,
					(errmsg("initial copy: %s: " INT64_FORMAT " of ~" INT64_FORMAT " rows",
							qualified, rows, t->estimated_rows)));
			last_log = GetCurrentTimestamp();
		}
		zs_worker_check_interrupts();
	}
	SPI_cursor_close(portal);
	zs_json_doc_free(&doc);
	MemoryContextDelete(batch_context);
	return rows;
}

void
zs_initial_copy(const char *replica_version, List *publications, const char *published_schema)
{
	char	   *path = zs_replica_file_path();
	char	   *tmp;
	char		err[512];
	ZsReplica  *r;
	List	   *tables;
	List	   *indexes;
	ListCell   *lc;
	Datum		names;		/* text[] of the publications, for the catalog queries */
	StringInfoData context;
	int64		total_rows = 0;
	TimestampTz start = GetCurrentTimestamp();

	if (path == NULL)
		return;
	tmp = psprintf("%s.tmp", path);
	ensure_parent_directory(path);
	remove_sqlite_files(tmp);

	r = zs_replica_open(tmp, ZS_REPLICA_CREATE, err, sizeof(err));
	if (r == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("initial copy: %s", err),
				 errhint("Check zero_stream.replica_file.")));
	/* a crash discards the whole file anyway: no journal, no syncs until the end */
	if (sqlite3_exec(zs_replica_db(r), "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF",
					 NULL, NULL, NULL) != SQLITE_OK)
		replica_error(r, "setting up the copy");

	initStringInfo(&context);
	appendStringInfoString(&context, "{\"appID\":");
	zs_json_append_cstring(&context, zs_app_id);
	appendStringInfo(&context, ",\"shardNum\":%d,\"taskID\":", zs_shard_num);
	zs_json_append_cstring(&context, zs_task_id);
	appendStringInfoString(&context, ",\"copiedBy\":\"zero_stream\",\"timestamp\":");
	zs_json_append_cstring(&context, timestamptz_to_str(start));
	appendStringInfoChar(&context, '}');
	if (!zs_replica_init(r, replica_version, publications_json(publications), context.data))
		replica_error(r, "creating the replica schema");

	names = zs_publication_array(publications);
	tables = published_tables(names);
	indexes = published_indexes(published_schema);
	foreach(lc, tables)
	{
		CopyTable  *t = lfirst(lc);
		ZsReplicaTable spec;
		ZsPgoutputMsg relmsg;
		int64		rows;

		memset(&relmsg, 0, sizeof(relmsg));
		describe_table(t, names, &spec, &relmsg);
		if (!zs_replica_begin(r, replica_version))
			replica_error(r, "starting the copy");
		if (!zs_replica_create_table(r, &spec))
			replica_error(r, psprintf("creating table %s.%s", t->schema, t->name));
		rows = copy_rows(r, replica_version, t, &relmsg,
						 zs_schema_snapshot_row_filter(published_schema, strlen(published_schema), t->schema, t->name),
						 foreach_current_index(lc) + 1,
						 list_length(tables));
		/* the other indexes after the rows: building one is faster than maintaining it */
		create_indexes(r, t, &spec, indexes);
		if (!zs_replica_commit(r, replica_version) || !zs_replica_flush(r))
			replica_error(r, psprintf("committing table %s.%s", t->schema, t->name));
		total_rows += rows;
		ereport(LOG,
				(errmsg("initial copy: copied %s.%s (" INT64_FORMAT " rows)",
						t->schema, t->name, rows)));
	}
	/* the finished file is a WAL-mode replica, synced before it is renamed */
	if (sqlite3_exec(zs_replica_db(r), "PRAGMA synchronous = FULL; PRAGMA journal_mode = WAL",
					 NULL, NULL, NULL) != SQLITE_OK)
		replica_error(r, "finishing the copy");
	zs_replica_close(r);
	publish_progress(NULL, 0, 0, 0, 0);

	/* the old replica's WAL must not be applied to the new file */
	zs_backup_file_release();
	remove_sqlite_files(path);
	if (durable_rename(tmp, path, ERROR) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not rename \"%s\"", tmp)));
	ereport(LOG,
			(errmsg("initial copy: %d tables, " INT64_FORMAT " rows at replicaVersion %s into \"%s\" in %.1f s",
					list_length(tables), total_rows, replica_version, path,
					(double) (GetCurrentTimestamp() - start) / USECS_PER_SEC)));
}
