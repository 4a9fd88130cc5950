// The CI files users copy (ci/github/*.yml, ci/slurm/lockstep.sbatch, docs/CI.md): the workflows
// parse and have the structure GitHub Actions needs for a GPU job that always leaves its reports
// behind, and every `lockstep` command line in them runs with this build: the subcommand exists
// (`lockstep SUB --help` exits 0) and every --flag it passes is one that help lists.
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"

#include "harness/cli/testing/run_program.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

const fs::path kSource = LOCKSTEP_SOURCE_DIR;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

YAML::Node LoadWorkflow(const std::string& name) {
  try {
    return YAML::LoadFile((kSource / "ci" / "github" / name).string());
  } catch (const YAML::Exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
    return YAML::Node();
  }
}

std::string Scalar(const YAML::Node& node) { return node && node.IsScalar() ? node.as<std::string>() : ""; }

// node[k1][k2]...: undefined when any key is missing (yaml-cpp throws when indexing below a
// missing key, and assigning a Node would write into the tree, so the walk rebinds with reset()).
YAML::Node At(const YAML::Node& root, std::initializer_list<std::string> keys) {
  YAML::Node node;
  node.reset(root);
  for (const std::string& key : keys) {
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& parent = node;
    YAML::Node child = parent[key];
    if (!child.IsDefined()) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(child);
  }
  return node;
}

// `if: always()` as GitHub reads it: with or without the ${{ }} wrapper.
bool IsAlways(const YAML::Node& condition) {
  static const std::regex always(R"(\s*(\$\{\{\s*)?always\(\)(\s*\}\})?\s*)");
  return std::regex_match(Scalar(condition), always);
}

// The first step of `job` that uses the action `name` (any version), or an undefined node.
YAML::Node StepUsing(const YAML::Node& job, const std::string& name) {
  for (const YAML::Node& step : job["steps"]) {
    if (Scalar(step["uses"]).rfind(name + "@", 0) == 0) return step;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

int StepIndex(const YAML::Node& job, const std::function<bool(const YAML::Node&)>& match) {
  int i = 0;
  for (const YAML::Node& step : job["steps"]) {
    if (match(step)) return i;
    ++i;
  }
  return -1;
}

bool RunContains(const YAML::Node& step, const std::string& text) {
  return Scalar(step["run"]).find(text) != std::string::npos;
}

// Every job: a timeout, a container with every GPU, and Open MPI allowed to run as root (job or
// workflow env: containers run as root).
void ExpectGpuContainerJob(const YAML::Node& workflow, const std::string& job_name) {
  SCOPED_TRACE(job_name);
  const YAML::Node job = At(workflow, {"jobs", job_name});
  ASSERT_TRUE(job.IsMap());
  EXPECT_FALSE(Scalar(job["timeout-minutes"]).empty());
  EXPECT_THAT(Scalar(At(job, {"container", "options"})), HasSubstr("--gpus all"));
  EXPECT_FALSE(Scalar(At(job, {"container", "image"})).empty());
  for (const char* var : {"OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"}) {
    const YAML::Node job_env = At(job, {"env", var});
    const std::string value = job_env ? Scalar(job_env) : Scalar(At(workflow, {"env", var}));
    EXPECT_EQ(value, "1") << var;
  }
  EXPECT_GE(StepIndex(job, [](const YAML::Node& s) { return Scalar(s["uses"]).rfind("actions/checkout@", 0) == 0; }),
            0);
  EXPECT_GE(StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "ci/install-deps.sh"); }), 0);
  EXPECT_GE(StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "ci/build.sh"); }), 0);
}

// The run directory goes up whatever happened, after the run.
void ExpectUploadsOutAlways(const YAML::Node& job) {
  const YAML::Node upload = StepUsing(job, "actions/upload-artifact");
  ASSERT_TRUE(upload.IsDefined()) << "no actions/upload-artifact step";
  EXPECT_TRUE(IsAlways(upload["if"])) << "upload: if: " << Scalar(upload["if"]);
  EXPECT_THAT(Scalar(At(upload, {"with", "path"})), MatchesRegex("out/?"));
  const int run = StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "bin/lockstep run"); });
  const int up = StepIndex(job, [](const YAML::Node& s) { return Scalar(s["uses"]).rfind("actions/upload-artifact@", 0) == 0; });
  EXPECT_GE(run, 0);
  EXPECT_GT(up, run);
}

// --- Every `lockstep` command line in the CI files ---

struct Invocation {
  std::string where;       // file and what in it, for messages
  std::string subcommand;  // "run", or a top-level flag such as "--version"
  std::vector<std::string> flags;
};

