/*-------------------------------------------------------------------------
 * shard_setup.c
 *	  Zero's metadata tables and publication in the streamed database, as
 *	  zero-cache's shard setup creates them (zero-cache's
 *	  change-source/pg/schema/shard.ts; docs/zero-protocol.md §6).
 *
 * A Zero deployment reads these through the stream, like any other table:
 *   <app>.permissions           one row: the app's permissions and their
 *                               hash (kept by a trigger), read by
 *                               view-syncers from their replica;
 *   <app>_<shard>.clients       the last mutation ID of each client,
 *   <app>_<shard>.mutations     the results of custom mutators, both
 *                               written by the app's push processor;
 *   _<app>_metadata_<shard>     the publication of those three, which the
 *                               decoder always streams with the app's.
 * zero-cache creates them in its initial sync; zero_stream creates what is
 * missing when the decoder starts, so an existing deployment keeps its
 * rows and a custom app_id/shard_num gets its own. They belong to the
 * database's owner (the role a Zero app normally connects as), not to the
 * superuser the decoder runs as. Created on an existing lineage, they
 * reach the stream as any DDL does: as create-table with a backfill.
 *
 * The application's publications are checked as zero-cache checks them:
 * names starting with "_" are reserved, and each must publish insert,
 * update, delete and truncate; a failed check stops the decoder (not the
 * server) with a hint.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"

#include "decoder/shard_setup.h"
#include "guc.h"
#include "spi_xact.h"

static void
exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("zero_stream shard setup failed (%s): %s",
								 SPI_result_code_string(rc), sql)));
}

static bool
missing(const char *app, const char *shard, const char *publication)
{
	char	   *sql = psprintf("SELECT to_regclass(%s) IS NULL OR to_regclass(%s) IS NULL "
							   "    OR to_regclass(%s) IS NULL "
							   "    OR NOT EXISTS (SELECT FROM pg_publication WHERE pubname = %s)",
							   quote_literal_cstr(psprintf("%s.permissions", quote_identifier(app))),
							   quote_literal_cstr(psprintf("%s.clients", quote_identifier(shard))),
							   quote_literal_cstr(psprintf("%s.mutations", quote_identifier(shard))),
							   quote_literal_cstr(publication));
	bool		isnull;

	exec(sql, SPI_OK_SELECT);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

static void
create_metadata(const char *app, const char *shard, const char *publication)
{
	const char *a = quote_identifier(app);
	const char *s = quote_identifier(shard);
	char	   *owner;

	exec(psprintf("CREATE SCHEMA IF NOT EXISTS %s", a), SPI_OK_UTILITY);
	exec(psprintf("CREATE TABLE IF NOT EXISTS %s.permissions ("
				  "  \"permissions\" JSONB,"
				  "  \"hash\" TEXT,"
				  "  \"lock\" BOOL PRIMARY KEY DEFAULT true CHECK (lock))", a), SPI_OK_UTILITY);
	exec(psprintf("CREATE OR REPLACE FUNCTION %s.set_permissions_hash() RETURNS TRIGGER "
				  "LANGUAGE plpgsql AS $$ BEGIN NEW.hash = md5(NEW.permissions::text); RETURN NEW; END $$",
				  a), SPI_OK_UTILITY);
	exec(psprintf("CREATE OR REPLACE TRIGGER on_set_permissions BEFORE INSERT OR UPDATE ON %s.permissions "
				  "FOR EACH ROW EXECUTE FUNCTION %s.set_permissions_hash()", a, a), SPI_OK_UTILITY);
	exec(psprintf("INSERT INTO %s.permissions (permissions) VALUES (NULL) ON CONFLICT DO NOTHING", a),
		 SPI_OK_INSERT);

	exec(psprintf("CREATE SCHEMA IF NOT EXISTS %s", s), SPI_OK_UTILITY);
	exec(psprintf("CREATE TABLE IF NOT EXISTS %s.clients ("
				  "  \"clientGroupID\" TEXT NOT NULL,"
				  "  \"clientID\" TEXT NOT NULL,"
				  "  \"lastMutationID\" BIGINT NOT NULL,"
				  "  \"userID\" TEXT,"
				  "  PRIMARY KEY (\"clientGroupID\", \"clientID\"))", s), SPI_OK_UTILITY);
	exec(psprintf("CREATE TABLE IF NOT EXISTS %s.mutations ("
				  "  \"clientGroupID\" TEXT NOT NULL,"
				  "  \"clientID\" TEXT NOT NULL,"
				  "  \"mutationID\" BIGINT NOT NULL,"
				  "  \"result\" JSON NOT NULL,"
				  "  PRIMARY KEY (\"clientGroupID\", \"clientID\", \"mutationID\"))", s), SPI_OK_UTILITY);

	/* the database owner's, as if the app had run zero-cache's setup */
	exec("SELECT quote_ident(pg_get_userbyid(datdba)) FROM pg_database WHERE datname = current_database()",
		 SPI_OK_SELECT);
	owner = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	exec(psprintf("ALTER SCHEMA %s OWNER TO %s", a, owner), SPI_OK_UTILITY);
	exec(psprintf("ALTER TABLE %s.permissions OWNER TO %s", a, owner), SPI_OK_UTILITY);
	exec(psprintf("ALTER FUNCTION %s.set_permissions_hash() OWNER TO %s", a, owner), SPI_OK_UTILITY);
	exec(psprintf("ALTER SCHEMA %s OWNER TO %s", s, owner), SPI_OK_UTILITY);
	exec(psprintf("ALTER TABLE %s.clients OWNER TO %s", s, owner), SPI_OK_UTILITY);
	exec(psprintf("ALTER TABLE %s.mutations OWNER TO %s", s, owner), SPI_OK_UTILITY);

	exec(psprintf("SELECT FROM pg_publication WHERE pubname = %s", quote_literal_cstr(publication)),
		 SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		exec(psprintf("CREATE PUBLICATION %s FOR TABLE %s.permissions, TABLE %s.clients, %s.mutations",
					  quote_identifier(publication), a, s, s), SPI_OK_UTILITY);
		exec(psprintf("ALTER PUBLICATION %s OWNER TO %s", quote_identifier(publication), owner),
			 SPI_OK_UTILITY);
	}
	else
	{
		/* a table that was missing (dropped, recreated above) joins it again */
		const char *tables[3][2] = {{app, "permissions"}, {shard, "clients"}, {shard, "mutations"}};

		for (int i = 0; i < 3; i++)
		{
			exec(psprintf("SELECT FROM pg_publication_tables WHERE pubname = %s AND schemaname = %s AND tablename = %s",
						  quote_literal_cstr(publication), quote_literal_cstr(tables[i][0]),
						  quote_literal_cstr(tables[i][1])), SPI_OK_SELECT);
			if (SPI_processed == 0)
				exec(psprintf("ALTER PUBLICATION %s ADD TABLE %s.%s", quote_identifier(publication),
							  quote_identifier(tables[i][0]), quote_identifier(tables[i][1])),
					 SPI_OK_UTILITY);
		}
	}
	ereport(LOG,
			(errmsg("zero_stream created Zero's metadata: %s.permissions, %s.clients, %s.mutations and publication %s",
					a, s, s, quote_identifier(publication))));
}

