// drctl's entry point (drctl.h): the arguments, stdout, stderr, and a progress bar when stderr is a
// terminal.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "tools/drctl.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return drsim::tools::Drctl(args, std::cout, std::cerr, isatty(STDERR_FILENO) != 0);
}
