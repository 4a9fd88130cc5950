#include "harness/runner/judge.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "checkers/checker_registry.h"
#include "checkers/checker_run.h"
#include "checkers/in_band_comparison.h"
#include "harness/core/untrusted_input.h"
#include "harness/launcher/launch_command.h"
#include "harness/launcher/trace_folder.h"
#include "harness/trace/trace_writer.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The last `max_lines` lines of a rank's captured output, read from its last 256 KiB only.
std::string LogTail(const fs::path& file, size_t max_lines) {
  std::istringstream in(ReadFileTail(file, 256 * 1024));
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.erase(lines.begin());
  }
  std::string out;
  // A program's line can be megabytes (a tensor printed whole): quoted cut, with the count.
  for (const auto& l : lines) out += CutLongText(l) + "\n";
  return out;
}

// The last line of a rank's log that the probe wrote ("lockstep probe: ..."), without its prefix;
// empty when there is none.
std::string LastProbeLine(const fs::path& file) {
  static constexpr std::string_view kPrefix = "lockstep probe: ";
  std::istringstream in(ReadFileTail(file, 256 * 1024));
  std::string found;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kPrefix, 0) == 0) found = CutLongText(line.substr(kPrefix.size()));
  }
  while (!found.empty() && (found.back() == '\r' || found.back() == ' ')) found.pop_back();
  return found;
}

// " (exited with code 1)", " (killed by signal 9)", or nothing when the launch does not say.
std::string ExitOf(const std::optional<LaunchReport>& launch, int rank) {
  if (!launch) return "";
  for (const RankExit& e : launch->ranks) {
    if (e.rank != rank) continue;
    if (e.signal) return " (killed by signal " + std::to_string(*e.signal) + ")";
    if (e.exit_code) return " (exited with code " + std::to_string(*e.exit_code) + ")";
  }
  return "";
}

// "<file>:1: no header record" for every trace that exists but has none (an empty file, one cut
// inside its header, garbage without a newline): such a file cannot be read.
std::string UnreadableTraces(const std::vector<RankTrace>& traces, const fs::path& dir) {
  std::vector<std::string> unreadable;
  for (const RankTrace& t : traces) {
    if (t.missing || !t.header.schema.empty()) continue;
    unreadable.push_back(t.truncated && !t.truncation_note.empty()
                             ? t.truncation_note
                             : (dir / TraceFileName(t.header.rank)).string() + ":1: no header record");
  }
  return unreadable.empty() ? "" : "unreadable trace (no header): " + Join(unreadable);
}

// A program that starts ranks of its own (mp.spawn under --ranks 1) writes traces past the ranks
// it was given: judging only the given ones would pass what `check` of the same folder finds.
std::string TracesPastTheWorld(const Evidence& e) {
  const std::optional<int> highest = HighestTraceRank(e.trace_dir);
  const int ranks = e.scenario.ranks;
  if (!highest || *highest < ranks) return "";
  const fs::path folder = e.trace_dir.parent_path();
  return "the program started more ranks than --ranks " + std::to_string(ranks) + ": " +
         (e.trace_dir / TraceFileName(*highest)).string() + " is rank " + std::to_string(*highest) +
         "'s trace; run it with --ranks " + std::to_string(*highest + 1) +
         " (and without its own spawning), or judge the folder with `lockstep check " + folder.string() + "`";
}

