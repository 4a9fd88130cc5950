// lockstep-bench's main: Google Benchmark's, made MPI-aware. The suite has two halves that need
// different launches (ci/bench.sh runs both):
//   lockstep-bench                      the single-process benchmarks (names not "BM_Mpi...")
//   mpirun -np 2 lockstep-bench         the multi-rank ones ("BM_Mpi..."): every rank runs every
//                                       benchmark with the same fixed iteration count, and only
//                                       rank 0 reports (console and --benchmark_out).
// An explicit --benchmark_filter replaces the default half.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/crash_report.h"
#include "bench/mpi_bench.h"
#include "harness/comm/mpi_session.h"
#include "harness/core/build_info.h"
#include "harness/trace/digest.h"

namespace {

// What ranks other than 0 report: nothing (their numbers are folded into rank 0's by
// MaxOverRanks where it matters).
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

bool StartsWith(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::bench::InstallCrashReport();
  const int ranks = lockstep::bench::LaunchedRanks();
  int rank = 0;
  if (ranks > 0) {
    auto session = lockstep::MpiSession::Acquire();
    if (!session.ok()) {
      std::fprintf(stderr, "lockstep-bench: %s\n", session.status().ToString().c_str());
      return 3;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  }

  std::vector<char*> args;
  bool has_filter = false;
  for (int i = 0; i < argc; ++i) {
    if (StartsWith(argv[i], "--benchmark_filter")) has_filter = true;
    // One file per run: only rank 0 writes it.
    if (rank != 0 && StartsWith(argv[i], "--benchmark_out")) continue;
    args.push_back(argv[i]);
  }
  std::string default_filter = ranks > 0 ? "--benchmark_filter=^BM_Mpi" : "--benchmark_filter=-^BM_Mpi";
  if (!has_filter) args.push_back(default_filter.data());
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  const lockstep::BuildInfo& build = lockstep::GetBuildInfo();
  benchmark::AddCustomContext("lockstep_version", build.version);
  benchmark::AddCustomContext("libtorch", build.torch_version);
  benchmark::AddCustomContext("digest_impl", lockstep::DigestImplementation());
  benchmark::AddCustomContext("mpi_ranks", std::to_string(ranks));
  benchmark::AddCustomContext("load_avg_at_start", LoadAverage());

  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
