#include "tools/drctl_session.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "hw/huge_page_stock.h"
#include "testpmd/lexer.h"

namespace drsim::tools {
namespace {

absl::Status Usage(const std::string& why) { return absl::InvalidArgumentError(why); }

bool ParseInt(absl::string_view text, long lo, long hi, long* value) {
  return absl::SimpleAtoi(text, value) && *value >= lo && *value <= hi;
}

}  // namespace

const char* Usage() {
  return "usage:\n"
         "  drctl validate RULES\n"
         "  drctl run RULES --pcap IN [--from wire|vport:N] [--out DIR] [--verdicts FILE] [--json]\n"
         "            [--wait SECONDS] [--after COMMANDS]\n"
         "  drctl trace RULES --pcap IN --frame N\n"
         "  drctl dump RULES [--stable-ids]\n"
         "options for every command: --vfs N (VFs of the NIC, default 4), --queues N (receive queues per\n"
         "port, default 16)\n";
}

absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return Usage("no command");
  o.command = args[0];
  if (o.command != "validate" && o.command != "run" && o.command != "trace" && o.command != "dump") {
    return Usage(absl::StrFormat("unknown command '%s' (validate, run, trace or dump)", o.command));
  }
  std::vector<std::string> positional;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      positional.push_back(a);
      continue;
    }
    // --name=value or --name value.
    std::string name = a, value;
    bool has_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return Usage(absl::StrFormat("%s needs a value", name));
      return args[++i];
    };
    auto allowed = [&](std::initializer_list<const char*> commands) {
      for (const char* c : commands) {
        if (o.command == c) return absl::OkStatus();
      }
      return Usage(absl::StrFormat("%s does not apply to '%s'", name, o.command));
    };
    absl::Status s;
    if (name == "--json" || name == "--stable-ids") {
      if (has_value) return Usage(absl::StrFormat("%s takes no value", name));
      s = allowed(name == "--json" ? std::initializer_list<const char*>{"run"}
                                   : std::initializer_list<const char*>{"dump"});
      (name == "--json" ? o.json : o.stable_ids) = true;
    } else {
      DRSIM_ASSIGN_OR_RETURN(std::string v, take());
      long n;
      if (name == "--pcap") {
        s = allowed({"run", "trace"});
        o.pcap = v;
      } else if (name == "--after") {
        s = allowed({"run"});
        o.after = v;
      } else if (name == "--wait") {
        s = allowed({"run"});
        double seconds;
        if (!absl::SimpleAtod(v, &seconds) || !(seconds >= 0) || seconds > 1e9) {
          return Usage(absl::StrFormat("--wait '%s': seconds, 0 to 1e9", v));
        }
        o.wait_s = seconds;
      } else if (name == "--out") {
        s = allowed({"run"});
        o.out_dir = v;
      } else if (name == "--verdicts") {
        s = allowed({"run"});
        o.verdicts = v;
      } else if (name == "--from") {
        s = allowed({"run", "trace"});
        if (v == "wire") {
          o.from_vport.reset();
        } else if (absl::StartsWith(v, "vport:") && ParseInt(v.substr(6), 0, 0xfffe, &n)) {
          o.from_vport = static_cast<int>(n);
        } else {
          return Usage(absl::StrFormat("--from '%s': wire or vport:N", v));
        }
      } else if (name == "--frame") {
        s = allowed({"trace"});
        if (!ParseInt(v, 0, 1L << 40, &n))
          return Usage(absl::StrFormat("--frame '%s': a frame index from 0", v));
        o.frame = n;
      } else if (name == "--vfs") {
        if (!ParseInt(v, 0, 1024, &n)) return Usage(absl::StrFormat("--vfs '%s': 0 to 1024", v));
        o.vfs = static_cast<int>(n);
      } else if (name == "--queues") {
        if (!ParseInt(v, 1, 1024, &n)) return Usage(absl::StrFormat("--queues '%s': 1 to 1024", v));
        o.queues = static_cast<int>(n);
      } else {
        return Usage(absl::StrFormat("unknown option %s", name));
      }
    }
    if (!s.ok()) return s;
  }
  if (positional.size() != 1) {
    return Usage(positional.empty() ? "no RULES file"
                                    : absl::StrFormat("unexpected argument '%s'", positional[1]));
  }
  o.rules = positional[0];
  if ((o.command == "run" || o.command == "trace") && o.pcap.empty()) {
    return Usage(absl::StrFormat("'%s' needs --pcap IN", o.command));
  }
  if (o.command == "trace" && !o.frame.has_value()) return Usage("'trace' needs --frame N");
  if (o.from_vport.has_value() && *o.from_vport > o.vfs) {
    return Usage(
        absl::StrFormat("--from vport:%d: the NIC has vports 0 to %d (--vfs)", *o.from_vport, o.vfs));
  }
  return o;
}