// The user's program: a rank without a trace never initialized torch.distributed (or the probe
// did not load), one without a step never stepped an optimizer. The last line the first silent
// rank printed usually says why (a traceback's last line).
std::string UnobservedRanks(const Evidence& e, const std::vector<RankTrace>& traces) {
  std::vector<std::string> no_trace, no_step;
  int first_silent = -1;
  for (size_t r = 0; r < traces.size(); ++r) {
    const int rank = static_cast<int>(r);
    const std::string who = "rank " + std::to_string(rank) + ExitOf(e.launch, rank);
    if (traces[r].missing) no_trace.push_back(who);
    else if (traces[r].steps.empty()) no_step.push_back(who);
    else continue;
    if (first_silent < 0) first_silent = rank;
  }
  if (first_silent < 0) return "";
  std::string logs;
  if (!e.log_dir.empty()) {
    logs = "; see " + e.log_dir.string() + "/rank-<r>.log";
    std::string tail = LogTail(RankLogPath(e.log_dir, first_silent), 1);
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    if (!tail.empty()) logs += "; rank " + std::to_string(first_silent) + " printed last: " + tail;
  }
  if (!no_trace.empty()) {
    // The probe says at a rank's exit what it saw (probe.explain_no_trace): quoted, not guessed.
    const std::string said = e.log_dir.empty() ? "" : LastProbeLine(RankLogPath(e.log_dir, first_silent));
    if (!said.empty()) {
      return "no trace from " + Join(no_trace) + ": rank " + std::to_string(first_silent) + "'s probe said: " + said + logs;
    }
    return "no trace from " + Join(no_trace) +
           ": the probe said nothing (it did not load, or the rank ended before its exit handlers ran: a "
           "signal, os._exit); its messages start with 'lockstep probe:'" + logs;
  }
  return "no step recorded by " + Join(no_step) +
         ": the program initialized torch.distributed but never stepped an optimizer, so no step was checked" + logs;
}

// Recorded traces: every rank's file, and a step in one of them.
std::string NoStepAnywhere(const Evidence& e, const std::vector<RankTrace>& traces) {
  std::vector<std::string> missing;
  bool stepped = false;
  for (const RankTrace& t : traces) {
    if (t.missing) missing.push_back((e.trace_dir / TraceFileName(t.header.rank)).string());
    stepped = stepped || !t.steps.empty();
  }
  if (!missing.empty()) {
    return "no trace for " + std::to_string(missing.size()) + " of " + std::to_string(traces.size()) +
           " ranks: " + Join(missing) + " (the world size comes from rank 0's header; --ranks sets it)";
  }
  if (!stepped) return "no rank recorded a step in " + e.trace_dir.string() + ": nothing to check";
  return "";
}

// Why the traces cannot be judged (nothing was checked), or empty.
std::string Unjudgeable(const Evidence& e, const std::vector<RankTrace>& traces) {
  if (std::string past = TracesPastTheWorld(e); !past.empty()) return past;
  switch (e.demand) {
    case TraceDemand::kNone:
      return "";
    case TraceDemand::kAnyStep:
      if (std::string unreadable = UnreadableTraces(traces, e.trace_dir); !unreadable.empty()) return unreadable;
      return NoStepAnywhere(e, traces);
    case TraceDemand::kEveryRankSteps:
      if (std::string unreadable = UnreadableTraces(traces, e.trace_dir); !unreadable.empty()) return unreadable;
      // A hang inside the first step (every rank began its collectives, none finished the step):
      // the hang is the verdict, and the checkers judge it from the collectives recorded.
      if (e.launch && e.launch->ending == LaunchEnding::kHang) return "";
      return UnobservedRanks(e, traces);
  }
  return "";
}

// Every rank's trace is there, of this world, and readable to its header: a run that cannot be
// judged only for want of steps, whose start-up records can still be (StartUpChecks). Anything
// less is bad input, never compared.
bool OnlyStepsAreMissing(const Evidence& e, const std::vector<RankTrace>& traces) {
  if (!TracesPastTheWorld(e).empty() || !UnreadableTraces(traces, e.trace_dir).empty()) return false;
  return std::none_of(traces.begin(), traces.end(), [](const RankTrace& t) { return t.missing; });
}

// The checkers among `checks` whose inputs every rank records before its first step
// (Checker::judges_start_up): what can still be judged of a run whose steps cannot be.
std::vector<std::string> StartUpChecks(const std::vector<std::string>& checks) {
  std::vector<std::string> out;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(checks)) {
    if (checker->judges_start_up()) out.emplace_back(checker->name());
  }
  return out;
}