// Shell text: continuation lines joined; comment lines dropped (an example in a comment is not a
// command this file runs).
std::vector<std::string> LogicalLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(" \t");
    if (pending.empty() && first != std::string::npos && line[first] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    lines.push_back(pending + line);
    pending.clear();
  }
  if (!pending.empty()) lines.push_back(pending);
  return lines;
}

// `.../bin/lockstep SUB ...` up to the end of that command (a pipe, ;, && or a closing quote of
// the surrounding text ends it).
void ExtractInvocations(const std::string& text, const std::string& where, std::vector<Invocation>* out) {
  // A subcommand is a lower-case word, or a top-level flag (--version).
  static const std::regex invocation(R"(bin/lockstep["']?[ \t]+([a-z][-a-z0-9]*|--[a-z][-a-z0-9]*)([^;|&`]*))");
  static const std::regex flag(R"((^|[\s"'({=+:])(--[A-Za-z][-A-Za-z0-9]*))");
  for (const std::string& line : LogicalLines(text)) {
    for (auto it = std::sregex_iterator(line.begin(), line.end(), invocation); it != std::sregex_iterator(); ++it) {
      Invocation inv;
      inv.where = where;
      inv.subcommand = (*it)[1].str();
      const std::string rest = (*it)[2].str();
      for (auto f = std::sregex_iterator(rest.begin(), rest.end(), flag); f != std::sregex_iterator(); ++f) {
        inv.flags.push_back((*f)[2].str());
      }
      out->push_back(inv);
    }
  }
}

std::vector<Invocation> WorkflowInvocations(const std::string& name) {
  std::vector<Invocation> found;
  const YAML::Node workflow = LoadWorkflow(name);
  for (const auto& job : workflow["jobs"]) {
    for (const YAML::Node& step : job.second["steps"]) {
      const std::string where = name + " job " + job.first.as<std::string>() + " step " +
                                (step["name"] ? Scalar(step["name"]) : Scalar(step["uses"]));
      ExtractInvocations(Scalar(step["run"]), where, &found);
      ExtractInvocations(Scalar(At(step, {"with", "script"})), where + " (script)", &found);
    }
  }
  return found;
}

bool HelpListsFlag(const std::string& help, const std::string& flag) {
  const std::regex listed("(^|[\\s,\\[])" + flag + "([\\s=,\\]]|$)");
  return std::regex_search(help, listed);
}

void ExpectEveryInvocationWorks(const std::vector<Invocation>& invocations) {
  for (const Invocation& inv : invocations) {
    SCOPED_TRACE(inv.where + ": lockstep " + inv.subcommand);
    const bool top_level = inv.subcommand.rfind("-", 0) == 0;
    std::vector<std::string> args;
    if (!top_level) args.push_back(inv.subcommand);
    args.push_back("--help");
    const testing::ProgramResult help = testing::RunProgram(testing::LockstepBinary(), args, kSource);
    EXPECT_EQ(help.exit_code, 0) << "`lockstep " << inv.subcommand << " --help` failed: " << help.err;
    if (help.exit_code != 0) continue;
    // CLI11 prints the main help, exit 0, for `lockstep no-such-subcommand --help`.
    if (!top_level) {
      EXPECT_THAT(help.out, HasSubstr("Usage: lockstep " + inv.subcommand + " ")) << "no subcommand " << inv.subcommand;
    }
    if (top_level) {
      EXPECT_TRUE(HelpListsFlag(help.out, inv.subcommand)) << help.out;
    }
    for (const std::string& f : inv.flags) {
      EXPECT_TRUE(HelpListsFlag(help.out, f)) << f << " is not a flag of `lockstep " << inv.subcommand << "`:\n"
                                              << help.out;
    }
  }
}

std::set<std::string> Subcommands(const std::vector<Invocation>& invocations) {
  std::set<std::string> subs;
  for (const Invocation& inv : invocations) subs.insert(inv.subcommand);
  return subs;
}

// --- The extractor itself, on text made for it ---

TEST(CiFilesTest, ExtractorFindsSubcommandsAndFlags) {
  std::vector<Invocation> found;
  ExtractInvocations(
      "# build/bin/lockstep commented --out x\n"
      "build/bin/lockstep run $S --launcher \"$L\" ${B:+--backend \"$B\"} \\\n"
      "  --out out --junit=out/j.xml && echo --not-this\n"
      "\"$build/bin/lockstep\" --version\n"
      "if [[ ! -x \"$build/bin/lockstep\" ]]; then echo \"no $build/bin/lockstep; build it\"; fi\n"
      "const t = 'lockstep nightly failed'; const hint = '`build/bin/lockstep diff A B --json`';\n",
      "text", &found);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].subcommand, "run");
  EXPECT_EQ(found[0].flags, (std::vector<std::string>{"--launcher", "--backend", "--out", "--junit"}));
  EXPECT_EQ(found[1].subcommand, "--version");
  EXPECT_EQ(found[2].subcommand, "diff");
  EXPECT_EQ(found[2].flags, (std::vector<std::string>{"--json"}));
  EXPECT_TRUE(HelpListsFlag("  --out TEXT  Run directory", "--out"));
  EXPECT_FALSE(HelpListsFlag("  --output TEXT", "--out"));
}

