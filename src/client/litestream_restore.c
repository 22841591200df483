/*-------------------------------------------------------------------------
 * litestream_restore.c
 *	  zero-stream-replica restore: litestream's restore command as
 *	  zero-cache's view-syncer runs it (ZERO_LITESTREAM_EXECUTABLE,
 *	  services/litestream/commands.ts):
 *
 *	  restore -if-db-not-exists -if-replica-exists -parallelism N FILE
 *
 * with the backupURL of its snapshot reservation in ZERO_LITESTREAM_BACKUP_URL
 * (http://host:port/replica/<taskID> on a zero_stream server). An existing
 * FILE (with -if-db-not-exists) is left alone; no backup to serve (404 or
 * 503, with -if-replica-exists) exits 0 without creating FILE, which the
 * view-syncer takes as "retry later"; anything else that fails exits
 * non-zero and leaves no FILE. Flags are parsed like Go's flag package
 * (-name, --name, -name=value); litestream's flags that select a backup
 * (-generation, -timestamp, ...) are accepted and ignored, as the server
 * serves one backup only. The download is sync's (replica_download.c); an
 * https:// backupURL is verified as sync's (-ca-file, -no-verify, or the
 * environment), and without credentials in the URL it takes those of
 * $ZERO_CHANGE_STREAMER_URI when that names the same server.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sys/stat.h>

#include "client/litestream_restore.h"
#include "client/replica_cli.h"
#include "client/replica_download.h"

/* litestream restore's flags: those taking a value, and the booleans */
static const char *const restore_value_flags[] = {
	"o", "parallelism", "config", "replica", "generation", "index", "txid", "timestamp", "ca-file", NULL
};

static const char *const restore_bool_flags[] = {
	"if-db-not-exists", "if-replica-exists", "no-expand-env", "v", "no-verify", NULL
};

static bool
flag_in(const char *name, const char *const *flags)
{
	for (int i = 0; flags[i] != NULL; i++)
	{
		if (strcmp(name, flags[i]) == 0)
			return true;
	}
	return false;
}

static void zs_noreturn
restore_usage(const char *fmt,...) pg_attribute_printf(1, 2);

static void
restore_usage(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	zs_replica_cli_vnote(fmt, args);
	va_end(args);
	zs_replica_cli_usage();
}

/* The credentials of $ZERO_CHANGE_STREAMER_URI when it names url's server. */
static char *
change_streamer_userinfo(const ZsUrl *url)
{
	const char *uri = getenv("ZERO_CHANGE_STREAMER_URI");
	ZsUrl		cs;

	if (uri == NULL || !zs_url_parse(uri, &cs) || cs.userinfo == NULL ||
		strcmp(cs.host, url->host) != 0 || strcmp(cs.port, url->port) != 0)
		return NULL;
	return cs.userinfo;
}

int
zs_litestream_restore(int argc, char **argv)
{
	bool		if_db_not_exists = false;
	bool		if_replica_exists = false;
	bool		no_verify = false;
	const char *ca_file = NULL;
	const char *output = NULL;
	const char *url_text;
	ZsUrl		url;
	struct stat st;
	int			i;

	for (i = 2; i < argc; i++)
	{
		const char *arg = argv[i];
		const char *eq;
		const char *value;
		char	   *name;

		if (arg[0] != '-' || arg[1] == '\0')
			break;
		if (strcmp(arg, "--") == 0)
		{
			i++;
			break;
		}
		arg += arg[1] == '-' ? 2 : 1;
		eq = strchr(arg, '=');
		name = eq ? pnstrdup(arg, eq - arg) : pstrdup(arg);
		value = eq ? eq + 1 : NULL;
		if (flag_in(name, restore_bool_flags))
		{
			bool		on = true;

			if (value != NULL)
			{
				if (pg_strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0 ||
					pg_strcasecmp(value, "t") == 0)
					on = true;
				else if (pg_strcasecmp(value, "false") == 0 || strcmp(value, "0") == 0 ||
						 pg_strcasecmp(value, "f") == 0)
					on = false;
				else
					restore_usage("invalid boolean value \"%s\" for -%s", value, name);
			}
			if (strcmp(name, "if-db-not-exists") == 0)
				if_db_not_exists = on;
			else if (strcmp(name, "if-replica-exists") == 0)
				if_replica_exists = on;
			else if (strcmp(name, "no-verify") == 0)
				no_verify = on;
		}
		else if (flag_in(name, restore_value_flags))
		{
			if (value == NULL)
			{
				if (i + 1 >= argc)
					restore_usage("flag needs an argument: -%s", name);
				value = argv[++i];
			}
			if (strcmp(name, "o") == 0)
				output = value;
			else if (strcmp(name, "ca-file") == 0)
				ca_file = value;
			else if (strcmp(name, "parallelism") == 0 || strcmp(name, "index") == 0)
			{
				char	   *end;

				errno = 0;
				(void) strtol(value, &end, 10);
				if (errno != 0 || *value == '\0' || *end != '\0')
					restore_usage("invalid value \"%s\" for -%s: not an integer", value, name);
			}
			else if (strcmp(name, "config") != 0)
				zs_replica_cli_note("ignoring -%s %s: the server serves its current backup only", name, value);
		}
		else
			restore_usage("flag provided but not defined: -%s", name);
		pfree(name);
	}
	if (i != argc - 1)
		restore_usage(i == argc ? "restore needs the database path" : "too many arguments after the database path");

	/* restore DB_PATH, or restore -o PATH REPLICA_URL */
	if (strncmp(argv[i], "http://", 7) == 0 || strncmp(argv[i], "https://", 8) == 0)
	{
		url_text = argv[i];
		if (output == NULL)
			restore_usage("restoring from a URL needs -o PATH");
	}
	else
	{
		url_text = getenv("ZERO_LITESTREAM_BACKUP_URL");
		if (output == NULL)
			output = argv[i];
		if (url_text == NULL || url_text[0] == '\0')
			zs_replica_cli_die(1, "ZERO_LITESTREAM_BACKUP_URL is not set: it must hold the backupURL of a snapshot reservation (http[s]://host:port/replica/<taskID>)");
	}

	if (stat(output, &st) == 0)
	{
		if (!if_db_not_exists)
			zs_replica_cli_die(3, "\"%s\" already exists: not restoring over it", output);
		zs_replica_cli_note("\"%s\" already exists: nothing to restore", output);
		return 0;
	}
	if (!zs_url_parse(url_text, &url) || !zs_url_is_http(&url))
		zs_replica_cli_die(2, "unsupported backup URL \"%s\": expected http[s]://host:port/replica/<taskID> of a zero_stream server",
						   url_text);
	zs_client_tls_configure(ca_file, no_verify);
	if (url.userinfo == NULL)
		url.userinfo = change_streamer_userinfo(&url);
	/* restored, or no backup to restore (-if-replica-exists): either is success */
	(void) zs_replica_download(&url, NULL, NULL, if_replica_exists, false, output);
	return 0;
}
