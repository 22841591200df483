/*-------------------------------------------------------------------------
 * compat/acl.h
 *	  Ownership checks across PostgreSQL 15 to 19: 16 replaced the
 *	  per-catalog pg_class_ownercheck() with object_ownercheck().
 *-------------------------------------------------------------------------
 */
#ifndef ZS_COMPAT_ACL_H
#define ZS_COMPAT_ACL_H

#include "catalog/pg_class.h"
#include "utils/acl.h"

/* Does role own the relation relid (or is it a superuser)? */
static inline bool
zs_relation_ownercheck(Oid relid, Oid role)
{
#if PG_VERSION_NUM >= 160000
	return object_ownercheck(RelationRelationId, relid, role);
#else
	return pg_class_ownercheck(relid, role);
#endif
}

#endif							/* ZS_COMPAT_ACL_H */