// --- ci/github/lockstep.yml ---

TEST(CiFilesTest, ReusableWorkflowStructure) {
  const YAML::Node wf = LoadWorkflow("lockstep.yml");
  ASSERT_TRUE(wf.IsMap());
  const YAML::Node inputs = At(wf, {"on", "workflow_call", "inputs"});
  ASSERT_TRUE(inputs.IsMap()) << "on.workflow_call.inputs";
  for (const char* input : {"runner-labels", "scenarios", "backend", "launcher", "container-image"}) {
    EXPECT_TRUE(inputs[input].IsMap()) << input;
    EXPECT_FALSE(Scalar(At(inputs, {input, "description"})).empty()) << input;
  }
  // Every input the jobs use is declared.
  const std::string text = ReadFile(kSource / "ci/github/lockstep.yml");
  static const std::regex used(R"(inputs\.([A-Za-z_][-A-Za-z0-9_]*))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), used); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(inputs[(*it)[1].str()].IsMap()) << "undeclared input " << (*it)[1];
  }

  ASSERT_EQ(wf["jobs"].size(), 1u);
  const std::string job_name = (*wf["jobs"].begin()).first.as<std::string>();
  const YAML::Node job = At(wf, {"jobs", job_name});
  ExpectGpuContainerJob(wf, job_name);
  EXPECT_THAT(Scalar(job["runs-on"]), MatchesRegex(R"(\$\{\{\s*fromJSON\(inputs\.runner-labels\)\s*\}\})"));
  EXPECT_THAT(Scalar(At(job, {"container", "image"})), HasSubstr("inputs.container-image"));

  const int run = StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "bin/lockstep run"); });
  ASSERT_GE(run, 0);
  const std::string command = Scalar(job["steps"][run]["run"]);
  for (const char* part : {"--out out", "--junit out/junit.xml", "--markdown out/summary.md", "--html out/report.html",
                           "--launcher", "--backend"}) {
    EXPECT_THAT(command, HasSubstr(part));
  }
  // Inputs reach the shell through env, never pasted into the script (script injection).
  EXPECT_THAT(command, Not(HasSubstr("${{")));

  ExpectUploadsOutAlways(job);
  const YAML::Node publish = StepUsing(job, "EnricoMi/publish-unit-test-result-action");
  ASSERT_TRUE(publish.IsDefined()) << "no EnricoMi/publish-unit-test-result-action step";
  EXPECT_TRUE(IsAlways(publish["if"])) << "publish: if: " << Scalar(publish["if"]);
  EXPECT_THAT(Scalar(At(publish, {"with", "files"})), HasSubstr("out/junit.xml"));
  EXPECT_THAT(Scalar(At(publish, {"with", "files"})), HasSubstr("out/suite-*/junit.xml")) << "the GPU suite's reports";
  EXPECT_GT(StepIndex(job, [](const YAML::Node& s) { return Scalar(s["uses"]).rfind("EnricoMi/", 0) == 0; }), run);
  EXPECT_EQ(Scalar(At(wf, {"permissions", "checks"})), "write");  // the action creates a check run
}

