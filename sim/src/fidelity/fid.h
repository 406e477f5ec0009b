/* Helpers shared by the files of the fidelity room. Internal: not part of
 * the public API (kvsim/fidelity.h is). */
#ifndef KVSIM_FIDELITY_FID_H
#define KVSIM_FIDELITY_FID_H

#include <cJSON.h>

/* A number, or null when it is not finite (JSON has no NaN). */
cJSON *kvsim__fid_num_or_null(double x);

/* Prints o indented and deletes it; NULL when o is NULL or out of memory. */
char *kvsim__fid_print(cJSON *o);

/* Splits s at commas in place (no quoting: kvsim's own CSV files have
 * none); up to max column pointers in cols, returns the count of columns. */
int kvsim__fid_split_csv(char *s, char **cols, int max);
/* Drops a trailing newline (and carriage return). */
void kvsim__fid_chomp(char *s);
/* The column named `name` among cols[0..n), or -1. */
int kvsim__fid_col_index(char **cols, int n, const char *name);
/* A whole finite number, or -1. */
int kvsim__fid_parse_num(const char *s, double *out);

#endif
