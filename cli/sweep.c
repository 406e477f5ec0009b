#include "args.h"
#include "commands.h"

int cmd_sweep(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("sweep", "not implemented yet");
}