// `gpu-suite: true` runs exactly ci/gpu-suite.sh (what ci/gpu-checks.sh's suite check runs on the
// project's GPU machine) in place of the plain run; off by default, so CPU callers see no change.
TEST(CiFilesTest, ReusableWorkflowRunsTheGpuSuiteOnRequest) {
  const YAML::Node wf = LoadWorkflow("lockstep.yml");
  const YAML::Node input = At(wf, {"on", "workflow_call", "inputs", "gpu-suite"});
  ASSERT_TRUE(input.IsMap()) << "no gpu-suite input";
  EXPECT_EQ(Scalar(input["type"]), "boolean");
  EXPECT_EQ(Scalar(input["default"]), "false");
  const YAML::Node job = (*wf["jobs"].begin()).second;
  const int plain = StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "bin/lockstep run"); });
  const int suite = StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "ci/gpu-suite.sh"); });
  ASSERT_GE(plain, 0);
  ASSERT_GE(suite, 0) << "no step runs ci/gpu-suite.sh";
  EXPECT_THAT(Scalar(job["steps"][plain]["if"]), MatchesRegex(R"(\$\{\{\s*!\s*inputs\.gpu-suite\s*\}\})"));
  EXPECT_THAT(Scalar(job["steps"][suite]["if"]), MatchesRegex(R"(\$\{\{\s*inputs\.gpu-suite\s*\}\})"));
  const std::string command = Scalar(job["steps"][suite]["run"]);
  EXPECT_THAT(command, HasSubstr("--bin build/bin"));
  EXPECT_THAT(command, HasSubstr("--out out"));
  // Its reports are where the upload and the JUnit publisher look.
  const int upload = StepIndex(job, [](const YAML::Node& s) { return Scalar(s["uses"]).rfind("actions/upload-artifact@", 0) == 0; });
  EXPECT_GT(upload, suite);
  const std::string script = ReadFile(kSource / "ci/gpu-suite.sh");
  EXPECT_THAT(script, HasSubstr("--junit \"$dir/junit.xml\""));
  EXPECT_THAT(script, HasSubstr("dir=$out/suite-$backend"));
  const testing::ProgramResult syntax = testing::RunProgram("/bin/bash", {"-n", "ci/gpu-suite.sh"}, kSource);
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
}

// --- ci/github/nightly.yml ---

TEST(CiFilesTest, NightlyWorkflowStructure) {
  const YAML::Node wf = LoadWorkflow("nightly.yml");
  ASSERT_TRUE(wf.IsMap());
  const YAML::Node schedule = At(wf, {"on", "schedule"});
  ASSERT_TRUE(schedule.IsSequence() && schedule.size() >= 1) << "on.schedule";
  EXPECT_THAT(Scalar(schedule[0]["cron"]), MatchesRegex(R"(\S+ \S+ \S+ \S+ \S+)"));
  EXPECT_TRUE(At(wf, {"on", "workflow_dispatch"}).IsDefined());

  // The job that runs the suite against the golden files.
  std::string run_job;
  for (const auto& job : wf["jobs"]) {
    if (StepIndex(job.second, [](const YAML::Node& s) { return RunContains(s, "bin/lockstep run"); }) >= 0) {
      run_job = job.first.as<std::string>();
    }
  }
  ASSERT_FALSE(run_job.empty()) << "no job runs `lockstep run`";
  ExpectGpuContainerJob(wf, run_job);
  const YAML::Node job = At(wf, {"jobs", run_job});
  const int run = StepIndex(job, [](const YAML::Node& s) { return RunContains(s, "bin/lockstep run"); });
  const std::string command = Scalar(job["steps"][run]["run"]);
  EXPECT_THAT(command, HasSubstr("--check golden"));
  EXPECT_THAT(command, HasSubstr("--fixtures fixtures"));
  EXPECT_TRUE(fs::is_directory(kSource / "fixtures" / "golden"));
  ExpectUploadsOutAlways(job);

  // On failure: one issue with a fixed title, commented on while open instead of duplicated.
  std::string issue_job;
  for (const auto& j : wf["jobs"]) {
    if (Scalar(j.second["if"]).find("failure()") != std::string::npos) issue_job = j.first.as<std::string>();
  }
  ASSERT_FALSE(issue_job.empty()) << "no job with if: failure()";
  const YAML::Node issue = At(wf, {"jobs", issue_job});
  EXPECT_FALSE(Scalar(issue["timeout-minutes"]).empty());
  const YAML::Node needs = issue["needs"];
  EXPECT_TRUE(Scalar(needs) == run_job || (needs.IsSequence() && needs.size() == 1 && Scalar(needs[0]) == run_job));
  EXPECT_EQ(Scalar(At(issue, {"permissions", "issues"})), "write");
  const YAML::Node script_step = StepUsing(issue, "actions/github-script");
  ASSERT_TRUE(script_step.IsDefined());
  const std::string script = Scalar(At(script_step, {"with", "script"}));
  EXPECT_THAT(script, HasSubstr("const title = 'lockstep nightly failed'"));
  EXPECT_THAT(script, HasSubstr("state: 'open'"));
  EXPECT_THAT(script, HasSubstr("issue.title === title"));
  EXPECT_THAT(script, HasSubstr("issues.createComment"));
  EXPECT_THAT(script, HasSubstr("issues.create("));
}

// --- ci/slurm/lockstep.sbatch ---

