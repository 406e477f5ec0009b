#include "args.h"
#include "commands.h"

int cmd_calibrate(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_fail("calibrate", "not implemented yet");
}
