#include "tests/tshark_check.h"

#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

extern char** environ;

namespace drsim::testing {
namespace {

constexpr char kSeparator = '\x1e';   // between fields
constexpr char kAggregator = '\x1f';  // between occurrences of one field

// Checksum-status fields, in the order they follow the fixed fields.
constexpr const char* kChecksumLayers[] = {"ip", "tcp", "udp", "icmp", "icmpv6"};
constexpr int kFixedFields = 6;  // number, protocols, malformed, message, severity, group

// Values of _ws.expert.severity and _ws.expert.group (epan/proto.h; `tshark -G values` lists them).
std::string SeverityName(uint32_t v) {
  switch (v) {
    case 0x00100000:
      return "Comment";
    case 0x00200000:
      return "Chat";
    case 0x00400000:
      return "Note";
    case 0x00600000:
      return "Warning";
    case 0x00800000:
      return "Error";
    default:
      return absl::StrFormat("severity 0x%x", v);
  }
}

std::string GroupName(uint32_t v) {
  static constexpr const char* kNames[] = {"Checksum",   "Sequence",   "Response",   "Request",   "Undecoded",
                                           "Reassemble", "Malformed",  "Debug",      "Protocol",  "Security",
                                           "Comment",    "Decryption", "Assumption", "Deprecated"};
  const uint32_t index = (v >> 24) - 1;
  if ((v & 0xffffff) == 0 && index < sizeof kNames / sizeof kNames[0]) return kNames[index];
  return absl::StrFormat("group 0x%x", v);
}

std::string ChecksumStatusName(absl::string_view v) {
  static constexpr const char* kNames[] = {"Bad", "Good", "Unverified", "Not present", "Illegal"};
  uint32_t n = 0;
  if (absl::SimpleAtoi(v, &n) && n < 5) return kNames[n];
  return absl::StrFormat("status %s", v);
}

std::string FindTshark() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = absl::StrSplit(path, ':', absl::SkipEmpty());
  dirs.push_back("/usr/bin");
  dirs.push_back("/usr/local/bin");
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/tshark";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct RunResult {
  int exit_status = 0;
  std::string out;
  std::string err;
};

// Runs argv[0] with `argv` and `env`, collecting its standard output and error.
absl::StatusOr<RunResult> Run(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0) return absl::ErrnoToStatus(errno, "pipe");
  if (pipe(err_pipe) != 0) {
    const int e = errno;
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::ErrnoToStatus(e, "pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  std::vector<char*> args, envp;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  RunResult result;
  if (spawn_error == 0) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          sinks[i]->append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          fds[i].fd = -1;  // poll ignores negative descriptors
          --open_fds;
        }
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (spawn_error != 0) return absl::ErrnoToStatus(spawn_error, absl::StrFormat("cannot run %s", argv[0]));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::ErrnoToStatus(errno, "waitpid");
  }
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// tshark's standard error without its warning about running as root.
std::string Stderr(const std::string& err) {
  std::string kept;
  for (absl::string_view line : absl::StrSplit(err, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "This could be dangerous")) continue;
    absl::StrAppend(&kept, kept.empty() ? "" : "; ", line);
  }
  return kept;
}

absl::StatusOr<TsharkFrame> ParseLine(absl::string_view line) {
  std::vector<absl::string_view> f = absl::StrSplit(line, kSeparator);
  if (f.size() != kFixedFields + sizeof kChecksumLayers / sizeof kChecksumLayers[0]) {
    return absl::InternalError(absl::StrFormat("tshark printed %d fields, not %d, in \"%s\"", f.size(),
                                               kFixedFields + 5, absl::CHexEscape(line)));
  }
  TsharkFrame frame;
  if (!absl::SimpleAtoi(f[0], &frame.number)) {
    return absl::InternalError(absl::StrFormat("tshark frame number \"%s\" is not a number", f[0]));
  }
  frame.protocols = std::string(f[1]);
  frame.malformed = !f[2].empty();
  if (!f[3].empty()) {
    std::vector<absl::string_view> messages = absl::StrSplit(f[3], kAggregator);
    std::vector<absl::string_view> severities = absl::StrSplit(f[4], kAggregator);
    std::vector<absl::string_view> groups = absl::StrSplit(f[5], kAggregator);
    if (severities.size() != messages.size() || groups.size() != messages.size()) {
      return absl::InternalError(
          absl::StrFormat("tshark frame %d: %d expert messages but %d severities and %d groups", frame.number,
                          messages.size(), severities.size(), groups.size()));
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      uint32_t severity = 0, group = 0;
      if (!absl::SimpleAtoi(severities[i], &severity) || !absl::SimpleAtoi(groups[i], &group)) {
        return absl::InternalError(absl::StrFormat("tshark frame %d: expert severity \"%s\" or group \"%s\"",
                                                   frame.number, severities[i], groups[i]));
      }
      frame.experts.push_back({std::string(messages[i]), SeverityName(severity), GroupName(group)});
    }
  }
  for (size_t i = 0; i < 5; ++i) {
    const absl::string_view value = f[kFixedFields + i];
    if (value.empty()) continue;
    std::string names;
    for (absl::string_view v : absl::StrSplit(value, kAggregator)) {
      absl::StrAppend(&names, names.empty() ? "" : ",", ChecksumStatusName(v));
    }
    frame.checksums[kChecksumLayers[i]] = names;
  }
  return frame;
}

}  // namespace

