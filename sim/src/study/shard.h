/* Shards of a sweep: the record each one leaves beside its table, read
 * back by kvsim_sweep_merge. Internal to the study room. */
#ifndef KVSIM_STUDY_SHARD_H
#define KVSIM_STUDY_SHARD_H

#include "kvsim/study.h"

/* File names inside a sweep's folder. */
#define KVSIM__SHARD_TABLE "sweep.shard%d.csv"
#define KVSIM__SHARD_RECORD "sweep.shard%d.json"

/* Writes out/sweep.shardI.json (atomically) after the shard's table:
 * {"sweep", "sweep_hash", "shard", "shards", "points", "table",
 * "kvsim_version"}. Errors: KVSIM_EIO, KVSIM_ENOMEM naming the file. */
int kvsim__shard_record_write(const kvsim_sweep_t *s, const char *out, int shard, int nshards,
                              kvsim_err *err);

#endif
