#include "args.h"
#include "commands.h"

int cmd_plan(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("plan", "not implemented yet");
}
