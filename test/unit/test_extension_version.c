/*-------------------------------------------------------------------------
 * test_extension_version.c
 *	  Unit tests for extension_version.c: how an installed SQL version fits
 *	  this library, and that the tree's scripts agree with it: the
 *	  library's version is zero_stream.control's default_version, it has
 *	  its install script, and every older install script is a version the
 *	  library knows, with a chain of update scripts up to this one.
 *
 * Run from the tree's top (make unitcheck does).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <dirent.h>

#include "extension_version.h"
#include "unit.h"

#define MAX_SCRIPTS 64

static char full[MAX_SCRIPTS][32];
static int	nfull;
static char from[MAX_SCRIPTS][32];
static char to[MAX_SCRIPTS][32];
static int	nupdate;

static void
read_scripts(void)
{
	DIR		   *dir = opendir("sql");
	struct dirent *de;

	CHECK(dir != NULL, "cannot open sql/ (run from the tree's top)");
	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL)
	{
		const char *name = de->d_name;
		const char *v;
		const char *sep;
		size_t		len = strlen(name);

		if (strncmp(name, "zero_stream--", 13) != 0 || len < 17 || strcmp(name + len - 4, ".sql") != 0)
			continue;
		v = name + 13;
		sep = strstr(v, "--");
		if (sep == NULL && nfull < MAX_SCRIPTS)
			snprintf(full[nfull++], 32, "%.*s", (int) (name + len - 4 - v), v);
		else if (sep != NULL && nupdate < MAX_SCRIPTS)
		{
			snprintf(from[nupdate], 32, "%.*s", (int) (sep - v), v);
			snprintf(to[nupdate], 32, "%.*s", (int) (name + len - 4 - (sep + 2)), sep + 2);
			nupdate++;
		}
	}
	closedir(dir);
}

/* Is there a chain of update scripts from version v to the library's? */
static bool
updates_to_current(const char *v, int depth)
{
	if (strcmp(v, ZS_LIBRARY_VERSION) == 0)
		return true;
	if (depth > MAX_SCRIPTS)
		return false;
	for (int i = 0; i < nupdate; i++)
		if (strcmp(from[i], v) == 0 && updates_to_current(to[i], depth + 1))
			return true;
	return false;
}

static void
test_fit(void)
{
	CHECK(zs_sql_fit(ZS_LIBRARY_VERSION) == ZS_SQL_CURRENT, "the library's own version is current");
	CHECK(zs_sql_fit("0.1.0") == ZS_SQL_OLDER_COMPATIBLE, "0.1.0's log is this library's");
	CHECK(zs_sql_fit("0.2.0") == ZS_SQL_OLDER_COMPATIBLE, "and 0.2.0's");
	CHECK(zs_sql_fit("0.3.0") == ZS_SQL_OLDER_COMPATIBLE, "and 0.3.0's (the library converts the log)");
	CHECK(zs_sql_fit("0.4.0") == ZS_SQL_OLDER_COMPATIBLE, "and 0.4.0's");
	CHECK(zs_sql_fit("0.4.1") == ZS_SQL_OLDER_COMPATIBLE, "and 0.4.1's");
	CHECK(zs_sql_fit("9.0.0") == ZS_SQL_UNKNOWN, "a newer version is unknown");
	CHECK(zs_sql_fit(NULL) == ZS_SQL_NOT_INSTALLED, "no version: not installed");
	CHECK(zs_sql_fit("0.1") == ZS_SQL_UNKNOWN, "a prefix is not a version");
	CHECK(zs_sql_fit("0.2.0 ") == ZS_SQL_UNKNOWN, "nor a version with a space");
	CHECK(zs_sql_fit("") == ZS_SQL_UNKNOWN, "nor an empty string");

	CHECK(zs_sql_fit_writable(ZS_SQL_CURRENT) && zs_sql_fit_writable(ZS_SQL_OLDER_COMPATIBLE),
		  "the current and a compatible SQL are written for");
	CHECK(!zs_sql_fit_writable(ZS_SQL_OLDER_INCOMPATIBLE) && !zs_sql_fit_writable(ZS_SQL_UNKNOWN),
		  "an incompatible or unknown SQL is not");

	CHECK(zs_sql_fit_message(ZS_LIBRARY_VERSION, ZS_SQL_CURRENT) == NULL, "nothing to say when current");
	CHECK(zs_sql_fit_hint(ZS_SQL_CURRENT) == NULL, "nor to do");
	CHECK_STR(zs_sql_fit_message("0.1.0", ZS_SQL_OLDER_COMPATIBLE),
			  "the zero_stream library is version " ZS_LIBRARY_VERSION ", but the extension's SQL objects are still version 0.1.0");
	CHECK_STR(zs_sql_fit_hint(ZS_SQL_OLDER_COMPATIBLE),
			  "Run ALTER EXTENSION zero_stream UPDATE in the streamed database.");
	CHECK_STR(zs_sql_fit_hint(ZS_SQL_OLDER_INCOMPATIBLE),
			  "Run ALTER EXTENSION zero_stream UPDATE in the streamed database.");
	CHECK(strstr(zs_sql_fit_message("9.0.0", ZS_SQL_UNKNOWN), "version 9.0.0, which this zero_stream library") != NULL,
		  "an unknown version is named");
	CHECK(!zs_sql_fit_writable(ZS_SQL_NOT_INSTALLED), "nothing is written without the extension");
	CHECK_STR(zs_sql_fit_message(NULL, ZS_SQL_NOT_INSTALLED),
			  "extension \"zero_stream\" is not installed in this database");
	CHECK_STR(zs_sql_fit_hint(ZS_SQL_NOT_INSTALLED), "Run CREATE EXTENSION zero_stream in the streamed database.");
	CHECK(strstr(zs_sql_fit_hint(ZS_SQL_UNKNOWN), "Install the zero_stream library") != NULL,
		  "an unknown version asks for its library");
}

static void
test_scripts(void)
{
	FILE	   *control = fopen("zero_stream.control", "r");
	char		line[256];
	bool		found_default = false;
	bool		has_own = false;

	CHECK(control != NULL, "cannot open zero_stream.control");
	while (control && fgets(line, sizeof(line), control))
	{
		char		version[32];

		if (sscanf(line, "default_version = '%31[^']'", version) == 1)
		{
			found_default = true;
			CHECK_STR(version, ZS_LIBRARY_VERSION);
		}
	}
	if (control)
		fclose(control);
	CHECK(found_default, "zero_stream.control has a default_version");

	read_scripts();
	for (int i = 0; i < nfull; i++)
	{
		if (strcmp(full[i], ZS_LIBRARY_VERSION) == 0)
		{
			has_own = true;
			continue;
		}
		CHECK(zs_sql_fit(full[i]) == ZS_SQL_OLDER_COMPATIBLE || zs_sql_fit(full[i]) == ZS_SQL_OLDER_INCOMPATIBLE,
			  "sql/zero_stream--%s.sql is a version the library does not know (add it to known_versions)", full[i]);
		CHECK(updates_to_current(full[i], 0),
			  "no chain of update scripts from %s to %s", full[i], ZS_LIBRARY_VERSION);
	}
	CHECK(has_own, "sql/zero_stream--%s.sql is missing", ZS_LIBRARY_VERSION);
	CHECK(nfull >= 2, "the previous version's install script is kept (found %d)", nfull);
}

int
main(void)
{
	test_fit();
	test_scripts();
	return unit_report("test_extension_version");
}