TEST(CiFilesTest, SlurmBatchScript) {
  const fs::path path = kSource / "ci/slurm/lockstep.sbatch";
  const std::string text = ReadFile(path);
  for (const char* directive : {"#SBATCH --nodes=", "#SBATCH --ntasks-per-node=", "#SBATCH --time="}) {
    EXPECT_THAT(text, HasSubstr(directive));
  }
  // It runs on CPU nodes as it is (the project's own test cluster submits it); GPUs are one '#'
  // away, and said how.
  EXPECT_THAT(text, HasSubstr("##SBATCH --gpus-per-node="));
  EXPECT_THAT(text, Not(HasSubstr("\n#SBATCH --gpus-per-node=")));
  // Nothing site-specific runs: module loads are comments only.
  for (const std::string& line : LogicalLines(text)) EXPECT_THAT(line, Not(HasSubstr("module load"))) << line;
  // One lockstep process starts every scenario as a job step (docs/CI.md says why not --launcher none).
  EXPECT_THAT(text, HasSubstr("--launcher srun"));
  const testing::ProgramResult syntax = testing::RunProgram("/bin/bash", {"-n", path.string()}, kSource);
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
}

// --- Every lockstep command in them exists and takes the flags it is given ---

TEST(CiFilesTest, EveryLockstepCommandExistsWithItsFlags) {
  std::vector<Invocation> all;
  for (const char* workflow : {"lockstep.yml", "nightly.yml"}) {
    std::vector<Invocation> found = WorkflowInvocations(workflow);
    EXPECT_TRUE(Subcommands(found).count("run")) << workflow << " runs no `lockstep run`";
    all.insert(all.end(), found.begin(), found.end());
  }
  std::vector<Invocation> sbatch;
  ExtractInvocations(ReadFile(kSource / "ci/slurm/lockstep.sbatch"), "lockstep.sbatch", &sbatch);
  EXPECT_TRUE(Subcommands(sbatch).count("run")) << "lockstep.sbatch runs no `lockstep run`";
  all.insert(all.end(), sbatch.begin(), sbatch.end());
  // The GPU scripts: their `run --device/--ranks` and `selftest --backend/--device` must exist.
  for (const char* script : {"ci/gpu-suite.sh", "ci/gpu-checks.sh"}) {
    std::vector<Invocation> gpu;
    ExtractInvocations(ReadFile(kSource / script), script, &gpu);
    EXPECT_FALSE(gpu.empty()) << script << " runs no lockstep command";
    all.insert(all.end(), gpu.begin(), gpu.end());
  }
  // docs/CI.md's examples are what users type.
  std::vector<Invocation> docs;
  ExtractInvocations(ReadFile(kSource / "docs/CI.md"), "docs/CI.md", &docs);
  EXPECT_FALSE(docs.empty());
  all.insert(all.end(), docs.begin(), docs.end());

  for (const Invocation& inv : all) {
    std::cout << inv.where << ": lockstep " << inv.subcommand;
    for (const std::string& f : inv.flags) std::cout << " " << f;
    std::cout << "\n";
  }
  ExpectEveryInvocationWorks(all);
}

TEST(CiFilesTest, AnUnknownSubcommandOrFlagIsCaught) {
  // The check above must be able to fail.
  EXPECT_NONFATAL_FAILURE(ExpectEveryInvocationWorks({{"made up", "frobnicate", {}}}), "no subcommand frobnicate");
  EXPECT_NONFATAL_FAILURE(ExpectEveryInvocationWorks({{"made up", "run", {"--no-such-flag"}}}),
                          "--no-such-flag is not a flag of `lockstep run`");
}

// ci/install-deps.sh on a fresh machine, with apt stood in for by scripts on PATH: everything is
// missing and every package has a candidate. apt-cache prints a long policy (as the real one does
// for chromium), so a `grep -q` reading it straight from the pipe exits first, apt-cache dies of
// SIGPIPE, and under pipefail chromium used to be dropped as "not in this distribution". The
// virtual environment is a stand-in too (LOCKSTEP_VENV): its python says the pinned packages are
// missing, so the script must ask pip for ci/requirements.txt.
TEST(CiFilesTest, InstallDepsInstallsChromiumAndThePinnedPythonPackages) {
  const testing::TempDir temp("lockstep_install_deps_");
  const fs::path& dir = temp.path();
  const fs::path log = dir / "apt-get.log";
  const fs::path pip_log = dir / "pip.log";
  auto script = [&](const fs::path& file, const std::string& body) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(file, fs::perms::owner_all);
  };
  script(dir / "dpkg-query", "exit 1");
  script(dir / "sudo", "exec \"$@\"");
  script(dir / "apt-get", "echo \"$@\" >> '" + log.string() + "'");
  script(dir / "apt-cache",
         "echo \"$2:\"; echo '  Installed: (none)'; echo '  Candidate: 1.0-1'; "
         "i=0; while [ $i -lt 20000 ]; do echo '     1.0-1 500 http://deb.debian.org/debian bookworm/main' || exit 141; "
         "i=$((i+1)); done");
  // `python - requirements.txt` (the version check) fails; `python -m pip ...` is logged.
  script(dir / "venv" / "bin" / "python",
         "if [ \"$1\" = -m ]; then echo \"$@\" >> '" + pip_log.string() + "'; exit 0; fi; cat >/dev/null; exit 1");
  testing::ProgramResult r = testing::RunProgram(
      "/bin/sh",
      {"-c", "PATH='" + dir.string() + "':$PATH LOCKSTEP_VENV='" + (dir / "venv").string() + "' exec bash ci/install-deps.sh"},
      kSource);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string installed = ReadFile(log);
  EXPECT_THAT(installed, HasSubstr("install -y -qq --no-install-recommends"));
  EXPECT_THAT(installed, HasSubstr(" chromium")) << r.out;
  EXPECT_THAT(installed, HasSubstr(" python3-venv")) << r.out;
  EXPECT_THAT(installed, Not(HasSubstr("libtorch-dev"))) << r.out;
  EXPECT_THAT(ReadFile(pip_log), HasSubstr("pip install --quiet --disable-pip-version-check -r " +
                                           (kSource / "ci" / "requirements.txt").string()))
      << r.out;
}

