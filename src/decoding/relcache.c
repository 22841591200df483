/*-------------------------------------------------------------------------
 * relcache.c
 *	  The relations pgoutput has described, by OID.
 *
 * pgoutput sends a relation's 'R' message before the first change of it in
 * a session and again whenever it changed; every change refers to it by
 * OID. Each description replaces the earlier one in its own memory
 * context. Column types are resolved when the description arrives, on the
 * historic catalog snapshot of the change, so a later ALTER TYPE cannot
 * change how an earlier change is read. The encoder adds what every change
 * of the relation shares (zs_encode_prepare). The decoder, the initial
 * copy and the backfill worker each keep one cache per process.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "decoding/relcache.h"

static HTAB *relcache = NULL;
static MemoryContext relcache_context = NULL;
static char *own_schema_name = NULL;


void
zs_relcache_init(MemoryContext context, const char *own_schema)
{
	HASHCTL		ctl;

	relcache_context = AllocSetContextCreate(context, "zero_stream relations",
											 ALLOCSET_DEFAULT_SIZES);
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(ZsRelation);
	ctl.hcxt = relcache_context;
	relcache = hash_create("zero_stream relations", 128, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	own_schema_name = MemoryContextStrdup(relcache_context, own_schema);
}

static void
resolve_column_type(ZsRelColumn *col)
{
	Oid			elem = get_element_type(col->typid);

	col->is_array = OidIsValid(elem);
	col->delim = ',';
	if (col->is_array)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Oid			typioparam;
		Oid			func;

		get_type_io_data(elem, IOFunc_output, &typlen, &typbyval, &typalign,
						 &col->delim, &typioparam, &func);
		col->kind = zs_value_kind_for_type(elem);
	}
	else
		col->kind = zs_value_kind_for_type(col->typid);
}

ZsRelation *
zs_relcache_update(const ZsPgoutputMsg *msg)
{
	ZsRelation *rel;
	bool		found;
	MemoryContext old;

	rel = hash_search(relcache, &msg->relid, HASH_ENTER, &found);
	if (found && rel->context != NULL)
		MemoryContextDelete(rel->context);
	rel->context = AllocSetContextCreate(relcache_context, "zero_stream relation",
										 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(rel->context);

	rel->schema = pstrdup(msg->nspname);
	rel->name = pstrdup(msg->relname);
	rel->own = (strcmp(rel->schema, own_schema_name) == 0 ||
				strcmp(rel->schema, ZS_EXTENSION_SCHEMA) == 0);
	rel->replident = msg->replident;
	rel->natts = msg->natts;
	rel->columns = palloc0(sizeof(ZsRelColumn) * Max(msg->natts, 1));
	for (int i = 0; i < msg->natts; i++)
	{
		ZsRelColumn *col = &rel->columns[i];

		col->name = pstrdup(msg->attrs[i].name);
		col->typid = msg->attrs[i].typid;
		col->is_key = msg->attrs[i].is_key;
		resolve_column_type(col);
	}
	rel->json = NULL;
	rel->insert_open = NULL;
	rel->valid = true;

	MemoryContextSwitchTo(old);
	return rel;
}

ZsRelation *
zs_relcache_lookup(uint32 relid)
{
	Oid			key = relid;
	ZsRelation *rel = hash_search(relcache, &key, HASH_FIND, NULL);

	if (rel == NULL || !rel->valid)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("pgoutput sent a change for relation %u before describing it", relid)));
	return rel;
}

const char *
zs_relcache_name(uint32 relid)
{
	Oid			key = relid;
	ZsRelation *rel;

	if (relcache == NULL)
		return NULL;
	rel = hash_search(relcache, &key, HASH_FIND, NULL);
	if (rel == NULL || !rel->valid)
		return NULL;
	return psprintf("%s.%s", quote_identifier(rel->schema), quote_identifier(rel->name));
}

bool
zs_relcache_is_own(const ZsRelation *rel)
{
	return rel->own;
}
