/* Inside the study room: the deployment search's outputs (deploy_write.c),
 * written by kvsim_deploy_run. */
#ifndef KVSIM_STUDY_DEPLOY_INT_H
#define KVSIM_STUDY_DEPLOY_INT_H

#include <stdio.h>

#include "kvsim/deploy.h"

/* kvsim_deploy_config_scenario with the scenario named `where` in its
 * errors (the scenario keeps the name it has there): the search block's
 * checks, whose errors the study's file and key lead, name an inline
 * scenario "scenario" rather than the study's file a second time. */
int kvsim__deploy_config_scenario_as(const kvsim_compare_t *c, const kvsim_deploy_config_t *cfg,
                                     const char *where, kvsim_scenario_t *sc, kvsim_err *err);

/* search.csv, search_frontier.csv and REPORT.md into opts->out, then the
 * folder's older PNGs removed and frontier.png drawn (REPORT.md written
 * again to link it, or to say why not). Errors: KVSIM_EIO, KVSIM_ENOMEM. */
int kvsim__deploy_write(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                        kvsim_deploy_result_t *res, kvsim_err *err);

/* Output tokens/s per GPU and tokens/s per user (1 / mean TPOT) of a
 * point of row r (NAN when it has no TPOT). */
double kvsim__deploy_per_gpu(const kvsim_deploy_row_t *r, const kvsim_deploy_point_t *p);
double kvsim__deploy_per_user(const kvsim_deploy_point_t *p);

/* "TP4" for an aggregated row, "(1P TP4 : 2D TP4)" for a disaggregated
 * one (a unit: one replica of the row). */
void kvsim__deploy_layout(const kvsim_deploy_row_t *r, char *buf, size_t cap);

/* Margins to the SLO this close are a tie: a 3 % move of a p99, as five
 * times more requests gave the 70B study's two 4-GPU H100 layouts, turns
 * them. */
#define KVSIM__DEPLOY_MARGIN_TIE 0.05

/* A row's best deployment: "2 x h100-sxm TP4 (8 GPUs, $20.00/h)", or
 * disaggregated "3 x (1P TP4 : 2D TP4) on h100-sxm (36 GPUs, $90.00/h)". */
void kvsim__deploy_name(const kvsim_deploy_row_t *r, char *buf, size_t cap);

/* Whether disaggregation pays (the search has disaggregated layouts): the
 * cheapest disaggregated deployment against the cheapest aggregated one,
 * by cost (GPUs without prices), in one sentence. */
void kvsim__deploy_pays(const kvsim_compare_t *c, const kvsim_deploy_result_t *res, char *buf,
                        size_t cap);
/* REPORT.md's section for it: the sentence, the two side by side. */
void kvsim__deploy_pays_md(FILE *f, const kvsim_compare_t *c, const kvsim_deploy_result_t *res);
/* How to run a disaggregated winner's two lines. */
void kvsim__deploy_launch_note(FILE *f, const kvsim_deploy_row_t *w);

#endif
