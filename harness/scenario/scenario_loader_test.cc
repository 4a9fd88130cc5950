#include "harness/scenario/scenario_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/core/testing/build_paths.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/scenario/symptom.h"
#include "harness/core/testing/temp_dir.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kAlwaysChecks = {"replica_weights", "synced_grads", "optimizer_state",
                                                "buffers",         "collective_order", "discovery_count",
                                                "finite",          "hang",             "crash"};

// The loader knows no checker itself: the CLI passes the checker registry's vocabulary. These
// tests pass one of their own, which stands for it (the registry's test pins the real one).
const std::vector<std::string> kTestCheckerNames = {
    "replica_weights", "synced_grads", "optimizer_state", "buffers",   "collective_order", "discovery_count",
    "finite",          "hang",         "crash",           "reference", "determinism",      "golden"};

LoadOptions TestOptions() {
  LoadOptions options;
  options.checker_names = kTestCheckerNames;
  options.default_checks = [](const Scenario& s) {
    std::vector<std::string> checks = kAlwaysChecks;
    if (s.ranks > 1) checks.push_back("reference");
    return checks;
  };
  return options;
}

class ScenarioLoaderTest : public ::testing::Test {
 protected:
  fs::path Write(const std::string& relative, const std::string& content) {
    fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // The scenario, failing the test with the diagnostics when it does not load.
  Scenario Load(const std::string& content, LoadOptions options = TestOptions()) {
    fs::path p = Write("s.yaml", content);
    std::vector<Diagnostic> diagnostics;
    Result<Scenario> r = LoadScenarioFile(p, options, &diagnostics);
    std::string all;
    for (const Diagnostic& d : diagnostics) all += d.ToString() + "\n";
    EXPECT_TRUE(r.ok()) << all;
    EXPECT_TRUE(diagnostics.empty()) << all;
    return r.ok() ? r.value() : Scenario{};
  }

  // "line:col: message" for each diagnostic of a file that must not load.
  std::vector<std::string> ErrorsIn(const fs::path& p, LoadOptions options = TestOptions()) {
    std::vector<Diagnostic> diagnostics;
    Result<Scenario> r = LoadScenarioFile(p, options, &diagnostics);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    std::vector<std::string> out;
    for (const Diagnostic& d : diagnostics) {
      EXPECT_EQ(d.location.file, p.lexically_normal().generic_string()) << d.ToString();
      out.push_back(std::to_string(d.location.line) + ":" + std::to_string(d.location.column) + ": " + d.message);
    }
    return out;
  }
  std::vector<std::string> Errors(const std::string& content, LoadOptions options = TestOptions()) {
    return ErrorsIn(Write("s.yaml", content), options);
  }

  testing::TempDir temp_{"lockstep_scenario_"};
  const fs::path dir_ = temp_.path();
};


TEST_F(ScenarioLoaderTest, MinimalFileTakesEveryDefault) {
  Scenario s = Load("ranks: 4\n");
  Scenario d;  // the struct's defaults are the documented ones
  EXPECT_EQ(s.name, "s");
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.slices, d.slices);
  EXPECT_EQ(s.backend, Backend::kMpi);
  EXPECT_EQ(s.device, Device::kCpu);
  EXPECT_EQ(s.steps, d.steps);
  EXPECT_EQ(s.seed, d.seed);
  EXPECT_EQ(s.model.kind, ModelKind::kMlp);
  EXPECT_EQ(s.model.hidden, d.model.hidden);
  EXPECT_EQ(s.optimizer.lr, d.optimizer.lr);
  EXPECT_TRUE(s.discovery_allowed.empty());
  EXPECT_TRUE(s.checks_defaulted);
  std::vector<std::string> expected = kAlwaysChecks;
  expected.push_back("reference");
  EXPECT_EQ(s.checks, expected);
  EXPECT_EQ(s.location.line, 1);
  EXPECT_EQ(s.location.file, (dir_ / "s.yaml").generic_string());
}

