#ifndef BINDERY_CJANSSON_SHIM_H
#define BINDERY_CJANSSON_SHIM_H

#include <jansson.h>

/* jansson's type predicates are macros, which Swift does not import. */
static inline int bindery_json_type(const json_t *json) { return (int)json_typeof(json); }

/* Decoding flags (macros combine ints; Swift wants one value). */
static inline size_t bindery_json_decode_flags(void) {
    return JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
}

#endif
