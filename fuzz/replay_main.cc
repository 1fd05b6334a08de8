// A main() for fuzz targets in ordinary builds: runs LLVMFuzzerTestOneInput on every file named on the
// command line (directories are walked), so `bazel test` replays seed corpora and checked-in crashes.
// Under --config=fuzz, libFuzzer's own main is linked instead.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failures = 0, inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& entry : std::filesystem::recursive_directory_iterator(p)) {
        if (entry.is_regular_file()) {
          failures += RunFile(entry.path());
          ++inputs;
        }
      }
    } else {
      failures += RunFile(p);
      ++inputs;
    }
  }
  std::printf("replayed %d input(s)\n", inputs);
  return failures == 0 && inputs > 0 ? 0 : 1;
}