// The verdict of a launch that ended before its checks could judge it, if it did.
std::optional<ScenarioResult> VerdictOfEnding(const Evidence& e, const StreamedTraces& run, ScenarioResult r) {
  const LaunchReport& launch = *e.launch;
  if (!EndsBeforeTheChecks(launch.ending)) return std::nullopt;
  r.outcome = Outcome::kError;
  switch (launch.ending) {
    case LaunchEnding::kLaunchFailed:
      r.reason = "the ranks could not be started: " + launch.message;
      return r;
    case LaunchEnding::kInterrupted:
      // By a signal to lockstep, or by the end of the Slurm job the ranks ran in (its message).
      r.reason = launch.message.rfind("interrupted by ", 0) == 0 || launch.message.empty()
                     ? "interrupted (SIGINT/SIGTERM); the ranks were stopped"
                     : launch.message;
      return r;
    case LaunchEnding::kRankError:
      // The harness failed on a rank (configuration, environment, internal, trace I/O): no
      // verdict on the system under test, and the rank's own message says why.
      r.reason = launch.message;
      return r;
    case LaunchEnding::kTimeout:
      r.outcome = Outcome::kTimeout;
      r.reason = "ran past timeout_s = " + std::to_string(e.scenario.timeout_s) + " s; " + launch.message;
      return r;
    case LaunchEnding::kStartupTimeout: {
      // Some ranks never started: only what every rank records before its first step can be
      // compared (the headers, the groups made), and may say why.
      std::vector<std::string> checks = {*CheckerJudging(launch.ending)};
      for (std::string& name : StartUpChecks(e.scenario.checks)) checks.push_back(std::move(name));
      CheckContext context{e.scenario, run.traces, launch};
      context.steps_without_tensors = !run.whole;
      CheckerRun checked = RunCheckers(checks, context, e.scenario.expect_fail);
      r.findings = std::move(checked.findings);
      r.checkers = std::move(checked.verdicts);
      r.outcome = checked.expectation.outcome;
      r.reason = launch.message;
      return r;
    }
    default:
      return std::nullopt;
  }
}

// --compare in-band: rank 0's trace holds the findings the ranks made live. The post-run
// analysis stays the judge of record and the report shows its findings only; an in-band finding
// that differs from it is a harness bug, reported as an error naming both (docs/CHECKERS.md).
void HoldInBandAgainstPostRun(const std::vector<RankTrace>& traces, ScenarioResult* result) {
  if (traces.empty()) return;
  const std::vector<Finding> in_band = InBandFindings(traces.front());
  if (in_band.empty()) return;
  std::vector<std::string> ran;
  for (const CheckerVerdict& v : result->checkers) {
    if (v.outcome != Outcome::kSkipped && v.outcome != Outcome::kError) ran.push_back(v.checker);
  }
  const std::string disagreement = InBandDisagreement(in_band, result->findings, ran);
  if (disagreement.empty()) return;
  result->outcome = Outcome::kError;
  result->reason = disagreement;
}

// The run's traces, streamed through the judges of the checkers that will judge them, started
// with the companion runs they compare each step with.
Result<StreamedTraces> ReadRunTraces(const Evidence& e, const std::vector<std::string>& checks,
                                     const std::map<std::string, std::string>& skip) {
  std::vector<std::string> judged;
  for (const std::string& c : checks) {
    if (!skip.count(c)) judged.push_back(c);
  }
  JudgeStart start;
  start.tolerances = e.scenario.tolerances;
  start.reference = e.companions.reference ? &e.companions.reference->traces : nullptr;
  start.reference_split = e.companions.reference_split ? &e.companions.reference_split->traces : nullptr;
  start.scenario_name = e.scenario.name;
  start.fixtures_dir = e.fixtures_dir;
  start.platform = e.platform;
  return ReadTracesFor(judged, e.trace_dir, e.scenario.ranks, start);
}

