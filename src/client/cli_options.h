/*-------------------------------------------------------------------------
 * cli_options.h
 *	  The options of the command-line tools (zero-stream-tail,
 *	  zero-stream-replica sync, zero-stream-fanout): "--name" and
 *	  "--name VALUE" before the operands, and the TLS options every one of
 *	  them takes (--ca-file FILE, --no-verify).
 *
 * A tool lists its own options in a table of ZsCliOption; the parser fills
 * the variables they point at and leaves the usage message and the exit to
 * the tool.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CLI_OPTIONS_H
#define ZS_CLI_OPTIONS_H

typedef enum ZsCliOptionKind
{
	ZS_CLI_FLAG,				/* --name: sets a bool to flag_value */
	ZS_CLI_STRING,				/* --name VALUE: a const char * */
	ZS_CLI_INT,					/* --name N: an int (atoi) */
	ZS_CLI_LONG					/* --name N: a long (atol) */
} ZsCliOptionKind;

typedef struct ZsCliOption
{
	const char *name;			/* with its dashes: "--count" */
	ZsCliOptionKind kind;
	void	   *value;			/* bool *, const char **, int * or long * */
	bool		flag_value;		/* ZS_CLI_FLAG: what the flag sets */
} ZsCliOption;

/*
 * The TLS options: --ca-file FILE (the CA certificates that verify the
 * server's, else $ZS_SSL_CA_FILE, else the system's) and --no-verify.
 */
typedef struct ZsCliTls
{
	const char *ca_file;
	bool		no_verify;
} ZsCliTls;

/*
 * Parse the options from argv[first] on, up to the first argument that
 * does not start with '-': those of options[0..noptions-1] and the TLS
 * options (into *tls, initialised here). Returns the index of the first
 * operand, or -1 for an unknown option or one whose value is missing (the
 * caller prints its usage and exits 1).
 */
extern int	zs_cli_parse_options(int argc, char **argv, int first,
								 const ZsCliOption *options, int noptions, ZsCliTls *tls);

/* How TLS connections verify the server, from the parsed options. */
extern void zs_cli_tls_configure(const ZsCliTls *tls);

#endif							/* ZS_CLI_OPTIONS_H */