TEST_F(ScenarioLoaderTest, ReadsEveryKey) {
  Scenario s = Load(R"(name: ddp_mlp_basic
description: "every key"
ranks: 4
slices: 2
backend: gloo
device: cuda
steps: 20
seed: 99
timeout_s: 120
hang_timeout_s: 7.5
model: {kind: transformer, layers: 3, hidden: 48, heads: 6, seq_len: 16, vocab: 64,
        input_dim: 12, output_dim: 3, attention: flash, norm: layernorm, dropout: 0.1}
data: {batch_per_rank: 3}
parallel: {mode: zero1, bucket_mb: 0.5, grad_accum: 2}
optimizer: {kind: adamw, lr: 1e-3, momentum: 0.5, beta1: 0.8, beta2: 0.99, eps: 1.0e-6,
            weight_decay: 0.01, clip_grad_norm: 1.0, warmup_steps: 2}
checks: [replica_weights, collective_order, determinism]
inject:
  - {kind: bitflip, rank: 1, step: 3, tensor: "blocks.*.weight", bit: 2}
  - kind: crash
    ranks: [2, 3]
    step: 5
    signal: SIGSEGV
expect:
  fail: [{checker: replica_weights, step: 3, ranks: [1], tensor: "blocks.0.mlp.weight"}]
  discovery_calls: 2
tolerances: {reference_rtol: 1e-4, reference_atol: 0, golden_rtol: 1e-6}
)");
  EXPECT_EQ(s.name, "ddp_mlp_basic");
  EXPECT_EQ(s.description, "every key");
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.slices, 2);
  EXPECT_EQ(s.backend, Backend::kGloo);
  EXPECT_EQ(s.device, Device::kCuda);
  EXPECT_EQ(s.steps, 20);
  EXPECT_EQ(s.seed, 99u);
  EXPECT_EQ(s.timeout_s, 120);
  EXPECT_EQ(s.hang_timeout_s, 7.5);
  EXPECT_EQ(s.model.kind, ModelKind::kTransformer);
  EXPECT_EQ(s.model.layers, 3);
  EXPECT_EQ(s.model.hidden, 48);
  EXPECT_EQ(s.model.heads, 6);
  EXPECT_EQ(s.model.seq_len, 16);
  EXPECT_EQ(s.model.vocab, 64);
  EXPECT_EQ(s.model.input_dim, 12);
  EXPECT_EQ(s.model.output_dim, 3);
  EXPECT_EQ(s.model.attention, AttentionKind::kFlash);
  EXPECT_EQ(s.model.norm, NormKind::kLayerNorm);
  EXPECT_DOUBLE_EQ(s.model.dropout, 0.1);
  EXPECT_EQ(s.data.batch_per_rank, 3);
  EXPECT_EQ(s.parallel.mode, ParallelMode::kZero1);
  EXPECT_DOUBLE_EQ(s.parallel.bucket_mb, 0.5);
  EXPECT_EQ(s.parallel.grad_accum, 2);
  EXPECT_EQ(s.optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_DOUBLE_EQ(s.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(s.optimizer.momentum, 0.5);
  EXPECT_DOUBLE_EQ(s.optimizer.beta1, 0.8);
  EXPECT_DOUBLE_EQ(s.optimizer.beta2, 0.99);
  EXPECT_DOUBLE_EQ(s.optimizer.eps, 1e-6);
  EXPECT_DOUBLE_EQ(s.optimizer.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(s.optimizer.clip_grad_norm, 1.0);
  EXPECT_EQ(s.optimizer.warmup_steps, 2);
  EXPECT_FALSE(s.checks_defaulted);
  EXPECT_THAT(s.checks, ElementsAre("replica_weights", "collective_order", "determinism"));
  ASSERT_EQ(s.inject.size(), 2u);
  EXPECT_EQ(s.inject[0].kind, "bitflip");
  EXPECT_THAT(s.inject[0].ranks, ElementsAre(1));
  EXPECT_EQ(s.inject[0].step, 3);
  EXPECT_EQ(s.inject[0].tensor, "blocks.*.weight");
  EXPECT_EQ(s.inject[0].params, (std::map<std::string, std::string>{{"bit", "2"}}));
  EXPECT_EQ(s.inject[0].location.line, 19);
  EXPECT_EQ(s.inject[0].location.column, 5);
  EXPECT_EQ(s.inject[1].kind, "crash");
  EXPECT_THAT(s.inject[1].ranks, ElementsAre(2, 3));
  EXPECT_EQ(s.inject[1].params, (std::map<std::string, std::string>{{"signal", "SIGSEGV"}}));
  EXPECT_EQ(s.inject[1].location.line, 20);
  ASSERT_EQ(s.expect_fail.size(), 1u);
  EXPECT_EQ(s.expect_fail[0].checker, "replica_weights");
  EXPECT_EQ(s.expect_fail[0].step, 3);
  EXPECT_THAT(s.expect_fail[0].ranks, ElementsAre(1));
  EXPECT_EQ(s.expect_fail[0].tensor, "blocks.0.mlp.weight");
  EXPECT_EQ(s.discovery_allowed, (std::map<std::string, int>{{"lockstep.topology", 2}}));
  EXPECT_DOUBLE_EQ(s.tolerances.reference_rtol, 1e-4);
  EXPECT_DOUBLE_EQ(s.tolerances.reference_atol, 0);
  EXPECT_DOUBLE_EQ(s.tolerances.golden_rtol, 1e-6);
}

TEST_F(ScenarioLoaderTest, YamlCoreSchemaNumbers) {
  Scenario s = Load("seed: 0x10\nsteps: +7\noptimizer: {lr: .5, weight_decay: 1E-2}\n");
  EXPECT_EQ(s.seed, 16u);
  EXPECT_EQ(s.steps, 7);
  EXPECT_DOUBLE_EQ(s.optimizer.lr, 0.5);
  EXPECT_DOUBLE_EQ(s.optimizer.weight_decay, 0.01);
  EXPECT_EQ(Load("seed: 18446744073709551615\n").seed, 18446744073709551615ull);
}

TEST_F(ScenarioLoaderTest, ChecksComeFromTheCallersVocabulary) {
  // The default set is the caller's, asked with the loaded scenario.
  EXPECT_EQ(Load("ranks: 1\n").checks, kAlwaysChecks);
  // Without a vocabulary (lockstep-rank) names are taken as written and nothing is defaulted.
  EXPECT_THAT(Load("checks: [anything]\n", LoadOptions{}).checks, ElementsAre("anything"));
  EXPECT_TRUE(Load("ranks: 2\n", LoadOptions{}).checks.empty());
  const std::string injected =
      "inject: [{kind: bitflip, rank: 1, step: 2}]\nexpect: {fail: [{checker: replica_weights, step: 2}]}\n";
  EXPECT_EQ(Load(injected, LoadOptions{}).expect_fail.size(), 1u);
  EXPECT_EQ(Load(injected).expect_fail.size(), 1u);
  // With one, a name outside it is an error.
  LoadOptions narrow = TestOptions();
  narrow.checker_names = std::vector<std::string>{"finite"};
  EXPECT_THAT(Errors("checks: [hang]\n", narrow), ElementsAre(HasSubstr("hang")));
}

TEST_F(ScenarioLoaderTest, NameDefaultsToThePathUnderScenarios) {
  EXPECT_EQ(DefaultScenarioName("/x/scenarios/clean/ddp_mlp.yaml"), "clean/ddp_mlp");
  EXPECT_EQ(DefaultScenarioName("/x/scenarios/a/scenarios/b.yml"), "b");
  EXPECT_EQ(DefaultScenarioName("/x/other/ddp_mlp.yaml"), "ddp_mlp");
  EXPECT_EQ(DefaultScenarioName("fixtures/bad_scenarios/x.yaml"), "x");
  fs::path p = Write("scenarios/inject/zero1/skip.yaml", "ranks: 2\n");
  Result<Scenario> r = LoadScenarioFile(p, {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name, "inject/zero1/skip");
}

TEST_F(ScenarioLoaderTest, UnknownKeysSuggestTheClosest) {
  EXPECT_THAT(Errors("ranks: 2\nmodle: {}\n"), ElementsAre("2:1: modle: unknown key; did you mean \"model\"?"));
  EXPECT_THAT(Errors("expect:\n  discovery: {torch.new_grup: 1}\n"),
              ElementsAre(HasSubstr("2:15: expect.discovery.\"torch.new_grup\": unknown discovery call \"torch.new_grup\"; expected one of: lockstep.topology, mpi.init,")));
  EXPECT_THAT(Errors("expect:\n  discovery: {torch.new_group: 0}\n"), ElementsAre("2:32: expect.discovery.\"torch.new_group\": must be >= 1, got 0"));
  EXPECT_THAT(Errors("expect:\n  discovery: [torch.new_group]\n"), ElementsAre(HasSubstr("expect.discovery")));
  EXPECT_THAT(Errors("model:\n  hiden: 32\n"), ElementsAre("2:3: model.hiden: unknown key; did you mean \"hidden\"?"));
  EXPECT_THAT(Errors("data: {zzz: 1}\n"), ElementsAre("1:8: data.zzz: unknown key; expected one of: batch_per_rank"));
  // Odd keys are quoted so that the diagnostic stays one readable line.
  EXPECT_THAT(Errors("\"ran\\rks\": 2\n"), ElementsAre("1:1: \"ran\\rks\": unknown key; did you mean \"ranks\"?"));
  EXPECT_THAT(Errors("model: {\"a.b\": 1}\n"),
              ElementsAre("1:9: model.\"a.b\": unknown key; expected one of: kind, layers, hidden, heads, seq_len, vocab, "
                          "input_dim, output_dim, attention, norm, dropout"));
  EXPECT_THAT(Errors("<<: {ranks: 2}\n"),
              ElementsAre("1:1: <<: YAML merge keys are not supported; put shared values in lockstep.defaults.yaml"));
}

TEST_F(ScenarioLoaderTest, WrongTypesNameWhatWasFound) {
  EXPECT_THAT(Errors("ranks: \"four\"\n"), ElementsAre("1:8: ranks: expected an integer, got string \"four\""));
  EXPECT_THAT(Errors("ranks: four\n"), ElementsAre("1:8: ranks: expected an integer, got string \"four\""));
  EXPECT_THAT(Errors("ranks: 2.5\n"), ElementsAre("1:8: ranks: expected an integer, got float 2.5"));
  EXPECT_THAT(Errors("ranks: '4'\n"), ElementsAre("1:8: ranks: expected an integer, got string \"4\""));
  EXPECT_THAT(Errors("ranks: [4]\n"), ElementsAre("1:8: ranks: expected an integer, got a list"));
  EXPECT_THAT(Errors("model: 5\n"), ElementsAre("1:8: model: expected a mapping, got integer 5"));
  EXPECT_THAT(Errors("optimizer: {lr: fast}\n"), ElementsAre("1:17: optimizer.lr: expected a number, got string \"fast\""));
  EXPECT_THAT(Errors("description: true\n"), ElementsAre("1:14: description: expected a string, got boolean true"));
  EXPECT_THAT(Errors("checks: replica_weights\n"),
              ElementsAre("1:9: checks: expected a list, got string \"replica_weights\""));
  EXPECT_THAT(Errors("ranks: !custom 4\n"), ElementsAre("1:8: ranks: expected an integer, got a value tagged !custom"));
  // Long strings are shortened in messages.
  EXPECT_THAT(Errors("ranks: " + std::string(60, 'x') + "\n"),
              ElementsAre("1:8: ranks: expected an integer, got string \"" + std::string(37, 'x') + "...\""));
}

TEST_F(ScenarioLoaderTest, EmptyValueIsReportedAtItsKey) {
  // yaml-cpp marks an empty value at the next token; the key is where the mistake is.
  EXPECT_THAT(Errors("model:\n  heads:\n\nsteps: 3\n"),
              ElementsAre("2:3: model.heads: expected an integer, got no value"));
  EXPECT_THAT(Errors("model: ~\n"), ElementsAre("1:1: model: expected a mapping, got no value"));
}

TEST_F(ScenarioLoaderTest, OutOfRangeValues) {
  EXPECT_THAT(Errors("ranks: 0\n"), ElementsAre("1:8: ranks: must be >= 1, got 0"));
  EXPECT_THAT(Errors("ranks: 3000000000\n"), ElementsAre("1:8: ranks: must be <= 65536, got 3000000000"));
  EXPECT_THAT(Errors("steps: 0\n"), ElementsAre("1:8: steps: must be >= 1, got 0"));
  EXPECT_THAT(Errors("steps: 99999999999999999999\n"),
              ElementsAre("1:8: steps: 99999999999999999999 does not fit in a 64-bit integer"));
  EXPECT_THAT(Errors("seed: -1\n"), ElementsAre("1:7: seed: must be >= 0, got -1"));
  EXPECT_THAT(Errors("timeout_s: 0\n"), ElementsAre("1:12: timeout_s: must be in (0, 1e+06], got 0"));
  EXPECT_THAT(Errors("optimizer: {lr: 0}\n"), ElementsAre("1:17: optimizer.lr: must be in [1.17549e-38, 3.40282e+38], got 0"));
  EXPECT_THAT(Errors("optimizer: {lr: -0.1}\n"), ElementsAre("1:17: optimizer.lr: must be in [1.17549e-38, 3.40282e+38], got -0.1"));
  EXPECT_THAT(Errors("optimizer: {lr: .nan}\n"), ElementsAre("1:17: optimizer.lr: must be a finite number, got .nan"));
  EXPECT_THAT(Errors("parallel: {grad_accum: 0}\n"), ElementsAre("1:24: parallel.grad_accum: must be >= 1, got 0"));
  EXPECT_THAT(Errors("model: {dropout: 1.0}\n"), ElementsAre("1:18: model.dropout: must be in [0, 1), got 1.0"));
  EXPECT_THAT(Errors("model: {dropout: -0.5}\n"), ElementsAre("1:18: model.dropout: must be in [0, 1), got -0.5"));
  EXPECT_THAT(Errors("tolerances: {reference_rtol: -1}\n"),
              ElementsAre("1:30: tolerances.reference_rtol: must be in [0, 3.40282e+38], got -1"));
}

// What validates must run: every value is held to what the trainer and the launcher can honour.
TEST_F(ScenarioLoaderTest, ValuesARunCannotHonourAreRefused) {
  EXPECT_THAT(Errors("ranks: 1000000000\n"), ElementsAre("1:8: ranks: must be <= 65536, got 1000000000"));
  EXPECT_THAT(Errors("steps: 9223372036854775807\n"),
              ElementsAre("1:8: steps: must be <= 1000000, got 9223372036854775807"));
  EXPECT_THAT(Errors("model: {hidden: 1000000000}\n"),
              ElementsAre("1:17: model.hidden: must be <= 16384, got 1000000000"));
  EXPECT_THAT(Errors("hang_timeout_s: 1e-300\n"),
              ElementsAre("1:17: hang_timeout_s: must be in [1, 1e+06], got 1e-300"));
  EXPECT_THAT(Errors("timeout_s: 1e300\n"), ElementsAre("1:12: timeout_s: must be in (0, 1e+06], got 1e300"));
  EXPECT_THAT(Errors("optimizer: {lr: 1e308}\n"),
              ElementsAre("1:17: optimizer.lr: must be in [1.17549e-38, 3.40282e+38], got 1e308"));
  EXPECT_THAT(Errors("optimizer: {lr: 1e-300}\n"),
              ElementsAre("1:17: optimizer.lr: must be in [1.17549e-38, 3.40282e+38], got 1e-300"));
  EXPECT_THAT(Errors("inject: [{kind: crash, rank: 1, step: 1, signal: SIGFOO}]\n"),
              ElementsAre("1:50: inject[0].signal: must be SIGSEGV or SIGKILL, got \"SIGFOO\""));
  EXPECT_THAT(Errors("inject: [{kind: crash, rank: 1, step: 1, exit_code: 0}]\n"),
              ElementsAre(HasSubstr("1:53: inject[0].exit_code: must be an integer in [1, 255] other than 2 and 3")));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 1, step: 1, bit: 64}]\n"),
              ElementsAre(HasSubstr("1:49: inject[0].bit: must be an integer in [0, 31]")));
}

