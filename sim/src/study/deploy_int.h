/* Inside the study room: the deployment search's outputs (deploy_write.c),
 * written by kvsim_deploy_run. */
#ifndef KVSIM_STUDY_DEPLOY_INT_H
#define KVSIM_STUDY_DEPLOY_INT_H

#include "kvsim/deploy.h"

/* search.csv, search_frontier.csv and REPORT.md into opts->out, then the
 * folder's older PNGs removed and frontier.png drawn (REPORT.md written
 * again to link it, or to say why not). Errors: KVSIM_EIO, KVSIM_ENOMEM. */
int kvsim__deploy_write(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                        kvsim_deploy_result_t *res, kvsim_err *err);

/* Output tokens/s per GPU and tokens/s per user (1 / mean TPOT) of a
 * point of row r (NAN when it has no TPOT). */
double kvsim__deploy_per_gpu(const kvsim_deploy_row_t *r, const kvsim_deploy_point_t *p);
double kvsim__deploy_per_user(const kvsim_deploy_point_t *p);

#endif
