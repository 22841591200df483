/*-------------------------------------------------------------------------
 * json_js.h
 *	  A JSON text as zero-cache's JavaScript re-writes it (see json_js.c).
 *
 * Compiles as backend or frontend code.
 *-------------------------------------------------------------------------
 */
#ifndef ZS_JSON_JS_H
#define ZS_JSON_JS_H

#include "lib/stringinfo.h"

/*
 * Append BigIntJSON.stringify(BigIntJSON.parse(text)). Returns false if
 * text is not one JSON value (what was appended is then meaningless).
 */
extern bool zs_json_append_js_reparsed(StringInfo out, const char *text, int len);

#endif							/* ZS_JSON_JS_H */
