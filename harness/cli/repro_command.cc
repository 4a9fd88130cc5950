// `lockstep repro DIR SCENARIO`: re-runs one failing scenario of a run directory with the same
// file and seeds, stops every rank at the step of its first finding, saves the tensors the finding
// names on every rank, and prints the element-wise comparison of bin/lockstep-tensors. The ranks
// start through the launcher as in `lockstep run`; the comparison runs as a separate program
// because reading tensors needs LibTorch, which this executable does not link.
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "checkers/checker_registry.h"
#include "harness/cli/command.h"
#include "harness/cli/flag_checks.h"
#include "harness/launcher/launcher.h"
#include "harness/launcher/process_tree.h"
#include "harness/result/run_result_json.h"
#include "harness/runner/lockstep_rank_program.h"
#include "harness/scenario/scenario_writer.h"
#include "harness/trace/trace_record.h"

namespace lockstep {
namespace {

struct ReproFlags {
  std::string dir;
  std::string scenario;
  std::string launcher;
  std::string backend;
  std::string scenario_file;
  std::vector<std::string> mpirun_args;
};

// "replica_weights, synced_grads, optimizer_state or buffers": the checkers whose findings name
// tensors (the registry's), for the texts that say which findings repro prefers.
std::string TensorCheckerList() {
  std::vector<std::string> names;
  for (const std::string& name : CheckerNames()) {
    if (TensorKindNamedBy(name)) names.push_back(name);
  }
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  return text;
}

std::optional<std::string> TensorKindOf(const Finding& f) {
  auto it = f.details.find("kind");
  if (it != f.details.end() && !it->second.empty()) return it->second;
  if (std::optional<TensorKind> kind = TensorKindNamedBy(f.checker)) return std::string(ToString(*kind));
  return std::nullopt;
}

// The first finding with a step from a tensor checker, else the first finding with a step.
const Finding* PickFinding(const ScenarioResult& s, bool* preferred) {
  for (const auto& f : s.findings) {
    if (f.step && TensorKindOf(f)) {
      *preferred = true;
      return &f;
    }
  }
  *preferred = false;
  for (const auto& f : s.findings) {
    if (f.step) return &f;
  }
  return nullptr;
}

// A tensor name as a glob that matches only itself.
std::string EscapeGlob(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// What --dump-tensors gets: the finding's tensors, qualified by kind where the checker says which;
// everything when the finding names no tensor (a finite or collective_order finding).
std::vector<std::string> DumpPatterns(const Finding& f) {
  std::vector<std::string> names = f.tensors;
  if (names.empty() && !f.tensor.empty()) names.push_back(f.tensor);
  if (names.empty()) return {"*"};
  const std::optional<std::string> kind = TensorKindOf(f);
  std::vector<std::string> patterns;
  for (const auto& n : names) patterns.push_back(kind ? *kind + ":" + EscapeGlob(n) : EscapeGlob(n));
  return patterns;
}

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string RankText(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::string PythonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A file to load in the Python example: the finding's tensor on its first odd rank when saved.
std::optional<std::filesystem::path> ExampleFile(const std::filesystem::path& tensors_dir, const Finding& f) {
  const int rank = f.ranks.empty() ? 0 : f.ranks.front();
  const std::filesystem::path rank_dir = tensors_dir / ("rank-" + std::to_string(rank));
  std::ifstream in(rank_dir / "index.json");
  if (!in) return std::nullopt;
  const nlohmann::json index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("tensors") || !index["tensors"].is_array()) return std::nullopt;
  std::optional<std::filesystem::path> first;
  for (const auto& t : index["tensors"]) {
    if (!t.is_object() || !t.contains("file") || !t["file"].is_string()) continue;
    const std::filesystem::path file = rank_dir / t["file"].get<std::string>();
    if (!first) first = file;
    if (t.value("name", std::string()) == f.tensor) return file;
  }
  return first;
}

// Runs `argv` with stdout and stderr into `output`; its wait status.
Result<int> RunToFile(const std::vector<std::string>& argv, const std::filesystem::path& output) {
  ProcessTree tree(NewLaunchId());
  LaunchCommand cmd;
  cmd.argv = argv;
  cmd.output = output;
  LOCKSTEP_ASSIGN_OR_RETURN(pid_t pid, tree.Spawn(cmd));
  for (;;) {
    if (std::optional<int> status = tree.Poll(pid)) return *status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}


// What repro re-runs: the scenario of the report, the finding it stops at, the file it loads.
struct ReproPlan {
  ScenarioResult recorded;
  Finding finding;
  bool preferred = false;  // a tensor checker's finding
  std::filesystem::path file;
  Scenario scenario;  // loaded after the finding is shown (LoadReproScenario)
};

Result<ReproPlan> PlanRepro(const ReproFlags& flags, const RunResult& report) {
  const std::filesystem::path report_file = std::filesystem::path(flags.dir) / "report.json";
  ReproPlan plan;
  std::vector<std::string> ids;
  const ScenarioResult* found = nullptr;
  for (const auto& s : report.scenarios) {
    ids.push_back(s.id);
    if (s.id == flags.scenario) found = &s;
  }
  if (!found) {
    return InvalidArgumentError("no scenario '" + flags.scenario + "' in " + report_file.string() + " (it has: " +
                                (ids.empty() ? std::string("none") : Join(ids, ", ")) + ")");
  }
  plan.recorded = *found;
  // A run of `lockstep exec` (or a `check` of traces) has no scenario file to re-run.
  if (plan.recorded.file.empty() && flags.scenario_file.empty()) {
    return InvalidArgumentError("scenario '" + flags.scenario + "' in " + report_file.string() +
                                " has no scenario file (it was run by `lockstep exec` or judged by `lockstep check`): "
                                "repro re-runs scenario files of `lockstep run` only; --scenario-file names one");
  }
  const Finding* finding = PickFinding(plan.recorded, &plan.preferred);
  if (!finding) {
    return InvalidArgumentError("scenario '" + flags.scenario + "' (" + ToString(plan.recorded.outcome) +
                                ") has no finding with a step: nothing to stop at and reproduce");
  }
  plan.finding = *finding;
  plan.file = flags.scenario_file.empty() ? plan.recorded.file : flags.scenario_file;
  return plan;
}

// The scenario file the plan re-runs, its diagnostics printed.
Result<Scenario> LoadReproScenario(const ReproFlags& flags, const ReproPlan& plan, const CommandEnvironment& env) {
  std::vector<Diagnostic> diagnostics;
  Result<Scenario> scenario = LoadScenarioFile(plan.file, env.load_options, &diagnostics);
  for (const auto& d : diagnostics) *env.err << d.ToString() << "\n";
  if (scenario.ok()) return scenario;
  return InvalidArgumentError("scenario file " + plan.file.string() + ": " + scenario.status().message() +
                              (flags.scenario_file.empty() ? " (the path report.json records, from the folder "
                                                             "`lockstep run` ran in; --scenario-file names another)"
                                                           : ""));
}

// The re-run up to the finding's step, saving its tensors under `tensors_dir`.
Status ReRun(const ReproFlags& flags, const RunResult& report, const ReproPlan& plan,
             const std::filesystem::path& repro_dir, const CommandEnvironment& env) {
  const int64_t step = *plan.finding.step;
  LauncherKind launcher = LauncherKind::kMpirun;
  if (!flags.launcher.empty()) {
    launcher = *FromString<LauncherKind>(flags.launcher);
  } else if (auto recorded = FromString<LauncherKind>(report.context.launcher)) {
    launcher = *recorded;
  }
  LOCKSTEP_RETURN_IF_ERROR(CheckMpirunArgs(flags.mpirun_args, launcher));
  LOCKSTEP_RETURN_IF_ERROR(CheckScenarioLauncher(launcher));
  LOCKSTEP_RETURN_IF_ERROR(CheckAsyncCaptureSetting());
  std::string backend = flags.backend.empty() ? plan.recorded.backend : flags.backend;
  if (!FromString<Backend>(backend)) backend = ToString(plan.scenario.backend);
  if (backend == "nccl" && !env.load_options.nccl_available) {
    return InvalidArgumentError("the scenario ran on nccl and this build has no NCCL; pass --backend mpi or gloo");
  }
  LaunchSpec spec;
  spec.kind = launcher;
  spec.ranks = plan.scenario.ranks;
  spec.trace_dir = repro_dir / "traces";
  spec.log_dir = repro_dir / "logs";
  spec.hang_timeout_s = plan.scenario.hang_timeout_s;
  spec.quiet_timeout_s = plan.scenario.quiet_timeout_s;
  spec.startup_timeout_s = plan.scenario.startup_timeout_s;
  spec.timeout_s = plan.scenario.timeout_s;
  spec.mpirun_args = flags.mpirun_args;
  LockstepRankOptions rank;
  rank.program = env.program_dir / "lockstep-rank";
  rank.repro = ReproTarget{step, DumpPatterns(plan.finding), repro_dir / "tensors"};
  Scenario resolved = plan.scenario;
  resolved.backend = *FromString<Backend>(backend);
  const LaunchPaths paths{spec.trace_dir, repro_dir / "scenario.yaml"};
  std::error_code ec;
  std::filesystem::remove_all(repro_dir, ec);  // an earlier repro: its tensors must not be compared
  std::filesystem::create_directories(spec.trace_dir, ec);
  std::filesystem::create_directories(spec.log_dir, ec);
  if (ec) return IoError("creating " + repro_dir.string() + ": " + ec.message());
  LOCKSTEP_RETURN_IF_ERROR(
      WriteScenarioFile(resolved, paths.scenario_file, "lockstep repro of " + plan.file.string() + " on " + backend));
  spec.rank_command = LockstepRankProgram(rank).Invocation(resolved, RankRun::kRepro, paths).argv;
  *env.out << "re-running " << plan.recorded.id << " (" << plan.file.string() << ") on " << plan.scenario.ranks
           << " ranks, launcher " << ToString(launcher) << ", backend " << backend << ", up to step " << step
           << ", saving " << Join(rank.repro->dump_patterns, ",") << "\n"
           << std::flush;

  LOCKSTEP_ASSIGN_OR_RETURN(const LaunchReport launch, Launch(spec));
  if (launch.ending == LaunchEnding::kClean) return Status::Ok();
  std::string why = "the re-run ended with " + std::string(ToString(launch.ending)) + " before saving the tensors" +
                    (launch.message.empty() ? "" : ": " + launch.message);
  for (const auto& r : launch.ranks) {
    if (!r.note.empty() && !r.killed_by_launcher) why += "\n  rank " + std::to_string(r.rank) + ": " + r.note;
  }
  return InternalError(why + "\n  rank logs: " + spec.log_dir.string());
}

CommandResult Repro(const ReproFlags& flags, const CommandEnvironment& env) {
  std::ostream& out = *env.out;
  const std::filesystem::path dir = flags.dir;
  Result<RunResult> report = ReadRunResultFile((dir / "report.json").string());
  if (!report.ok()) return InvalidArgumentError(report.status().message());
  LOCKSTEP_ASSIGN_OR_RETURN(ReproPlan plan, PlanRepro(flags, *report));
  const int64_t step = *plan.finding.step;
  out << "finding: " << plan.finding.checker << " at step " << step;
  if (!plan.finding.ranks.empty()) out << ", " << RankText(plan.finding.ranks);
  if (!plan.finding.tensor.empty()) out << ", tensor " << plan.finding.tensor;
  out << (plan.preferred ? " (the first tensor finding with a step)"
                         : " (no " + TensorCheckerList() + " finding: the first finding with a step; every tensor is saved)")
      << "\n  " << plan.finding.message << "\n";
  LOCKSTEP_ASSIGN_OR_RETURN(plan.scenario, LoadReproScenario(flags, plan, env));
  if (plan.scenario.ranks != plan.recorded.ranks || plan.scenario.steps != plan.recorded.steps) {
    *env.err << "lockstep repro: warning: " << plan.file.string() << " now has ranks " << plan.scenario.ranks
             << ", steps " << plan.scenario.steps << "; the recorded run had ranks " << plan.recorded.ranks
             << ", steps " << plan.recorded.steps << ": the file changed since\n";
  }
  if (step > plan.scenario.steps) {
    return InvalidArgumentError("the finding's step " + std::to_string(step) + " is past the scenario's " +
                                std::to_string(plan.scenario.steps) + " steps");
  }
  const std::filesystem::path repro_dir = dir / plan.recorded.id / "repro";
  const std::filesystem::path tensors_dir = repro_dir / "tensors";
  LOCKSTEP_RETURN_IF_ERROR(ReRun(flags, *report, plan, repro_dir, env));

  const std::filesystem::path summary = repro_dir / "compare.txt";
  Result<int> compared =
      RunToFile({(env.program_dir / "lockstep-tensors").string(), "compare", tensors_dir.string()}, summary);
  if (!compared.ok()) return InternalError("running lockstep-tensors: " + compared.status().ToString());
  const std::string text = ReadFile(summary);
  const int code = WIFEXITED(*compared) ? WEXITSTATUS(*compared) : -1;
  if (code != ToInt(ExitCode::kPassed) && code != ToInt(ExitCode::kCheckFailed)) {
    *env.err << text;
    return InternalError("lockstep-tensors compare failed (exit " + std::to_string(code) + ")");
  }
  out << "\n" << text << "\n";
  out << "tensors: " << tensors_dir.string() << "/rank-<r>/<kind>__<name>.pt, listed in each rank's index.json"
      << "\nsummary: " << summary.string() << "\n";
  if (auto example = ExampleFile(tensors_dir, plan.finding)) {
    out << "load one in Python:\n"
        << "  import torch\n"
        << "  t = torch.load(" << PythonString(example->string()) << ")\n";
  }
  if (code == ToInt(ExitCode::kCheckFailed)) {
    out << "reproduced: the ranks differ after step " << step << "\n";
    return CommandVerdict::kPassed;
  }
  out << "not reproduced: the saved tensors are identical across ranks after step " << step << "\n";
  return CommandVerdict::kFailed;
}

}  // namespace

Command AddReproCommand(CLI::App& app, const CommandEnvironment& env) {
  auto flags = std::make_shared<ReproFlags>();
  CLI::App* cmd = app.add_subcommand(
      "repro",
      "Re-run one failing scenario of a run directory with the same scenario file and seeds, stop every rank "
      "after the step of its first finding (a " + TensorCheckerList() +
          " finding when there is one), save the tensors that finding names on every rank under DIR/<id>/repro/tensors/ "
      "(torch.load reads them), and print an element-wise comparison across ranks: differing elements, max "
      "absolute and relative difference, first differing indices. Exit 0 the difference reproduced, 1 the "
      "re-run showed no difference, 2 bad input (no such scenario in the report, or no finding with a step), "
      "3 the re-run itself failed.");
  cmd->add_option("dir", flags->dir, "Run directory of a `lockstep run` (holds report.json)")->required()->type_name("DIR");
  cmd->add_option("scenario", flags->scenario, "Id of the scenario to reproduce, as in report.json")
      ->required()
      ->type_name("SCENARIO");
  cmd->add_option("--launcher", flags->launcher,
                  "How ranks start: mpirun, srun, local or none (default: the launcher the report records)")
      ->check(CLI::IsMember(NameList<LauncherKind>()));
  cmd->add_option("--backend", flags->backend,
                  CLI::detail::join(NameList<Backend>(), ", ") + " (default: the backend the scenario ran with)")
      ->check(CLI::IsMember(NameList<Backend>()));
  cmd->add_option("--scenario-file", flags->scenario_file,
                  "The scenario file, when the path in report.json does not resolve from here")
      ->type_name("FILE");
  cmd->add_option("--mpirun-args", flags->mpirun_args, "Extra arguments for mpirun or srun (repeatable)");

  return {cmd, [flags, &env]() -> CommandResult { return Repro(*flags, env); }};
}

}  // namespace lockstep
