// A resolved scenario file must mean what the runner resolved: every scenario of the project's
// suites and fixtures, written and loaded back, is the same scenario, and every key a scenario
// file may set is written.
#include "harness/scenario/scenario_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "harness/core/testing/build_paths.h"
#include "harness/core/testing/temp_dir.h"
#include "harness/scenario/scenario_loader.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
const fs::path kSourceDir = LOCKSTEP_SOURCE_DIR;

// The scenario, or the loader's diagnostics as the error.
Result<Scenario> LoadResolved(const fs::path& file) {
  LoadOptions options;
  options.resolved = true;
  std::vector<Diagnostic> diagnostics;
  Result<Scenario> loaded = LoadScenarioFile(file, options, &diagnostics);
  if (loaded.ok()) return loaded;
  std::string text;
  for (const Diagnostic& d : diagnostics) text += d.ToString() + "\n";
  return InvalidArgumentError(text);
}

// Loads, writes, loads the written file and compares: equal scenarios write the same text, and
// every field is written (EveryKeyPathIsWritten).
void ExpectRoundTrip(const Scenario& original, const fs::path& dir) {
  const fs::path file = dir / "scenario.yaml";
  ASSERT_TRUE(WriteScenarioFile(original, file, "resolved for a test").ok());
  Result<Scenario> reloaded = LoadResolved(file);
  ASSERT_TRUE(reloaded.ok()) << original.name << ": " << reloaded.status().ToString() << "\n" << ScenarioYaml(original);
  EXPECT_EQ(ScenarioYaml(*reloaded), ScenarioYaml(original)) << original.name;
  EXPECT_EQ(reloaded->name, original.name);
  // A rank's error about an injection names the line the user wrote it on.
  ASSERT_EQ(reloaded->inject.size(), original.inject.size());
  for (size_t i = 0; i < original.inject.size(); ++i) {
    EXPECT_EQ(reloaded->inject[i].location.file, original.inject[i].location.file);
    EXPECT_EQ(reloaded->inject[i].location.line, original.inject[i].location.line);
    EXPECT_EQ(reloaded->inject[i].location.column, original.inject[i].location.column);
  }
}

TEST(ScenarioWriterTest, EveryScenarioOfTheSuitesReadsBackTheSame) {
  testing::TempDir dir("lockstep_scenario_writer_");
  LoadOptions options;  // as lockstep-rank loads: checker names taken as written
  int count = 0;
  for (const char* folder : {"scenarios", "fixtures/e2e", "fixtures/scenario_defaults"}) {
    for (const auto& entry : fs::recursive_directory_iterator(kSourceDir / folder)) {
      if (entry.path().extension() != ".yaml" || entry.path().filename() == kDefaultsFileName) continue;
      Result<Scenario> loaded = LoadScenarioFile(entry.path(), options, nullptr);
      if (!loaded.ok()) continue;  // fixtures that must fail to load
      ExpectRoundTrip(*loaded, dir.path());
      ++count;
    }
  }
  EXPECT_GT(count, 40) << "the suites were not found under " << kSourceDir;
}

TEST(ScenarioWriterTest, EveryKeyPathIsWritten) {
  Scenario s;
  s.name = "inject/every_key";
  s.description = "every key: 'quotes', # and: colons";
  s.checks = {"replica_weights", "crash"};
  Injection i;
  i.kind = "skip_grad_allreduce";
  i.ranks = {1};
  i.step = 2;
  i.tensor = "fc*";
  s.inject.push_back(i);
  ExpectedFinding e;
  e.checker = "synced_grads";
  e.step = 2;
  e.ranks = {1};
  e.tensor = "fc1.weight";
  s.expect_fail.push_back(e);
  s.discovery_allowed["lockstep.topology"] = 2;
  const YAML::Node written = YAML::Load(ScenarioYaml(s));
  for (const std::string& path : ScenarioKeyPaths()) {
    // Aliases the loader also reads: `rank: 1` (written as `ranks: [1]`) and the old
    // `expect.discovery_calls` (written as `expect.discovery`).
    if (path == "inject[].rank" || path == "expect.discovery_calls") continue;
    YAML::Node node = YAML::Clone(written);
    std::string rest = path;
    while (!rest.empty() && node) {
      const size_t dot = rest.find('.');
      std::string key = rest.substr(0, dot);
      rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
      const bool list = key.size() > 2 && key.compare(key.size() - 2, 2, "[]") == 0;
      if (list) key.resize(key.size() - 2);
      node = node[key];
      if (list && node) node = node[0];
    }
    EXPECT_TRUE(node.IsDefined() && !node.IsNull()) << path << " is not written:\n" << ScenarioYaml(s);
  }
}