std::vector<std::string> TsharkFrame::Problems() const {
  std::vector<std::string> problems;
  if (malformed) problems.push_back("malformed packet");
  for (const auto& [layer, status] : checksums) {
    if (absl::StrContains(status, "Bad") || absl::StrContains(status, "Illegal")) {
      problems.push_back(absl::StrFormat("%s checksum %s", layer, status));
    }
  }
  for (const TsharkExpert& e : experts) {
    if (e.group == "Checksum" || e.group == "Malformed" || e.severity == "Error") {
      problems.push_back(absl::StrFormat("%s/%s: %s", e.group, e.severity, e.message));
    }
  }
  return problems;
}

std::vector<std::string> TsharkFrame::Warnings() const {
  std::vector<std::string> warnings;
  for (const TsharkExpert& e : experts) {
    if (e.severity == "Warning" || e.severity == "Error") {
      warnings.push_back(absl::StrFormat("%s/%s: %s", e.group, e.severity, e.message));
    }
  }
  return warnings;
}

absl::StatusOr<std::vector<TsharkFrame>> TsharkCheck(const std::string& pcap_path) {
  const std::string tshark = FindTshark();
  if (tshark.empty()) {
    return absl::FailedPreconditionError(
        "tshark is not installed (looked in PATH, /usr/bin and /usr/local/bin): run scripts/setup, which "
        "installs Debian's tshark package");
  }
  struct stat st;
  if (stat(pcap_path.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("capture \"%s\"", pcap_path));
  }
  std::vector<std::string> argv = {tshark,
                                   "-r",
                                   pcap_path,
                                   "-o",
                                   "ip.check_checksum:TRUE",
                                   "-o",
                                   "tcp.check_checksum:TRUE",
                                   "-o",
                                   "udp.check_checksum:TRUE",
                                   "-o",
                                   "tcp.analyze_sequence_numbers:FALSE",
                                   "-T",
                                   "fields",
                                   "-E",
                                   std::string("separator=") + kSeparator,
                                   "-E",
                                   std::string("aggregator=") + kAggregator,
                                   "-E",
                                   "occurrence=a"};
  for (const char* field : {"frame.number", "frame.protocols", "_ws.malformed", "_ws.expert.message",
                            "_ws.expert.severity", "_ws.expert.group"}) {
    argv.push_back("-e");
    argv.push_back(field);
  }
  for (const char* layer : kChecksumLayers) {
    argv.push_back("-e");
    argv.push_back(absl::StrFormat("%s.checksum.status", layer));
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (!absl::StartsWith(*e, "WIRESHARK_CONFIG_DIR=")) env.push_back(*e);
  }
  env.push_back("WIRESHARK_CONFIG_DIR=/nonexistent/drsim-tshark-check");  // no personal preferences

  DRSIM_ASSIGN_OR_RETURN(RunResult run, Run(argv, env));
  if (run.exit_status != 0) {
    return absl::InternalError(absl::StrFormat("tshark -r \"%s\" exited with status %d: %s", pcap_path,
                                               run.exit_status, Stderr(run.err)));
  }
  std::vector<TsharkFrame> frames;
  for (absl::string_view line : absl::StrSplit(run.out, '\n', absl::SkipEmpty())) {
    DRSIM_ASSIGN_OR_RETURN(TsharkFrame frame, ParseLine(line));
    frames.push_back(std::move(frame));
  }
  return frames;
}

}  // namespace drsim::testing
