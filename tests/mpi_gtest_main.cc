// main() for gtest binaries run under mpirun: MPI is initialized once, every rank runs every
// test, only rank 0 prints to the console, and each rank's XML output (when --gtest_output is
// given) gets the rank in its file name so ranks never overwrite each other's results.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);

  std::string output = ::testing::GTEST_FLAG(output);
  if (!output.empty()) {
    auto dot = output.rfind('.');
    std::string suffix = ".rank" + std::to_string(rank);
    ::testing::GTEST_FLAG(output) =
        dot == std::string::npos ? output + suffix : output.substr(0, dot) + suffix + output.substr(dot);
  }
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  // A test that fails on any rank fails on all: the exit code is the same everywhere.
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
