// Runs the probe's own cases of probe/tests/programs/ (comm hooks, static_graph, several
// optimizers, the explicit API, a user's sitecustomize, subgroups, ZeroRedundancyOptimizer,
// discovery calls, torch 2.x's collective forms, CUDA tensors where there is a GPU) as N ranks of
// the build's torch (cmake/LockstepDependencies.cmake) on gloo, with the probe attached the way `lockstep exec` attaches it
// (PYTHONPATH=<build>/python, LOCKSTEP_PROBE=1, the trace directory and run name in the
// environment), started and watched by lockstep's own local launcher. Then lockstep's checkers
// judge the traces, and the findings must be exactly those the program's `.expect.json` sidecar
// names (probe/catalog_expectation.h), in every repeat. The example catalog of examples/ runs
// through `lockstep exec` itself (example_catalog_exec_test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkers/checker_registry.h"
#include "harness/core/testing/build_paths.h"
#include "harness/launcher/launcher.h"
#include "harness/scenario/scenario.h"
#include "harness/trace/trace_reader.h"
#include "probe/catalog_expectation.h"

namespace lockstep::probe {
namespace {

namespace fs = std::filesystem;

// The checkers that judge any program (those needing a scenario's reference run, golden file or
// repeat do not apply to a foreign program).
const std::vector<std::string> kProgramCheckers = {"replica_weights", "synced_grads",     "optimizer_state",
                                                   "buffers",         "collective_order", "discovery_count",
                                                   "finite",          "hang",             "crash",
                                                   "teardown",        "forward_passes",   "group_agreement"};

struct RunOutcome {
  LaunchReport launch;
  std::vector<RankTrace> traces;
  std::vector<Finding> findings;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

RunOutcome RunProgram(const CatalogExpectation& e, const fs::path& out, const std::vector<std::string>& extra_path,
                      bool auto_attach, const std::map<std::string, std::string>& extra_env = {}) {
  fs::remove_all(out);
  LaunchSpec spec;
  spec.kind = LauncherKind::kLocal;
  spec.ranks = e.ranks;
  spec.rank_command = {LOCKSTEP_PROBE_PYTHON, e.program.string()};
  spec.trace_dir = out / "traces";
  spec.log_dir = out / "logs";
  // Generous: the machine may be loaded; a real hang is cut by the launcher's watchdog.
  spec.hang_timeout_s = 60;
  spec.startup_timeout_s = 240;
  spec.timeout_s = 480;
  std::string path = LOCKSTEP_PROBE_STAGE;
  for (const std::string& p : extra_path) path += ":" + p;
  if (!Env("PYTHONPATH").empty()) path += ":" + Env("PYTHONPATH");
  spec.env["PYTHONPATH"] = path;
  if (auto_attach) spec.env["LOCKSTEP_PROBE"] = "1";
  spec.env["LOCKSTEP_TRACE_DIR"] = spec.trace_dir.string();
  spec.env["LOCKSTEP_RUN_NAME"] = e.program.stem().string();
  spec.env["OMP_NUM_THREADS"] = "1";  // N ranks share the machine's cores
  for (const auto& [k, v] : extra_env) spec.env[k] = v;

  RunOutcome o;
  Result<LaunchReport> launch = Launch(spec);
  EXPECT_TRUE(launch.ok()) << launch.status().ToString();
  if (!launch.ok()) return o;
  o.launch = std::move(launch).value();
  for (int r = 0; r < e.ranks; ++r) {
    const fs::path file = spec.trace_dir / ("rank-" + std::to_string(r) + ".trace");
    Result<RankTrace> t = ReadTrace(file);
    if (t.ok()) {
      o.traces.push_back(std::move(t).value());
    } else {
      RankTrace missing;
      missing.missing = true;
      missing.truncation_note = t.status().ToString();
      o.traces.push_back(missing);
    }
  }
  Scenario scenario;
  scenario.name = e.program.stem().string();
  scenario.ranks = e.ranks;
  scenario.backend = Backend::kGloo;
  CheckContext context{scenario, o.traces, o.launch};
  for (const auto& checker : MakeCheckers(kProgramCheckers)) {
    for (Finding& f : checker->Check(context)) o.findings.push_back(std::move(f));
  }
  return o;
}

std::string Logs(const fs::path& out, int ranks) {
  std::string s;
  for (int r = 0; r < ranks; ++r) {
    std::ifstream in(out / "logs" / ("rank-" + std::to_string(r) + ".log"));
    std::stringstream b;
    b << in.rdbuf();
    s += "--- rank " + std::to_string(r) + " log:\n" + b.str().substr(0, 4000) + "\n";
  }
  return s;
}

// Every rank wrote a step 0 record (its parameters before the first update) and a step record per
// optimizer step: the probe saw the program's steps.
void ExpectRecordedSteps(const CatalogExpectation& e, const RunOutcome& o) {
  const bool clean = e.findings.empty();
  for (int r = 0; r < static_cast<int>(o.traces.size()); ++r) {
    const RankTrace& t = o.traces[r];
    ASSERT_FALSE(t.missing) << "rank " << r << " wrote no trace: " << t.truncation_note;
    EXPECT_FALSE(t.steps.empty()) << "rank " << r << " recorded no step";
    if (!clean) continue;
    // A clean program ends with a footer and has every collective's end.
    ASSERT_TRUE(t.footer.has_value()) << "rank " << r;
    EXPECT_EQ(t.footer->status, "ok");
    ASSERT_FALSE(t.steps.empty());
    EXPECT_EQ(t.steps.front().step, 0) << "rank " << r << " wrote no step 0 record";
    EXPECT_EQ(t.footer->steps_completed, static_cast<int64_t>(t.steps.size()) - 1);
    for (size_t i = 0; i < t.steps.size(); ++i) EXPECT_EQ(t.steps[i].step, static_cast<int64_t>(i));
    // Each step's gradients were synchronized by all-reduces the probe recorded (DDP's buckets
    // come from C++, the manual loops' from Python).
    for (const StepRecord& s : t.steps) {
      if (s.step == 0) continue;  // no update yet: nothing reduced for it
      bool reduced = false;
      for (const CollectiveRecord& c : t.collectives) reduced |= c.step == s.step && c.op == "all_reduce" && c.end_s;
      EXPECT_TRUE(reduced) << "rank " << r << " step " << s.step << ": no all_reduce recorded";
      EXPECT_FALSE(s.tensors.empty());
    }
  }
}

// `inspect`, when given, looks further at each repeat's outcome (the traces' own records).
void RunCatalogEntry(const fs::path& sidecar, const std::vector<std::string>& extra_path = {}, bool auto_attach = true,
                     const std::function<void(const RunOutcome&)>& inspect = nullptr) {
  Result<CatalogExpectation> e = ReadCatalogExpectation(sidecar);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const fs::path out = fs::path(LOCKSTEP_BINARY_DIR) / "probe_catalog_test" / e.value().program.stem();
  for (int repeat = 1; repeat <= e.value().repeats; ++repeat) {
    SCOPED_TRACE(e.value().program.filename().string() + " repeat " + std::to_string(repeat) + ": " + e.value().why);
    RunOutcome o = RunProgram(e.value(), out, extra_path, auto_attach);
    ExpectRecordedSteps(e.value(), o);
    for (const Finding& f : o.findings) {
      std::cout << "  " << e.value().program.filename().string() << ": " << f.checker << " step "
                << (f.step ? std::to_string(*f.step) : "-") << ": " << f.message << "\n";
    }
    const std::vector<std::string> problems = MatchCatalogExpectation(e.value(), o.findings);
    std::string text;
    for (const std::string& p : problems) text += "  " + p + "\n";
    EXPECT_TRUE(problems.empty()) << text << "launch: " << ToString(o.launch.ending) << " " << o.launch.message << "\n"
                                  << Logs(out, e.value().ranks);
    if (inspect) inspect(o);
    if (::testing::Test::HasFailure()) break;
  }
}

const fs::path kPrograms = fs::path(LOCKSTEP_SOURCE_DIR) / "probe" / "tests" / "programs";

// The probe's own cases.
TEST(ProbeCases, CommHookStaticGraphTwoOptimizers) {
  RunCatalogEntry(kPrograms / "comm_hook_static_graph.expect.json");
}
TEST(ProbeCases, ExplicitAttachWithoutAutoAttach) {
  RunCatalogEntry(kPrograms / "explicit_attach.expect.json", {}, /*auto_attach=*/false);
}
TEST(ProbeCases, FindingACollectivesSiteIsNamedInAProfile) {
  RunCatalogEntry(kPrograms / "collective_site_profiled.expect.json");
}
TEST(ProbeCases, UserSitecustomizeStillRuns) {
  RunCatalogEntry(kPrograms / "user_sitecustomize.expect.json", {(kPrograms / "user_site").string()});
}
TEST(ProbeCases, SubgroupCollectivesAreRecordedPerGroup) {
  RunCatalogEntry(kPrograms / "subgroup_collectives.expect.json");
}
TEST(ProbeCases, ZeroRedundancyOptimizerStateIsPerRank) {
  RunCatalogEntry(kPrograms / "zero_redundancy.expect.json");
}
// The losses a rank's program printed ("step-loss <step> <float.hex>" lines of its log), by step.
std::map<int64_t, double> PrintedLosses(const fs::path& log) {
  std::map<int64_t, double> losses;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string tag, hex;
    int64_t step = 0;
    if (words >> tag >> step >> hex && tag == "step-loss") losses[step] = std::strtod(hex.c_str(), nullptr);
  }
  return losses;
}

// A step's training forwards: each micro-batch of gradient accumulation counts, a forward under
// no_grad or inference_mode (rank 0's alone) does not, and step 0 has no count. Each step's loss
// is its micro-batches' losses added in the order of their backward calls, bit for bit as the
// program added them.
TEST(ProbeCases, TrainingForwardsAreCountedAndLossesAddedPerStep) {
  const fs::path logs = fs::path(LOCKSTEP_BINARY_DIR) / "probe_catalog_test" / "forward_counts" / "logs";
  RunCatalogEntry(kPrograms / "forward_counts.expect.json", {}, true, [&logs](const RunOutcome& o) {
    ASSERT_EQ(o.traces.size(), 3u);
    for (size_t r = 0; r < o.traces.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      ASSERT_EQ(o.traces[r].steps.size(), 5u);
      const std::map<int64_t, double> printed = PrintedLosses(logs / ("rank-" + std::to_string(r) + ".log"));
      ASSERT_EQ(printed.size(), 4u) << "the program's step-loss lines";
      for (const StepRecord& s : o.traces[r].steps) {
        if (s.step == 0) {
          EXPECT_FALSE(s.forwards.has_value());
        } else {
          EXPECT_EQ(s.forwards, std::optional<int64_t>(2)) << "step " << s.step;
          ASSERT_TRUE(s.loss_reported) << "step " << s.step;
          const auto it = printed.find(s.step);
          ASSERT_NE(it, printed.end()) << "no step-loss line for step " << s.step;
          EXPECT_EQ(s.loss, it->second) << "step " << s.step;  // equal doubles: equal bits (neither is 0)
        }
      }
    }
  });
}

TEST(ProbeCases, Bfloat16ModelIsClean) {
  RunCatalogEntry(kPrograms / "bf16_params.expect.json");
}

// Each of torch 2.x's ways to issue a collective reaches the recording backend: per step, four
// all-gathers (all_gather_into_tensor, _all_gather_base, the functional all_gather_tensor and
// its coalesced form, one record for the batch), four reduce-scatters likewise, and the functional
// all_reduce beside DDP's bucket all-reduces. One path bypassing the wrapper leaves a count short.
TEST(ProbeCases, Torch2CollectivesAreEachRecorded) {
  RunCatalogEntry(kPrograms / "torch2_collectives.expect.json", {}, true, [](const RunOutcome& o) {
    for (size_t r = 0; r < o.traces.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      std::map<int64_t, std::map<std::string, int>> per_step;
      for (const CollectiveRecord& c : o.traces[r].collectives) {
        if (c.end_s) ++per_step[c.step][c.op];
      }
      const int64_t steps = static_cast<int64_t>(o.traces[r].steps.size()) - 1;  // and step 0
      ASSERT_EQ(steps, 4);
      // The metrics of step s are issued after its optimizer step: they belong to step s + 1's
      // window, and those of the last step to the window after it. Count over all windows.
      std::map<std::string, int> total;
      for (const auto& [step, ops] : per_step) {
        for (const auto& [op, n] : ops) total[op] += n;
      }
      EXPECT_GE(total["all_gather"], 4 * steps);
      EXPECT_GE(total["reduce_scatter"], 4 * steps);
      EXPECT_GE(total["all_reduce"], 2 * steps);

      // Where each was called (trace 2.6): the program's line for its own calls, also for the two
      // broadcasts inside broadcast_object_list; torch's frame first for DDP's start-up broadcast,
      // which torch made; nothing for what C++ issued (DDP's buckets, the functional collectives).
      auto starts = [](const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; };
      int program_gathers = 0, object_broadcasts = 0, ddp_broadcasts = 0, unsited_reduces = 0;
      for (const CollectiveRecord& c : o.traces[r].collectives) {
        if (c.op == "all_gather" && starts(c.where, "torch2_collectives.py:")) ++program_gathers;
        if (c.op == "broadcast" && starts(c.where, "torch2_collectives.py:")) ++object_broadcasts;
        if (c.op == "broadcast" && starts(c.where, "torch distributed/utils.py:") &&
            c.where.find(" in _sync_params_and_buffers < torch2_collectives.py:") != std::string::npos) {
          ++ddp_broadcasts;
        }
        if (c.op == "all_reduce" && c.where.empty()) ++unsited_reduces;
        if (!c.where.empty()) {
          EXPECT_NE(c.where.find(" in main < torch2_collectives.py:"), std::string::npos) << c.where;
        }
      }
      EXPECT_EQ(program_gathers, 2 * steps);  // all_gather_into_tensor and _all_gather_base
      EXPECT_EQ(object_broadcasts, 2 * steps);
      EXPECT_GE(ddp_broadcasts, 1);
      EXPECT_GE(unsited_reduces, 2 * steps);
    }
  });
}

// torch.distributed's discovery calls, each once, with its phase, step and the program's line.
TEST(ProbeCases, DiscoveryCallsAreRecordedOnceWithPhaseStepAndStack) {
  RunCatalogEntry(kPrograms / "discovery_calls.expect.json", {}, true, [](const RunOutcome& o) {
    for (size_t r = 0; r < o.traces.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      const std::vector<DiscoveryRecord>& d = o.traces[r].discoveries;
      ASSERT_EQ(d.size(), 5u);  // init_process_group, a group per rank (3), the late group
      EXPECT_EQ(d[0].name, "torch.init_process_group");
      for (size_t i = 1; i < 5; ++i) EXPECT_EQ(d[i].name, "torch.new_group") << i;
      for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d[i].phase, "startup") << i;
      EXPECT_EQ(d[4].phase, "step");
      EXPECT_EQ(d[4].step, 2);
      EXPECT_EQ(d[4].call, 5);
      EXPECT_NE(d[4].where.find("discovery_calls.py:"), std::string::npos) << d[4].where;
      EXPECT_NE(d[4].where.find(" in main"), std::string::npos) << d[4].where;
      // What each group-making call asked for, the same on every rank (group_agreement).
      EXPECT_EQ(d[0].comm, "");
      for (size_t i = 1; i < 4; ++i) EXPECT_EQ(d[i].comm, "group[" + std::to_string(i - 1) + "]") << i;
      EXPECT_EQ(d[4].comm, "group[0,1,2]");
    }
  });
}

// A group made by its members only: with use_local_synchronization (left out of the comparison,
// recorded as asked, ranks sorted), and without it (rank 2 never entered it: the finding).
TEST(ProbeCases, AGroupSomeRanksNeverMadeIsNamed) {
  RunCatalogEntry(kPrograms / "group_made_by_members_only.expect.json", {}, true, [](const RunOutcome& o) {
    std::vector<std::vector<std::string>> made;
    for (const RankTrace& t : o.traces) {
      made.emplace_back();
      for (const DiscoveryRecord& d : t.discoveries) {
        if (d.name == "torch.new_group") made.back().push_back(d.comm);
      }
    }
    EXPECT_EQ(made, (std::vector<std::vector<std::string>>{
                        {"group[0,1]"}, {"group[1,2] local", "group[0,1]"}, {"group[1,2] local"}}));
  });
}

// FSDP1's shards carry FSDP1's replicate group; the device mesh is one discovery call.
TEST(ProbeCases, Fsdp1HybridShardIsComparedWithinItsReplicateGroup) {
  RunCatalogEntry(kPrograms / "fsdp1_hybrid_shard.expect.json", {}, true, [](const RunOutcome& o) {
    for (size_t r = 0; r < o.traces.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      const RankTrace& t = o.traces[r];
      ASSERT_FALSE(t.steps.empty());
      const std::vector<int> replicas = {static_cast<int>(r % 2), static_cast<int>(r % 2 + 2)};
      int params = 0;
      for (const TensorRecord& x : t.steps.back().tensors) {
        // Gradients too (a parameter with no element in this rank's shard has none).
        if (x.kind != TensorKind::kParam && x.kind != TensorKind::kGrad) continue;
        ASSERT_NE(x.group, nullptr) << x.name;
        EXPECT_EQ(x.group->ranks, replicas) << x.name;
        EXPECT_EQ(x.group->label, "FSDP1 HYBRID_SHARD replicate group");
        params += x.kind == TensorKind::kParam;
      }
      EXPECT_EQ(params, 4);
      int meshes = 0;
      for (const DiscoveryRecord& d : t.discoveries) {
        if (d.name != "torch.init_device_mesh") continue;
        ++meshes;
        EXPECT_EQ(d.phase, "startup");
        EXPECT_EQ(d.comm, "mesh[[0,1],[2,3]] dims=replicate,shard");  // what group_agreement compares
      }
      EXPECT_EQ(meshes, 1);
    }
  });
}

// The probe's lists of tensors, reused from step to step, see what a fresh walk would see: the
// findings of the sidecar, and a submodule added at step 5 is in that step's record, its weights
// as each rank initialized them (ranks 0 and 1 alike, rank 2 not).
TEST(ProbeCases, ReusedListsSeeEveryChangeAtItsStep) {
  RunCatalogEntry(kPrograms / "reused_lists.expect.json", {}, true, [](const RunOutcome& o) {
    ASSERT_EQ(o.traces.size(), 3u);
    auto record = [&](size_t rank, int64_t step, TensorKind kind, const std::string& name) -> const TensorRecord* {
      const std::map<int64_t, const StepRecord*> steps = StepsByNumber(o.traces[rank]);
      auto it = steps.find(step);
      if (it == steps.end()) return nullptr;
      for (const TensorRecord& t : it->second->tensors) {
        if (t.kind == kind && t.name == name) return &t;
      }
      return nullptr;
    };
    auto digest = [&](size_t rank, int64_t step, const std::string& name) -> std::optional<Digest128> {
      const TensorRecord* t = record(rank, step, TensorKind::kParam, name);
      return t ? std::optional<Digest128>(t->digest) : std::nullopt;
    };
    for (size_t r = 0; r < 3; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      // The gradient dropped at step 3 (every rank), there again from step 4.
      for (int64_t step : {2, 3, 4, 6}) {
        const TensorRecord* g = record(r, step, TensorKind::kGrad, "b.weight");
        if (step == 3) {
          EXPECT_EQ(g, nullptr) << "step 3 recorded a gradient of b.weight, dtype " << g->dtype;
        } else {
          ASSERT_NE(g, nullptr) << "step " << step;
          EXPECT_EQ(g->dtype, "float32") << "step " << step;
          EXPECT_EQ(g->numel, 64) << "step " << step;
        }
      }
      EXPECT_FALSE(digest(r, 4, "extra.weight").has_value());
      for (int64_t step : {5, 6}) {
        EXPECT_TRUE(digest(r, step, "extra.weight").has_value()) << "step " << step;
        EXPECT_TRUE(digest(r, step, "extra.bias").has_value()) << "step " << step;
      }
    }
    EXPECT_TRUE(digest(0, 5, "extra.weight") == digest(1, 5, "extra.weight"));
    EXPECT_FALSE(digest(0, 5, "extra.weight") == digest(2, 5, "extra.weight"));
  });
}

// The deferred capture (LOCKSTEP_ASYNC_CAPTURE, probe/deferred_steps.h) writes the records the
// synchronous one writes: the same steps, tensors, digests, norms, gradient norms and edits, on a
// program whose lists change (reused_lists.py), through its host device. On a GPU the same is run
// on CUDA tensors (CudaTensorsAreDigestedOnTheDeviceDeferred).
void ExpectDeferredRecordsAsSynchronous(const fs::path& sidecar, const std::string& setting) {
  Result<CatalogExpectation> e = ReadCatalogExpectation(sidecar);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const fs::path out = fs::path(LOCKSTEP_BINARY_DIR) / "probe_catalog_test" / ("deferred-" + e->program.stem().string());
  const RunOutcome sync = RunProgram(*e, out / "sync", {}, true, {{"LOCKSTEP_ASYNC_CAPTURE", "0"}});
  const RunOutcome deferred = RunProgram(*e, out / "deferred", {}, true, {{"LOCKSTEP_ASYNC_CAPTURE", setting}});
  ExpectRecordedSteps(*e, deferred);
  EXPECT_TRUE(MatchCatalogExpectation(*e, deferred.findings).empty()) << Logs(out / "deferred", e->ranks);
  ASSERT_EQ(sync.traces.size(), deferred.traces.size());
  for (size_t r = 0; r < sync.traces.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<StepRecord>& want = sync.traces[r].steps;
    const std::vector<StepRecord>& got = deferred.traces[r].steps;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(want[i].step));
      EXPECT_EQ(got[i].step, want[i].step);
      EXPECT_EQ(got[i].edited_after_update, want[i].edited_after_update);
      EXPECT_EQ(std::isnan(got[i].grad_norm), std::isnan(want[i].grad_norm));
      if (!std::isnan(want[i].grad_norm)) {
        EXPECT_EQ(got[i].grad_norm, want[i].grad_norm);
      }
      ASSERT_EQ(got[i].tensors.size(), want[i].tensors.size());
      for (size_t k = 0; k < got[i].tensors.size(); ++k) {
        const TensorRecord& a = got[i].tensors[k];
        const TensorRecord& b = want[i].tensors[k];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.kind, b.kind) << a.name;
        EXPECT_EQ(a.digest, b.digest) << a.name;
        EXPECT_EQ(std::isnan(a.norm) ? 0 : a.norm, std::isnan(b.norm) ? 0 : b.norm) << a.name;
      }
    }
    // The trace says the capture was deferred, and that some of it was: a run that digested every
    // list at once would pass the comparison above and show nothing.
    std::ifstream in(out / "deferred" / "traces" / ("rank-" + std::to_string(r) + ".trace"));
    std::stringstream text;
    text << in.rdbuf();
    const std::string t = text.str();
    const size_t at = t.find("asynchronous capture: ", t.find("asynchronous capture: on") + 1);
    ASSERT_NE(at, std::string::npos) << "no summary of the deferred capture";
    EXPECT_NE(t.compare(at, 24, "asynchronous capture: 0 "), 0) << t.substr(at, 80);
  }
}