TEST_F(ScenarioLoaderTest, IdsTooLongOrReservedAreRefused) {
  EXPECT_THAT(Errors("name: " + std::string(10000, 'a') + "\n"),
              ElementsAre(HasSubstr("is 10000 characters long; an id may have at most 200")));
  EXPECT_THAT(Errors("name: " + std::string(101, 'a') + "/b\n"),
              ElementsAre(HasSubstr("has a part of 101 characters; each part between '/' may have at most 100")));
  EXPECT_THAT(Errors("name: report.json\n"),
              ElementsAre("1:7: name: \"report.json\": \"report.json\" is a file of the run directory; choose "
                          "another id"));
  EXPECT_THAT(Errors("name: report.json/x\n"), ElementsAre(HasSubstr("is a file of the run directory")));
}

// "a/reference" would be written inside "a" (where a's own reference run goes), and removing
// "a" before its run would delete the other's results.
TEST_F(ScenarioLoaderTest, IdsThatNestInOneRunAreRefused) {
  Write("two/a.yaml", "name: a\n");
  Write("two/b.yaml", "name: a/reference\n");
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> r = LoadScenarios({(dir_ / "two").string()}, {}, &diagnostics);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(), (dir_ / "two/b.yaml").generic_string() +
                                           ":1:7: name: scenario id \"a/reference\" would lie inside the folder of "
                                           "\"a\" (" + (dir_ / "two/a.yaml").generic_string() +
                                           "); ids in one run may not nest");
}

