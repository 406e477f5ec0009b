/* One entry point per subcommand; each returns the process exit code
 * (0 ok, 1 a check failed (--strict, --max-error), 2 bad input). */
#ifndef KVSIM_CLI_COMMANDS_H
#define KVSIM_CLI_COMMANDS_H

int cmd_calc(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_list(int argc, char **argv);

#endif