// The one place that names torch's version pins the GPU machine's (2.11.x, a CUDA 13.0 build).
TEST(CiFilesTest, RequirementsPinTheGpuMachinesTorch) {
  const std::string requirements = ReadFile(kSource / "ci" / "requirements.txt");
  EXPECT_THAT(requirements, ::testing::ContainsRegex("\ntorch==2\\.11\\.[0-9]+\n"));
}

// --- ci/gpu-judge-ctest.py: the GPU checks' verdict on a ctest run, fed fake logs ---

// Writes `log` (and `listed`, the `ctest -N` listing, when given) and runs the judge on them with
// `required`; its exit code and the JSON verdict it printed.
testing::ProgramResult JudgeCtest(const std::string& log, const std::string& required,
                                  const std::string* listed = nullptr) {
  const testing::TempDir temp("lockstep_gpu_judge_");
  const fs::path log_path = temp.path() / "ctest.log", list_path = temp.path() / "ctest.log.list";
  std::ofstream(log_path) << log;
  std::vector<std::string> args = {"python3", (kSource / "ci/gpu-judge-ctest.py").string(), "--log", log_path.string(),
                                   "--require", required};
  if (listed) {
    std::ofstream(list_path) << *listed;
    args.insert(args.end(), {"--listed", list_path.string()});
  }
  return testing::RunProgram("/usr/bin/env", args, kSource);
}

constexpr char kCudaAttention[] = "AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCuda";

// The first GPU run's sdpa log: its regex matched the two CPU tests only, ctest said 100%.
TEST(GpuJudgeCtestTest, OnlyCpuTestsRanIsAFailure) {
  const std::string log =
      "1/2 Test #90: SdpaAttention.RunsTheFlashKernelOnCpu .........   Passed    0.64 sec\n"
      "2/2 Test #91: SdpaAttention.IgnoresDropoutOutsideTraining ...   Passed    0.75 sec\n"
      "\n100% tests passed out of 2\n";
  const testing::ProgramResult r = JudgeCtest(log, kCudaAttention);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"outcome\": \"failed\""));
  EXPECT_THAT(r.out, HasSubstr(std::string("required but did not run: ") + kCudaAttention));
}

TEST(GpuJudgeCtestTest, ZeroTestsIsAFailure) {
  for (const std::string& log : {std::string("Test project /b\nNo tests were found!!!\n"),
                                std::string("Test project /b\n\n100% tests passed, 0 tests failed out of 0\n")}) {
    const testing::ProgramResult r = JudgeCtest(log, "");
    EXPECT_EQ(r.exit_code, 1) << log << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("no test ran")) << log;
  }
}

TEST(GpuJudgeCtestTest, ASkippedGpuTestIsAFailure) {
  const std::string log =
      "1/2 Test #302: AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCpu ...   Passed    1.10 sec\n"
      "2/2 Test #303: " + std::string(kCudaAttention) + " ...***Skipped   0.02 sec\n"
      "\n100% tests passed, 0 tests failed out of 2\n";
  const testing::ProgramResult r = JudgeCtest(log, kCudaAttention);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(std::string("not passed: ") + kCudaAttention + " (Skipped)"));
}