TEST_F(ScenarioLoaderTest, RulesAcrossKeysPointAtTheKeyThatBreaksThem) {
  EXPECT_THAT(Errors("ranks: 4\nslices: 3\n"), ElementsAre("2:9: slices: ranks (4) must be a multiple of slices (3)"));
  EXPECT_THAT(Errors("ranks: 6\nslices: 4\n"), ElementsAre("2:9: slices: ranks (6) must be a multiple of slices (4)"));
  EXPECT_THAT(Errors("model: {kind: transformer, hidden: 64, heads: 5}\n"),
              ElementsAre("1:47: model.heads: model.hidden (64) must be a multiple of model.heads (5)"));
  // heads left at its default (4): the hidden size is what the file got wrong.
  EXPECT_THAT(Errors("model: {kind: transformer, hidden: 30}\n"),
              ElementsAre("1:36: model.hidden: model.hidden (30) must be a multiple of model.heads (4)"));
  // An mlp has no heads.
  Load("model: {kind: mlp, hidden: 30, heads: 4}\n");
  EXPECT_THAT(Errors("model: {kind: transformer, norm: batchnorm}\n"),
              ElementsAre("1:34: model.norm: batchnorm is for mlp models; the transformer's blocks use layernorm"));
  EXPECT_THAT(Errors("model: {norm: batchnorm}\ndata: {batch_per_rank: 1}\n"),
              ElementsAre("2:24: data.batch_per_rank: batchnorm needs at least 2 samples per rank, got 1"));
}

TEST_F(ScenarioLoaderTest, RulesAcrossKeysSkipValuesAlreadyRejected) {
  // heads: "x" is one mistake, not two.
  EXPECT_THAT(Errors("model: {kind: transformer, hidden: 30, heads: x}\n"),
              ElementsAre("1:47: model.heads: expected an integer, got string \"x\""));
}

TEST_F(ScenarioLoaderTest, UnknownEnumValuesListTheAllowedOnes) {
  EXPECT_THAT(Errors("backend: mpii\n"),
              ElementsAre("1:10: backend: unknown value \"mpii\"; expected one of: mpi, gloo, nccl; did you mean \"mpi\"?"));
  EXPECT_THAT(Errors("ranks: 2\ndevice: gpu\n"),
              ElementsAre("2:9: device: unknown value \"gpu\"; expected one of: cpu, cuda; did you mean \"cpu\"?"));
  EXPECT_THAT(Errors("model: {kind: cnn}\n"),
              ElementsAre("1:15: model.kind: unknown value \"cnn\"; expected one of: mlp, transformer"));
  EXPECT_THAT(Errors("model: {kind: MLP}\n"),
              ElementsAre("1:15: model.kind: unknown value \"MLP\"; expected one of: mlp, transformer; did you mean \"mlp\"?"));
  EXPECT_THAT(Errors("model: {attention: flash2}\n"),
              ElementsAre("1:20: model.attention: unknown value \"flash2\"; expected one of: naive, flash, sdpa; did you "
                          "mean \"flash\"?"));
  EXPECT_THAT(Errors("parallel: {mode: fsdp}\n"),
              ElementsAre("1:18: parallel.mode: unknown value \"fsdp\"; expected one of: ddp, zero1; did you mean \"ddp\"?"));
  EXPECT_THAT(Errors("optimizer: {kind: adam}\n"),
              ElementsAre("1:19: optimizer.kind: unknown value \"adam\"; expected one of: sgd, adamw; did you mean "
                          "\"adamw\"?"));
  EXPECT_THAT(Errors("checks: [replica_weight]\n"),
              ElementsAre("1:10: checks[0]: unknown checker \"replica_weight\"; did you mean \"replica_weights\"?"));
  EXPECT_THAT(Errors("checks: [finite, finite]\n"), ElementsAre("1:18: checks[1]: checker \"finite\" is listed twice"));
  EXPECT_THAT(Errors("checks: []\n"),
              ElementsAre("1:9: checks: must name at least one checker; leave `checks` out for the default set"));
}

TEST_F(ScenarioLoaderTest, DuplicateKeysAreReportedAtTheRepeat) {
  EXPECT_THAT(Errors("ranks: 2\nsteps: 3\nranks: 4\n"),
              ElementsAre("3:1: ranks: duplicate key (first given at line 1, column 1)"));
  EXPECT_THAT(Errors("model: {hidden: 32, hidden: 64}\n"),
              ElementsAre("1:21: model.hidden: duplicate key (first given at line 1, column 9)"));
}

TEST_F(ScenarioLoaderTest, AllErrorsOfAFileInFileOrder) {
  EXPECT_THAT(Errors("ranks: 4\nslices: 3\nsteps: 0\nmodel: {kind: transformer, hidden: 64, heads: 5}\nbackend: x\n"),
              ElementsAre("2:9: slices: ranks (4) must be a multiple of slices (3)", "3:8: steps: must be >= 1, got 0",
                          "4:47: model.heads: model.hidden (64) must be a multiple of model.heads (5)",
                          "5:10: backend: unknown value \"x\"; expected one of: mpi, gloo, nccl"));
}