uint64_t FrameTimeNs(const sim::PcapFrame& frame) {
  return frame.timestamp_us < 0 ? 0 : static_cast<uint64_t>(frame.timestamp_us) * 1000;
}

std::optional<std::string> ReadTextFile(const std::string& path, absl::string_view what, std::ostream& err) {
  std::ifstream in(path);
  if (!in) {
    err << "drctl: " << path << ": cannot open the " << what << "\n";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Session::~Session() {
  if (!leave_to_exit) return;
  // Freed by the process's exit. Kept reachable from a global, never destroyed, so that a leak checker
  // (LeakSanitizer, valgrind) does not report them as lost.
  struct LeftToExit {
    std::vector<std::unique_ptr<testpmd::FlowEngine>> engines;
    std::vector<std::unique_ptr<sim::Nic>> nics;
  };
  static LeftToExit* const left = new LeftToExit;
  left->engines.push_back(std::move(engine));
  left->nics.push_back(std::move(nic));
}

std::unique_ptr<Session> LoadRules(const Options& options, std::ostream& err, int* exit_status,
                                   uint64_t start_ns, Progress* progress) {
  std::ifstream in(options.rules);  // (RunStream reads it in chunks of its own)
  if (!in) {
    err << "drctl: " << options.rules << ": cannot open the rule file\n";
    *exit_status = kExitUsage;
    return nullptr;
  }
  // The load's huge pages are faulted in beside it, on another CPU where the process may use one
  // (hw/huge_page_stock.h): a million rules map about 300 MB.
  const hw::HugePageStocking stocking;
  auto session = std::make_unique<Session>();
  session->leave_to_exit = options.leave_to_exit;
  session->nic = std::make_unique<sim::Nic>(options.vfs);
  session->nic->set_time_ns(start_ns);
  testpmd::EngineOptions engine_options;
  engine_options.rx_queues = static_cast<uint16_t>(options.queues);
  engine_options.keep_history = !options.after.empty();  // --after files are checked against it
  session->engine = std::make_unique<testpmd::FlowEngine>(*session->nic, engine_options);
  testpmd::StreamOptions stream;
  stream.keep_outcomes = false;
  if (progress != nullptr) stream.on_command = [progress](size_t commands) { progress->Rules(commands); };
  session->report = testpmd::RunStream(*session->engine, options.rules, in, stream);
  if (progress != nullptr) progress->Finish();
  if (!session->report.ok()) {
    for (const testpmd::Diagnostic& d : session->report.diagnostics) err << d.ToString() << "\n";
    err << absl::StrFormat("%s: %d error(s)\n", options.rules, session->report.diagnostics.size());
    *exit_status = kExitRejected;
    return nullptr;
  }
  *exit_status = kExitOk;
  return session;
}

std::string CommandText(absl::string_view text, int line) {
  // The lexer's own reading of the file: continuation lines joined, comments and prompts left out.
  for (const testpmd::CommandTokens& command : testpmd::Lex(text)) {
    if (command.tokens.front().pos.line != line) continue;
    std::vector<absl::string_view> words;
    for (const testpmd::Token& t : command.tokens) words.push_back(t.text);
    return absl::StrJoin(words, " ");
  }
  return "";
}

}  // namespace drsim::tools
