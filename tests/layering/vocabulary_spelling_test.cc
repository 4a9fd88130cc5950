#include "tests/layering/vocabulary_spelling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "checkers/checker_registry.h"
#include "harness/core/testing/build_paths.h"
#include "harness/result/launch_report.h"
#include "harness/scenario/injection_kinds.h"
#include "harness/trace/trace_record.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> InjectionKindNames() {
  std::vector<std::string> names;
  for (const InjectionKindInfo& kind : kInjectionKinds) names.emplace_back(kind.name);
  return names;
}

// The vocabularies with a text form whose names can collide with a checker's or an injection
// kind's, each with its table.
std::vector<Vocabulary> Vocabularies() {
  std::vector<Vocabulary> v;
  Vocabulary checkers{"checker name", CheckerNames(), {}};
  for (const std::string& name : checkers.words) {
    checkers.homes.push_back("checkers/" + name + "_checker.h");  // name()
    checkers.homes.push_back("checkers/" + name + "_checker.cc");
  }
  v.push_back(checkers);
  v.push_back({"injection kind", InjectionKindNames(), {"harness/scenario/injection_kinds.h"}});
  v.push_back({"launch ending", NameList<LaunchEnding>(), {"harness/result/launch_report.cc"}});
  v.push_back({"tensor kind", NameList<TensorKind>(), {"harness/trace/trace_record.cc"}});
  // Words that are also names of something else, each where that other thing is named:
  // a companion run's folder ("reference"), the folder of golden files, and the discovery phase
  // "startup" (a discovery record's `phase`, docs/TRACE.md).
  v.push_back({"companion run", {"reference"}, {"harness/runner/rank_program.cc", "harness/runner/run_directory.cc"}});
  v.push_back({"fixtures folder", {"golden"}, {"checkers/golden_file.cc"}});
  v.push_back({"discovery phase",
               {"startup"},
               {"harness/discovery/discovery_log.cc", "harness/rank/run_rank.cc", "checkers/discovery_count_checker.cc"}});
  return v;
}

// The words looked for: checker names and injection kinds. The other vocabularies above only say
// where a shared word is at home (their own names are often plain words, "timeout", "param").
std::vector<std::string> ScannedWords() {
  std::vector<std::string> words = CheckerNames();
  const std::vector<std::string> kinds = InjectionKindNames();
  words.insert(words.end(), kinds.begin(), kinds.end());
  return words;
}

// The tree: checker names and injection kinds are spelled in their tables only.
TEST(VocabularySpellingTest, TheTreeSpellsEachNameInItsTableOnly) {
  const std::vector<Vocabulary> vocabularies = Vocabularies();
  const std::vector<SpelledWord> spelled =
      ScanStringLiterals(LOCKSTEP_SOURCE_DIR, {"harness", "checkers", "reports", "probe"}, ScannedWords());
  ASSERT_GT(spelled.size(), 20u) << "the scan found too few names to be looking at the tree";
  EXPECT_THAT(CheckSpelling(vocabularies, spelled), IsEmpty());
}

// The rule fails where it should: the literals issue 28 found in the runner and the HTML reporter.
TEST(VocabularySpellingTest, ANameSpelledOutsideItsTableFails) {
  const std::vector<Vocabulary> vocabularies = {
      {"checker name", {"hang", "startup"}, {"checkers/hang_checker.h", "checkers/startup_checker.h"}},
      {"injection kind", {"hang"}, {"harness/scenario/injection_kinds.h"}}};
  const std::string runner = "CheckerRun checked = RunCheckers({\"startup\"}, context);\n"
                             "// a comment may say \"hang\"\n"
                             "const char* c = '\"'; f.checker == \"hang\";\n";
  EXPECT_THAT(CheckSpelling(vocabularies, ScanText("harness/runner/scenario_runner.cc", runner, {"hang", "startup"})),
              ElementsAre("harness/runner/scenario_runner.cc:1: spells the checker name \"startup\" outside its table "
                          "(checkers/hang_checker.h, checkers/startup_checker.h): take it from there",
                          "harness/runner/scenario_runner.cc:3: spells the checker name / injection kind \"hang\" "
                          "outside its table (checkers/hang_checker.h, checkers/startup_checker.h, "
                          "harness/scenario/injection_kinds.h): take it from there"));
  // In a home of either vocabulary the word is fine; a longer literal is another word.
  EXPECT_THAT(CheckSpelling(vocabularies, ScanText("harness/scenario/injection_kinds.h", "x = \"hang\";", {"hang"})),
              IsEmpty());
  EXPECT_THAT(ScanText("a.cc", "x = \"hang_timeout_s\";", {"hang"}), IsEmpty());
}

}  // namespace
}  // namespace lockstep