TEST_F(ScenarioLoaderTest, FilesThatAreNotScenarios) {
  EXPECT_THAT(Errors(""), ElementsAre("1:1: empty scenario file"));
  EXPECT_THAT(Errors("# just a comment\n\n"), ElementsAre("1:1: empty scenario file"));
  EXPECT_THAT(Errors("- ranks: 2\n"), ElementsAre("1:1: the top level must be a mapping of scenario keys, got a list"));
  EXPECT_THAT(Errors("just text\n"),
              ElementsAre("1:1: the top level must be a mapping of scenario keys, got string \"just text\""));
  EXPECT_THAT(Errors("ranks: 2\n---\nranks: 3\n"),
              ElementsAre("3:1: a scenario file holds one YAML document; a second one starts here"));
  EXPECT_THAT(Errors("ranks: [1, 2\nsteps: 3\n"), ElementsAre("2:6: invalid YAML: end of sequence flow not found"));
  EXPECT_THAT(Errors("ranks: 2\n\tsteps: 3\n"),
              ElementsAre("2:1: invalid YAML: illegal tab when looking for indentation (this line is indented with a tab; "
                          "YAML needs spaces)"));
  // lockstep's own words (yaml-cpp 0.8 appends the name to its message, 0.7 does not), naming the
  // alias: an anchor defined only after it counts as undefined.
  EXPECT_THAT(Errors("ranks: *nope\n"), ElementsAre("1:8: invalid YAML: alias *nope: no anchor &nope is defined before it"));
  EXPECT_THAT(Errors("ranks: *n\nsteps: &n 2\n"), ElementsAre("1:8: invalid YAML: alias *n: no anchor &n is defined before it"));
  EXPECT_THAT(Errors("checks: [*nope, hang]\n"), ElementsAre("1:10: invalid YAML: alias *nope: no anchor &nope is defined before it"));
  EXPECT_THAT(Errors("ranks: *" + std::string(60, 'a') + "\n"),
              ElementsAre("1:8: invalid YAML: alias *" + std::string(37, 'a') + "...: no anchor &" + std::string(37, 'a') +
                          "... is defined before it"));
  // yaml-cpp's LoadAll never returns on these: its parser reports empty documents forever.
  EXPECT_THAT(Errors(",\n"), ElementsAre("1:1: invalid YAML: unexpected \",\""));
  EXPECT_THAT(Errors(",mode: 1.0\nl:\n!!str  kintransformer\n  dropout: 1.0\n"),
              ElementsAre("1:1: invalid YAML: unexpected \",\""));
  EXPECT_THAT(Errors("---\n---\n"), ElementsAre("2:1: a scenario file holds one YAML document; a second one starts here"));
}

TEST_F(ScenarioLoaderTest, BytesThatAreNotUtf8AreFoundBeforeParsing) {
  EXPECT_THAT(Errors("ranks: 2\ndescription: \"caf\xC3\xA9 \xFF\"\n"),
              ElementsAre("2:20: invalid UTF-8: byte 0xFF cannot start a character"));
  EXPECT_THAT(Errors(std::string("\xFE\xFF\0r", 4)),
              ElementsAre("1:1: the file is UTF-16 (it starts with the byte-order mark 0xFE 0xFF); scenario files must be "
                          "UTF-8"));
  EXPECT_THAT(Errors(std::string("\xFF\xFEr\0", 4)),
              ElementsAre("1:1: the file is UTF-16 (it starts with the byte-order mark 0xFF 0xFE); scenario files must be "
                          "UTF-8"));
  // A UTF-8 byte-order mark is fine.
  EXPECT_EQ(Load("\xEF\xBB\xBFranks: 3\n").ranks, 3);
}

TEST_F(ScenarioLoaderTest, HugeFileIsRefusedBeforeParsing) {
  // Valid YAML but one byte over the limit: refused on size alone.
  std::string content = "description: \"";
  content += std::string(kMaxScenarioFileBytes - content.size() - 1, 'x');
  content += "\"\n";
  ASSERT_EQ(content.size(), kMaxScenarioFileBytes + 1);
  EXPECT_THAT(Errors(content), ElementsAre("1:1: file is 1048577 bytes; a scenario file may be at most 1 MiB (1048576 bytes)"));
  content.erase(content.size() - 3, 1);  // exactly 1 MiB loads
  EXPECT_EQ(Load(content).description.size(), kMaxScenarioFileBytes - 16);
}

TEST_F(ScenarioLoaderTest, PathsThatCannotBeLoaded) {
  std::vector<Diagnostic> diagnostics;
  Result<Scenario> r = LoadScenarioFile(dir_ / "missing.yaml", {}, &diagnostics);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(), (dir_ / "missing.yaml").generic_string() + ": no such file or directory");
  EXPECT_EQ(diagnostics[0].location.line, 0);

  fs::create_directories(dir_ / "empty" / "sub");
  Write("empty/notes.txt", "not a scenario");
  Write("empty/.hidden.yaml", "ranks: 2\n");
  diagnostics.clear();
  Result<std::vector<Scenario>> all = LoadScenarios({(dir_ / "empty").string()}, {}, &diagnostics);
  EXPECT_FALSE(all.ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(),
            (dir_ / "empty").generic_string() + ": no scenario files (*.yaml, *.yml) in this folder");
}

TEST_F(ScenarioLoaderTest, SdpaIsAnAttentionPath) {
  EXPECT_EQ(Load("model: {kind: transformer, attention: sdpa}\n").model.attention, AttentionKind::kSdpa);
}

TEST_F(ScenarioLoaderTest, NcclWithoutNcclIsValidAndSkippedAtRunTime) {
  LoadOptions no_nccl;
  no_nccl.nccl_available = false;
  EXPECT_EQ(Load("backend: nccl\n", no_nccl).backend, Backend::kNccl);
}

