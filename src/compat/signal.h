/*-------------------------------------------------------------------------
 * compat/signal.h
 *	  Passing a signal handler's arguments on to core's handler (die()).
 *
 * 19 gave signal handlers a second argument, what the kernel said of the
 * sender (pg_siginfo, in SIGNAL_ARGS); a handler that calls core's passes
 * both on.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_SIGNAL_H
#define ZS_COMPAT_SIGNAL_H

#if PG_VERSION_NUM >= 190000
#define ZS_SIGNAL_ARGS_PASSED postgres_signal_arg, pg_siginfo
#else
#define ZS_SIGNAL_ARGS_PASSED postgres_signal_arg
#endif

#endif							/* ZS_COMPAT_SIGNAL_H */
