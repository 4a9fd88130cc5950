// MPI's discovery calls, seen through the standard profiling interface (PMPI): each wrapper calls
// the real routine (PMPI_*) and records the call in the process's discovery log.
//
// Linked as object code into a program (lockstep-rank, the PMPI test), so that the program's own
// definitions of these MPI_* symbols are the ones its MPI calls bind to, ahead of libmpi's. Which
// calls count: those that start MPI or build a communicator, i.e. that ask the job who is there
// (MPI_Init, MPI_Init_thread, MPI_Comm_split, MPI_Comm_split_type, MPI_Comm_create,
// MPI_Comm_dup); a communicator built in the middle of training is the MPI form of the
// re-discovery bug (docs/CHECKERS.md#discovery_count).
#include <mpi.h>

#include <string>

#include "harness/discovery/discovery_log.h"

namespace {

// The new communicator as the process knows it: its Fortran handle (an int, stable for its life)
// and its size, e.g. "mpi:3/4". MPI_COMM_NULL (a rank outside the split) is "mpi:null".
std::string CommName(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return "mpi:null";
  int size = 0;
  PMPI_Comm_size(comm, &size);
  return "mpi:" + std::to_string(PMPI_Comm_c2f(comm)) + "/" + std::to_string(size);
}

}  // namespace

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  lockstep::RecordDiscovery("mpi.init", "", rc == MPI_SUCCESS ? "mpi:world" : "");
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  lockstep::RecordDiscovery("mpi.init_thread", "", rc == MPI_SUCCESS ? "mpi:world" : "");
  return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split(comm, color, key, newcomm);
  lockstep::RecordDiscovery("mpi.comm_split", "", rc == MPI_SUCCESS ? CommName(*newcomm) : "");
  return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
  lockstep::RecordDiscovery("mpi.comm_split_type", "", rc == MPI_SUCCESS ? CommName(*newcomm) : "");
  return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_create(comm, group, newcomm);
  lockstep::RecordDiscovery("mpi.comm_create", "", rc == MPI_SUCCESS ? CommName(*newcomm) : "");
  return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  const int rc = PMPI_Comm_dup(comm, newcomm);
  lockstep::RecordDiscovery("mpi.comm_dup", "", rc == MPI_SUCCESS ? CommName(*newcomm) : "");
  return rc;
}

}  // extern "C"