// What the traces know better than the scenario: the backend of a program that picks its own, how
// many steps were recorded (a scenario's count when it ran to its end, fewer when it stopped), and
// the host each rank ran on.
void FillFromTraces(const std::vector<RankTrace>& traces, ScenarioResult& r) {
  int64_t recorded = 0;
  bool any = false;
  for (const RankTrace& t : traces) {
    if (r.backend.empty()) r.backend = t.header.backend;
    for (const StepRecord& s : t.steps) {
      recorded = std::max(recorded, s.step);
      any = true;
    }
    if (!t.header.host.empty()) r.rank_hosts[t.header.rank] = t.header.host;
  }
  if (any) r.steps = recorded;
}

// On several hosts every finding says where its ranks ran: "[ranks 2,3 on node1]", also in
// details["hosts"]. One host: nothing added.
void NameHosts(const std::map<int, std::string>& rank_hosts, std::vector<Finding>& findings) {
  std::set<std::string> hosts;
  for (const auto& [rank, host] : rank_hosts) hosts.insert(host);
  if (hosts.size() < 2) return;
  for (Finding& f : findings) {
    if (f.ranks.empty()) continue;
    std::map<std::string, std::vector<int>> by_host;
    for (int r : f.ranks) {
      auto it = rank_hosts.find(r);
      by_host[it == rank_hosts.end() ? std::string("an unknown host") : it->second].push_back(r);
    }
    std::string where;
    for (const auto& [host, ranks] : by_host) {
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
      where += (where.empty() ? "" : "; ") + std::string(ranks.size() == 1 ? "rank " : "ranks ") + list + " on " + host;
    }
    f.message += " [" + where + "]";
    f.details["hosts"] = where;
  }
}

// The worse of two verdicts for a program judged in parts (its spawnings): nothing checked
// (error, timeout) over a finding (fail) over a pass.
int Severity(Outcome o) {
  switch (o) {
    case Outcome::kError: return 4;
    case Outcome::kTimeout: return 3;
    case Outcome::kFail:
    case Outcome::kXpass: return 2;
    case Outcome::kPass:
    case Outcome::kXfail: return 1;
    case Outcome::kSkipped: return 0;
  }
  return 0;
}

// A checker's verdicts over every spawning: the worst outcome, what each compared added up.
void MergeVerdicts(const std::vector<CheckerVerdict>& part, std::vector<CheckerVerdict>& into) {
  for (const CheckerVerdict& v : part) {
    auto it = std::find_if(into.begin(), into.end(), [&](const CheckerVerdict& x) { return x.checker == v.checker; });
    if (it == into.end()) {
      into.push_back(v);
      continue;
    }
    it->duration_s += v.duration_s;
    if (Severity(v.outcome) > Severity(it->outcome)) {
      it->outcome = v.outcome;
      it->skip_reason = v.skip_reason;
    }
    if (v.judged && !it->judged) {
      it->judged = v.judged;
    } else if (v.judged) {
      it->judged->tensors += v.judged->tensors;
      it->judged->steps += v.judged->steps;
      it->judged->groups += v.judged->groups;
      it->judged->comparisons += v.judged->comparisons;
    }
  }
}

ScenarioResult JudgeOne(const Evidence& e, ScenarioResult r, bool follow_spawnings);

