#include "harness/cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lockstep {

CLI::Validator SecondsBetween(double min, double max) {
  char range[96];
  std::snprintf(range, sizeof range, "a number of seconds from %g to %g", min, max);
  const std::string what = range;
  return CLI::Validator(
      [min, max, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
          const std::string shown = text.size() > 40 ? text.substr(0, 37) + "..." : text;
          return "must be " + what + ", got '" + shown + "'";
        }
        return std::string();
      },
      "SECONDS");
}

CLI::Validator WholeNumberBetween(long long min, long long max) {
  const std::string what = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, what](std::string& text) -> std::string {
        // Digits only, an optional minus first: strtoll alone would take " 5", "+5" and "5 ".
        const bool digits = !text.empty() && text.size() <= 20 &&
                            text.find_first_not_of("0123456789", text[0] == '-' ? 1 : 0) == std::string::npos &&
                            text != "-";
        errno = 0;
        const long long v = digits ? std::strtoll(text.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE || v < min || v > max) {
          const std::string shown = text.size() > 40 ? text.substr(0, 37) + "..." : text;
          return "must be " + what + ", got '" + shown + "'";
        }
        return std::string();
      },
      std::to_string(min) + ".." + std::to_string(max));
}

Status CheckMpirunArgs(const std::vector<std::string>& mpirun_args, LauncherKind launcher) {
  if (mpirun_args.empty() || launcher == LauncherKind::kMpirun || launcher == LauncherKind::kSrun) return Status::Ok();
  return InvalidArgumentError("--mpirun-args: only for --launcher mpirun or srun; the ranks start with --launcher " +
                              std::string(ToString(launcher)) + " here, which would ignore them");
}

Status CheckScenarioLauncher(LauncherKind launcher) {
  if (launcher != LauncherKind::kTorchrun && launcher != LauncherKind::kAccelerate) return Status::Ok();
  return InvalidArgumentError(std::string("--launcher ") + ToString(launcher) +
                              ": only for `lockstep exec` (your own program, started by " + ToString(launcher) +
                              "); lockstep's scenarios start with --launcher mpirun, srun, local or none "
                              "(local starts the ranks the way torchrun does)");
}

}  // namespace lockstep