TEST(ProbeCases, DeferredCaptureRecordsWhatTheSynchronousOneDoes) {
  ExpectDeferredRecordsAsSynchronous(kPrograms / "reused_lists.expect.json", "host");
}

// A bfloat16 model's lists (every one holds a bfloat16 tensor): deferred since their norms are
// summed with their digests (2026-11-29); before, none was, and the summary's "0 lists deferred"
// failed this test.
TEST(ProbeCases, DeferredCaptureOfBfloat16ListsRecordsWhatTheSynchronousOneDoes) {
  ExpectDeferredRecordsAsSynchronous(kPrograms / "bf16_params.expect.json", "host");
}

// CUDA tensors digested on the device (ci/gpu-checks.sh's `probe` check runs this on a GPU).
TEST(ProbeCases, CudaTensorsAreDigestedOnTheDevice) {
  const std::string probe_python = std::string(LOCKSTEP_PROBE_PYTHON) +
                                   " -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'";
  if (std::system(probe_python.c_str()) != 0) {
    GTEST_SKIP() << LOCKSTEP_PROBE_PYTHON << "'s torch sees no CUDA device (needs a GPU and a CUDA build of torch)";
  }
  RunCatalogEntry(kPrograms / "cuda_weight_edit.expect.json");
}

// The same program with its CUDA tensors' digests deferred to a side stream (LOCKSTEP_ASYNC_CAPTURE=1:
// CudaCaptureDevice), compared with the synchronous capture's records.
TEST(ProbeCases, CudaTensorsAreDigestedOnTheDeviceDeferred) {
  const std::string probe_python = std::string(LOCKSTEP_PROBE_PYTHON) +
                                   " -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'";
  if (std::system(probe_python.c_str()) != 0) {
    GTEST_SKIP() << LOCKSTEP_PROBE_PYTHON << "'s torch sees no CUDA device (needs a GPU and a CUDA build of torch)";
  }
  ExpectDeferredRecordsAsSynchronous(kPrograms / "cuda_weight_edit.expect.json", "1");
}

}  // namespace
}  // namespace lockstep::probe
