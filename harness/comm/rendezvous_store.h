// The c10d key-value store behind a RendezvousOptions: rank 0 serves a TCPStore, or every rank
// opens the same FileStore. Only backends that speak c10d include this (it pulls in c10d headers).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "harness/comm/rendezvous_options.h"
#include "harness/core/status.h"

namespace lockstep {

// Blocks until the store is reachable (for the TCP server: until every rank connected), at most
// options.timeout. Errors name the rank and the store.
Result<c10::intrusive_ptr<c10d::Store>> CreateRendezvousStore(const RendezvousOptions& options);

}  // namespace lockstep
