#include "harness/core/testing/build_paths.h"
#include "reports/golden_file_testutil.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "harness/result/run_result_json.h"

namespace lockstep::testing {

RunResult LoadFixture(const std::string& name) {
  const std::string path = std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/" + name + ".report.json";
  Result<RunResult> r = ReadRunResultFile(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return RunResult{};
  RunResult result = std::move(r).value();
  if (name == "hostile" && !result.scenarios.empty()) {
    ScenarioResult& s = result.scenarios.front();
    // CESU-8 lone surrogate, a stray continuation byte, an invalid lead byte and a NUL.
    s.id += std::string("-\xED\xA0\x80-\x80-\xFF-") + std::string(1, '\0') + "-end";
    s.findings.at(0).message += std::string(" \xED\xBF\xBF lone low surrogate");
    s.rank_logs[0] += std::string("raw bytes: \xC3\x28 \xF5\x80\x80\x80\n");
  }
  return result;
}

std::string GoldenPath(const std::string& file) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/fixtures/reports/golden/" + file;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectMatchesGolden(const std::string& actual, const std::string& file) {
  const std::string path = GoldenPath(file);
  const char* update = std::getenv("LOCKSTEP_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    std::cout << "updated golden file " << path << "\n";
    return;
  }
  std::ifstream probe(path);
  ASSERT_TRUE(probe.good()) << path << " is missing; run the test with LOCKSTEP_UPDATE_GOLDEN=1 to create it";
  const std::string expected = ReadFileOrEmpty(path);
  if (expected == actual) return;
  // Name the first differing line: a 200 KB HTML diff in a gtest message helps nobody.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 1;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) break;
    if (!more_a || !more_e || la != le) {
      ADD_FAILURE() << path << " differs at line " << line << "\n  golden: " << (more_e ? le : "<end of file>")
                    << "\n  actual: " << (more_a ? la : "<end of file>")
                    << "\n(LOCKSTEP_UPDATE_GOLDEN=1 rewrites the golden files; review the diff)";
      return;
    }
    ++line;
  }
  ADD_FAILURE() << path << " differs (line endings)";
}

}  // namespace lockstep::testing