TEST(ScenarioWriterTest, AResolvedFileIgnoresTheDefaultsFilesAroundIt) {
  testing::TempDir dir("lockstep_scenario_writer_");
  Scenario s;
  s.name = "clean/resolved";
  s.steps = 3;
  ASSERT_TRUE(WriteScenarioFile(s, dir.path() / "scenario.yaml").ok());
  std::ofstream(dir.path() / kDefaultsFileName) << "steps: 7\n";
  Result<Scenario> resolved = LoadResolved(dir.path() / "scenario.yaml");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->steps, 3);
  Result<Scenario> plain = LoadScenarioFile(dir.path() / "scenario.yaml", LoadOptions{}, nullptr);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->steps, 3) << "the file sets every key, so even a plain load keeps its own steps";
}

// `lockstep run DIR/<id>/scenario.yaml`: the file says it is resolved, so a plain load (the CLI's)
// reads its injections' origins and no defaults around it, and it names the user's file however
// often it is resolved again.
TEST(ScenarioWriterTest, AResolvedFileSaysSoItselfAndLoadsAsResolvedWherever) {
  testing::TempDir dir("lockstep_scenario_writer_");
  std::vector<Diagnostic> diagnostics;
  Result<Scenario> user =
      LoadScenarioFile(kSourceDir / "scenarios/inject/ddp/bitflip.yaml", LoadOptions{}, &diagnostics);
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  ASSERT_FALSE(user->inject.empty());
  const fs::path file = dir.path() / "scenario.yaml";
  ASSERT_TRUE(WriteScenarioFile(*user, file, "resolved for a test").ok());
  std::ofstream(dir.path() / kDefaultsFileName) << "steps: 99\n";

  Result<Scenario> plain = LoadScenarioFile(file, LoadOptions{}, &diagnostics);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString() << (diagnostics.empty() ? "" : diagnostics[0].ToString());
  EXPECT_EQ(plain->steps, user->steps);
  EXPECT_EQ(plain->inject[0].location.file, user->inject[0].location.file) << "the injection names the user's line";
  EXPECT_EQ(plain->inject[0].location.line, user->inject[0].location.line);
  EXPECT_EQ(plain->resolved_from, user->location.file);

  // Resolved again from the resolved file: still the user's file.
  const fs::path again = dir.path() / "again.yaml";
  ASSERT_TRUE(WriteScenarioFile(*plain, again).ok());
  EXPECT_EQ(YAML::LoadFile(again.string())[std::string(kResolvedFromKey)].as<std::string>(), user->location.file);

  // Without the key, an injection's `at` is what it always was in a user's file: an error.
  std::string text = ScenarioYaml(*user);
  text.erase(0, text.find('\n') + 1);  // the resolved_from line
  std::ofstream(dir.path() / "edited.yaml") << text;
  diagnostics.clear();
  EXPECT_FALSE(LoadScenarioFile(dir.path() / "edited.yaml", LoadOptions{}, &diagnostics).ok());
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_THAT(diagnostics[0].ToString(), ::testing::HasSubstr("inject[0].at"));
}

TEST(ScenarioWriterTest, AnUnwritableFileIsAnIoErrorNamingIt) {
  Status s = WriteScenarioFile(Scenario{}, "/nonexistent-dir/scenario.yaml");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("/nonexistent-dir/scenario.yaml"));
}

}  // namespace
}  // namespace lockstep