TEST_F(ScenarioLoaderTest, InjectionEntries) {
  EXPECT_THAT(Errors("inject: [{kind: bitflp, rank: 0}]\n"),
              ElementsAre("1:17: inject[0].kind: unknown injection kind \"bitflp\"; did you mean \"bitflip\"?"));
  EXPECT_THAT(Errors("inject: [{kind: meteor, rank: 0}]\n")[0],
              HasSubstr("inject[0].kind: unknown injection kind \"meteor\"; expected one of: skip_grad_allreduce, "));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 0, ranks: [1]}]\n"),
              ElementsAre("1:35: inject[0].ranks: give either `rank` or `ranks`, not both"));
  EXPECT_THAT(Errors("inject:\n  - kind: bitflip\n    step: 2\n"),
              ElementsAre("2:5: inject[0].rank: missing required key (or `ranks: [...]` for several ranks)"));
  EXPECT_THAT(Errors("inject:\n  - rank: 1\n"), ElementsAre("2:5: inject[0].kind: missing required key"));
  EXPECT_THAT(Errors("ranks: 2\ninject: [{kind: bitflip, rank: 2}]\n"),
              ElementsAre("2:32: inject[0].rank: must be < ranks (2), got 2"));
  EXPECT_THAT(Errors("ranks: 4\ninject: [{kind: bitflip, ranks: [1, 4]}]\n"),
              ElementsAre("2:37: inject[0].ranks[1]: must be < ranks (4), got 4"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, ranks: [1, 1]}]\n"),
              ElementsAre("1:37: inject[0].ranks[1]: rank 1 is listed twice"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, ranks: []}]\n"),
              ElementsAre("1:33: inject[0].ranks: must name at least one rank"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: -1}]\n"), ElementsAre("1:32: inject[0].rank: must be >= 0, got -1"));
  EXPECT_THAT(Errors("steps: 5\ninject: [{kind: bitflip, rank: 0, step: 6}]\n"),
              ElementsAre("2:41: inject[0].step: must be <= steps (5), got 6"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 0, step: -1}]\n"),
              ElementsAre("1:41: inject[0].step: must be >= 0, got -1"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 0, stpe: 1}]\n"),
              ElementsAre("1:35: inject[0].stpe: unknown key; did you mean \"step\"?"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 0, bit: [1]}]\n"),
              ElementsAre("1:40: inject[0].bit: expected a single value, got a list"));
  EXPECT_THAT(Errors("inject: [5]\n"), ElementsAre("1:10: inject[0]: expected a mapping, got integer 5"));
  EXPECT_THAT(Errors("inject: {kind: bitflip}\n"), ElementsAre("1:9: inject: expected a list, got a mapping"));
  Scenario s = Load("inject: [{kind: bitflip, rank: 1, step: 0, bit: 30, index: 5}]\n");
  EXPECT_EQ(s.inject[0].step, 0);
  EXPECT_EQ(s.inject[0].params, (std::map<std::string, std::string>{{"bit", "30"}, {"index", "5"}}));
  EXPECT_EQ(Load("inject: [{kind: bitflip, rank: 1}]\n").inject[0].step, 1);  // the documented default
}

TEST_F(ScenarioLoaderTest, InjectionKindsNeedWhatTheyActOn) {
  EXPECT_THAT(Errors("inject: [{kind: skip_param_allgather, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: skip_param_allgather needs parallel.mode: zero1, but parallel.mode is ddp"));
  Load("parallel: {mode: zero1}\ninject: [{kind: skip_param_allgather, rank: 1}]\n");
  EXPECT_THAT(Errors("inject: [{kind: no_sync_off_by_one, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: no_sync_off_by_one needs parallel.grad_accum > 1, but "
                          "parallel.grad_accum is 1"));
  EXPECT_THAT(Errors("inject: [{kind: unsynced_buffers, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: unsynced_buffers needs model.norm: batchnorm, but model.norm is layernorm"));
  EXPECT_THAT(Errors("inject: [{kind: skip_grad_clip, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: skip_grad_clip needs optimizer.clip_grad_norm > 0, but "
                          "optimizer.clip_grad_norm is 0"));
  EXPECT_THAT(Errors("inject: [{kind: double_discovery, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: double_discovery needs model.kind: transformer, but model.kind is mlp"));
  EXPECT_THAT(Errors("inject: [{kind: no_initial_broadcast, rank: 1}]\n"),
              ElementsAre("1:17: inject[0].kind: no_initial_broadcast needs step: 0, but step is 1"));
  Load("inject: [{kind: no_initial_broadcast, rank: 1, step: 0}]\n");
}

TEST_F(ScenarioLoaderTest, ExpectEntries) {
  EXPECT_THAT(Errors("expect: {fail: [{checker: replicas, step: 3}]}\n"),
              ElementsAre("1:27: expect.fail[0].checker: unknown checker \"replicas\"; expected one of: replica_weights, "
                          "synced_grads, optimizer_state, buffers, collective_order, discovery_count, finite, hang, "
                          "crash, reference, determinism, golden"));
  EXPECT_THAT(Errors("expect: {fail: [{step: 3}]}\n"), ElementsAre("1:17: expect.fail[0].checker: missing required key"));
  EXPECT_THAT(Errors("ranks: 2\nexpect: {fail: [{checker: crash, ranks: [0, 5]}]}\n"),
              ElementsAre("2:45: expect.fail[0].ranks[1]: must be < ranks (2), got 5"));
  EXPECT_THAT(Errors("expect: {fail: [{checker: golden}]}\n"),
              ElementsAre("1:27: expect.fail[0].checker: \"golden\" is not among the checks this scenario runs"));
  EXPECT_THAT(Errors("expect: {fail: [{checker: crash, rank: 1}]}\n"),
              ElementsAre("1:34: expect.fail[0].rank: unknown key; did you mean \"ranks\"?"));
  EXPECT_THAT(Errors("expect: {discovery_calls: 0}\n"), ElementsAre("1:27: expect.discovery_calls: must be >= 1, got 0"));
  Load("checks: [golden]\nexpect: {fail: [{checker: golden}]}\n");
}

TEST_F(ScenarioLoaderTest, InvalidIds) {
  EXPECT_THAT(Errors("name: \"has space\"\n"),
              ElementsAre("1:7: name: \"has space\" is not a valid id; use letters, digits, '_', '-' and '.', with '/' "
                          "between parts"));
  EXPECT_THAT(Errors("name: ../up\n")[0], HasSubstr("name: \"../up\" is not a valid id"));
  EXPECT_THAT(ErrorsIn(Write("bad name.yaml", "ranks: 2\n")),
              ElementsAre("1:1: name: the id \"bad name\" taken from the file path is not valid (use letters, digits, "
                          "'_', '-' and '.', with '/' between parts); set `name`"));
}

TEST_F(ScenarioLoaderTest, FoldersExpandSortedAndSkipDefaultsAndHiddenFiles) {
  Write("scenarios/b.yaml", "ranks: 2\n");
  Write("scenarios/a/z.yml", "ranks: 2\n");
  Write("scenarios/a/y.yaml", "ranks: 2\n");
  Write("scenarios/.git-like/hidden.yaml", "not: valid\n");
  Write("scenarios/notes.md", "ignored");
  Write("scenarios/lockstep.defaults.yaml", "steps: 4\n");
  std::vector<Diagnostic> diagnostics;
  // The same file twice (directly and through its folder) loads once.
  Result<std::vector<Scenario>> r =
      LoadScenarios({(dir_ / "scenarios").string(), (dir_ / "scenarios/b.yaml").string()}, {}, &diagnostics);
  ASSERT_TRUE(r.ok()) << (diagnostics.empty() ? r.status().ToString() : diagnostics[0].ToString());
  std::vector<std::string> names;
  for (const Scenario& s : *r) names.push_back(s.name);
  EXPECT_THAT(names, ElementsAre("a/y", "a/z", "b"));
  EXPECT_EQ((*r)[0].steps, 4);
}

TEST_F(ScenarioLoaderTest, DuplicateIdsAcrossFiles) {
  Write("one/a.yaml", "name: same\n");
  Write("one/b.yaml", "ranks: 2\nname: same\n");
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> r = LoadScenarios({(dir_ / "one").string()}, {}, &diagnostics);
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(), (dir_ / "one/b.yaml").generic_string() +
                                           ":2:7: name: duplicate scenario id \"same\"; " +
                                           (dir_ / "one/a.yaml").generic_string() + " has it too");
}

