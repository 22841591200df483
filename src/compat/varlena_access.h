/*-------------------------------------------------------------------------
 * compat/varlena_access.h
 *	  The varlena macros (VARDATA_ANY, VARSIZE_ANY_EXHDR) on every supported
 *	  PostgreSQL.
 *
 * 16 moved them out of postgres.h into varatt.h, which postgres.h included
 * until 19; 15 has no varatt.h.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_VARLENA_ACCESS_H
#define ZS_COMPAT_VARLENA_ACCESS_H

#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#endif							/* ZS_COMPAT_VARLENA_ACCESS_H */
