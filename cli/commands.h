/* One entry point per subcommand; each returns the process exit code
 * (0 ok, 1 a check failed (--strict, --max-error), 2 bad input). */
#ifndef KVSIM_CLI_COMMANDS_H
#define KVSIM_CLI_COMMANDS_H

int cmd_calc(int argc, char **argv);
/* calc for --engine sglang: SGLang's own flags and words (calc_sglang.c). */
int cmd_calc_sglang(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_list(int argc, char **argv);

/* calc's other engines and the comparison (calc_compare.c): the exit code
 * when argv asks for one of them, else -1 (vLLM's calc runs). */
int calc_engine_dispatch(int argc, char **argv);
int calc_tgi(int argc, char **argv);
int calc_hf(int argc, char **argv);
int calc_compare(int argc, char **argv);

#endif