TEST_F(ScenarioLoaderTest, DefaultsFilesApplyNearestFirst) {
  Write("scenarios/lockstep.defaults.yaml", "steps: 7\nmodel: {hidden: 48, layers: 3}\nchecks: [finite]\n");
  Write("scenarios/deep/lockstep.defaults.yaml", "model: {hidden: 32}\nbackend: gloo\n");
  fs::path file = Write("scenarios/deep/x.yaml", "model: {kind: transformer, heads: 2}\n");
  Result<Scenario> r = LoadScenarioFile(file, {}, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->steps, 7);
  EXPECT_EQ(r->model.hidden, 32);   // the nearer file wins
  EXPECT_EQ(r->model.layers, 3);    // mappings merge key by key
  EXPECT_EQ(r->model.heads, 2);     // the scenario file wins over both
  EXPECT_EQ(r->backend, Backend::kGloo);
  EXPECT_THAT(r->checks, ElementsAre("finite"));
  EXPECT_FALSE(r->checks_defaulted);
  // A scenario outside the folder is untouched.
  EXPECT_EQ(Load("ranks: 2\n").steps, Scenario{}.steps);
}

TEST_F(ScenarioLoaderTest, DefaultsFileErrorsAreReportedOnceAndFailItsScenarios) {
  Write("scenarios/lockstep.defaults.yaml", "name: shared\nstepz: 3\n");
  Write("scenarios/a.yaml", "ranks: 2\n");
  Write("scenarios/b.yaml", "ranks: x\n");
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> r = LoadScenarios({(dir_ / "scenarios").string()}, {}, &diagnostics);
  EXPECT_FALSE(r.ok());
  std::vector<std::string> lines;
  for (const Diagnostic& d : diagnostics) lines.push_back(d.ToString());
  const std::string defaults = (dir_ / "scenarios/lockstep.defaults.yaml").generic_string();
  EXPECT_THAT(lines, ElementsAre(defaults + ":1:7: name: belongs to one scenario and cannot be set in lockstep.defaults.yaml",
                                 defaults + ":2:1: stepz: unknown key; did you mean \"steps\"?",
                                 (dir_ / "scenarios/b.yaml").generic_string() +
                                     ":1:8: ranks: expected an integer, got string \"x\""));
}

TEST_F(ScenarioLoaderTest, RuleBrokenByADefaultsValuePointsIntoTheDefaultsFile) {
  Write("scenarios/lockstep.defaults.yaml", "# shared\nslices: 3\n");
  fs::path file = Write("scenarios/a.yaml", "ranks: 4\n");
  std::vector<Diagnostic> diagnostics;
  EXPECT_FALSE(LoadScenarioFile(file, {}, &diagnostics).ok());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].ToString(), (dir_ / "scenarios/lockstep.defaults.yaml").generic_string() +
                                           ":2:9: slices: ranks (4) must be a multiple of slices (3)");
}

// The example tree in fixtures/scenario_defaults/ (the one docs/SCENARIOS.md points to).
TEST(ScenarioDefaultsFixtureTest, NestedDefaultsFilesCombine) {
  std::vector<Diagnostic> diagnostics;
  Result<std::vector<Scenario>> r =
      LoadScenarios({std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/scenario_defaults/scenarios"}, {}, &diagnostics);
  ASSERT_TRUE(r.ok()) << (diagnostics.empty() ? r.status().ToString() : diagnostics[0].ToString());
  std::map<std::string, Scenario> by_name;
  for (const Scenario& s : *r) by_name[s.name] = s;
  ASSERT_EQ(by_name.size(), 3u);
  const Scenario& mlp = by_name.at("mlp");
  EXPECT_EQ(mlp.ranks, 4);
  EXPECT_EQ(mlp.steps, 6);
  EXPECT_EQ(mlp.model.kind, ModelKind::kMlp);
  EXPECT_EQ(mlp.model.hidden, 32);
  EXPECT_EQ(mlp.optimizer.kind, OptimizerKind::kSgd);
  const Scenario& naive = by_name.at("transformer/naive");
  EXPECT_EQ(naive.model.kind, ModelKind::kTransformer);
  EXPECT_EQ(naive.model.hidden, 32);
  EXPECT_EQ(naive.model.seq_len, 16);
  EXPECT_EQ(naive.optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(naive.data.batch_per_rank, 2);
  EXPECT_EQ(naive.steps, 6);
  const Scenario& flash = by_name.at("transformer/flash");
  EXPECT_EQ(flash.model.attention, AttentionKind::kFlash);
  EXPECT_EQ(flash.steps, 4);
  EXPECT_EQ(flash.model.vocab, 64);
}

TEST_F(ScenarioLoaderTest, DiagnosticFormat) {
  // Named, not temporaries: GCC 12 warns (-Wmaybe-uninitialized, a false positive) on a string
  // member of an aggregate temporary destroyed inside EXPECT_EQ.
  const Diagnostic with_position{{"a/b.yaml", 3, 7}, "bad"};
  const Diagnostic without{{"a/", 0, 0}, "empty"};
  EXPECT_EQ(with_position.ToString(), "a/b.yaml:3:7: bad");
  EXPECT_EQ(without.ToString(), "a/: empty");
}

TEST(ScenarioKeyPathsTest, CoversTheIssueExample) {
  std::vector<std::string> keys = ScenarioKeyPaths();
  for (const char* k : {"name", "description", "ranks", "slices", "backend", "device", "steps", "seed", "timeout_s",
                        "hang_timeout_s", "model.kind", "model.layers", "model.hidden", "model.heads", "model.seq_len",
                        "model.vocab", "model.attention", "model.norm", "model.dropout", "model.input_dim",
                        "model.output_dim", "data.batch_per_rank", "parallel.mode", "parallel.bucket_mb",
                        "parallel.grad_accum", "optimizer.kind", "optimizer.lr", "optimizer.momentum",
                        "optimizer.weight_decay", "optimizer.clip_grad_norm", "optimizer.warmup_steps",
                        "optimizer.beta1", "optimizer.beta2", "optimizer.eps", "checks", "inject", "inject[].kind",
                        "inject[].rank", "inject[].ranks", "inject[].step", "inject[].tensor", "expect.fail",
                        "expect.fail[].checker", "expect.fail[].step", "expect.fail[].ranks", "expect.fail[].tensor",
                        "expect.discovery_calls", "tolerances.reference_rtol", "tolerances.reference_atol",
                        "tolerances.golden_rtol"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
}

// docs/SCENARIOS.md is the reference for scenario authors: it must name every key, every
// injection kind and every checker the loader accepts.
TEST(ScenarioDocsTest, DocumentsEveryKeyAndKind) {
  std::ifstream in(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/SCENARIOS.md");
  ASSERT_TRUE(in) << "docs/SCENARIOS.md is missing";
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string docs = buffer.str();
  for (const std::string& key : ScenarioKeyPaths()) {
    EXPECT_NE(docs.find("`" + key + "`"), std::string::npos) << "key " << key;
  }
  for (const InjectionKindInfo& kind : kInjectionKinds) {
    EXPECT_NE(docs.find("`" + std::string(kind.name) + "`"), std::string::npos) << "injection kind " << kind.name;
  }
}

// Every injection that validates acts: parameters, tensors and modes that would make it a silent
// no-op are refused where they are written.
TEST_F(ScenarioLoaderTest, InjectionsThatWouldDoNothingAreRefused) {
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 1, step: 0, bit: 30, seed: 7}]\n"),
              ElementsAre("1:59: inject[0].seed: unknown parameter: bitflip takes only `bit` and `index`"));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 1, bit: 32}]\n"),
              ElementsAre(HasSubstr("1:40: inject[0].bit: must be an integer in [0, 31]")));
  EXPECT_THAT(Errors("inject: [{kind: bitflip, rank: 1, index: -4}]\n"),
              ElementsAre(HasSubstr("1:42: inject[0].index: must be an integer in [0, ")));
  EXPECT_THAT(Errors("inject: [{kind: crash, rank: 1, exit_code: 3}]\n"),
              ElementsAre(HasSubstr("1:44: inject[0].exit_code: must be an integer in [1, 255] other than 2 and 3")));
  EXPECT_THAT(Errors("inject: [{kind: crash, rank: 1, signal: SIGTERM}]\n"),
              ElementsAre("1:41: inject[0].signal: must be SIGSEGV or SIGKILL, got \"SIGTERM\""));
  EXPECT_THAT(Errors("inject: [{kind: hang, rank: 1, tensor: w}]\n"),
              ElementsAre(HasSubstr("1:40: inject[0].tensor: hang does not act on chosen tensors")));
  EXPECT_THAT(Errors("inject: [{kind: stale_grad, rank: 1, step: 1}]\n"),
              ElementsAre(HasSubstr("1:44: inject[0].step: stale_grad needs step >= 2")));
  EXPECT_THAT(Errors("parallel: {mode: zero1}\ninject: [{kind: nondeterministic_reduce, rank: 1, step: 2}]\n"),
              ElementsAre(HasSubstr("2:17: inject[0].kind: nondeterministic_reduce has no observable effect in "
                                    "parallel.mode zero1")));
  EXPECT_THAT(Errors("parallel: {mode: zero1, grad_accum: 2}\ninject: [{kind: no_sync_off_by_one, rank: 1, step: 2}]\n"),
              ElementsAre(HasSubstr("2:17: inject[0].kind: no_sync_off_by_one has no effect in parallel.mode zero1")));
  // In zero1 these act on the rank's own shard (caught by `reference`).
  for (const char* kind : {"stale_grad", "skip_grad_allreduce", "wrong_grad_scale"}) {
    EXPECT_EQ(Load(std::string("parallel: {mode: zero1}\ninject: [{kind: ") + kind + ", rank: 1, step: 2}]\n")
                  .inject.size(),
              1u)
        << kind;
  }
}

