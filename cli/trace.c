#include "args.h"
#include "commands.h"

int cmd_trace(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("trace", "not implemented yet");
}