// A program that started its own ranks (torch.multiprocessing.spawn under --ranks 1): the process
// lockstep launched is their launcher, and each spawning is a world of its own, judged as one with
// the size its ranks declared (trace_folder.h). Every finding, and the reason of a spawning that
// could not be checked, names its spawning; the program's verdict is the worst of them. The
// launched process's own ending still counts: an ending the watch found in a spawned world (a hang,
// a start-up timeout: LaunchReport::spawning) is judged in that world, and so is a crash that is a
// spawned rank's (mp.spawn raised); any other ending of it is judged as its own, demanding no trace.
ScenarioResult JudgeSpawnings(const Evidence& e, const std::vector<Spawning>& spawnings, ScenarioResult r) {
  // The evidence of one part: e's, without its companion runs (none are made for exec).
  auto part_of = [&e]() {
    Evidence part;
    part.scenario = e.scenario;
    part.trace_dir = e.trace_dir;
    part.log_dir = e.log_dir;
    part.launch = e.launch;
    part.have_scenario_file = e.have_scenario_file;
    part.demand = e.demand;
    part.fixtures_dir = e.fixtures_dir;
    part.platform = e.platform;
    return part;
  };
  const int launched_ranks = r.ranks;
  r.findings.clear();
  r.checkers.clear();
  r.outcome = Outcome::kPass;
  r.reason.clear();
  r.steps = 0;
  std::vector<std::string> reasons;
  bool placed = false;  // the launch's ending is a spawned world's, judged in that world
  auto take = [&](ScenarioResult part, const std::string& label) {
    if (Severity(part.outcome) > Severity(r.outcome)) r.outcome = part.outcome;
    if (!part.reason.empty()) reasons.push_back(label + ": " + part.reason);
    // The series of the first spawning with a finding, else of the last: one world's plots.
    if (r.findings.empty()) r.series = std::move(part.series);
    for (Finding& f : part.findings) {
      f.message = label + ": " + f.message;
      r.findings.push_back(std::move(f));
    }
    MergeVerdicts(part.checkers, r.checkers);
    if (r.backend.empty()) r.backend = part.backend;
    for (const auto& [rank, host] : part.rank_hosts) r.rank_hosts.emplace(rank, host);
    return part.steps;
  };
  for (const Spawning& s : spawnings) {
    Evidence world = part_of();
    world.scenario.ranks = std::max(1, s.world);
    world.trace_dir = s.dir;
    world.log_dir.clear();  // the spawned ranks print into the launched process's log
    world.launch.reset();   // their ending is in their traces; the launcher's is judged below
    if (e.launch && e.launch->spawning == s.index) {
      world.launch = e.launch;  // the watch's verdict of this world, of its ranks
      placed = true;
    }
    // A world whose ranks did not all end cleanly crashed. mp.spawn raises in the launcher when a
    // rank it started fails, and the program ends there: a crash of the launch is the last
    // spawning's. A world started with multiprocessing.Process raises nothing, and the launched
    // process may go on (even end cleanly). Which rank the launch cannot say (it saw one process);
    // the crash checker names the ranks without their clean-exit footer.
    if (!world.launch && e.launch && (e.launch->ending == LaunchEnding::kClean || e.launch->ending == LaunchEnding::kCrash) &&
        !EveryRankEnded(s)) {
      const bool raised = !placed && &s == &spawnings.back() && e.launch->ending == LaunchEnding::kCrash;
      LaunchReport crashed;
      crashed.ending = LaunchEnding::kCrash;
      crashed.message = raised ? "torch.multiprocessing.spawn raised in the launched process (its log: " +
                                     RankLogPath(e.log_dir, 0).string() + ")"
                               : "a rank of this world ended without its clean-exit footer, and the launched process "
                                 "went on (a multiprocessing.Process that fails raises nothing there)";
      world.launch = crashed;
      placed = placed || raised;
    }
    world.demand = e.demand;  // exec: every rank stepped; check: a step somewhere
    ScenarioResult part;
    part.id = r.id;
    const size_t before = r.findings.size();
    r.steps += take(JudgeOne(world, std::move(part), /*follow_spawnings=*/false), s.Label());
    for (size_t i = before; i < r.findings.size(); ++i) {
      r.findings[i].details["spawning"] = std::to_string(s.index);
      if (!s.function.empty()) r.findings[i].details["spawned_function"] = s.function;
    }
  }
  if (e.launch && e.launch->ending != LaunchEnding::kClean && !placed) {
    Evidence launcher = part_of();
    launcher.scenario.ranks = launched_ranks > 0 ? launched_ranks : e.scenario.ranks;
    launcher.demand = TraceDemand::kNone;  // the launcher of its ranks writes no trace of its own
    ScenarioResult part;
    part.id = r.id;
    part = JudgeOne(launcher, std::move(part), /*follow_spawnings=*/false);
    r.rank_logs = part.rank_logs;
    take(std::move(part), "the launched process (it spawned " + std::to_string(spawnings.size()) +
                              (spawnings.size() == 1 ? " world)" : " worlds)"));
  }
  for (const std::string& why : reasons) r.reason += (r.reason.empty() ? "" : "; ") + why;
  return r;
}


}  // namespace

