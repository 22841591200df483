/*-------------------------------------------------------------------------
 * capture_truncate.h
 *	  The DDL capture's part for TRUNCATE (see capture_truncate.c).
 *-------------------------------------------------------------------------
 */
#ifndef ZS_CAPTURE_TRUNCATE_H
#define ZS_CAPTURE_TRUNCATE_H

/* From _PG_init, in every backend that loads the library at its start. */
extern void zs_capture_truncate_install_hook(void);

#endif							/* ZS_CAPTURE_TRUNCATE_H */
