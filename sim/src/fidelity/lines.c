/* The line-oriented CSV helpers of the measured-file readers: kvsim's own
 * requests.csv and timeseries.csv, which hold no quoted fields. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity/fid.h"

int kvsim__fid_split_csv(char *s, char **cols, int max) {
  int n = 0;
  for (char *p = s;; p++) {
    if (n < max)
      cols[n] = p;
    n++;
    p = strchr(p, ',');
    if (!p)
      break;
    *p = '\0';
  }
  return n;
}

void kvsim__fid_chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = '\0';
}

int kvsim__fid_col_index(char **cols, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(cols[i], name))
      return i;
  return -1;
}

int kvsim__fid_parse_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