bool EndsBeforeTheChecks(LaunchEnding ending) {
  switch (ending) {
    case LaunchEnding::kLaunchFailed:
    case LaunchEnding::kInterrupted:
    case LaunchEnding::kRankError:
    case LaunchEnding::kStartupTimeout:
    case LaunchEnding::kTimeout:
      return true;
    case LaunchEnding::kClean:
    case LaunchEnding::kCrash:
    case LaunchEnding::kHang:
    case LaunchEnding::kNodeLost:  // the steps every rank reached are still checked
      return false;
  }
  return false;
}

std::map<std::string, std::string> SkippedForWantOfInputs(const std::vector<std::string>& checks,
                                                          bool have_scenario_file, bool have_launch) {
  std::map<std::string, std::string> skip;
  if (have_scenario_file) return skip;
  for (const std::unique_ptr<Checker>& checker : MakeCheckers(checks)) {
    std::string why = WhyNotWithoutScenario(*checker, have_launch);
    if (!why.empty()) skip[std::string(checker->name())] = std::move(why);
  }
  return skip;
}

std::vector<std::string> ChecksJudging(std::vector<std::string> checks, const std::optional<LaunchReport>& launch) {
  if (!launch) return checks;
  std::optional<std::string> judge = CheckerJudging(launch->ending);
  if (judge && std::find(checks.begin(), checks.end(), *judge) == checks.end()) checks.push_back(std::move(*judge));
  return checks;
}

