/*-------------------------------------------------------------------------
 * compat/noreturn.h
 *	  A function that does not return, on every supported PostgreSQL.
 *
 * PostgreSQL 18 replaced the attribute macro pg_attribute_noreturn(),
 * written after the declarator, by the specifier pg_noreturn, written
 * before it. gcc and clang (the compilers PGXS builds us with, clang for
 * the JIT bitcode) accept the attribute after the declarator on every
 * version, so declarations keep one form: f(...) zs_noreturn;
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_NORETURN_H
#define ZS_COMPAT_NORETURN_H

#if PG_VERSION_NUM >= 180000
#define zs_noreturn __attribute__((noreturn))
#else
#define zs_noreturn pg_attribute_noreturn()
#endif

#endif							/* ZS_COMPAT_NORETURN_H */
