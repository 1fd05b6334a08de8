// drctl's entry point (drctl.h): the arguments, stdout, stderr, and a progress bar when stderr is a
// terminal. Under `bazel run` relative paths are the caller's: Bazel names its directory in
// BUILD_WORKING_DIRECTORY.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tools/drctl.h"

int main(int argc, char** argv) {
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY"); dir != nullptr && chdir(dir) != 0) {
    std::cerr << "drctl: cannot enter BUILD_WORKING_DIRECTORY " << dir << ": " << std::strerror(errno)
              << "\n";
    return 2;  // drctl.h: bad usage
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  return drsim::tools::Drctl(args, std::cout, std::cerr, isatty(STDERR_FILENO) != 0,
                             /*leave_to_exit=*/true);
}
