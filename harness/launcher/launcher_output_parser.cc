#include "harness/launcher/launcher_output_parser.h"

#include <csignal>
#include <map>
#include <regex>
#include <set>

namespace lockstep {
namespace {

// Open MPI wraps its help texts at ~80 columns, at places that differ between versions; folding
// every run of whitespace to one space makes one pattern match all of them.
std::string FoldWhitespace(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The help block around `pos`: Open MPI frames each message with lines of dashes.
std::string HelpBlockAround(const std::string& folded, size_t pos) {
  const std::string rule = "-----";
  size_t begin = folded.rfind(rule, pos);
  begin = begin == std::string::npos ? 0 : folded.find_first_not_of('-', begin);
  size_t end = folded.find(rule, pos);
  if (end == std::string::npos) end = folded.size();
  std::string block = folded.substr(begin, end - begin);
  while (!block.empty() && block.front() == ' ') block.erase(block.begin());
  while (!block.empty() && block.back() == ' ') block.pop_back();
  if (block.size() > 600) block = block.substr(0, 600) + " ...";
  return block;
}

// srun prints strsignal()'s words, not numbers.
std::optional<int> SignalFromName(const std::string& words) {
  static const std::map<std::string, int> kNames = {
      {"Killed", SIGKILL},       {"Segmentation fault", SIGSEGV}, {"Aborted", SIGABRT},
      {"Terminated", SIGTERM},   {"Bus error", SIGBUS},           {"Floating point exception", SIGFPE},
      {"Illegal instruction", SIGILL}, {"Hangup", SIGHUP},        {"Interrupt", SIGINT},
  };
  for (const auto& [name, sig] : kNames) {
    if (words.rfind(name, 0) == 0) return sig;
  }
  return std::nullopt;
}

std::vector<int> ParseTaskList(const std::string& list) {
  std::vector<int> out;
  static const std::regex kItem(R"((\d+)(?:-(\d+))?)");
  for (std::sregex_iterator it(list.begin(), list.end(), kItem), end; it != end; ++it) {
    const int lo = std::stoi((*it)[1]);
    const int hi = (*it)[2].matched ? std::stoi((*it)[2]) : lo;
    for (int r = lo; r <= hi && r - lo < 100000; ++r) out.push_back(r);
  }
  return out;
}

}  // namespace

LauncherOutputFacts ParseLauncherOutput(const std::string& raw) {
  // Only the end matters, and std::regex is slow on long inputs.
  constexpr size_t kTail = 64 * 1024;
  const std::string text = raw.size() > kTail ? raw.substr(raw.size() - kTail) : raw;
  const std::string folded = FoldWhitespace(text);

  LauncherOutputFacts facts;
  std::set<int> named;
  auto add = [&](LauncherRankFailure f) {
    if (named.insert(f.rank).second) facts.failures.push_back(std::move(f));
  };

  // Collect matches of every pattern with their positions, then order them as printed.
  std::multimap<size_t, LauncherRankFailure> found;

  // "mpirun noticed that process rank 1 with PID 1234 on node x exited on signal 9 (Killed)."
  static const std::regex kSignal(
      R"((\w+) noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?)");
  for (std::sregex_iterator it(folded.begin(), folded.end(), kSignal), end; it != end; ++it) {
    LauncherRankFailure f;
    f.rank = std::stoi((*it)[2]);
    f.signal = std::stoi((*it)[5]);
    f.message = it->str();
    found.emplace(static_cast<size_t>(it->position()), f);
  }
  // "... The first process to do so was: Process name: [[23619,1],1] Exit code: 3"
  // (Open MPI 5 / PRRTE: "Process name: [prterun-host-1234@1,1]").
  static const std::regex kExit(R"(Process name: \[(?:\[[^\]]*\]|[^\],]*),(\d+)\] Exit code: (-?\d+))");
  for (std::sregex_iterator it(folded.begin(), folded.end(), kExit), end; it != end; ++it) {
    LauncherRankFailure f;
    f.rank = std::stoi((*it)[1]);
    f.exit_code = std::stoi((*it)[2]);
    f.message = "exited with code " + (*it)[2].str() + " (" + it->str() + ")";
    found.emplace(static_cast<size_t>(it->position()), f);
  }
  // "mpirun has exited due to process rank 1 with PID 1234 on node x exiting improperly."
  static const std::regex kImproper(R"(process rank (\d+) with PID (\d+) on node (\S+) exiting improperly)");
  for (std::sregex_iterator it(folded.begin(), folded.end(), kImproper), end; it != end; ++it) {
    LauncherRankFailure f;
    f.rank = std::stoi((*it)[1]);
    f.message = it->str();
    found.emplace(static_cast<size_t>(it->position()), f);
  }
  // srun: "srun: error: node1: task 1: Exited with exit code 3", "...: tasks 0-2: Killed".
  // srun never wraps these, so they are read line by line, after Open MPI's messages.
  static const std::regex kSrun(R"(^srun: error: (\S+): tasks? ([0-9,\-]+): (.*?)\s*$)");
  static const std::regex kCode(R"(Exited with exit code (-?\d+))");
  size_t line_no = 0;
  for (size_t start = 0; start < text.size(); ++line_no) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(start, nl - start);
    start = nl + 1;
    std::smatch m;
    if (!std::regex_match(line, m, kSrun)) continue;
    const std::string what = m[3];
    std::smatch code;
    for (int r : ParseTaskList(m[2])) {
      LauncherRankFailure f;
      f.rank = r;
      if (std::regex_search(what, code, kCode)) {
        f.exit_code = std::stoi(code[1]);
      } else {
        f.signal = SignalFromName(what);
      }
      f.message = line;
      found.emplace(folded.size() + line_no, f);
    }
  }
  // torchrun (and accelerate launch, which runs torchrun's agent) ends with a ChildFailedError
  // summary, one block per failed rank: "[0]: time : ... host : x rank : 1 (local_rank: 1)
  // exitcode : -9 (pid: 1234) error_file: <N/A> traceback : Signal 9 (SIGKILL) received by PID
  // 1234". Its "Root Cause (first observed failure)" comes first. The ranks torchrun stopped
  // itself after that failure ("Sending process 1233 closing signal SIGTERM") are listed too,
  // as killed by SIGTERM: they are the failure's victims, not failures.
  std::set<std::string> stopped_by_torchrun;
  static const std::regex kClosing(R"(Sending process (\d+) closing signal)");
  for (std::sregex_iterator it(folded.begin(), folded.end(), kClosing), end; it != end; ++it) {
    stopped_by_torchrun.insert((*it)[1]);
  }
  const size_t root_cause = folded.find("Root Cause (first observed failure):");
  static const std::regex kTorchrun(
      R"(rank : (\d+) \(local_rank: \d+\) exitcode : (-?\d+) \(pid: (\d+)\) error_file: )");
  for (std::sregex_iterator it(folded.begin(), folded.end(), kTorchrun), end; it != end; ++it) {
    if (stopped_by_torchrun.count((*it)[3])) continue;
    LauncherRankFailure f;
    f.rank = std::stoi((*it)[1]);
    const int code = std::stoi((*it)[2]);
    // torchrun reports a death by signal as the negative signal number.
    if (code < 0) {
      f.signal = -code;
    } else {
      f.exit_code = code;
    }
    const bool first = root_cause != std::string::npos && static_cast<size_t>(it->position()) > root_cause;
    f.message = "rank " + (*it)[1].str() + " (pid " + (*it)[3].str() + ") " +
                (code < 0 ? "killed by signal " + std::to_string(-code) : "exited with code " + std::to_string(code)) +
                (first ? " (first observed failure)" : "");
    found.emplace(first ? 0 : static_cast<size_t>(it->position()) + 1, f);
  }
  for (auto& [pos, f] : found) {
    (void)pos;
    add(std::move(f));
  }

  // The job never started: name the reason in Open MPI's own words.
  static const char* kLaunchErrors[] = {
      "was unable to find the specified executable file",
      "could not access or execute an executable",
      "has detected an attempt to run as root",
      "There are not enough slots available in the system",
      "was unable to reliably start one or more daemons",
      "srun: error: Unable to allocate resources",
      "srun: error: Invalid",
  };
  for (const char* needle : kLaunchErrors) {
    const size_t pos = folded.find(needle);
    if (pos != std::string::npos) {
      facts.launch_error = HelpBlockAround(folded, pos);
      break;
    }
  }
  return facts;
}

}  // namespace lockstep