// What checks see stands for the registry's here (checkers/checker_registry_test.cc pins the
// real one): the cross-replica checks see divergent replicas, `reference` a drift from a clean run.
LoadOptions SeeingOptions() {
  LoadOptions options = TestOptions();
  options.default_checks = [](const Scenario&) { return kAlwaysChecks; };  // injected: no `reference`
  auto sees = [](const std::string& check) -> Symptoms {
    if (check == "replica_weights") return symptom::kReplicaWeightsDiffer;
    if (check == "synced_grads") return symptom::kSyncedGradsDiffer;
    if (check == "reference") return symptom::kDriftFromCleanRun | symptom::kReplicaWeightsDiffer;
    if (check == "hang") return symptom::kRankHangs;
    return symptom::kNone;
  };
  options.symptoms_seen_by = [sees](const std::vector<std::string>& checks) {
    Symptoms seen = symptom::kNone;
    for (const std::string& c : checks) seen |= sees(c);
    return seen;
  };
  options.checkers_seeing = [sees](Symptoms symptoms) {
    std::vector<std::string> names;
    for (const std::string& c : kTestCheckerNames) {
      if (sees(c) & symptoms) names.push_back(c);
    }
    return names;
  };
  return options;
}

// In zero1 a corrupted shard update is copied to every replica: with the default checks (no
// `reference` for an injected scenario) or a `checks:` list without it, nothing would see it.
TEST_F(ScenarioLoaderTest, InjectionThatNoCheckSeesIsRefusedNamingTheCheckerThatWould) {
  const std::string zero1 = "ranks: 4\nparallel: {mode: zero1}\n";
  EXPECT_THAT(Errors(zero1 + "inject: [{kind: wrong_grad_scale, rank: 1, step: 3}]\n", SeeingOptions()),
              ElementsAre("3:17: inject[0].kind: none of the default checks (the scenario sets no `checks:`) can see "
                          "wrong_grad_scale in parallel.mode zero1, so the scenario would pass with the bug in it; "
                          "only reference can: add it to `checks:`"));
  EXPECT_THAT(Errors(zero1 + "checks: [replica_weights, synced_grads, hang]\n"
                             "inject: [{kind: lr_mismatch, rank: 1, step: 3}]\n",
                     SeeingOptions()),
              ElementsAre("4:17: inject[0].kind: none of this scenario's checks can see lr_mismatch in parallel.mode "
                          "zero1, so the scenario would pass with the bug in it; only reference can: add it to "
                          "`checks:`"));
  // Seen: `reference` listed; the same injection under ddp, where the replicas differ; a bitflip,
  // which no all-gather repairs.
  EXPECT_EQ(Load(zero1 + "checks: [replica_weights, reference]\ninject: [{kind: wrong_grad_scale, rank: 1, step: 3}]\n",
                 SeeingOptions())
                .inject.size(),
            1u);
  EXPECT_EQ(Load("ranks: 4\ninject: [{kind: wrong_grad_scale, rank: 1, step: 3}]\n", SeeingOptions()).inject.size(), 1u);
  EXPECT_EQ(Load(zero1 + "inject: [{kind: bitflip, rank: 1, step: 3}]\n", SeeingOptions()).inject.size(), 1u);
  // A hang is judged whatever `checks:` lists only where the registry says so; here `hang` is listed.
  EXPECT_EQ(Load(zero1 + "checks: [hang]\ninject: [{kind: hang, rank: 1, step: 3}]\n", SeeingOptions()).inject.size(),
            1u);
}

}  // namespace
}  // namespace lockstep
