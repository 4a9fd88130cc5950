#include "harness/comm/mpi_session.h"

#include <mpi.h>

#include <mutex>
#include <string>

namespace lockstep {

Result<std::shared_ptr<MpiSession>> MpiSession::Acquire() {
  static std::mutex mu;
  // Held until static destruction, so that MPI is finalized at exit and never re-initialized
  // (MPI allows one MPI_Init per process) when the last communicator goes away mid-run.
  static std::shared_ptr<MpiSession> session;
  std::lock_guard<std::mutex> lock(mu);
  if (session) return session;

  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return InternalError("MPI was already finalized in this process; it cannot be used again");

  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    MPI_Query_thread(&provided);
    session.reset(new MpiSession(false, provided));
    return session;
  }
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return CommunicationError("MPI_Init_thread: " + std::string(text, len));
  }
  session.reset(new MpiSession(true, provided));
  return session;
}

Status MpiSession::SplitSelf() {
  MPI_Comm self = MPI_COMM_NULL;
  const int rc = MPI_Comm_split(MPI_COMM_SELF, 0, 0, &self);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return CommunicationError("MPI_Comm_split(MPI_COMM_SELF): " + std::string(text, len));
  }
  MPI_Comm_free(&self);
  return Status::Ok();
}

MpiSession::~MpiSession() {
  if (!initialized_here_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace lockstep
