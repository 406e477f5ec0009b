/* The request stream handed to the engine: a trace reader or the synthetic
 * generator, plus what applies to any source: request ids, bad-row
 * skipping, time_scale, limit and max_total_tokens clipping. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "core/vec.h"
#include "workload/wl.h"

struct kvsim_source {
  const kvsim_workload_cfg_t *cfg;
  kvsim__reader_t *rd;
  kvsim__synth_t *sy;
  uint64_t next_id;
  int64_t skipped, clipped;
  bool have_t0;
  kvsim_time_ns t0, prev; /* first and previous kept arrival (as recorded) */
  int error;              /* sticky error code */
  kvsim_err saved;
  kvsim__vec(kvsim_segment_t) segs; /* clipped copy of a request's segments */
};

int kvsim_source_open(const kvsim_workload_cfg_t *cfg, uint64_t seed, kvsim_source_t **out,
                      kvsim_err *err) {
  *out = NULL;
  kvsim_source_t *s = kvsim__calloc(1, sizeof *s);
  if (!s)
    return kvsim_err_set(err, KVSIM_ENOMEM, "workload: out of memory");
  s->cfg = cfg;
  int rc = cfg->synthetic ? kvsim__synth_open(&cfg->syn, seed, &s->sy, err)
                          : kvsim__reader_open(cfg->path, cfg->format, cfg->hash_block_tokens,
                                               &s->rd, err);
  if (rc < 0) {
    kvsim__free(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* Cuts the prompt first, then the output, so that prompt + output <= max
 * (how the benchmark reference run clips Azure conv to 4,096 tokens). The
 * segments keep their prefix: a clipped prompt still shares its start. */
static int clip(kvsim_source_t *s, kvsim_req_spec_t *spec) {
  int64_t max = s->cfg->max_total_tokens, total;
  if (max <= 0 || (kvsim__add_i64(spec->prompt_tokens, spec->output_tokens, &total) &&
                   total <= max))
    return 0;
  s->clipped++;
  int64_t p = max - spec->output_tokens;
  if (p < 1)
    p = 1;
  spec->output_tokens = max - p < spec->output_tokens ? max - p : spec->output_tokens;
  spec->prompt_tokens = p;
  if (spec->num_segments > 0) {
    if (kvsim__vec_reserve(&s->segs, spec->num_segments) < 0)
      return KVSIM_ENOMEM;
    int32_t n = 0;
    int64_t left = p;
    for (int32_t i = 0; i < spec->num_segments && left > 0; i++) {
      s->segs.v[n] = spec->segments[i];
      if (s->segs.v[n].len > left)
        s->segs.v[n].len = left;
      left -= s->segs.v[n].len;
      n++;
    }
    spec->segments = s->segs.v;
    spec->num_segments = n;
  }
  return 0;
}

static int trace_next(kvsim_source_t *s, kvsim_req_spec_t *spec, kvsim_err *err) {
  const kvsim_workload_cfg_t *c = s->cfg;
  for (;;) {
    if (c->limit > 0 && (int64_t)s->next_id >= c->limit)
      return KVSIM_SOURCE_END;
    kvsim__row_t row;
    int rc = kvsim__reader_next(s->rd, &row, err);
    if (rc == 0 && s->next_id == 0) {
      /* A header alone, or every row skipped: a run of it would report
       * zeros as if they were measured. */
      if (s->skipped)
        return kvsim_err_set(err, KVSIM_EINVAL, "%s: no requests (%lld bad rows skipped)", c->path,
                             (long long)s->skipped);
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: no requests", c->path);
    }
    if (rc == 0)
      return KVSIM_SOURCE_END;
    if (rc == 1 && s->have_t0 && row.arrival < s->prev) {
      char a[32], b[32];
      snprintf(a, sizeof a, "%.9f", kvsim_time_to_s(row.arrival));
      snprintf(b, sizeof b, "%.9f", kvsim_time_to_s(s->prev));
      rc = kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column '%s': bad value %s s (goes backwards: the row "
                         "before arrives at %s s)",
                         c->path, (long long)row.line, kvsim__format_arrival_column(c->format), a, b);
    }
    if (rc == KVSIM_EPARSE && c->skip_bad_rows) {
      s->skipped++;
      continue;
    }
    if (rc < 0)
      return rc;
    if (!s->have_t0) {
      s->have_t0 = true;
      s->t0 = row.arrival;
    }
    s->prev = row.arrival;
    memset(spec, 0, sizeof *spec);
    kvsim_time_ns t = row.arrival;
    /* time_scale multiplies the gaps between arrivals. */
    if (c->time_scale != 1) {
      double gap = (double)(t - s->t0) * c->time_scale;
      if (!(gap <= (double)(KVSIM__MAX_TRACE_S * KVSIM_NS_PER_S))) {
        rc = kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column '%s': %.9f s after the first row, times time_scale "
                           "%g, is beyond %lld s",
                           c->path, (long long)row.line, kvsim__format_arrival_column(c->format),
                           kvsim_time_to_s(t - s->t0), c->time_scale,
                           (long long)KVSIM__MAX_TRACE_S);
        if (c->skip_bad_rows) {
          s->skipped++;
          continue;
        }
        return rc;
      }
      t = s->t0 + (kvsim_time_ns)llround(gap);
    }
    spec->arrival = t;
    spec->prompt_tokens = row.prompt_tokens;
    spec->output_tokens = row.output_tokens;
    spec->tenant = row.tenant;
    spec->priority = row.priority;
    spec->lora = row.lora;
    spec->client = -1;
    spec->session = row.session;
    spec->turn = row.turn;
    spec->segments = row.segments;
    spec->num_segments = row.num_segments;
    return KVSIM_SOURCE_REQUEST;
  }
}

int kvsim_source_next(kvsim_source_t *s, kvsim_req_spec_t *spec, kvsim_err *err) {
  if (s->error) {
    if (err)
      *err = s->saved;
    return s->error;
  }
  int rc;
  if (s->sy) {
    rc = kvsim__synth_next(s->sy, spec, err);
  } else {
    rc = trace_next(s, spec, err);
  }
  if (rc == KVSIM_SOURCE_REQUEST) {
    spec->id = s->next_id++;
    if (clip(s, spec) < 0)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "workload: out of memory");
  }
  if (rc < 0) {
    s->error = rc;
    if (err)
      s->saved = *err;
    else
      s->saved.code = rc;
  }
  return rc;
}

int kvsim_source_on_finish(kvsim_source_t *s, const kvsim_req_spec_t *spec, kvsim_time_ns t,
                           int64_t generated) {
  return s->sy ? kvsim__synth_on_finish(s->sy, spec, t, generated) : 0;
}

int64_t kvsim_source_skipped(const kvsim_source_t *s) { return s->skipped; }

int64_t kvsim_source_clipped(const kvsim_source_t *s) { return s->clipped; }

void kvsim_source_close(kvsim_source_t *s) {
  if (!s)
    return;
  kvsim__reader_close(s->rd);
  kvsim__synth_close(s->sy);
  kvsim__vec_free(&s->segs);
  kvsim__free(s);
}

const kvsim__format_t *kvsim__source_format(const kvsim_source_t *s) {
  return s->rd ? kvsim__reader_format(s->rd) : NULL;
}

bool kvsim__source_has_arrivals(const kvsim_source_t *s) {
  const kvsim__format_t *f = kvsim__source_format(s);
  return !f || kvsim__format_has_arrivals(f);
}

const char *kvsim_source_format_name(const kvsim_source_t *s) {
  const kvsim__format_t *f = kvsim__source_format(s);
  return f ? kvsim__format_name(f) : "synthetic";
}

unsigned kvsim__source_columns(const kvsim_source_t *s) {
  if (s->rd)
    return kvsim__reader_columns(s->rd);
  const kvsim__synth_cfg_t *c = &s->cfg->syn;
  unsigned m = 0;
  if (c->tenants > 0)
    m |= KVSIM__COL_TENANT;
  if (c->priority_levels > 0)
    m |= KVSIM__COL_PRIORITY;
  if (c->lora_adapters > 0)
    m |= KVSIM__COL_LORA;
  if (c->sessions)
    m |= KVSIM__COL_SESSION | KVSIM__COL_TURN;
  if (c->sessions || c->prefix || c->few_shot)
    m |= KVSIM__COL_SEGMENTS;
  return m;
}
