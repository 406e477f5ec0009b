/* The trace formats, in detection order: the first whose detect accepts
 * the first non-empty line of a file reads it. A new format is one file
 * in this folder plus one line here. */
#include <string.h>

#include "workload/formats/format.h"

const kvsim__format_t *const kvsim__formats[] = {
    &kvsim__format_azure,
    &kvsim__format_vidur,
    &kvsim__format_aiperf,
    &kvsim__format_llmservingsim,
    &kvsim__format_mooncake,
    &kvsim__format_requests, /* before kvsim: requests.csv has kvsim's columns too */
    &kvsim__format_kvsim,
    &kvsim__format_lengths,  /* last: any table with two length columns */
    NULL,
};

const kvsim__format_t *kvsim__format_find(const char *name) {
  for (const kvsim__format_t *const *f = kvsim__formats; *f; f++)
    if ((*f)->selectable && !strcmp((*f)->name, name))
      return *f;
  return NULL;
}

const char *kvsim__format_name(const kvsim__format_t *f) { return f ? f->name : "?"; }

const char *kvsim__format_choices(void) {
  static char buf[256];
  if (!buf[0]) {
    const kvsim__format_t *last = NULL;
    for (const kvsim__format_t *const *f = kvsim__formats; *f; f++)
      if ((*f)->selectable)
        last = *f;
    size_t o = (size_t)snprintf(buf, sizeof buf, "auto");
    for (const kvsim__format_t *const *f = kvsim__formats; *f && o < sizeof buf; f++)
      if ((*f)->selectable)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", *f == last ? " or " : ", ",
                              (*f)->name);
  }
  return buf;
}

bool kvsim__format_has_arrivals(const kvsim__format_t *f) { return f->arrival_column != NULL; }

bool kvsim__format_measures(const kvsim__format_t *f) { return f->measures; }

bool kvsim__format_uses_hash_block(const kvsim__format_t *f) { return f->hash_block; }

const char *kvsim__format_arrival_column(const kvsim__format_t *f) {
  return f->arrival_column ? f->arrival_column : "arrival_s";
}
