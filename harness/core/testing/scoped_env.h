// Sets (or, with nullopt, removes) an environment variable for one test and puts the old value
// back when the test's ScopedEnv goes out of scope, even when an ASSERT returns early. Children
// a test starts (RunProgram) inherit what is set.
#pragma once

#include <stdlib.h>

#include <optional>
#include <string>

namespace lockstep::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    Set(value);
  }
  ~ScopedEnv() { Set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void Set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace lockstep::testing
