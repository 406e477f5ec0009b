/* A fast reader of well-formed JSON into cJSON nodes, for the large
 * number tables (the kernel profiles: 120-540 KB of latencies each),
 * whose parse through cJSON_ParseWithOpts spent most of its time in a
 * malloc a node, a malloc a string and glibc's strtod a number.
 *
 * It reads only strict RFC 8259 JSON without escapes in strings, and
 * answers NULL for anything else (and when memory runs out): the caller
 * then parses the text with kvsim__json_parse, so every malformed input
 * still gets cJSON's verdict and kvsim's one-line error. Where it answers,
 * the tree is the one cJSON 1.7 builds from the same text (types, keys,
 * order, first-of-duplicate lookups, valueint, the head's prev pointing at
 * the last child): every reader written against cJSON works on it
 * unchanged. The nodes and strings live in the arena, freed at once by
 * kvsim__jsonfast_free (never cJSON_Delete). Not internal API beyond
 * core's readers. */
#ifndef KVSIM_CORE_JSONFAST_H
#define KVSIM_CORE_JSONFAST_H

#include <stddef.h>

#include <cJSON.h>

typedef struct kvsim__jsonfast_chunk kvsim__jsonfast_chunk;

typedef struct kvsim__jsonfast {
  kvsim__jsonfast_chunk *chunks; /* node blocks, newest first */
  char *strings;                 /* every key and string value, NUL-terminated */
} kvsim__jsonfast;

/* Parses NUL-terminated text into *a (zeroed by the caller); NULL when the
 * text is not in the subset above or memory ran out (*a then holds
 * nothing). */
cJSON *kvsim__jsonfast_parse(const char *text, kvsim__jsonfast *a);
void kvsim__jsonfast_free(kvsim__jsonfast *a);

/* The number reader on its own: the strict JSON number at s (its first
 * byte '-' or a digit) into *out as cJSON stores it (strtod's value, in
 * the C locale), its length in *len. 0 when s does not start a strict
 * number that cJSON reads whole (more than 63 characters). */
int kvsim__jsonfast_number(const char *s, double *out, size_t *len);

#endif
