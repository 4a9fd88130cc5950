// Where the ranks of a store-based backend (gloo, nccl without MPI) meet: the torchrun variables
// (MASTER_ADDR, MASTER_PORT; rank 0 serves a c10d::TCPStore there) or, when LOCKSTEP_STORE_FILE is
// set, a c10d::FileStore on a path every rank can reach. Plain data: no LibTorch types.
#pragma once

#include <chrono>
#include <string>

#include "harness/core/status.h"

namespace lockstep {

struct RendezvousOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string store_file;  // non-empty: a FileStore at this path instead of the TCP store
  // For the rendezvous and for every collective of the backends built on it.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);

  // `rank` and `world_size` as discovery found them; the meeting point from MASTER_ADDR and
  // MASTER_PORT, or LOCKSTEP_STORE_FILE; LOCKSTEP_COMM_TIMEOUT_S overrides the timeout.
  static Result<RendezvousOptions> FromEnvironment(int rank, int world_size);
};

}  // namespace lockstep