// An MPI test under mpirun: gtest's skip inside it is a pass to ctest; -V output shows it.
TEST(GpuJudgeCtestTest, AGtestSkipInsideAnMpiTestIsAFailure) {
  const std::string log =
      "73: [  SKIPPED ] NcclCommunicatorTest.AllReduce\n"
      "73: [  SKIPPED ] 1 test, listed below:\n"
      "1/1 Test #73: comm_nccl_test.np1 ...............   Passed    3.72 sec\n"
      "\n100% tests passed out of 1\n";
  const testing::ProgramResult r = JudgeCtest(log, "comm_nccl_test.np1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("skipped inside the test program: NcclCommunicatorTest.AllReduce"));
}

TEST(GpuJudgeCtestTest, ATestListedButNotRunAndAWrongTotalAreFailures) {
  const std::string listed = "Test project /b\n  Test #11: CudaDigestTest.MatchesCpuOnOddSizes\n"
                             "  Test #12: CudaDigestTest.HostPointerIsAnError\n\nTotal Tests: 2\n";
  const std::string log = "1/1 Test #11: CudaDigestTest.MatchesCpuOnOddSizes ...   Passed    0.49 sec\n"
                          "\n100% tests passed out of 2\n";
  const testing::ProgramResult r = JudgeCtest(log, "CudaDigestTest.MatchesCpuOnOddSizes", &listed);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("the summary says 2 tests, the log has 1 result lines"));
  EXPECT_THAT(r.out, HasSubstr("listed by ctest -N but did not run: CudaDigestTest.HostPointerIsAnError"));
}

// The judge can pass: ctest 4's `100% tests passed out of N` and 3.x's form, every required test
// passed; the verdict names the tests it judged.
TEST(GpuJudgeCtestTest, EveryRequiredTestPassedIsAPassInEitherSummaryForm) {
  const std::string results =
      "1/2 Test #302: AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCpu ...   Passed    1.10 sec\n"
      "2/2 Test #303: " + std::string(kCudaAttention) + " ...   Passed    2.31 sec\n\n";
  const std::string listed = "  Test #302: AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCpu\n"
                             "  Test #303: " + std::string(kCudaAttention) + "\n";
  for (const std::string& summary : {std::string("100% tests passed out of 2\n"),
                                    std::string("100% tests passed, 0 tests failed out of 2\n")}) {
    const testing::ProgramResult r = JudgeCtest(results + summary, kCudaAttention, &listed);
    EXPECT_EQ(r.exit_code, 0) << summary << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("\"outcome\": \"passed\""));
    EXPECT_THAT(r.out, HasSubstr("2 of 2 passed, none skipped"));
    EXPECT_THAT(r.out, HasSubstr(std::string("\"tests\": [\"AttentionPaths.AgreeWithFloat64InFloat32AndBfloat16ForwardAndBackwardOnCpu\", \"") +
                                 kCudaAttention + "\"]"));
  }
}

// gpu-checks.sh judges every ctest check through the judge, each naming its GPU tests, and the
// sdpa check's selection includes the CUDA attention test.
TEST(GpuJudgeCtestTest, EveryCtestCheckOfGpuChecksGoesThroughTheJudge) {
  const std::string script = ReadFile(kSource / "ci/gpu-checks.sh");
  EXPECT_THAT(script, HasSubstr("ci/gpu-judge-ctest.py"));
  EXPECT_THAT(script, HasSubstr(std::string("sdpa_gpu_tests=\"") + kCudaAttention + "\""));
  EXPECT_THAT(script, HasSubstr("-R '^(SdpaAttention|AttentionPaths)\\.'"));
  EXPECT_THAT(script, Not(HasSubstr("ctest_summary")));
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    // Each run_ctest names its required tests (a variable or a quoted list), never an empty "".
    if (line.find("run_ctest ") != std::string::npos && line.find("run_ctest()") == std::string::npos &&
        line.find("#") != 0) {
      EXPECT_THAT(line, Not(HasSubstr(".log \"\""))) << line;
    }
  }
  const testing::ProgramResult syntax = testing::RunProgram("/bin/bash", {"-n", "ci/gpu-checks.sh"}, kSource);
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
}


// --- ci/gpu-profile-breakdown.py: where the checks' microseconds go, from two canned traces ---

// A Chrome trace of `steps` steps of `step_us` each on thread 1, each step starting with `inner`
// (events given relative to the step's start) and its device events on stream 7.
std::string CannedTrace(int steps, double step_us, const std::string& inner) {
  std::string events;
  for (int i = 0; i < steps; ++i) {
    const double t0 = 1000.0 + i * 1000.0;
    events += "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"profile.step\",\"pid\":9,\"tid\":1,\"ts\":" +
              std::to_string(t0) + ",\"dur\":" + std::to_string(step_us) + "},";
    std::string body = inner;
    for (size_t at; (at = body.find("T+")) != std::string::npos;) {
      size_t end = body.find_first_not_of("0123456789.", at + 2);
      body.replace(at, end - at, std::to_string(t0 + std::stod(body.substr(at + 2, end - at - 2))));
    }
    events += body;
  }
  events += "{\"ph\":\"i\",\"name\":\"marker\",\"ts\":0}";
  return "{\"traceEvents\":[" + events + "]}";
}

