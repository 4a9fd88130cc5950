// MPI initialization for the whole process, once. Library code and tests share one session:
// whoever asks first initializes MPI (MPI_THREAD_FUNNELED: only the thread that called
// MPI_Init_thread makes MPI calls), and MPI_Finalize runs at process exit, but only when this
// session was the one that initialized MPI. Under a main() that already called MPI_Init (the
// mpirun gtest main) the session just observes it.
#pragma once

#include <memory>

#include "harness/core/status.h"

namespace lockstep {

class MpiSession {
 public:
  // The process-wide session; communicators keep a reference so MPI outlives them.
  static Result<std::shared_ptr<MpiSession>> Acquire();

  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool initialized_here() const { return initialized_here_; }
  int thread_level() const { return thread_level_; }  // MPI_THREAD_* actually provided

  // Builds a communicator of this process alone (MPI_Comm_split of MPI_COMM_SELF) and frees it:
  // a real MPI discovery call that no other rank takes part in, so one rank can make it at any
  // moment. The double_discovery injection makes it mid-training, as the multi-slice bug
  // (pytorch/xla#8812) ran its discovery a second time.
  Status SplitSelf();

 private:
  MpiSession(bool initialized_here, int thread_level)
      : initialized_here_(initialized_here), thread_level_(thread_level) {}

  bool initialized_here_;
  int thread_level_;
};

}  // namespace lockstep
