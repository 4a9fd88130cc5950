#include "harness/cli/flag_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/capture/async_capture_setting.h"

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

void AddHostFlags(CLI::App& cmd, HostPlacement& hosts) {
  cmd.add_option("--nodes", hosts.nodes,
                 "Several hosts: run the ranks on N nodes of a Slurm allocation (this job's, or one lockstep asks "
                 "for with salloc from a login node and gives back), an agent on each node streaming its ranks' "
                 "traces and logs to --out here (with --launcher srun, torchrun: one torchrun per node, or mpirun "
                 "inside an allocation)")
      ->check(WholeNumberBetween(1, 4096))
      ->type_name("N");
  cmd.add_option("--ntasks-per-node", hosts.ranks_per_node, "Several hosts: ranks per node (srun's --ntasks-per-node)")
      ->check(WholeNumberBetween(1, 4096))
      ->type_name("K");
  cmd.add_option("--node-dir", hosts.node_dir,
                 "Several hosts: a folder local to each node where its ranks write before their agent streams the "
                 "files here (default /tmp; a folder the nodes share is refused)")
      ->type_name("DIR");
  cmd.add_option("--node-timeout", hosts.node_timeout_s,
                 "Several hosts: seconds without a word from a node's agent before the node is lost (default 10)")
      ->check(SecondsBetween(1, 3600));
}

Status CheckHostFlags(const HostPlacement& hosts, LauncherKind launcher) {
  const HostPlacement defaults;
  const bool given_nodes = hosts.nodes > 0;
  const bool others = hosts.ranks_per_node > 0 || hosts.node_dir != defaults.node_dir ||
                      hosts.node_timeout_s != defaults.node_timeout_s;
  if (launcher == LauncherKind::kSrun) return Status::Ok();
  if (given_nodes && (launcher == LauncherKind::kTorchrun || launcher == LauncherKind::kMpirun)) return Status::Ok();
  const std::string flag = given_nodes ? "--nodes" : "--ntasks-per-node, --node-dir and --node-timeout";
  if (!given_nodes && !others) return Status::Ok();
  return InvalidArgumentError(flag + ": only for a launch on several hosts (--launcher srun; torchrun or mpirun with "
                              "--nodes); the ranks start with --launcher " + std::string(ToString(launcher)) + " here");
}

Status CheckAsyncCaptureSetting() { return AsyncCaptureFromEnvironment().status(); }

}  // namespace lockstep