testing::ProgramResult Breakdown(const std::string& without, const std::string& with, const std::string& extra = "") {
  const testing::TempDir temp("lockstep_profile_breakdown_");
  const fs::path a = temp.path() / "none.json", b = temp.path() / "checks.json";
  std::ofstream(a) << without;
  std::ofstream(b) << with;
  std::vector<std::string> args = {"python3", (kSource / "ci/gpu-profile-breakdown.py").string(), "--without",
                                   a.string(), "--with", b.string(), "--tensors", "4"};
  if (!extra.empty()) args.push_back(extra);
  return testing::RunProgram("/usr/bin/env", args, kSource);
}

// Every microsecond of lockstep's range lands in one part: the synchronization, the launch and
// the copy calls first, then the operators around them, then the host code that is left.
TEST(GpuProfileBreakdownTest, SplitsLockstepsRangesExclusively) {
  const std::string kernel =
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":T+10,\"dur\":50},";
  const std::string without = CannedTrace(2, 100, kernel);
  const std::string with = CannedTrace(
      2, 150,
      kernel +
          "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"lockstep.capture\",\"pid\":9,\"tid\":1,\"ts\":T+100,\"dur\":40},"
          "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"lockstep.digest\",\"pid\":9,\"tid\":1,\"ts\":T+101,\"dur\":30},"
          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":1,\"ts\":T+102,\"dur\":5},"
          "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":9,\"tid\":1,\"ts\":T+110,\"dur\":15},"
          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemcpyAsync\",\"pid\":9,\"tid\":1,\"ts\":T+112,\"dur\":5},"
          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamSynchronize\",\"pid\":9,\"tid\":1,\"ts\":T+126,\"dur\":10},"
          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":2,\"ts\":T+103,\"dur\":5},"
          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ChunkTableKernel\",\"pid\":0,\"tid\":7,\"ts\":T+104,\"dur\":3},"
          "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy DtoH\",\"pid\":0,\"tid\":7,\"ts\":T+128,\"dur\":2,"
          "\"args\":{\"bytes\":256}},");
  const testing::ProgramResult r = Breakdown(without, with);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"step_us\": [100.0, 150.0], \"step_diff_us\": 50.0, \"x_step\": 1.5"));
  EXPECT_THAT(r.out, HasSubstr("\"lockstep_us\": 40.0"));
  // Another thread's launch (tid 2) is not the step's.
  EXPECT_THAT(r.out, HasSubstr("\"parts_us\": {\"sync\": 10.0, \"launch\": 5.0, \"copy\": 5.0, \"runtime\": 0.0, "
                               "\"ops\": 10.0, \"host\": 10.0}"));
  EXPECT_THAT(r.out, HasSubstr("\"elsewhere_us\": 10.0"));
  EXPECT_THAT(r.out, HasSubstr("\"host_us_per_tensor\": 2.5"));
  EXPECT_THAT(r.out, HasSubstr("\"kernels\": [1.0, 2.0]"));
  EXPECT_THAT(r.out, HasSubstr("\"copy_bytes\": [0.0, 256.0]"));
  EXPECT_THAT(r.out, HasSubstr("\"kernels_moved\": {\"ChunkTableKernel\": 1.0}"));
}

// The same steps on both sides: no difference anywhere, nothing of lockstep's.
TEST(GpuProfileBreakdownTest, TheSameStepsGiveNoDifference) {
  const std::string trace = CannedTrace(
      3, 80, "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":9,\"tid\":1,\"ts\":T+5,\"dur\":20},");
  const testing::ProgramResult r = Breakdown(trace, trace);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"step_diff_us\": 0.0"));
  EXPECT_THAT(r.out, HasSubstr("\"lockstep_us\": 0.0"));
  EXPECT_THAT(r.out, HasSubstr("\"kernels_moved\": {}"));
}

// A trace without the step ranges cannot be judged: exit 2, the file named.
TEST(GpuProfileBreakdownTest, ATraceWithoutStepsIsAnError) {
  const std::string steps = CannedTrace(1, 80, "");
  const testing::ProgramResult r = Breakdown(steps, "{\"traceEvents\":[]}");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("checks.json: no `profile.step` range"));
  const testing::ProgramResult bad = Breakdown(steps, "{not json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("cannot read the trace"));
}

}  // namespace
}  // namespace lockstep