/*
 * zero-cache's validatePublicationName and validatePublications: names
 * starting with "_" are Zero's own (the default publication is ours to
 * name so), and every change kind is published.
 */
static void
check_publications(List *publications)
{
	ListCell   *lc;
	char	   *default_name = zs_default_publication_name();
	Oid			types[1] = {TEXTARRAYOID};
	Datum		values[1] = {zs_publication_array(publications)};

	foreach(lc, publications)
	{
		const char *name = (const char *) lfirst(lc);
		bool		ok = true;

		if (name[0] == '_' && strcmp(name, default_name) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_RESERVED_NAME),
					 errmsg("publication \"%s\" in zero_stream.publications: names starting with \"_\" are reserved for Zero's internal use", name),
					 errhint("Rename the publication (ALTER PUBLICATION %s RENAME TO ...) and change zero_stream.publications, then restart.",
							 quote_identifier(name))));
		for (const char *p = name; *p && ok; p++)
			ok = (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				  (p > name && *p >= '0' && *p <= '9'));
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_NAME),
					 errmsg("publication \"%s\" in zero_stream.publications has characters Zero does not allow", name),
					 errdetail("Publication names must start with a letter or underscore and contain only letters, digits and underscores."),
					 errhint("Rename the publication and change zero_stream.publications, then restart.")));
	}

	if (SPI_execute_with_args("SELECT pubname FROM pg_publication WHERE pubname = ANY ($1) "
							  "   AND NOT (pubinsert AND pubupdate AND pubdelete AND pubtruncate) "
							  " ORDER BY pubname",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not read the publications' options")));
	if (SPI_processed > 0)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("publication \"%s\" must publish insert, update, delete and truncate", name),
				 errdetail("Zero replicas apply every kind of change; a publication that leaves one out would leave them wrong."),
				 errhint("ALTER PUBLICATION %s SET (publish = 'insert, update, delete, truncate'), then restart zero_stream's decoder.",
						 quote_identifier(name))));
	}
}

