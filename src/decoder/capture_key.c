/*-------------------------------------------------------------------------
 * capture_key.c
 *	  The key of the DDL capture's signatures (decoding/capture_message.c),
 *	  as the stream sees it.
 *
 * zero_stream.capture_key is a user catalog table: logical decoding keeps
 * the history of its rows as of a catalog's, so that at each message the
 * decoder reads the key as it was where the message was written. A message
 * written before the table existed (by an extension older than 0.5.1, whose
 * capture did not sign) finds no table there; one written after finds the
 * key, and whoever wrote it must have signed with it.
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "decoder/capture_key.h"
#include "decoding/relcache.h"

#define CAPTURE_KEY_TABLE "capture_key"

ZsCaptureKeyState
zs_capture_key_read(uint8 key[ZS_CAPTURE_KEY_LEN])
{
	Oid			namespace = get_namespace_oid(ZS_EXTENSION_SCHEMA, true);
	Oid			relid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	ZsCaptureKeyState state = ZS_CAPTURE_KEY_MISSING;

	relid = OidIsValid(namespace) ? get_relname_relid(CAPTURE_KEY_TABLE, namespace) : InvalidOid;
	if (!OidIsValid(relid))
		return ZS_CAPTURE_KEY_NO_TABLE;
	rel = table_open(relid, AccessShareLock);
	if (!RelationIsUsedAsCatalogTable(rel))
	{
		/* not the table our SQL makes: its history is not kept */
		table_close(rel, AccessShareLock);
		return ZS_CAPTURE_KEY_MISSING;
	}
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);

		if (!isnull)
		{
			bytea	   *bytes = DatumGetByteaPP(value);

			if (VARSIZE_ANY_EXHDR(bytes) == ZS_CAPTURE_KEY_LEN)
			{
				memcpy(key, VARDATA_ANY(bytes), ZS_CAPTURE_KEY_LEN);
				state = ZS_CAPTURE_KEY_FOUND;
			}
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return state;
}
