#include "args.h"
#include "commands.h"

int cmd_validate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("validate", "not implemented yet");
}
