/*-------------------------------------------------------------------------
 * cli_options.c
 *	  The option parser of the command-line tools: each tool's table of
 *	  options, and the TLS options they all take (cli_options.h).
 *
 * Options come before the operands, each a separate argument: "--name", or
 * "--name" then its value. The first argument that does not start with '-'
 * ends them; an unknown option, or one whose value is missing, is a usage
 * error. Numbers are read as atoi/atol read them (a non-number is 0).
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include "client/cli_options.h"
#include "client/ws_client.h"

/* Take option argv[*i] if it is opt (and its value, if it has one). */
static bool
take_option(const ZsCliOption *opt, int argc, char **argv, int *i)
{
	if (strcmp(argv[*i], opt->name) != 0)
		return false;
	if (opt->kind == ZS_CLI_FLAG)
	{
		*(bool *) opt->value = opt->flag_value;
		return true;
	}
	if (*i + 1 >= argc)
		return false;
	(*i)++;
	switch (opt->kind)
	{
		case ZS_CLI_STRING:
			*(const char **) opt->value = argv[*i];
			break;
		case ZS_CLI_INT:
			*(int *) opt->value = atoi(argv[*i]);
			break;
		case ZS_CLI_LONG:
			*(long *) opt->value = atol(argv[*i]);
			break;
		case ZS_CLI_FLAG:
			break;
	}
	return true;
}

int
zs_cli_parse_options(int argc, char **argv, int first,
					 const ZsCliOption *options, int noptions, ZsCliTls *tls)
{
	const ZsCliOption tls_options[] = {
		{"--ca-file", ZS_CLI_STRING, &tls->ca_file, false},
		{"--no-verify", ZS_CLI_FLAG, &tls->no_verify, true},
	};
	int			i;

	tls->ca_file = NULL;
	tls->no_verify = false;
	for (i = first; i < argc && argv[i][0] == '-'; i++)
	{
		bool		taken = false;

		for (int k = 0; k < noptions && !taken; k++)
			taken = take_option(&options[k], argc, argv, &i);
		for (int k = 0; k < (int) lengthof(tls_options) && !taken; k++)
			taken = take_option(&tls_options[k], argc, argv, &i);
		if (!taken)
			return -1;
	}
	return i;
}

void
zs_cli_tls_configure(const ZsCliTls *tls)
{
	zs_client_tls_configure(tls->ca_file, tls->no_verify);
}