/*
 * zero-cache's validate() of each published table: what its replicas cannot
 * hold. Each problem is a WARNING; with elevel ERROR (before a new
 * lineage's initial copy, as zero-cache's initial sync refuses) they also
 * stop it, all named in one error; otherwise one table never stops the
 * stream of the others. Returns how many problems were found.
 */
int
zs_shard_setup_check_tables(List *publications, int elevel)
{
	Oid			types[2] = {TEXTARRAYOID, TEXTOID};
	Datum		values[2] = {zs_publication_array(publications), CStringGetTextDatum(zs_cdc_schema_name())};
	uint64		n;
	StringInfoData all;

	if (SPI_execute_with_args(
							  "WITH t AS (SELECT DISTINCT c.oid, n.nspname, c.relname, c.relreplident "
							  "             FROM pg_publication_tables p "
							  "             JOIN pg_namespace n ON n.nspname = p.schemaname "
							  "             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename "
							  "            WHERE p.pubname = ANY ($1) AND n.nspname NOT IN ($2, 'zero_stream')) "
							  "SELECT format('%I.%I', nspname, relname), problem FROM ("
							  "  SELECT nspname, relname, 'uses the column name _0_version, which Zero reserves' AS problem FROM t "
							  "   WHERE EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = '_0_version' AND NOT a.attisdropped) "
							  "  UNION ALL SELECT nspname, relname, 'has REPLICA IDENTITY NOTHING: its updates and deletes cannot be replicated' FROM t "
							  "   WHERE relreplident = 'n' "
							  "  UNION ALL SELECT nspname, relname, 'is missing its REPLICA IDENTITY INDEX' FROM t "
							  "   WHERE relreplident = 'i' AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = t.oid AND i.indisreplident) "
							  "  UNION ALL SELECT nspname, relname, 'has a name with characters Zero does not allow (letters, digits, _ and -)' FROM t "
							  "   WHERE relname !~ '^[A-Za-z_]+[A-Za-z0-9_-]*$' "
							  "  UNION ALL SELECT nspname, relname, format('has a column %I with characters Zero does not allow (letters, digits, _, - and .)', a.attname) "
							  "    FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped "
							  "   WHERE a.attname !~ '^[A-Za-z_]+[.A-Za-z0-9_-]*$') x "
							  "ORDER BY 1, 2",
							  2, types, values, NULL, true, 0) != SPI_OK_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg_internal("could not check the published tables")));
	n = SPI_processed;
	initStringInfo(&all);
	for (uint64 i = 0; i < n; i++)
	{
		char	   *table = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *problem = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("published table %s %s", table, problem),
				 errdetail("zero-cache refuses to replicate such a table."),
				 errhint("Change the table, or remove it from the publication.")));
		appendStringInfo(&all, "%s%s %s", i > 0 ? "; " : "", table, problem);
	}
	if (n > 0 && elevel >= ERROR)
		ereport(elevel,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("Zero cannot replicate %d published tables: %s", (int) n, all.data),
				 errdetail("zero-cache's initial sync refuses such tables; so does a new lineage's initial copy."),
				 errhint("Change the tables, or remove them from the publication; the decoder retries.")));
	return (int) n;
}

void
zs_shard_setup(List *app_publications)
{
	char	   *shard = psprintf("%s_%d", zs_app_id, zs_shard_num);
	char	   *publication = zs_metadata_publication_name();

	zs_spi_xact_begin(NULL);
	check_publications(app_publications);
	if (missing(zs_app_id, shard, publication))
		create_metadata(zs_app_id, shard, publication);
	(void) zs_shard_setup_check_tables(app_publications, WARNING);
	zs_spi_xact_commit();
}