namespace {

// Judge, where `follow_spawnings` false judges `e.trace_dir` itself, as one world, whatever
// spawn-<k>/ folders it holds (a spawning's own world, or the process that spawned them).
ScenarioResult JudgeOne(const Evidence& e, ScenarioResult r, bool follow_spawnings) {
  auto error = [&r](std::string reason) {
    r.outcome = Outcome::kError;
    r.reason = std::move(reason);
    return r;
  };
  const std::vector<std::string> checks = ChecksJudging(e.scenario.checks, e.launch);
  std::map<std::string, std::string> skip = SkippedForWantOfInputs(checks, e.have_scenario_file, e.launch.has_value());
  Result<StreamedTraces> run = ReadRunTraces(e, checks, skip);
  if (!run.ok()) return error(run.status().ToString());
  for (int rank = 0; !e.log_dir.empty() && rank < e.scenario.ranks; ++rank) {
    std::string tail = LogTail(RankLogPath(e.log_dir, rank), 40);
    if (!tail.empty()) r.rank_logs[rank] = tail;
  }
  if (e.launch && e.launch->ending == LaunchEnding::kLaunchFailed) return *VerdictOfEnding(e, *run, std::move(r));
  // A copy of a program that starts its own ranks, launched on several: the probe stopped it at
  // its spawn (probe/lockstep/_spawn.py), and its exit is that refusal, not a crash.
  if (std::optional<std::string> refused = RefusedSpawn(e.trace_dir)) return error(*refused);
  r.series = std::move(run->series);
  const std::vector<Spawning> spawnings = follow_spawnings ? SpawningsIn(e.trace_dir) : std::vector<Spawning>{};
  // The watch follows the newest spawning's world; the launched process itself records nothing, so
  // each of its own phases outside its spawnings is bounded as a start-up is (launcher.cc).
  const bool ended_in_a_spawning = !spawnings.empty() && e.launch && e.launch->spawning > 0;
  if (!spawnings.empty() && e.launch && e.launch->ending == LaunchEnding::kStartupTimeout && !ended_in_a_spawning) {
    return error("the program started its own ranks (" + std::to_string(spawnings.size()) +
                 (spawnings.size() == 1 ? " spawning" : " spawnings") + ", the last " + spawnings.back().Label() +
                 ", whose ranks all finished) and then neither started another nor ended within --startup-timeout (" +
                 std::to_string(static_cast<int>(e.scenario.startup_timeout_s)) +
                 " s): the launched process records nothing of its own, so each of its phases outside its spawnings "
                 "(loading, a checkpoint, an evaluation) is bounded as a start-up is; raise --startup-timeout past the "
                 "longest");
  }
  if (e.launch && !ended_in_a_spawning) {
    if (std::optional<ScenarioResult> ended = VerdictOfEnding(e, *run, r)) return std::move(*ended);
  }
  if (!spawnings.empty()) return JudgeSpawnings(e, spawnings, std::move(r));
  FillFromTraces(run->traces, r);
  if (std::string why = Unjudgeable(e, run->traces); !why.empty()) {
    if (!OnlyStepsAreMissing(e, run->traces)) return error(why);
    // No step to compare (a reproduction script that never steps an optimizer): what the ranks
    // recorded before one may still be a finding, and then it is the verdict, not an error.
    CheckContext context{e.scenario, run->traces, e.launch ? *e.launch : LaunchReport{}};
    context.steps_without_tensors = !run->whole;
    CheckerRun checked = RunCheckers(StartUpChecks(checks), context, e.scenario.expect_fail);
    if (checked.findings.empty()) return error(why);
    r.findings = std::move(checked.findings);
    r.checkers = std::move(checked.verdicts);
    r.outcome = checked.expectation.outcome;
    r.reason = why + "; only what every rank records before its first step was judged";
    NameHosts(r.rank_hosts, r.findings);
    return r;
  }
  if (!e.companions.interrupted_during.empty()) {
    return error("interrupted (SIGINT/SIGTERM) during the " + e.companions.interrupted_during +
                 " run; the ranks were stopped");
  }

  static const LaunchReport kNoLaunch;  // recorded traces: no checker that needs one runs
  CheckContext context{e.scenario, run->traces, e.launch ? *e.launch : kNoLaunch};
  context.steps_without_tensors = !run->whole;
  context.reference = e.companions.reference ? &e.companions.reference->traces : nullptr;
  context.reference_split = e.companions.reference_split ? &e.companions.reference_split->traces : nullptr;
  context.repeat = e.companions.repeat ? &e.companions.repeat->traces : nullptr;
  context.fixtures_dir = e.fixtures_dir;
  context.platform = e.platform;
  CheckerRunOptions options;
  options.skip = std::move(skip);
  options.skip.insert(e.companions.skip.begin(), e.companions.skip.end());
  options.findings_instead = e.companions.findings_instead;
  options.judges = run->judges_by_name();
  CheckerRun checked = RunCheckers(checks, context, e.scenario.expect_fail, options);
  r.findings = std::move(checked.findings);
  r.checkers = std::move(checked.verdicts);
  r.outcome = checked.expectation.outcome;
  r.reason = checked.expectation.reason;
  HoldInBandAgainstPostRun(run->traces, &r);
  NameHosts(r.rank_hosts, r.findings);
  return r;
}

}  // namespace

ScenarioResult Judge(const Evidence& e, ScenarioResult r) { return JudgeOne(e, std::move(r), /*follow_spawnings=*/true); }

}  // namespace lockstep
