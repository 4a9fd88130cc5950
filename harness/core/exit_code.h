// The process exit codes of every lockstep program, documented in README.md and docs/CLI.md.
#pragma once

namespace lockstep {

enum class ExitCode : int {
  kPassed = 0,        // every scenario passed (or failed as expected)
  kCheckFailed = 1,   // a check found a problem, or an expected finding was missing
  kUsageError = 2,    // bad flag or bad scenario file; nothing ran
  kHarnessError = 3,  // the harness itself failed: launcher, infrastructure, internal error
};

inline int ToInt(ExitCode code) { return static_cast<int>(code); }

}  // namespace lockstep
