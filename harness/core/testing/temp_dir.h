// A fresh, private directory for one test, removed with everything in it when the test's
// TempDir goes out of scope. The one way tests get scratch space: mkdtemp gives a unique name
// (parallel ctest runs and reruns never share one), and the removal happens even when an
// ASSERT returns early.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace lockstep::testing {

class TempDir {
 public:
  // `prefix` names the directory for whoever finds one left by a crashed test
  // ("lockstep_scenario_" -> /tmp/lockstep_scenario_Ab12Cd).
  explicit TempDir(const std::string& prefix = "lockstep_test_") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;  // a test that already removed it is fine
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }

 private:
  std::filesystem::path path_;
};

}  // namespace lockstep::testing
